"""The decisions API on the scheduler's server (kpysched.decisions.api): discovery,
a pod's records, a pod never seen, a standby."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kpysched.decisions.api import GROUP_VERSION, PodAnswer, path
from kpysched.metrics import SchedulerMetrics
from kpysched.serving.server import Server, ServerConfig

RECORD = {"outcome": "Unschedulable"}
GATED = {"queue": "gated", "attempts": 0, "gatedBy": "SchedulingGates"}


def _lookup(leading: bool) -> Any:
    def lookup(namespace: str, name: str) -> PodAnswer | None:
        if not leading:
            return None
        if (namespace, name) == ("ns", "p"):
            return PodAnswer([RECORD])
        if (namespace, name) == ("ns", "gated"):
            return PodAnswer([], GATED)  # never tried: only where it waits
        return PodAnswer([])

    return lookup


async def _get(leading: bool, url_path: str, accept: str = "application/json",
               ) -> tuple[int, dict[str, Any], str | None]:
    async with Server(ServerConfig("127.0.0.1", 0), SchedulerMetrics(),
                      decisions=_lookup(leading)) as server, \
            aiohttp.ClientSession() as session, \
            session.get(server.url + url_path, headers={"Accept": accept}) as response:
        return response.status, await response.json(), response.headers.get("Retry-After")


@pytest.mark.parametrize(("leading", "url_path", "status", "body", "retry_after"), [
    pytest.param(True, path("ns", "p"), 200,
                 {"kind": "PodDecisions", "apiVersion": GROUP_VERSION,
                  "metadata": {"name": "p", "namespace": "ns"}, "pod": "ns/p",
                  "decisions": [RECORD]}, None, id="records"),
    pytest.param(True, path("ns", "gated"), 200,
                 {"kind": "PodDecisions", "pod": "ns/gated", "decisions": [], "queue": GATED},
                 None, id="never-tried-but-queued"),
    pytest.param(True, path("ns", "other"), 404,
                 {"kind": "Status", "reason": "NotFound", "code": 404,
                  "details": {"name": "other", "group": "decisions.kpysched.io",
                              "kind": "pods"}}, None, id="never-seen"),
    pytest.param(False, path("ns", "p"), 503,
                 {"kind": "Status", "reason": "ServiceUnavailable", "code": 503}, "1",
                 id="standby-asks-for-a-retry"),
    pytest.param(True, "/apis/decisions.kpysched.io/v1alpha1", 200,
                 {"kind": "APIResourceList", "groupVersion": GROUP_VERSION,
                  "resources": [{"name": "pods", "singularName": "", "namespaced": True,
                                 "kind": "PodDecisions", "verbs": ["get"]}]}, None,
                 id="discovery"),
    pytest.param(True, "/apis", 200, {"kind": "APIGroupList"}, None, id="group-list"),
])
async def test_decisions_api(leading: bool, url_path: str, status: int,
                             body: dict[str, Any], retry_after: str | None) -> None:
    got_status, got, got_retry = await _get(leading, url_path)
    assert got_status == status
    assert {key: got[key] for key in body} == body
    assert got_retry == retry_after


async def test_aggregated_discovery_is_declined_so_the_aggregator_falls_back() -> None:
    # kube-apiserver's Accept for /apis; a 200 APIGroupList would mark the group stale.
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")
    status, body, _ = await _get(True, "/apis", accept)
    assert (status, body["reason"]) == (406, "NotAcceptable")
