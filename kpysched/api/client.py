"""The raw-JSON request path: API writes (and a few raw reads) on a lean HTTP client.

kubernetes_asyncio builds the connection: `make_api_client` reads a kubeconfig or the
pod's service account into its ApiClient, whose connector holds the TLS setup (CA,
client certificate, verify) and the keep-alive connection pool; the informers list
and watch through that ApiClient. RawApi's requests skip its OpenAPI machinery (for
speed, and because some of its models reject valid replies, e.g. V1Binding) and its
aiohttp session, whose trust_env looked up proxy variables and .netrc in a thread for
every request (a profile put about half of kpysched's CPU per pod in that path).
Instead each ApiClient gets one pool of kept-alive HTTP/1.1 connections of ours
(kpysched/api/http11.py, with the Configuration's TLS settings and connection limit) that
never consults the environment. Closing the ApiClient, as every owner of one already
does, ends the pool: the next request finds it closed, and idle connections close
when the ApiClient is collected. A kubeconfig's proxy-url is spoken by aiohttp
instead: a session of ours on the ApiClient's connector, without trust_env. Bodies
are encoded once with msgspec.

Every request asks the Configuration for its Authorization header, so a token the
Configuration renews (the in-cluster loader's refresh hook re-reads a rotated service
account token; an exec plugin's refresher writes a new one) is used from then on.
Writes go through a client-side token bucket with upstream's clientConnection
semantics (qps, burst).
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
import msgspec
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from kpysched.api import http11
from kpysched.api.response import TRANSPORT_ERROR, ApiResponse


class TokenBucket:
    """client-go's flowcontrol: `qps` tokens per second, at most `burst` saved up."""

    def __init__(self, qps: float, burst: int) -> None:
        self._rate = qps
        self._capacity = float(max(burst, 1))
        self._tokens = self._capacity
        self._last = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self._rate <= 0:
            return  # qps <= 0 disables throttling, as in client-go
        async with self._lock:
            now = time.monotonic()
            self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
            self._last = now
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self._rate)
                self._tokens = 1.0
                self._last = time.monotonic()
            self._tokens -= 1


class RawApi:
    def __init__(self, api_client: client.ApiClient, qps: float = 50.0, burst: int = 100,
                 *, lane: str = "") -> None:
        """`lane` names a connection pool of its own on the ApiClient ("" is the
        shared one)."""
        self.api_client = api_client
        self.qps = qps
        self.burst = burst
        self.lane = lane
        self._bucket = TokenBucket(qps, burst)
        self.requests_sent = 0

    def sibling(self, lane: str | None = None) -> RawApi:
        """The same API server with a separate rate limiter of the same size, on the
        same connections or, given a `lane`, on connections of its own. kube-scheduler's
        event client shares one HTTP/2 connection with the rest, where no request waits
        for another to finish; over HTTP/1.1 each request in flight holds a connection,
        so the events get their own lane and a burst of Bindings holding every
        connection cannot starve them (the queue filled and dropped events)."""
        return RawApi(self.api_client, self.qps, self.burst,
                      lane=self.lane if lane is None else lane)

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
        timeout: float | None = 30.0,
        throttle: bool = True,
        accept: str = "application/json",
    ) -> ApiResponse:
        """`body` is sent as is when bytes, else JSON-encoded (JSON is YAML too, for an
        apply patch). Never raises for the network: no answer is status TRANSPORT_ERROR."""
        if throttle:
            await self._bucket.acquire()
        self.requests_sent += 1
        configuration = self.api_client.configuration
        headers = {"Accept": accept}
        if user_agent := self.api_client.user_agent:
            headers["User-Agent"] = user_agent  # the ApiClient's, as the informers send
        authorization = await _authorization(configuration)
        if authorization:
            headers["Authorization"] = authorization
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else msgspec.json.encode(body)
            headers["Content-Type"] = content_type
        try:
            if configuration.proxy:
                return await self._through_proxy(method, path, query, data, headers, timeout)
            pool = _pool(self.api_client, self.lane)
            head = _request_head(method, path, query, headers, pool.host_header, data)
            async with asyncio.timeout(timeout):
                reply = await pool.request(head, data)
            return ApiResponse(reply.status, reply.body)
        except (aiohttp.ClientError, TimeoutError, OSError, http11.ProtocolError) as error:
            # The API server is unreachable (restarting, network): callers treat this
            # like any failed write (a bind is requeued), so hand back a status, not a raise.
            return ApiResponse(TRANSPORT_ERROR, f"{type(error).__name__}: {error}".encode())

    async def _through_proxy(self, method: str, path: str, query: dict[str, str] | None,
                             data: bytes | None, headers: dict[str, str],
                             timeout: float | None) -> ApiResponse:
        configuration = self.api_client.configuration
        async with _session(self.api_client).request(
            method, f"{configuration.host}{path}", params=query, data=data, headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
            proxy=configuration.proxy, proxy_headers=configuration.proxy_headers,
            server_hostname=configuration.tls_server_name,
        ) as response:
            return ApiResponse(response.status, await response.read())


# Characters a request path keeps as they are (an already escaped %XX included).
_PATH_SAFE = "/:@!$&'()*+,;=%-._~"


