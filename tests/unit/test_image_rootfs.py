"""scripts/image_rootfs.py's copier, which builds the FROM scratch image's root: paths
keep their places, symlinked directories stay symlinks, nothing is written outside
the root (the image build itself proves the whole set runs: its exec-form RUN)."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import pytest

from tests.unit.scripts_module import load_script


@pytest.fixture(scope="module")
def image_rootfs() -> ModuleType:
    return load_script("image_rootfs")


def _inside(root: Path, path: Path) -> Path:
    return root / path.relative_to("/")


def test_a_file_behind_a_symlinked_directory_keeps_the_symlink(
        image_rootfs: ModuleType, tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "usr" / "lib").mkdir(parents=True)
    (base / "usr" / "lib" / "libz.so.1.3").write_text("elf")
    (base / "usr" / "lib" / "libz.so.1").symlink_to("libz.so.1.3")
    (base / "lib").symlink_to("usr/lib")  # bookworm's merged /usr
    root = tmp_path / "root"
    root.mkdir()
    image_rootfs._Stager(root).copy(base / "lib" / "libz.so.1")
    assert _inside(root, base / "lib").is_symlink()
    assert os.readlink(_inside(root, base / "lib")) == "usr/lib"
    assert os.readlink(_inside(root, base / "usr" / "lib" / "libz.so.1")) == "libz.so.1.3"
    assert _inside(root, base / "lib" / "libz.so.1").read_text() == "elf"
    # Only what was asked for: the directory the symlink names is not copied whole.
    assert sorted(p.name for p in _inside(root, base / "usr" / "lib").iterdir()) == [
        "libz.so.1", "libz.so.1.3"]


def test_an_absolute_directory_symlink_is_never_followed_out_of_the_root(
        image_rootfs: ModuleType, tmp_path: Path) -> None:
    base = tmp_path / "base"
    (base / "real").mkdir(parents=True)
    (base / "real" / "python3.11").write_text("interpreter")
    (base / "bin").symlink_to(base / "real")  # absolute
    root = tmp_path / "root"
    root.mkdir()
    image_rootfs._Stager(root).copy(base / "bin" / "python3.11")
    assert _inside(root, base / "real" / "python3.11").read_text() == "interpreter"
    assert _inside(root, base / "bin").is_symlink()
    assert sorted(p.name for p in (base / "real").iterdir()) == ["python3.11"]


def test_a_directory_is_copied_whole(image_rootfs: ModuleType, tmp_path: Path) -> None:
    base = tmp_path / "base" / "site-packages" / "pkg"
    (base / "sub").mkdir(parents=True)
    (base / "__init__.py").write_text("")
    (base / "sub" / "mod.py").write_text("x = 1")
    root = tmp_path / "root"
    root.mkdir()
    image_rootfs._Stager(root).copy(base)
    assert _inside(root, base / "sub" / "mod.py").read_text() == "x = 1"
