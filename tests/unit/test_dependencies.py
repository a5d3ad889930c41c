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
IMAGE_CONSTRAINTS = ROOT / "constraints-image.txt"


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


def _entries(path: Path) -> dict[str, tuple[str, list[str]]]:
    """A lock file's entries: name -> (version, its sha256 hashes). An entry is
    `name==version` and its `--hash=sha256:...` options, on continued lines."""
    text = path.read_text().replace("\\\n", " ")
    entries: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pin, *options = line.split()
        name, _, version = pin.partition("==")
        assert version, f"{path.name}: {pin!r} is not an exact pin"
        hashes = [option.removeprefix("--hash=sha256:") for option in options]
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), f"{path.name}: {line}"
        entries[_normalize(name)] = (version, hashes)
    return entries


def _locked() -> dict[str, str]:
    return {name: version for name, (version, _) in _entries(CONSTRAINTS).items()}


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


def test_every_pin_has_its_hashes() -> None:
    # pip install --require-hashes (setup.sh, CI, the Dockerfile) refuses a pin
    # without them, and any file whose hash is not listed.
    for path in (CONSTRAINTS, IMAGE_CONSTRAINTS):
        unhashed = [name for name, (_, hashes) in _entries(path).items() if not hashes]
        assert unhashed == [], f"{path.name}: no hashes for {unhashed}"


def test_the_image_lock_is_the_runtime_part_of_the_full_one() -> None:
    """Same versions and hashes as constraints.txt; kpysched's dependencies, what they
    require, pip and the build backend, and none of the dev tools."""
    full, image = _entries(CONSTRAINTS), _entries(IMAGE_CONSTRAINTS)
    assert {name: full.get(name) for name in image} == image
    runtime = {_requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    build = {_requirement_name(r) for r in PYPROJECT["build-system"]["requires"]}
    assert runtime | build | {"pip"} <= set(image)
    dev_only = {_requirement_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["dev"]}
    assert dev_only & set(image) == set()
    for name in image:  # everything installed in the image is required by something in it
        if name in runtime | build | {"pip"}:
            continue
        required_by = [other for other in image if other != name and any(
            _requirement_name(r) == name
            for r in importlib.metadata.requires(other) or [])]
        assert required_by, f"constraints-image.txt: nothing in the image needs {name}"
