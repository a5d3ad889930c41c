"""The HTTP endpoints kube-scheduler serves: /healthz, /livez, /readyz, /metrics and
/configz (kpysched.serving.configz), and kpysched's /debug/decisions/<namespace>/<pod>
when decision records are served and /debug/cache when the cache dump is
(kpysched.cache.dump).

Served over TLS with delegated authentication and authorization when configured
(kpysched.serving holds how); this module is about the endpoints themselves.

Health endpoints answer as k8s.io/apiserver's healthz handler does: "ok" with 200
when every check passes; otherwise 500 with one "[+]name ok" / "[-]name failed: reason"
line per check and "<endpoint> check failed". `?verbose` lists the checks on success
too, `?exclude=name` skips one, and `/<endpoint>/<name>` runs a single check.
As upstream, the aggregate says "reason withheld" (the endpoints are open to anyone,
kubelet probes included, and a reason such as how many pods wait is not theirs to
know) and the reason goes to the log; unlike upstream, a caller authorised to GET
`/<endpoint>/<name>`, which states the reason anyway, sees it in the aggregate too.

Checks run on every probe inside the event loop: they must be cheap and synchronous.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import msgspec
import structlog
from aiohttp import typedefs as aiohttp_typedefs
from aiohttp import web

from kpysched.cache.dump import PATH as CACHE_PATH
from kpysched.decisions import api as decisions_api
from kpysched.decisions.endpoint import PATH_PREFIX
from kpysched.metrics import CONTENT_TYPE, SchedulerMetrics
from kpysched.serving import AccessControl, DelegationOptions, TlsOptions, backend, configz
from kpysched.serving.access import USER, Handler
from kpysched.serving.authz import AuthorizationError
from kpysched.serving.limits import ServingLimits, raise_open_files_limit
from kpysched.serving.listener import Listener, bind, bind_unix
from kpysched.serving.metrics import BackendMetrics
from kpysched.serving.published import INTERVAL_SECONDS as PUBLISHED_INTERVAL_SECONDS
from kpysched.serving.reload import CHECK_INTERVAL_SECONDS, TlsReloader

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
    # Deadlines and caps; upstream's by default, tests shorten them.
    limits: ServingLimits = field(default_factory=ServingLimits.from_environment)
    # How often the certificate and CA files are checked for changes.
    certificate_check_seconds: float = CHECK_INTERVAL_SECONDS
    # How often the client CA and front-proxy settings taken from the cluster's
    # configmap are read again.
    published_check_seconds: float = PUBLISHED_INTERVAL_SECONDS
    # Set: serve on this Unix socket, behind the front process that owns the secure
    # port (kpysched.serving.front): no TLS, no authentication of its own; the front's
    # headers (kpysched.serving.trusted) say who asks. bind_address, port, tls and
    # access are then the front's.
    backend_socket: Path | None = None


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
        effective_config: Mapping[str, Any] | None = None,
    ) -> None:
        """`decisions` (a pod's decision records as JSON, read on the server's thread, so
        thread-safe) serves /debug/decisions; `cache_dump` (a future of the dump, taken
        on the scheduler's loop) serves /debug/cache; `effective_config` (the document
        --write-config-to writes) serves /configz. None serves no such path."""
        self._setup(config, metrics)
        app = self._app
        for endpoint, checks in zip(ENDPOINTS, (healthz, livez, readyz), strict=True):
            _install(app, endpoint, (PING, *checks), self.may_read_reasons)
        app.router.add_get("/metrics", self._serve_metrics)
        if decisions is not None:
            app.router.add_get(PATH_PREFIX + "/{namespace}/{pod}", _decisions(decisions))
            decisions_api.install(app, decisions)
        if cache_dump is not None:
            app.router.add_get(CACHE_PATH, _cache(cache_dump))
        if effective_config is not None:
            configz.install(app, effective_config)

    def _setup(self, config: ServerConfig, metrics: SchedulerMetrics | None,
               outermost: Sequence[Middleware] = ()) -> None:
        self._config = config
        self._metrics = metrics
        # Set when serving behind the front process (behind_front).
        self.backend_metrics: BackendMetrics | None = None
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._access: AccessControl | None = None
        self._listener: Listener | None = None
        self._tls: TlsReloader | None = None
        self._app = web.Application(middlewares=[*outermost, self._deadlines, self._guard])

    @classmethod
    def front(cls, config: ServerConfig, handler: Callable[[Server], Handler],
              outermost: Middleware) -> Server:
        """The secure port of the front process: the same TLS, authentication,
        authorization, limits and reloading as in-process, with every authorized
        request handed to `handler(server)` (kpysched.serving.forward) and every
        response seen by `outermost`."""
        server = cls.__new__(cls)
        server._setup(config, None, (outermost,))
        server._app.router.add_route("*", "/{tail:.*}", handler(server))
        return server

    @property
    def config(self) -> ServerConfig:
        return self._config

    def behind_front(self, socket_path: Path) -> None:
        """Serve on `socket_path` for the front process instead of on the port
        (before start())."""
        if self._runner is not None:
            raise RuntimeError("server already started")
        self._config = replace(self._config, backend_socket=socket_path)
        self.backend_metrics = BackendMetrics()

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def url(self) -> str:
        return url_of(self._config, self.port)

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("server already started")
        config = self._config
        # Built on the serving loop: its API clients belong to that loop.
        behind_front = config.backend_socket is not None
        access = None if config.access is None or behind_front \
            else await AccessControl.open(config.access)
        limits = config.limits
        raise_open_files_limit()  # kpysched.cli did at start; here for embedders and tests
        # keepalive_timeout is the idle deadline; aiohttp's per-line limits are raised to
        # the whole header's, which the listener enforces as net/http's MaxHeaderBytes.
        runner = web.AppRunner(self._app, access_log=None,
                               keepalive_timeout=limits.idle_timeout,
                               max_line_size=limits.max_header_bytes,
                               max_field_size=limits.max_header_bytes,
                               max_headers=limits.max_header_bytes // 4)
        listener: Listener | None = None
        try:
            tls = None if config.tls is None or behind_front else TlsReloader.open(
                config.tls, config.bind_address, access, config.access)
            ssl_context = None if tls is None else tls.context
            await runner.setup()
            assert runner.server is not None
            sock = bind_unix(config.backend_socket) if config.backend_socket is not None \
                else bind(config.bind_address, config.port,
                          reuse_address=config.reuse_address, reuse_port=config.reuse_port)
            listener = Listener(sock, runner.server, ssl_context, limits)
            listener.start()
        except BaseException:
            if listener is not None:
                await listener.close()
            await runner.cleanup()
            if access is not None:
                await access.close()
            raise
        if tls is not None:
            tls.start(listener.replace_ssl_context, config.certificate_check_seconds,
                      config.published_check_seconds)
        self._access = access
        self._runner = runner
        self._listener = listener
        self._tls = tls
        if behind_front:
            self._port = 0
            log.info("server.listening_for_front", socket=str(config.backend_socket))
            return
        self._port = int(sock.getsockname()[1])
        log.info("server.listening", address=config.bind_address, port=self._port,
                 tls=ssl_context is not None, authentication=access is not None,
                 client_certificates=bool(access and access.trusted_client_cas),
                 max_connections=listener.max_connections)

    async def stop(self) -> None:
        if self._tls is not None:
            await self._tls.close()
            self._tls = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
            if self._config.backend_socket is not None:
                self._config.backend_socket.unlink(missing_ok=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._port = None
        if self._access is not None:
            await self._access.close()
            self._access = None

    @property
    def metrics(self) -> SchedulerMetrics:
        if self._metrics is None:
            raise RuntimeError("the front's server keeps no scheduler metrics")
        return self._metrics

    @property
    def open_connections(self) -> int:
        return 0 if self._listener is None else self._listener.open_connections

    async def may_read_reasons(self, request: web.Request, endpoint: str,
                               names: Sequence[str]) -> set[str]:
        """The failed checks whose reasons this caller may read: those whose own path
        (/<endpoint>/<name>, which states the reason) it is authorised to GET. Without
        access control every path is open, so every reason is. Behind the front, the
        front answers (kpysched.serving.trusted.READABLE_ASKED)."""
        if self._config.backend_socket is not None:
            return backend.readable_reasons(request, names)
        if self._access is None:
            return set(names)
        user = request.get(USER)
        if user is None:
            return set()
        readable = set()
        for name in names:
            try:
                decision = await self._access.authorizer.authorize(
                    user, f"/{endpoint}/{name}", "get")
            except AuthorizationError:
                continue  # withheld: a failed review grants nothing
            if decision.allowed:
                readable.add(name)
        return readable

    @web.middleware
    async def _deadlines(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Outermost: the headers are in, so their deadline is off until the next request."""
        if self._listener is None:
            return await handler(request)
        finished = self._listener.headers_complete(request.transport)
        try:
            return await handler(request)
        finally:
            finished()

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                     ) -> web.StreamResponse:
        if self._config.backend_socket is not None:
            assert self.backend_metrics is not None
            return await backend.trusted(request, handler, self.backend_metrics)
        if self._access is None:
            return await handler(request)
        return await self._access.middleware(request, handler)

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def _serve_metrics(self, _: web.Request) -> web.Response:
        body = self.metrics.render()
        if self.backend_metrics is not None:
            body += self.backend_metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


