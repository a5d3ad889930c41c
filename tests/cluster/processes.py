"""Start, probe and stop the harness's long-running processes.

Every component (etcd, kube-apiserver, kube-controller-manager, KWOK) runs in its
own session with its output in a log file, so it outlives the command that started
it and a later `down` can stop its whole process group by pid.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.cluster import procfs

LOG_TAIL_LINES = 30


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says why."""


# Ports handed out by `free_port` are recorded here (one file per port, naming the
# process that took it) so two test workers or benchmark runs never get the same one.
PORT_RESERVATIONS = Path("/tmp/kpysched-ports")
# Below the kernel's ephemeral range: a port asked of the kernel with bind(0) comes from
# that range, and so does the source port of every outgoing connection, so a port
# released there can be taken by any connect() before the component binds it (a CI run
# lost kube-proxy's healthz port that way).
PORT_FLOOR = 20000


def _ephemeral_floor() -> int:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, PORT_FLOOR + 1000)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_listenable(ports: Iterable[int], timeout: float = 30.0) -> None:
    """Until a server could listen on each loopback port again, as Go's listeners do
    (SO_REUSEADDR: connections left in TIME_WAIT do not count). A process restarted on
    its old port right after being killed can otherwise meet it still held (seen in the
    soak: etcd's peer port, "bind: address already in use")."""
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind(("127.0.0.1", port))
                    break
                except OSError as error:
                    if time.monotonic() > deadline:
                        raise ClusterError(
                            f"port {port} still in use after {timeout:.0f}s") from error
            time.sleep(0.1)


def _reserve(port: int) -> bool:
    """Claim `port` for this process unless a live process holds it already."""
    PORT_RESERVATIONS.mkdir(mode=0o700, exist_ok=True)
    path = PORT_RESERVATIONS / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                holder = int(path.read_text() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and alive(holder):
                return False
            # The holder is gone (or wrote nothing yet and crashed): take the port over.
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as out:
            out.write(str(os.getpid()))
        return True
    return False


def free_port() -> int:
    """A loopback port no one listens on, outside the ephemeral range, that no other
    live harness process was handed."""
    rng = random.SystemRandom()
    ceiling = _ephemeral_floor()
    for _ in range(2000):
        port = rng.randrange(PORT_FLOOR, ceiling)
        if _bindable(port) and _reserve(port):
            return port
    raise ClusterError(f"no free loopback port in [{PORT_FLOOR}, {ceiling})")


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        content = Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(content[-lines:])


def spawn(command: list[str], log_path: Path) -> int:
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return process.pid


def alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False  # our own child that already exited (now reaped)
    except ChildProcessError:
        pass  # not our child: fall back to a signal probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie that is not ours still answers kill(0); /proc tells the truth.
    fields = procfs.stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def stop(pid: int, timeout: float = 15.0) -> None:
    """SIGTERM the process group, SIGKILL it if it is still there after `timeout`."""
    if not alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while alive(pid):
        time.sleep(0.05)


def insecure_tls() -> ssl.SSLContext:
    """For components that serve health on a self-signed certificate of their own."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def ca_tls(ca_file: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file)


def http_get(url: str, *, context: ssl.SSLContext | None = None,
             headers: dict[str, str] | None = None, timeout: float = 2.0,
             method: str = "GET", data: bytes | None = None) -> str:
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        body: bytes = response.read()
        return body.decode()


def wait_until(name: str, pid: int, log: str | Path, ready: Callable[[], bool],
               timeout: float) -> None:
    """Poll `ready` until it is true; fail with the log tail if the process dies or stalls.

    `ready` may raise URLError/OSError while the process is still starting up.
    """
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if not alive(pid):
            raise ClusterError(f"{name} exited during start-up; last lines of {log}:\n"
                               f"{log_tail(log)}")
        try:
            if ready():
                return
            last_error = "not ready yet"
        except urllib.error.HTTPError as error:
            last_error = f"HTTP {error.code}"
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as error:
            last_error = str(error)
        time.sleep(0.25)
    raise ClusterError(f"{name} not ready after {timeout:.0f}s ({last_error}); last lines of "
                       f"{log}:\n{log_tail(log)}")
