"""What kpysched imports is what it declares, and what is installed is what is locked.

An import that works only because another dependency happens to pull its
distribution in breaks the day that dependency drops it; an unlocked install
builds a different image tomorrow from the same commit.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONSTRAINTS = ROOT / "constraints.txt"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match is not None, requirement
    return _normalize(match.group(0))


def _top_level_imports(package: Path) -> dict[str, list[str]]:
    """Top-level modules imported anywhere in `package` -> files importing them."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], []).append(str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared() -> None:
    declared = {_requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    undeclared: dict[str, list[str]] = {}
    for module, files in _top_level_imports(ROOT / "kpysched").items():
        if module in sys.stdlib_module_names or module == "kpysched":
            continue
        distributions = {_normalize(d) for d in providers.get(module, [])}
        assert distributions, f"{module} (imported by {files[0]}) is not installed at all"
        if not distributions & declared:
            undeclared[module] = sorted(distributions)
    assert undeclared == {}, f"imported but not in pyproject dependencies: {undeclared}"


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            pins[_normalize(name)] = version
    return pins


def test_every_dependency_is_locked() -> None:
    locked = _locked()
    wanted = [*PYPROJECT["project"]["dependencies"],
              *PYPROJECT["project"]["optional-dependencies"]["dev"]]
    missing = [r for r in wanted if _requirement_name(r) not in locked]
    assert missing == [], f"not pinned in constraints.txt: {missing}"


def test_installed_versions_are_the_locked_ones() -> None:
    installed = {_normalize(d.metadata["Name"]): d.version
                 for d in importlib.metadata.distributions()}
    drift = {name: (version, installed.get(name)) for name, version in _locked().items()
             if installed.get(name) != version}
    assert drift == {}, f"locked vs installed: {drift}; run scripts/setup.sh"
