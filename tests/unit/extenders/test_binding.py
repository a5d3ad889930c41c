"""A binding extender binds the pods it is interested in instead of the Bind plugins
(upstream's extendersBinding); the scheduler is built as the application builds it,
over a recording API, with a real extender on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod
from tests.unit.extenders.run import failed_scheduling, schedule_with
from tests.unit.extenders.server import FakeExtender, serving


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


def _bound_by_api(recording: RecordingApi) -> list[str]:
    return [body["metadata"]["name"] for body in recording.sent("POST", "/binding")]


async def test_the_binding_extender_binds_the_pods_it_manages(extender: FakeExtender) -> None:
    extender.answers["bind"] = lambda body: (200, {"Error": ""})
    gpu = make_pod("gpu").req({"cpu": "100m", "example.com/gpu": "1"}).obj()
    plain = make_pod("plain").req(cpu="100m").obj()
    recording = await schedule_with([{"urlPrefix": extender.url, "bindVerb": "bind",
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
    recording = await schedule_with([{"urlPrefix": extender.url, "bindVerb": "bind",
                                  "ignorable": ignorable}], make_pod("p").req(cpu="100m").obj())
    assert _bound_by_api(recording) == bound_by_api
    assert failed_scheduling(recording) == ([] if ignorable else ["no GPU left"])