DecisionLookup = decisions_api.DecisionLookup
Middleware = aiohttp_typedefs.Middleware
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
        found = lookup(namespace, name)
        if not found:
            body: dict[str, Any] = {
                "pod": pod, "decisions": [],
                "message": f"no scheduling decision is kept for pod {pod}: this scheduler "
                           "has not tried it since it became leader, or its record was "
                           "evicted (--decision-records)"}
            return web.json_response(body, status=404, dumps=_dumps)
        return web.json_response({"pod": pod, **found.to_json()}, dumps=_dumps)

    return handler


def _dumps(value: Any) -> str:
    return msgspec.json.encode(value).decode()


# Which of the named failed checks' reasons the request's caller may read.
ReasonsReadable = Callable[[web.Request, str, Sequence[str]], Awaitable[set[str]]]


def _install(app: web.Application, endpoint: str, checks: Sequence[HealthCheck],
             readable: ReasonsReadable) -> None:
    names = [check.name for check in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate {endpoint} check names: {names}")

    failures = _FailureLog(endpoint)

    async def root(request: web.Request) -> web.Response:
        return await _aggregate(endpoint, checks, request, readable, failures)

    app.router.add_get(f"/{endpoint}", root)
    for check in checks:
        app.router.add_get(f"/{endpoint}/{check.name}", _single(check))


class _FailureLog:
    """Logs an endpoint's failing checks with their reasons: when the failing set
    changes, else at most once per FAILURE_LOG_INTERVAL_SECONDS, since anyone may ask
    the endpoint as often as they like (upstream logs every failed probe, at V(2))."""

    def __init__(self, endpoint: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._endpoint = endpoint
        self._clock = clock
        self._last: tuple[float, frozenset[str]] | None = None
        self._unlogged = 0

    def failed(self, reasons: dict[str, str]) -> None:
        now = self._clock()
        names = frozenset(reasons)  # not the reasons: they may count seconds
        if self._last is not None and self._last[1] == names \
                and now - self._last[0] < FAILURE_LOG_INTERVAL_SECONDS:
            self._unlogged += 1
            return
        log.info("health.check_failed", endpoint=self._endpoint, checks=sorted(reasons),
                 reasons=reasons, unlogged_since=self._unlogged)
        self._last = (now, names)
        self._unlogged = 0


FAILURE_LOG_INTERVAL_SECONDS: Final = 10.0


async def _aggregate(endpoint: str, checks: Sequence[HealthCheck], request: web.Request,
                     readable: ReasonsReadable, failures: _FailureLog) -> web.Response:
    excluded = set(request.query.getall("exclude", []))
    unknown = excluded - {check.name for check in checks}
    results = {check.name: check.run() for check in checks if check.name not in excluded}
    failed = {name: reason for name, reason in results.items() if reason is not None}
    shown: set[str] = set()
    if failed:
        failures.failed(failed)
        shown = await readable(request, endpoint, list(failed))
    lines: list[str] = []
    for check in checks:
        if check.name in excluded:
            lines.append(f"[+]{check.name} excluded: ok")
        elif check.name not in failed:
            lines.append(f"[+]{check.name} ok")
        else:
            reason = failed[check.name] if check.name in shown else "reason withheld"
            lines.append(f"[-]{check.name} failed: {reason}")
    if unknown:
        quoted = ",".join(f'"{name}"' for name in sorted(unknown))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    if failed:
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


def url_of(config: ServerConfig, port: int) -> str:
    scheme = "https" if config.tls is not None else "http"
    host = config.bind_address
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"
