"""A thin raw-JSON request path on top of kubernetes_asyncio's ApiClient.

kubernetes_asyncio gives us authentication (kubeconfig or in-cluster), TLS and
the connection pool (`make_api_client` builds it from a kubeconfig or the pod's
service account); its OpenAPI models are skipped for speed (and because some
of them reject valid replies, e.g. V1Binding). Writes go through a client-side
token bucket with upstream's clientConnection semantics (qps, burst).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

# ApiResponse.status when no HTTP answer arrived at all.
TRANSPORT_ERROR = 0


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


class ApiResponse(msgspec.Struct):
    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def message(self) -> str:
        """The `message` of a kind: Status reply, or the raw body."""
        try:
            decoded = msgspec.json.decode(self.body)
        except msgspec.DecodeError:
            return self.body.decode(errors="replace")[:500]
        message = decoded.get("message") if isinstance(decoded, dict) else None
        if isinstance(message, str):
            return message
        return self.body.decode(errors="replace")[:500]


class RawApi:
    def __init__(self, api_client: client.ApiClient, qps: float = 50.0, burst: int = 100) -> None:
        self.api_client = api_client
        self.qps = qps
        self.burst = burst
        self._bucket = TokenBucket(qps, burst)
        self.requests_sent = 0

    def sibling(self) -> RawApi:
        """The same connection with a separate rate limiter of the same size."""
        return RawApi(self.api_client, self.qps, self.burst)

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
    ) -> ApiResponse:
        if throttle:
            await self._bucket.acquire()
        self.requests_sent += 1
        try:
            response = await self.api_client.call_api(
                path, method,
                query_params=list((query or {}).items()),
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout,
            )
            try:
                data: bytes = await response.read()
            finally:
                response.release()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            # The API server is unreachable (restarting, network): callers treat this
            # like any failed write (a bind is requeued), so hand back a status, not a raise.
            return ApiResponse(TRANSPORT_ERROR, f"{type(error).__name__}: {error}".encode())
        return ApiResponse(response.status, data)


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
