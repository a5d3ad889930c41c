"""The HTTP endpoints kube-scheduler serves: /healthz, /livez, /readyz and /metrics,
and kpysched's /debug/decisions/<namespace>/<pod> when decision records are served and
/debug/cache when the cache dump is (kpysched.cache.dump).

Served over TLS with delegated authentication and authorization when configured
(kpysched.serving holds how); this module is about the endpoints themselves.

Health endpoints answer as k8s.io/apiserver's healthz handler does: "ok" with 200
when every check passes; otherwise 500 with one "[+]name ok" / "[-]name failed: reason"
line per check and "<endpoint> check failed". `?verbose` lists the checks on success
too, `?exclude=name` skips one, and `/<endpoint>/<name>` runs a single check.
Upstream withholds the reason from the aggregate body; we show it, since nothing a
check reports is secret and it saves a trip to the logs.

Checks run on every probe inside the event loop: they must be cheap and synchronous.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import structlog
from aiohttp import web

from kpysched.cache.dump import PATH as CACHE_PATH
from kpysched.decisions import api as decisions_api
from kpysched.decisions.endpoint import PATH_PREFIX
from kpysched.metrics import CONTENT_TYPE, SchedulerMetrics
from kpysched.serving import AccessControl, DelegationOptions, TlsOptions, server_context

log = structlog.get_logger(__name__)

# kube-scheduler's secure port.
DEFAULT_PORT: Final = 10259
ENDPOINTS: Final = ("healthz", "livez", "readyz")


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    run: Callable[[], str | None]  # None when healthy, else the reason it is not

    @classmethod
    def of(cls, name: str, healthy: Callable[[], bool], reason: str) -> HealthCheck:
        """A check from a predicate, failing with a fixed reason."""
        return cls(name, lambda: None if healthy() else reason)


PING: Final = HealthCheck("ping", lambda: None)


def progress_check(last_progress: Callable[[], float], waiting: Callable[[], int],
                   stall_seconds: float,
                   clock: Callable[[], float] = time.monotonic) -> HealthCheck:
    """Fails while pods wait to be scheduled yet the loop has made no progress for
    `stall_seconds`: a wedged loop, which only a restart will cure.

    `last_progress` is a `clock()` reading of the loop's last decision; `waiting` counts
    the pods the loop could pop now (the active queue; zero while not leading)."""

    def run() -> str | None:
        pending = waiting()
        idle = clock() - last_progress()
        if pending > 0 and idle > stall_seconds:
            return (f"scheduling loop made no progress for {idle:.0f}s "
                    f"while {pending} pods wait")
        return None

    return HealthCheck("sched-progress", run)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    bind_address: str = "0.0.0.0"
    port: int = DEFAULT_PORT  # 0 picks a free port; see Server.port
    tls: TlsOptions | None = None  # None: plain HTTP (--insecure-serving, tests)
    access: DelegationOptions | None = None  # None: no authentication or authorization
    reuse_address: bool = False  # --permit-address-sharing (SO_REUSEADDR)
    reuse_port: bool = False  # --permit-port-sharing (SO_REUSEPORT)


class Server:
    """Start with `async with Server(...)` or start()/stop()."""

    def __init__(
        self,
        config: ServerConfig,
        metrics: SchedulerMetrics,
        *,
        healthz: Sequence[HealthCheck] = (),
        livez: Sequence[HealthCheck] = (),
        readyz: Sequence[HealthCheck] = (),
        decisions: DecisionLookup | None = None,
        cache_dump: CacheDump | None = None,
    ) -> None:
        """`decisions` (a pod's decision records as JSON, read on the server's thread, so
        thread-safe) serves /debug/decisions; `cache_dump` (a future of the dump, taken
        on the scheduler's loop) serves /debug/cache. None serves no such path."""
        self._config = config
        self._metrics = metrics
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._access: AccessControl | None = None
        app = web.Application(middlewares=[self._guard])
        for endpoint, checks in zip(ENDPOINTS, (healthz, livez, readyz), strict=True):
            _install(app, endpoint, (PING, *checks))
        app.router.add_get("/metrics", self._serve_metrics)
        if decisions is not None:
            app.router.add_get(PATH_PREFIX + "/{namespace}/{pod}", _decisions(decisions))
            decisions_api.install(app, decisions)
        if cache_dump is not None:
            app.router.add_get(CACHE_PATH, _cache(cache_dump))
        self._app = app

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def url(self) -> str:
        scheme = "https" if self._config.tls is not None else "http"
        host = self._config.bind_address
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        elif ":" in host:
            host = f"[{host}]"
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("server already started")
        config = self._config
        # Built on the serving loop: its API clients belong to that loop.
        access = None if config.access is None else await AccessControl.open(config.access)
        runner = web.AppRunner(self._app, access_log=None)
        try:
            ssl_context = None if config.tls is None else server_context(
                config.tls, config.bind_address, access.client_ca if access else None)
            await runner.setup()
            site = web.TCPSite(runner, config.bind_address, config.port,
                               ssl_context=ssl_context, reuse_address=config.reuse_address,
                               reuse_port=config.reuse_port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            if access is not None:
                await access.close()
            raise
        self._access = access
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        log.info("server.listening", address=config.bind_address, port=self._port,
                 tls=ssl_context is not None, authentication=access is not None,
                 client_certificates=bool(access and access.client_ca))

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._port = None
        if self._access is not None:
            await self._access.close()
            self._access = None

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                     ) -> web.StreamResponse:
        if self._access is None:
            return await handler(request)
        return await self._access.middleware(request, handler)

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def _serve_metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=self._metrics.render(), headers={"Content-Type": CONTENT_TYPE})


