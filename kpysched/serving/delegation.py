"""The API clients that TokenReviews and SubjectAccessReviews go through.

As kube-scheduler (whose delegation kubeconfigs are optional): an explicit
--authentication-kubeconfig / --authorization-kubeconfig is used; without one, the
pod's in-cluster credentials; outside a pod, none at all, and then every token
request counts as anonymous (authentication) or every checked path is forbidden
(authorization). Never the scheduler's own kubeconfig or $KUBECONFIG: that would
grant more than the operator configured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import structlog
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from kpysched.api.client import RawApi, load_incluster

log = structlog.get_logger(__name__)

# Reviews are on the request path of every scrape: a bounded wait. Their rate limit
# (upstream's QPS 200 / burst 400) and coalescing are kpysched.serving.reviews', applied
# by the authenticator and authorizer to whichever reviewer they are given.
REVIEW_TIMEOUT_SECONDS = 10.0


class ReviewError(Exception):
    """The API server could not answer a review (refused, unreachable, malformed)."""


async def delegation_client(kubeconfig: Path | None, purpose: str) -> client.ApiClient | None:
    """An ApiClient for `purpose` ("authentication"/"authorization"); None when there is
    no kubeconfig and no in-cluster service account."""
    configuration = client.Configuration()
    if kubeconfig is not None:
        await kube_config.load_kube_config(config_file=str(kubeconfig),
                                           client_configuration=configuration)
        return client.ApiClient(configuration)
    try:
        load_incluster(configuration)
    except kube_config.ConfigException as error:
        log.warning("serving.no_delegation_client", purpose=purpose, reason=str(error),
                    hint=f"pass --{purpose}-kubeconfig")
        return None
    return client.ApiClient(configuration)


class Reviewer:
    """POSTs review objects and returns their status."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._raw = RawApi(api_client, qps=0)

    async def create(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        response = await self._raw.request("POST", path, review, throttle=False,
                                           timeout=REVIEW_TIMEOUT_SECONDS)
        if not response.ok:
            raise ReviewError(f"HTTP {response.status}: {response.message()}")
        try:
            decoded = msgspec.json.decode(response.body)
        except msgspec.DecodeError as error:
            raise ReviewError(f"malformed {review['kind']} reply: {error}") from None
        status = decoded.get("status") if isinstance(decoded, dict) else None
        if not isinstance(status, dict):
            raise ReviewError(f"{review['kind']} reply has no status")
        return status

    async def get(self, path: str) -> dict[str, Any]:
        response = await self._raw.request("GET", path, throttle=False,
                                           timeout=REVIEW_TIMEOUT_SECONDS)
        if not response.ok:
            raise ReviewError(f"HTTP {response.status}: {response.message()}")
        decoded = msgspec.json.decode(response.body)
        if not isinstance(decoded, dict):
            raise ReviewError(f"GET {path}: not an object")
        return decoded