def _request_head(method: str, path: str, query: dict[str, str] | None,
                  headers: dict[str, str], host: str, body: bytes | None) -> bytes:
    """The request line and headers, ending in the empty line. A header value with a
    line break (a token file ending in a newline, say) is refused, as Go's client
    refuses it, rather than sent as two header lines."""
    for name, value in headers.items():
        if "\r" in value or "\n" in value:
            raise http11.ProtocolError(f"the {name} header holds a line break")
    target = quote(path, safe=_PATH_SAFE)
    if query:
        target += "?" + urlencode(query)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body) if body is not None else 0}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# The pools of each ApiClient, by lane, shared by every RawApi on it and the lane.
_POOLS: weakref.WeakKeyDictionary[client.ApiClient, dict[str, http11.ConnectionPool]] = (
    weakref.WeakKeyDictionary())


def _pool(api_client: client.ApiClient, lane: str) -> http11.ConnectionPool:
    """The ApiClient's connection pool for `lane`, made on first use; closed once the
    ApiClient is (its aiohttp session is the sign kubernetes_asyncio leaves)."""
    lanes = _POOLS.setdefault(api_client, {})
    pool = lanes.get(lane)
    if pool is None:
        configuration = api_client.configuration
        parts = urlsplit(str(configuration.host))
        secure = parts.scheme == "https"
        port = parts.port or (443 if secure else 80)
        pool = http11.ConnectionPool(
            parts.hostname or "localhost", port,
            _tls_context(configuration) if secure else None,
            configuration.tls_server_name, configuration.connection_pool_maxsize,
            host_header=parts.netloc)
        lanes[lane] = pool
        # Idle connections end with the ApiClient even if nobody asks again.
        weakref.finalize(api_client, pool.close)
    if api_client.rest_client.pool_manager.closed:
        pool.close()
    return pool


def _tls_context(configuration: client.Configuration) -> ssl.SSLContext:
    """TLS as kubernetes_asyncio's own connector sets it up from the Configuration: its
    CA (else the system's), client certificate, verify switch and strictness."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    # HTTP/1.1 only: this client does not speak HTTP/2.
    context.set_alpn_protocols(["http/1.1"])
    return context


# One proxy session per ApiClient, shared by every RawApi on it and living as long as it:
# a session dropped while its connector is still open would warn "Unclosed client session".
_SESSIONS: weakref.WeakKeyDictionary[client.ApiClient, aiohttp.ClientSession] = (
    weakref.WeakKeyDictionary())


def _session(api_client: client.ApiClient) -> aiohttp.ClientSession:
    """The ApiClient's session for a proxy, made on first use (on the running loop)."""
    session = _SESSIONS.get(api_client)
    if session is None:
        session = aiohttp.ClientSession(
            # kubernetes_asyncio's connector: its pool, TLS context (CA, client
            # certificate, verify_ssl) and keep-alive; the ApiClient closes it.
            connector=api_client.rest_client.pool_manager.connector, connector_owner=False,
            trust_env=False,
            # The API server sets no cookies; a jar would still be consulted per request.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        _SESSIONS[api_client] = session
    return session


async def _authorization(configuration: client.Configuration) -> str | None:
    """The Authorization header, as kubernetes_asyncio forms it: auth_settings() first
    runs the Configuration's refresh_api_key_hook, so a rotated token is read here."""
    bearer = (await configuration.auth_settings()).get("BearerToken")
    value = bearer["value"] if bearer else None
    return value if isinstance(value, str) else None


# Where a pod's service-account token and CA live; the variable moves them (for tests).
INCLUSTER_DIR_ENV = "KPYSCHED_INCLUSTER_DIR"
DEFAULT_INCLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


async def make_api_client(kubeconfig: Path | None, master: str | None = None) -> client.ApiClient:
    """kubeconfig when given (or $KUBECONFIG), in-cluster service account otherwise;
    `master` (kube-scheduler's --master) replaces the API server address.

    The in-cluster files (token, ca.crt) are read from $KPYSCHED_INCLUSTER_DIR when set
    (tests lay out a pod's service-account directory there), else from where the kubelet
    mounts them; the API server address comes from KUBERNETES_SERVICE_HOST/PORT."""
    configuration = await _configuration(kubeconfig)
    if master:
        configuration.host = master.rstrip("/")
    return client.ApiClient(configuration)


async def _configuration(kubeconfig: Path | None) -> client.Configuration:
    configuration = client.Configuration()
    if kubeconfig is not None:
        await kube_config.load_kube_config(config_file=str(kubeconfig),
                                           client_configuration=configuration)
        return configuration
    incluster_dir = os.environ.get(INCLUSTER_DIR_ENV)
    try:
        load_incluster(configuration)
    except kube_config.ConfigException as error:
        if incluster_dir:
            # Asked for in-cluster credentials explicitly: never fall back to other ones.
            raise kube_config.ConfigException(
                f"in-cluster config from {INCLUSTER_DIR_ENV}={incluster_dir}: {error}") from None
        # Outside a pod: fall back to $KUBECONFIG / ~/.kube/config like kubectl.
        await kube_config.load_kube_config(client_configuration=configuration)
    return configuration


def load_incluster(configuration: client.Configuration) -> None:
    """The pod's service account (from $KPYSCHED_INCLUSTER_DIR when set) into
    `configuration`; kube_config.ConfigException outside a pod."""
    directory = Path(os.environ.get(INCLUSTER_DIR_ENV) or DEFAULT_INCLUSTER_DIR)
    kube_config.load_incluster_config(  # type: ignore[no-untyped-call]
        client_configuration=configuration,
        token_filename=str(directory / "token"), cert_filename=str(directory / "ca.crt"))
