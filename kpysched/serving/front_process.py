"""The scheduler process's hold on the secure port's front process
(kpysched.serving.front): starts it, raises its start-up error as the in-process server
would have (a bad certificate, the port in use), and starts it again when it exits.

While the front is down the port is closed: kubelet's probes fail to connect, which
it counts as failures, so readiness takes the replica out of its Service (scrapes and
the aggregated decisions API go to replicas that can answer) and liveness restarts the
container only if the front stays down for the probe's whole failure window (30 s in
the chart), longer than the restart backoff here. The scheduling loop and leader
election go on meanwhile: the port is not on their path. Each exit is logged
(`front.exited`) and counted (kpysched_serving_front_restarts_total,
kpysched_serving_front_up)."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import structlog

import kpysched
from kpysched.serving.errors import ServingError
from kpysched.serving.metrics import BackendMetrics

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kpysched.serving.server import ServerConfig

log = structlog.get_logger(__name__)

# Imports, TLS set-up and the delegated clients' configmap look-ups.
START_TIMEOUT_SECONDS: Final = 30.0
# Restart backoff: doubling from the first to the last, and back to the first once a
# front has served for RESET_AFTER_SECONDS. The last stays well inside the chart's
# liveness window (3 probes 10 s apart), so a crash is healed before kubelet acts.
FIRST_BACKOFF_SECONDS: Final = 0.5
MAX_BACKOFF_SECONDS: Final = 8.0
RESET_AFTER_SECONDS: Final = 60.0
STOP_TIMEOUT_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class FrontSpec:
    """What the front is started with, pickled on its stdin (the front trusts its
    parent entirely)."""

    config: ServerConfig  # the secure port: address, TLS, delegation, limits
    backend_socket: Path
    parent_pid: int
    log_level: str = "info"
    log_format: str = "auto"


def started(port: int) -> dict[str, Any]:
    return {"port": port}


def failed(error: BaseException) -> dict[str, Any]:
    if isinstance(error, OSError):
        return {"error": "OSError", "errno": error.errno,
                "message": error.strerror or str(error)}
    return {"error": type(error).__name__, "message": str(error)}


def _raise(outcome: dict[str, Any]) -> None:
    """The front's start-up error, as the in-process server raised it."""
    kind, message = outcome.get("error"), str(outcome.get("message", ""))
    if kind == "OSError":
        errno = outcome.get("errno")
        raise OSError(errno, message) if isinstance(errno, int) else OSError(message)
    if kind == "ValueError":
        raise ValueError(message)
    if kind == "ServingError":
        raise ServingError(message)
    raise ServingError(f"the secure port's front process failed to start: {kind}: {message}")


def default_command() -> tuple[str, ...]:
    """This interpreter on this kpysched, wherever it was imported from (-P: not the
    working directory's)."""
    return (sys.executable, "-P", "-m", "kpysched.serving.front")


def _environment() -> dict[str, str]:
    root = str(Path(kpysched.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    return env


class FrontProcess:
    def __init__(self, spec: FrontSpec, metrics: BackendMetrics,
                 command: Sequence[str] | None = None) -> None:
        self._spec = spec
        self._metrics = metrics
        self._command = tuple(command) if command is not None else default_command()
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("front process not started")
        return self._port

    @property
    def pid(self) -> int | None:
        process = self._process
        return None if process is None else process.pid

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Returns once the front listens; raises its start-up error otherwise."""
        process, port = self._spawn(self._spec, timeout)
        self._process, self._port = process, port
        self._metrics.front_up(True)
        log.info("front.started", pid=process.pid, port=port)
        # Restarts are started from this thread; the front's death signal follows the
        # thread that started it, so this one lives as long as the front may.
        self._watcher = threading.Thread(target=self._watch, name="kpysched-front-watch",
                                         daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            process = self._process
        if process is not None:
            _terminate(process)
        if self._watcher is not None:
            self._watcher.join(STOP_TIMEOUT_SECONDS)
        self._metrics.front_up(False)

    def _spawn(self, spec: FrontSpec, timeout: float) -> tuple[subprocess.Popen[bytes], int]:
        process = subprocess.Popen(self._command, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, env=_environment(),
                                   close_fds=True)
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(pickle.dumps(spec))
            process.stdin.close()
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            line = process.stdout.readline() if ready else b""
            process.stdout.close()
            if not ready:
                raise ServingError(f"the secure port's front process did not start within "
                                   f"{timeout:.0f}s")
            if not line:
                code = process.wait(STOP_TIMEOUT_SECONDS)
                raise ServingError(f"the secure port's front process exited with code "
                                   f"{code} before listening (its log is above)")
            outcome = json.loads(line)
            if "port" not in outcome:
                _raise(outcome)
        except BaseException:
            _terminate(process)
            raise
        return process, int(outcome["port"])

    def _watch(self) -> None:
        delay = FIRST_BACKOFF_SECONDS
        since = time.monotonic()
        while True:
            with self._lock:
                process = self._process
            assert process is not None
            code = process.wait()
            self._metrics.front_up(False)
            if self._stopping.is_set():
                return
            if time.monotonic() - since > RESET_AFTER_SECONDS:
                delay = FIRST_BACKOFF_SECONDS
            log.error("front.exited", pid=process.pid, code=code, restart_in_seconds=delay)
            while True:
                if self._stopping.wait(delay):
                    return
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
                # The port it had (it may have been 0), and SO_REUSEADDR: connections
                # the dead front held may linger in TIME_WAIT on it.
                spec = replace(self._spec, config=replace(
                    self._spec.config, port=self.port, reuse_address=True))
                try:
                    with self._lock:
                        if self._stopping.is_set():
                            return
                        self._process, _ = self._spawn(spec, START_TIMEOUT_SECONDS)
                except (OSError, ValueError, ServingError) as error:
                    log.error("front.restart_failed", reason=str(error),
                              retry_in_seconds=delay)
                    continue
                break
            since = time.monotonic()
            self._metrics.front_restarted()
            self._metrics.front_up(True)
            log.info("front.restarted", pid=self._process.pid, port=self.port,
                     restarts=self._metrics.restarts)


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(STOP_TIMEOUT_SECONDS)
