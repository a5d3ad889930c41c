"""The secure port's front process for real: ServerThread with TLS starts
`python -m kpysched.serving.front`, which holds the port; the scheduler process only
serves the front's Unix socket. No timing is asserted: waits are bounded polls."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from kpysched.metrics import SchedulerMetrics
from kpysched.serving import DelegationOptions, TlsOptions
from kpysched.serving.server import Server, ServerConfig
from kpysched.serving.server_thread import ServerThread

WAIT_SECONDS = 60.0
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE


def _config(port: int = 0, tls: TlsOptions | None = None) -> ServerConfig:
    return ServerConfig("127.0.0.1", port, tls=tls or TlsOptions(), access=DelegationOptions())


@pytest.fixture
def served() -> Iterator[ServerThread]:
    thread = ServerThread(Server(_config(), SchedulerMetrics(process_metrics=False)))
    thread.start()
    yield thread
    thread.stop()


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_SECONDS:.0f}s: {what}")
        time.sleep(0.05)


def _listening_pids(port: int) -> set[int]:
    """The processes holding the TCP socket that listens on `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    owners = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        if links & inodes:
            owners.add(int(pid))
    return owners


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie waits only for its reaper


async def _flood(url: str, requests: int) -> dict[int, int]:
    """Bogus tokens on a path that needs authorization: each one refused."""
    codes: dict[int, int] = {}
    async with aiohttp.ClientSession() as session:
        for _ in range(requests):
            async with session.get(url + "/metrics", ssl=INSECURE, headers={
                    "Authorization": f"Bearer {uuid.uuid4().hex}"}) as response:
                await response.read()
                codes[response.status] = codes.get(response.status, 0) + 1
    return codes


async def _status(url: str, path: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(url + path, ssl=INSECURE) as r:
        return r.status


def test_the_port_is_held_by_the_front_process(served: ServerThread) -> None:
    assert served.front_pid is not None
    assert served.url.startswith("https://127.0.0.1:")
    assert _listening_pids(served.port) == {served.front_pid}


def test_an_unauthenticated_flood_never_reaches_the_scheduler_process(
        served: ServerThread) -> None:
    metrics = served.backend_metrics
    assert metrics is not None
    codes = asyncio.run(_flood(served.url, 200))
    assert codes == {403: 200}
    assert metrics.requests == 0
    # The way through is open to what is allowed: the probes' paths.
    assert asyncio.run(_status(served.url, "/healthz")) == 200
    assert metrics.requests == 1


def test_a_front_that_dies_is_started_again_on_the_same_port(served: ServerThread) -> None:
    first, port = served.front_pid, served.port
    assert first is not None
    metrics = served.backend_metrics
    assert metrics is not None
    os.kill(first, signal.SIGKILL)
    _wait_for(lambda: metrics.restarts == 1 and served.front_pid != first,
              "the front restarted")
    assert served.port == port
    _wait_for(lambda: asyncio.run(_status(served.url, "/healthz")) == 200,
              "the restarted front serves")
    assert "kpysched_serving_front_up 1.0" in metrics.render().decode()


def test_a_port_in_use_stops_start_up_as_in_process() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        thread = ServerThread(Server(_config(port), SchedulerMetrics(process_metrics=False)))
        with pytest.raises(OSError, match="ddress already in use") as raised:
            thread.start()
    assert raised.value.errno == errno.EADDRINUSE
    # Nothing left behind: the backend's thread stopped with the start-up.
    assert not [t for t in threading.enumerate() if t.name == "kpysched-http"]


def test_a_bad_certificate_stops_start_up_with_the_in_process_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    tls = TlsOptions(cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")

    async def in_process() -> BaseException:
        try:
            await Server(_config(tls=tls), SchedulerMetrics(process_metrics=False)).start()
        except Exception as error:
            return error
        raise AssertionError("started with a bad certificate")

    expected = asyncio.run(in_process())
    thread = ServerThread(Server(_config(tls=tls), SchedulerMetrics(process_metrics=False)))
    with pytest.raises(type(expected)) as raised:
        thread.start()
    assert str(raised.value) == str(expected)


def test_the_front_dies_with_the_scheduler_process() -> None:
    script = textwrap.dedent("""
        import time
        from kpysched import logs
        logs.configure()  # to stderr, leaving stdout for the pid
        from kpysched.metrics import SchedulerMetrics
        from kpysched.serving import DelegationOptions, TlsOptions
        from kpysched.serving.server import Server, ServerConfig
        from kpysched.serving.server_thread import ServerThread
        thread = ServerThread(Server(ServerConfig("127.0.0.1", 0, tls=TlsOptions(),
                                                  access=DelegationOptions()),
                                     SchedulerMetrics(process_metrics=False)))
        thread.start()
        print(thread.front_pid, flush=True)
        time.sleep(600)
    """)
    scheduler = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, cwd=Path(__file__).parents[3])
    assert scheduler.stdout is not None
    try:
        front = int(scheduler.stdout.readline())
        assert not _gone(front)
    finally:
        scheduler.kill()
        scheduler.wait()
    _wait_for(lambda: _gone(front), "the front exited after its parent was killed")