DecisionLookup = decisions_api.DecisionLookup
CacheDump = Callable[[], Awaitable[dict[str, Any]]]
# Longer than any scheduling cycle: the dump waits for the loop to be free.
CACHE_DUMP_TIMEOUT_SECONDS: Final = 10.0


def _cache(dump: CacheDump) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(_: web.Request) -> web.Response:
        try:
            body = await asyncio.wait_for(dump(), CACHE_DUMP_TIMEOUT_SECONDS)
        except TimeoutError:
            return web.json_response(
                {"message": "the scheduling loop did not answer within "
                            f"{CACHE_DUMP_TIMEOUT_SECONDS:.0f}s"}, status=503)
        return web.json_response(body, dumps=_dumps)

    return handler


def _decisions(lookup: DecisionLookup) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        pod = f"{namespace}/{name}"
        found = lookup(namespace, name) or []
        if not found:
            body: dict[str, Any] = {
                "pod": pod, "decisions": [],
                "message": f"no scheduling decision is kept for pod {pod}: this scheduler "
                           "has not tried it since it became leader, or its record was "
                           "evicted (--decision-records)"}
            return web.json_response(body, status=404, dumps=_dumps)
        return web.json_response({"pod": pod, "decisions": found}, dumps=_dumps)

    return handler


def _dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _install(app: web.Application, endpoint: str, checks: Sequence[HealthCheck]) -> None:
    names = [check.name for check in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate {endpoint} check names: {names}")

    async def root(request: web.Request) -> web.Response:
        return _aggregate(endpoint, checks, request)

    app.router.add_get(f"/{endpoint}", root)
    for check in checks:
        app.router.add_get(f"/{endpoint}/{check.name}", _single(check))


def _aggregate(endpoint: str, checks: Sequence[HealthCheck],
               request: web.Request) -> web.Response:
    excluded = set(request.query.getall("exclude", []))
    unknown = excluded - {check.name for check in checks}
    lines: list[str] = []
    failed: list[str] = []
    for check in checks:
        if check.name in excluded:
            lines.append(f"[+]{check.name} excluded: ok")
            continue
        reason = check.run()
        if reason is None:
            lines.append(f"[+]{check.name} ok")
        else:
            lines.append(f"[-]{check.name} failed: {reason}")
            failed.append(check.name)
    if unknown:
        quoted = ",".join(f'"{name}"' for name in sorted(unknown))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    if failed:
        log.debug("health.check_failed", endpoint=endpoint, checks=failed)
        return _text("\n".join([*lines, f"{endpoint} check failed"]), 500)
    if "verbose" not in request.query:
        return _text("ok", 200)
    return _text("\n".join([*lines, f"{endpoint} check passed", ""]), 200)


def _single(check: HealthCheck) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(_: web.Request) -> web.Response:
        reason = check.run()
        if reason is None:
            return _text("ok", 200)
        return _text(f"internal server error: {reason}", 500)

    return handler


def _text(body: str, status: int) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


class ServerThread:
    """Runs a Server on a thread with its own event loop.

    The scheduling loop is CPU-bound Python on the main event loop; if a plugin
    blocks it, a server on that same loop could not answer at all. On its own
    thread the server still answers, so /livez reports the stall with a reason
    instead of timing out, and /metrics stays scrapeable. Checks and scrape hooks
    only read plain counters and lengths, which is safe under the GIL.
    """

    def __init__(self, server: Server) -> None:
        self._server = server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def url(self) -> str:
        return self._server.url

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
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._server.stop())
            loop.close()

    def start(self, timeout: float = 10.0) -> None:
        self._thread = threading.Thread(target=self._run, name="kpysched-http", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the HTTP server did not start within {timeout:.0f}s")
        if self._error is not None:
            raise self._error

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
