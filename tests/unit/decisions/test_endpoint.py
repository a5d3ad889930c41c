"""GET /debug/decisions/<namespace>/<pod> on the scheduler's server, and the Lease
annotations earlier versions wrote (only cleared now)."""

from __future__ import annotations

import aiohttp

from kpysched.decisions.api import PodAnswer
from kpysched.decisions.endpoint import (
    ADDRESS_ANNOTATION,
    POD_ANNOTATION,
    cleared_lease_annotations,
)
from kpysched.decisions.record import Decision
from kpysched.decisions.store import DecisionStore
from kpysched.metrics import SchedulerMetrics
from kpysched.serving.server import Server, ServerConfig


async def get(server: Server, path: str) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as session, session.get(server.url + path) as response:
        return response.status, await response.json()


async def test_serves_a_pods_decisions_and_404_for_a_pod_never_seen() -> None:
    store = DecisionStore(10)
    store.add(Decision("ns/p", "u", "kpysched", 1, "t", node="n1", outcome="Bound"))
    async with Server(ServerConfig("127.0.0.1", 0), SchedulerMetrics(),
                      decisions=lambda ns, name: PodAnswer(store.for_pod(ns, name))) as server:
        status, body = await get(server, "/debug/decisions/ns/p")
        assert status == 200
        assert body["pod"] == "ns/p"
        assert body["decisions"] == store.for_pod("ns", "p")
        status, body = await get(server, "/debug/decisions/ns/other")
        assert status == 404
        assert "no scheduling decision is kept for pod ns/other" in str(body["message"])


async def test_not_served_unless_enabled() -> None:
    async with Server(ServerConfig("127.0.0.1", 0), SchedulerMetrics()) as server, \
            aiohttp.ClientSession() as session, \
            session.get(server.url + "/debug/decisions/ns/p") as response:
        assert response.status == 404


def test_the_old_lease_annotations_are_cleared() -> None:
    # Empty values remove the keys: a previous version's or a planted address goes.
    assert cleared_lease_annotations() == {ADDRESS_ANNOTATION: "", POD_ANNOTATION: ""}
