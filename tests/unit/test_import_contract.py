"""The layout's contract (issue 36, docs/architecture.md): the import-linter contracts in
pyproject.toml hold, no two modules import each other (directly or round a circle,
counting function-local and TYPE_CHECKING imports), and a planted violation of either
is caught, so the checks are not vacuous."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def module_cycles(package: str) -> list[list[str]]:
    """Each set of modules that import one another round a circle (Tarjan's strongly
    connected components of the import graph), sorted."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(cycles)


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})


def _planted_copy(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contract with `line` appended to `module`."""
    shutil.copytree(ROOT / "kpysched", tmp_path / "kpysched",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / (module.replace(".", "/") + ".py")
    target.write_text(target.read_text() + f"\n{line}\n")
    return tmp_path


def test_no_two_modules_import_each_other() -> None:
    assert module_cycles("kpysched") == []


def test_the_import_contracts_hold() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_plugin_imported_by_the_framework_breaks_the_contract(tmp_path: Path) -> None:
    planted = _planted_copy(tmp_path, "kpysched.framework.status",
                            "import kpysched.plugins.node_name  # planted")
    result = _lint_imports(planted)
    assert result.returncode != 0
    assert "The framework never imports a plugin BROKEN" in result.stdout, result.stdout
    assert "kpysched.framework.status -> kpysched.plugins.node_name" in result.stdout


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    planted = _planted_copy(tmp_path, "kpysched.cache.node_info",
                            "def _late() -> None:\n    import kpysched.queue  # planted")
    result = _lint_imports(planted)
    assert result.returncode != 0
    assert "Layers point one way BROKEN" in result.stdout, result.stdout


def test_a_function_local_circle_is_found(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    planted = _planted_copy(tmp_path, "kpysched.objects.quantity",
                            "def _late() -> None:\n    import kpysched.objects.pod  # planted")
    monkeypatch.syspath_prepend(str(planted))
    for name in [m for m in sys.modules if m == "kpysched" or m.startswith("kpysched.")]:
        monkeypatch.delitem(sys.modules, name)
    cycles = module_cycles("kpysched")
    planted_pair = {"kpysched.objects.quantity", "kpysched.objects.pod"}
    assert any(planted_pair <= set(cycle) for cycle in cycles), cycles
