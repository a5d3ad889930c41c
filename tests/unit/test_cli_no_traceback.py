"""No Python traceback on a normal exit or a reported error anywhere in the CLI
(issue 40): each subcommand's error paths, and Ctrl-C of `kpysched run` while it
retries an API server that does not answer. Each must exit with its documented code and
say what went wrong in one line, never "Traceback"."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KPYSCHED = [sys.executable, "-m", "kpysched.cli"]

UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def unreachable(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(UNREACHABLE_KUBECONFIG)
    return path


@pytest.mark.parametrize(("args", "code", "says"), [
    (["run", "--config", "/nonexistent"], 2, "/nonexistent: cannot read the file"),
    (["run", "--bogus"], 2, "unknown flag: --bogus"),
    (["explain"], 2, "the following arguments are required"),
    (["explain", "ns/p", "--kubeconfig", "/nonexistent"], 3,
     "kubeconfig /nonexistent: no such file"),
    (["explain", "ns/p", "-n", "other"], 2, "names namespace ns, -n says other"),
    (["snapshot", "--kubeconfig", "/nonexistent"], 2, "kubeconfig /nonexistent: no such file"),
    (["simulate", "--pods", "/nonexistent"], 2, "/nonexistent: No such file or directory"),
    (["bogus"], 2, "kpysched version"),
    (["version"], 0, "kpysched "),
])
def test_an_error_is_one_line_not_a_traceback(args: list[str], code: int, says: str,
                                             tmp_path: Path) -> None:
    result = subprocess.run([*KPYSCHED, *args], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == code, output
    assert says in output


@pytest.mark.parametrize("command", [
    ["explain", "ns/p", "--scheduler-url", "https://127.0.0.1:1"],
    ["snapshot"],
])
def test_an_unreachable_server_is_reported_without_a_traceback(
        command: list[str], unreachable: Path, tmp_path: Path) -> None:
    result = subprocess.run([*KPYSCHED, *command, "--kubeconfig", str(unreachable)],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode in (2, 3), output
    assert "127.0.0.1:1" in output or "connect" in output.lower(), output


def _interrupted_run(directory: Path, flags: list[str], waiting_for: str) -> tuple[str, int]:
    """Start `kpysched run` against an unreachable API server, Ctrl-C it once its log
    says `waiting_for`; what it printed in all, and its exit code."""
    process = subprocess.Popen(
        [*KPYSCHED, "run", *flags, "--secure-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=directory)
    try:
        deadline = time.monotonic() + 30
        assert process.stdout is not None
        seen = ""
        while waiting_for not in seen and time.monotonic() < deadline:
            seen += process.stdout.readline()
        assert waiting_for in seen, seen
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return seen + rest, process.returncode


def test_ctrl_c_of_run_stops_it_cleanly(unreachable: Path, tmp_path: Path) -> None:
    # The release given, so it starts at once: up, and retrying its informers' lists.
    output, code = _interrupted_run(
        tmp_path, ["--kubeconfig", str(unreachable), "--emulated-version=1.37"],
        "informer.list_failed")
    assert "Traceback" not in output, output
    assert code == 0, output
    assert "scheduler.stopped" in output


def test_ctrl_c_while_run_waits_for_the_api_servers_version(unreachable: Path,
                                                            tmp_path: Path) -> None:
    # No release given: it asks the API server's /version first, and keeps asking.
    output, code = _interrupted_run(
        tmp_path, ["--kubeconfig", str(unreachable)], "release.waiting_for_api_server")
    assert "Traceback" not in output, output
    assert code == 0, output
