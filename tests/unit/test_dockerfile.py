"""The Dockerfile, checked without a container engine (none runs here or in CI).

What can go wrong without anyone noticing until a release build: a COPY of a file
that moved or that .dockerignore leaves out of the context, install steps drifting
from the ones CI exercises (scripts/setup.sh), an entry point that is not the
package's console script, a version label that lags pyproject.toml, root at run time,
an unhashed install, or a shell or pip left in the final image.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
SETUP_SCRIPT = ROOT / "scripts" / "setup.sh"
CHART_TEMPLATES = ROOT / "charts" / "kpysched" / "templates"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@dataclass(slots=True)
class Stage:
    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages, each with its (KEYWORD, arguments) in order;
    comments dropped and continuation lines joined."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages:
            assert keyword == "ARG", f"only ARG may precede the first FROM, not {keyword}"
            key, _, default = args.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append((keyword, args))
    return global_args, stages


GLOBAL_ARGS, STAGES = parse_dockerfile(DOCKERFILE.read_text())
FINAL = STAGES[-1]


def copy_sources(args: str) -> tuple[list[str], str | None, str]:
    """A COPY's sources, its --from stage (None for the build context) and destination."""
    words = shlex.split(args)
    flags = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    source_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
    return paths[:-1], source_stage, paths[-1]


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rules: patterns in order, the last one matching wins, `!` re-includes;
    a pattern matching a directory covers everything below it."""
    ignored = False
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.lstrip("!").strip("/")
        if any(fnmatch.fnmatchcase(prefix, glob) for prefix in prefixes):
            ignored = not negated
    return ignored


def ignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def context_copies() -> list[tuple[str, str]]:
    """(stage, source) for every COPY from the build context."""
    found = []
    for stage in STAGES:
        for args in stage.all("COPY"):
            sources, source_stage, _ = copy_sources(args)
            if source_stage is None:
                found += [(stage.name or stage.image, source) for source in sources]
    return found


@pytest.mark.parametrize(("stage", "source"), context_copies(),
                         ids=[source for _, source in context_copies()])
def test_copy_sources_exist_and_reach_the_build_context(stage: str, source: str) -> None:
    path = ROOT / source
    assert path.exists(), f"{stage}: COPY {source}: no such file in the repository"
    files = [path] if path.is_file() else list(path.rglob("*.py"))
    assert files, f"COPY {source} copies no Python file"
    patterns = ignore_patterns()
    for file in files:
        relative = file.relative_to(ROOT).as_posix()
        assert not dockerignored(relative, patterns), f".dockerignore drops {relative}"


def test_dockerignore_keeps_the_context_small() -> None:
    patterns = ignore_patterns()
    for bulky in (".venv/bin/python", ".git/HEAD", ".cluster/state.json", "tests/conftest.py",
                  "kpysched/__pycache__/app.cpython-311.pyc"):
        assert dockerignored(bulky, patterns), f"{bulky} would be sent to the build"


def test_build_stage_copies_everything_the_package_build_reads() -> None:
    build = STAGES[0]
    copied = {source.rstrip("/") for args in build.all("COPY")
              for source in copy_sources(args)[0]}
    readme = PYPROJECT["project"]["readme"]
    licenses = PYPROJECT["project"].get("license-files", [])
    packages = {pattern.rstrip("*") for pattern in
                PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert {"pyproject.toml", readme, *licenses, *packages} <= copied


def _pip_installs(commands: list[str], python: str) -> list[list[str]]:
    """The arguments of each `<python> -m pip install ...` in shell command text."""
    installs = []
    for command in commands:
        for part in re.split(r"&&|;|\n", command):
            words = shlex.split(part, comments=True)
            if words[:4] == [python, "-m", "pip", "install"]:
                installs.append(words[4:])
    return installs


def _venv_of(commands: list[str]) -> str:
    for command in commands:
        match = re.search(r"-m venv (\S+)", command)
        if match:
            return match.group(1)
    raise AssertionError("no `python -m venv` in the build stage")


def test_install_steps_are_those_of_setup_sh() -> None:
    """Same pip commands in the same order; the image drops `-e` (no source tree at run
    time) and the extras (dev tools), installs from constraints-image.txt (the runtime
    part of constraints.txt), and the test plugin package is the tests' own."""
    build = STAGES[0]
    venv = _venv_of(build.all("RUN"))
    image_steps = _pip_installs(build.all("RUN"), f"{venv}/bin/python")
    setup_steps = _pip_installs([SETUP_SCRIPT.read_text()], ".venv/bin/python")
    assert "-m venv .venv" in SETUP_SCRIPT.read_text()

    def for_image(args: list[str]) -> list[str]:
        return [re.sub(r"\[.*\]$", "", a).replace("constraints.txt", "constraints-image.txt")
                for a in args if a != "-e"]

    expected = [for_image(args) for args in setup_steps
                if not any(a.startswith("tests/") for a in args)]
    assert image_steps == expected
    assert image_steps, "the build stage installs nothing"


