"""A newcomer's first run, exactly as README shows it (issue 40's acceptance).

README's "Run it locally" section is read here, not copied: its run command starts in the
background, then its kubectl lines for the example pod run in order, then its explain
command, which must print the pod's decision. The only change made to README's lines is
where the local cluster lives: run-local.sh and scripts/kubectl honour
KPYSCHED_LOCAL_DIR and KPYSCHED_LOCAL_PORT, so this run gets a directory and a secure port
of its own and a developer's own `.cluster/` and port 10259 are never touched; the explain
line's `.cluster/` and `127.0.0.1:10259` are rewritten to match. Everything it started is
stopped at the end (kpysched by SIGTERM to its process group, the cluster by
`tests.cluster down`).
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import readme_commands
from tests.cluster.processes import free_port

ROOT = readme_commands.ROOT
# A cold cache builds the pinned binaries first (15 minutes or more on 2 cores).
FIRST_START_TIMEOUT = 45 * 60
COMMAND_TIMEOUT = 120
STOP_TIMEOUT = 30
README_STATE_DIR = ".cluster/"
README_SCHEDULER = "127.0.0.1:10259"


@dataclass
class LocalRun:
    process: subprocess.Popen[bytes]
    log: Path
    state: Path
    port: int
    env: dict[str, str]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def fail(self, why: str) -> None:
        tail = "\n".join(self.output().splitlines()[-60:])
        pytest.fail(f"{why}\n--- run-local.sh output (last lines) ---\n{tail}")


def _wait_ready(run: LocalRun, printed: str) -> None:
    """Until run-local.sh has printed its hints (the cluster is up) and kpysched's
    /readyz answers ok; fails at once when run-local.sh exits."""
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + FIRST_START_TIMEOUT
    while time.monotonic() < deadline:
        if run.process.poll() is not None:
            run.fail(f"run-local.sh exited with {run.process.returncode} before kpysched was ready")
        if printed in run.output():
            try:
                url = f"https://127.0.0.1:{run.port}/readyz"
                with urllib.request.urlopen(url, context=unverified, timeout=5) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except (urllib.error.URLError, OSError):
                pass
        time.sleep(1)
    run.fail(f"kpysched was not ready within {FIRST_START_TIMEOUT} s")


def _stop(run: LocalRun) -> None:
    if run.process.poll() is None:
        os.killpg(run.process.pid, signal.SIGTERM)
        try:
            run.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait(STOP_TIMEOUT)
    subprocess.run([sys.executable, "-m", "tests.cluster", "down", "--dir", str(run.state)],
                   cwd=ROOT, env=run.env, check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


@pytest.fixture
def local_run(tmp_path: Path) -> Iterator[tuple[LocalRun, str]]:
    run_command, _, _ = readme_commands.local_run()
    state, port = tmp_path / "cluster", free_port()
    env = {**os.environ, "KPYSCHED_LOCAL_DIR": str(state), "KPYSCHED_LOCAL_PORT": str(port)}
    log = tmp_path / "run-local.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(["bash", "-c", run_command], cwd=ROOT, env=env,
                                   stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    run = LocalRun(process, log, state, port, env)
    try:
        yield run, run_command
    finally:
        _stop(run)


def _shell(run: LocalRun, command: str) -> str:
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=run.env,
                            capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if result.returncode != 0:
        run.fail(f"README's `{command}` exited {result.returncode}:\n"
                 f"{result.stdout}\n{result.stderr}")
    return result.stdout


def _ours(command: str, run: LocalRun) -> str:
    """README's explain line with this run's state directory and port."""
    for token in (README_STATE_DIR, README_SCHEDULER):
        if token not in command:
            pytest.fail(f"README's explain command no longer names {token!r} (the local run's "
                        f"state and port, which this test moves): {command}")
    return (command.replace(README_STATE_DIR, f"{run.state}/")
            .replace(README_SCHEDULER, f"127.0.0.1:{run.port}"))


def test_readme_local_run_then_explain(local_run: tuple[LocalRun, str]) -> None:
    run, run_command = local_run
    assert run_command == "bash scripts/run-local.sh"
    _, pod_lines, explain_lines = readme_commands.local_run()
    _wait_ready(run, "kpysched explain default/hello")

    outputs = [_shell(run, line) for line in pod_lines]
    assert "Running" in outputs[-1], outputs
    assert "kwok-node-" in outputs[-1], outputs

    explained = "".join(_shell(run, _ours(line, run)) for line in explain_lines)
    assert "Pod default/hello" in explained, explained
    assert "Bound on node kwok-node-" in explained, explained
    assert "Traceback" not in explained, explained

    phase = _shell(run, "scripts/kubectl get pod hello -o jsonpath='{.status.phase}'")
    assert phase == "Running", phase
    assert run.process.poll() is None, "kpysched stopped while README's lines ran"
    assert "Traceback" not in run.output(), run.output()
