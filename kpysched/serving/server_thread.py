"""The Server on a thread of its own, and with TLS its front process (kpysched.serving.front)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import structlog

from kpysched.serving import cpu_budget
from kpysched.serving.front_process import FrontProcess, FrontSpec
from kpysched.serving.metrics import BackendMetrics
from kpysched.serving.server import Server, url_of


class ServerThread:
    """Runs a Server on a thread with its own event loop.

    The scheduling loop is CPU-bound Python on the main event loop; if a plugin
    blocks it, a server on that same loop could not answer at all. On its own
    thread the server still answers, so /livez reports the stall with a reason
    instead of timing out, and /metrics stays scrapeable. Checks and scrape hooks
    only read plain counters and lengths, which is safe under the GIL.

    With TLS (the secure port), the port itself belongs to a front process
    (kpysched.serving.front) that does TLS, authentication and authorization, so a
    flood of unauthenticated requests never takes the GIL from the scheduling loop;
    this thread then serves the front's authorized requests on a Unix socket in a
    private directory. `front_command` replaces how the front is run (tests).
    Without TLS (--insecure-serving: loopback plain HTTP) the thread serves the port.
    """

    def __init__(self, server: Server, *,
                 front_command: Sequence[str] | None = None) -> None:
        self._server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._front_command = front_command
        self._front: FrontProcess | None = None
        self._socket_directory: Path | None = None
        self._public = server.config

    @property
    def port(self) -> int:
        return self._server.port if self._front is None else self._front.port

    @property
    def url(self) -> str:
        return url_of(self._public, self.port)

    @property
    def front_pid(self) -> int | None:
        """The front process's pid; None when the port is served on this thread."""
        return None if self._front is None else self._front.pid

    @property
    def backend_metrics(self) -> BackendMetrics | None:
        return self._server.backend_metrics

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._server.start())
        except BaseException as error:  # reported to start() in the caller's thread
            self._error = error
            self._started.set()
            loop.close()
            return
        self._started.set()
        # Behind the front only authorized callers reach this thread, yet a scrape of
        # a large registry or a busy /debug client still costs the loop the GIL.
        governor = loop.create_task(cpu_budget.enforce(
            cpu_budget.CpuBudget(), self._server.metrics.serving_throttled))
        try:
            loop.run_forever()
        finally:
            governor.cancel()
            loop.run_until_complete(self._server.stop())
            loop.close()

    def start(self, timeout: float = 10.0) -> None:
        if self._public.tls is not None:
            # mkdtemp makes it 0700: only this user can reach the socket inside, which
            # is what lets the backend trust the front's headers (serving.trusted).
            self._socket_directory = Path(tempfile.mkdtemp(prefix="kpysched-serving-"))
            self._server.behind_front(self._socket_directory / BACKEND_SOCKET_NAME)
        self._thread = threading.Thread(target=self._run, name="kpysched-http", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the HTTP server did not start within {timeout:.0f}s")
        if self._error is not None:
            self._remove_socket_directory()
            raise self._error
        if self._socket_directory is not None:
            metrics = self._server.backend_metrics
            assert metrics is not None
            front = FrontProcess(
                FrontSpec(self._public, self._socket_directory / BACKEND_SOCKET_NAME,
                          os.getpid(), *_log_settings()),
                metrics, self._front_command)
            try:
                front.start()
            except BaseException:
                self.stop(timeout)
                raise
            self._front = front

    def stop(self, timeout: float = 10.0) -> None:
        if self._front is not None:
            self._front.stop()
            self._front = None
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        self._remove_socket_directory()

    def _remove_socket_directory(self) -> None:
        if self._socket_directory is not None:
            shutil.rmtree(self._socket_directory, ignore_errors=True)
            self._socket_directory = None


BACKEND_SOCKET_NAME: Final = "backend.sock"


def _log_settings() -> tuple[str, str]:
    """The level and format this process logs with, for the front to log alike."""
    level = structlog.get_logger().bind().get_effective_level()
    names = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning"}
    processors = structlog.get_config()["processors"]
    json_format = any(isinstance(p, structlog.processors.JSONRenderer) for p in processors)
    return names.get(level, "error"), "json" if json_format else "console"