def test_entrypoint_is_the_console_script_running_the_scheduler() -> None:
    (entrypoint,) = FINAL.all("ENTRYPOINT")
    command = json.loads(entrypoint)  # exec form: a JSON array
    venv = _venv_of(STAGES[0].all("RUN"))
    script = Path(command[0])
    assert script.name in PYPROJECT["project"]["scripts"]
    assert PYPROJECT["project"]["scripts"][script.name] == "kpysched.cli:main"
    assert script.parent.as_posix() == f"{venv}/bin"
    assert command[1:] == ["run"]
    # The build stage stages the venv (and what runs it) into a root the image copies.
    (stager,) = [c for c in STAGES[0].all("RUN") if "image_rootfs.py" in c]
    staged = re.search(rf"image_rootfs\.py {re.escape(venv)} (\S+)", stager)
    assert staged, stager
    copied = [copy_sources(args) for args in FINAL.all("COPY")]
    assert copied == [([staged.group(1)], STAGES[0].name, "/")]


def test_runs_as_a_numeric_non_root_user() -> None:
    (user,) = FINAL.all("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0  # runAsNonRoot can only verify a numeric uid


def test_both_stages_use_one_supported_python_pinned_by_digest() -> None:
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    version = GLOBAL_ARGS["PYTHON_VERSION"]
    assert tuple(map(int, version.split("."))) >= tuple(map(int, minimum.split(".")))
    assert [stage.image for stage in STAGES] == ["${BASE_IMAGE}", "scratch"]
    base = GLOBAL_ARGS["BASE_IMAGE"]
    assert re.fullmatch(rf"python:{re.escape(version)}\.\d+-slim-bookworm@sha256:[0-9a-f]{{64}}",
                        base), base
    # constraints.txt was resolved for the same Python minor version as the image's.
    header = (ROOT / "constraints.txt").read_text().splitlines()[0]
    assert f"for Python {version};" in header


def test_labels_name_the_source_and_the_package_version() -> None:
    args = dict(a.partition("=")[::2] for a in FINAL.all("ARG"))
    labels = dict(re.findall(r'(\S+)="([^"]*)"', " ".join(FINAL.all("LABEL"))))
    version = labels["org.opencontainers.image.version"].replace("${VERSION}", args["VERSION"])
    assert version == PYPROJECT["project"]["version"]
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.licenses"] == PYPROJECT["project"]["license"]


def test_every_install_is_hash_checked_or_the_local_package() -> None:
    """pip refuses --require-hashes for a local directory: the locked files come first,
    checked against their hashes, then kpysched itself with --no-deps and the locked
    build backend (--no-build-isolation: an isolated build fetches one unchecked)."""
    venv = _venv_of(STAGES[0].all("RUN"))
    for steps in (_pip_installs(STAGES[0].all("RUN"), f"{venv}/bin/python"),
                  _pip_installs([SETUP_SCRIPT.read_text()], ".venv/bin/python")):
        locked, *local = steps
        assert {"--require-hashes", "-r"} <= set(locked), locked
        for args in local:
            assert {"--no-deps", "--no-build-isolation"} <= set(args), args
            assert not any(a in ("-r", "-c") or "==" in a for a in args), args


def test_the_image_lock_is_sent_to_the_build() -> None:
    patterns = ignore_patterns()
    assert not dockerignored("constraints-image.txt", patterns)
    assert not dockerignored("scripts/image_rootfs.py", patterns)


def test_the_final_image_runs_no_shell() -> None:
    """FROM scratch with only the staged root: no shell to run a shell-form RUN, CMD or
    ENTRYPOINT, so each is exec form, and a build-time check proves no shell or pip."""
    assert FINAL.image == "scratch"
    for keyword in ("RUN", "CMD", "ENTRYPOINT"):
        for args in FINAL.all(keyword):
            assert isinstance(json.loads(args), list), f"{keyword} {args}: shell form"
    (check,) = FINAL.all("RUN")
    assert "/bin/sh" in check and "find_spec('pip') is None" in check
    assert "import kpysched.app" in check


def test_the_chart_runs_nothing_in_the_container_but_the_entrypoint() -> None:
    # No command override, no exec probe, no lifecycle hook: the image has no shell.
    deployment = (CHART_TEMPLATES / "deployment.yaml").read_text()
    for needs_a_binary in ("command:", "exec:", "lifecycle:"):
        assert needs_a_binary not in deployment
    assert deployment.count("httpGet:") >= 2  # liveness and readiness probes
