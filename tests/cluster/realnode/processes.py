"""Start and stop the node's daemons, and end leftover pod processes by their pid."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from tests.cluster.processes import alive


def spawn(command: list[str], log_path: Path, env: Mapping[str, str] | None = None) -> int:
    """Start in a session of its own, so the node outlives the `up` command."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   env=dict(env) if env is not None else None)
    return process.pid


def stop(pid: int, timeout: float = 20.0, *, group: bool = True) -> None:
    """SIGTERM (the process group when `group`), then SIGKILL after `timeout`."""
    def send(sig: signal.Signals) -> None:
        try:
            if group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            pass

    if not alive(pid):
        return
    send(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    send(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def shims_of(containerd_socket: Path) -> list[int]:
    """Pids of the runc shims that our containerd (by its socket) started.

    Shims daemonize into sessions of their own and containerd 2.x records no pid
    for them, so stopping containerd leaves them running. Each one's command line
    names the containerd socket it serves, which is unique to this node.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if (Path(argv[0]).name == "containerd-shim-runc-v2" and "-address" in argv
                and argv[argv.index("-address") + 1:][:1] == [str(containerd_socket)]):
            found.append(int(entry.name))
    return found


def kill_recorded(directory: Path) -> None:
    """SIGKILL every container init process whose pid runc recorded below `directory`."""
    if not directory.is_dir():
        return
    for pid_file in directory.rglob("init.pid"):
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if pid > 1 and alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
