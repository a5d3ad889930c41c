"""scripts/lock_hashes.py's choice of the files whose hashes a pin carries: every file
of that exact version Python 3.11 can install, on any platform, and nothing else."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.unit.scripts_module import load_script


@pytest.fixture(scope="module")
def lock_hashes() -> ModuleType:
    return load_script("lock_hashes")


@pytest.mark.parametrize(("filename", "installable"), [
    pytest.param("numpy-2.4.6.tar.gz", True, id="sdist"),
    pytest.param("numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl", True, id="cp311"),
    pytest.param("numpy-2.4.6-cp311-cp311-macosx_14_0_arm64.whl", True, id="other-platform"),
    pytest.param("numpy-2.4.6-cp312-cp312-manylinux_2_28_x86_64.whl", False, id="cp312"),
    pytest.param("numpy-2.4.6-pp311-pypy311_pp73-manylinux_2_28_x86_64.whl", False,
                 id="pypy"),
    pytest.param("numpy-2.4.60-cp311-cp311-manylinux_2_28_x86_64.whl", False,
                 id="longer-version"),
    pytest.param("numpy-2.4.6.1.tar.gz", False, id="sdist-of-a-longer-version"),
    pytest.param("numpy_financial-2.4.6.tar.gz", False, id="another-project"),
])
def test_files_of_the_pin_python_3_11_installs(
        lock_hashes: ModuleType, filename: str, installable: bool) -> None:
    assert lock_hashes._installable(filename, "numpy", "2.4.6") is installable


@pytest.mark.parametrize(("filename", "installable"), [
    pytest.param("cryptography-50.0.2-cp37-abi3-manylinux_2_34_x86_64.whl", True,
                 id="older-abi3"),
    pytest.param("cryptography-50.0.2-cp314-abi3-manylinux_2_34_x86_64.whl", False,
                 id="newer-abi3"),
    pytest.param("cryptography-50.0.2-py3-none-any.whl", True, id="pure"),
])
def test_stable_abi_and_pure_wheels(
        lock_hashes: ModuleType, filename: str, installable: bool) -> None:
    assert lock_hashes._installable(filename, "cryptography", "50.0.2") is installable


def test_names_compare_normalized(lock_hashes: ModuleType) -> None:
    assert lock_hashes._installable("typing_extensions-4.16.0-py3-none-any.whl",
                                    "typing-extensions", "4.16.0")
    assert lock_hashes._installable("pyyaml-6.0.3.tar.gz", "PyYAML", "6.0.3")
