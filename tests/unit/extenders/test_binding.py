"""A binding extender binds the pods it is interested in instead of the Bind plugins
(upstream's extendersBinding); the scheduler is built as the application builds it,
over a recording API, with a real extender on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from kpysched.api.client import RawApi
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.informers.listers import Listers
from kpysched.plugins import IN_TREE
from kpysched.scheduling.event_handlers import PodEventHandler
from kpysched.scheduling.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node, make_pod
from tests.unit.extenders.server import FakeExtender, serving


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


async def _schedule(extenders: list[dict[str, Any]], *pods: Any) -> RecordingApi:
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, "extenders": extenders})
    recording = RecordingApi()
    scheduler: Scheduler = build_scheduler(config, build_profiles(config, IN_TREE), IN_TREE,
                                           cast(RawApi, recording), Listers())
    try:
        scheduler.cache.add_or_update_node(
            make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).obj())
        handler = PodEventHandler(scheduler, scheduler.context.writes.events)
        for pod in pods:
            pod.spec.scheduler_name = "kpysched"
            handler.on_add(pod)
        queue = scheduler.queue
        while queue.pending_counts()["active"]:
            queued = await queue.pop()
            assert queued is not None
            scheduler.schedule_one(queued)
        await scheduler.drain_writes(timeout=5)
    finally:
        extenders_in_use = scheduler.context.algorithm.extenders
        if extenders_in_use is not None:
            await extenders_in_use.close()
    return recording


def _bound_by_api(recording: RecordingApi) -> list[str]:
    return [body["metadata"]["name"] for body in recording.sent("POST", "/binding")]


async def test_the_binding_extender_binds_the_pods_it_manages(extender: FakeExtender) -> None:
    extender.answers["bind"] = lambda body: (200, {"Error": ""})
    gpu = make_pod("gpu").req({"cpu": "100m", "example.com/gpu": "1"}).obj()
    plain = make_pod("plain").req(cpu="100m").obj()
    recording = await _schedule([{"urlPrefix": extender.url, "bindVerb": "bind",
                                  "managedResources": [{"name": "example.com/gpu",
                                                        "ignoredByScheduler": True}]}],
                                gpu, plain)
    assert [(verb, body) for verb, body in extender.requests] == [
        ("bind", {"PodName": "gpu", "PodNamespace": gpu.metadata.namespace,
                  "PodUID": gpu.metadata.uid, "Node": "n1"})]
    # The plain pod went to DefaultBinder; the GPU pod fits although n1 has no GPUs,
    # because the extender's resource is ignored by NodeResourcesFit.
    assert _bound_by_api(recording) == ["plain"]


@pytest.mark.parametrize(("ignorable", "bound_by_api"), [
    pytest.param(False, [], id="required-fails-the-binding"),
    pytest.param(True, ["p"], id="ignorable-falls-back-to-the-plugins"),
])
async def test_a_failing_binding_extender(extender: FakeExtender, ignorable: bool,
                                          bound_by_api: list[str]) -> None:
    extender.answers["bind"] = lambda body: (200, {"Error": "no GPU left"})
    recording = await _schedule([{"urlPrefix": extender.url, "bindVerb": "bind",
                                  "ignorable": ignorable}], make_pod("p").req(cpu="100m").obj())
    assert _bound_by_api(recording) == bound_by_api
    notes = [body["note"] for body in recording.sent("POST", "/events")
             if body["reason"] == "FailedScheduling"]
    assert notes == ([] if ignorable else ["no GPU left"])
