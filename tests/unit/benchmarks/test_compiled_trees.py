"""A kpysched tree is compiled to bytecode before its scheduler starts
(benchmarks.schedulers.compile_tree), as the image is at install: otherwise, with
PYTHONDONTWRITEBYTECODE set, every benchmarked start compiled the source again."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from benchmarks import schedulers


def _tree(root: Path) -> Path:
    package = root / "kpysched"
    (package / "plugins").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugins" / "fit.py").write_text("ANSWER = 42\n")
    return root


def test_every_module_of_the_tree_gets_its_bytecode(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    schedulers.compile_tree(tree)
    for module in ("__init__.py", "plugins/fit.py"):
        source = tree / "kpysched" / module
        assert Path(importlib.util.cache_from_source(str(source))).is_file(), module


def test_a_tree_is_compiled_once_per_run(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    schedulers.compile_tree(tree)
    compiled = Path(importlib.util.cache_from_source(str(tree / "kpysched" / "plugins" /
                                                          "fit.py")))
    compiled.unlink()
    schedulers.compile_tree(tree)  # already done in this run: not walked again
    assert not compiled.exists()


def test_this_tree_is_the_checkout_holding_the_imported_kpysched() -> None:
    tree = schedulers.this_tree()
    assert (tree / "kpysched" / "cli.py").is_file()
    assert (tree / "benchmarks" / "schedulers.py").is_file()
