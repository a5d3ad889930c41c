"""The Writes bundle: a graceful stop drains all six writers and a lost lease aborts
all six, placements (bindings, victims' deletes) before the queued events and status
patches, so no caller keeps a list of writers of its own."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kpysched.api.client import RawApi
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.queue.nominator import Nominator
from kpysched.writes.binding import Binder
from kpysched.writes.bundle import Writes
from kpysched.writes.coscheduling_status import GroupStatusWriter
from kpysched.writes.pod_group_status import PodGroupConditionWriter
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod, make_pod_group

NAMES = ("binder", "preemption", "events", "status", "pod_groups", "coscheduling")


class FakeWriter:
    def __init__(self, name: str, calls: list[str]) -> None:
        self._name = name
        self._calls = calls

    async def drain(self, timeout: float) -> None:
        self._calls.append(f"{self._name}.drain({timeout})")

    async def abort(self) -> None:
        self._calls.append(f"{self._name}.abort")


def fakes(calls: list[str], *, optional: bool = True) -> Writes:
    writers: dict[str, Any] = {name: FakeWriter(name, calls) for name in NAMES}
    if not optional:
        writers.update(pod_groups=None, coscheduling=None)
    return Writes(**writers)


async def test_drain_lets_placements_finish_then_the_queued_writes() -> None:
    calls: list[str] = []
    await fakes(calls).drain(5)
    assert calls == ["binder.drain(5)", "preemption.drain(5)",
                     "binder.abort", "preemption.abort",
                     "events.drain(5)", "status.drain(5)",
                     "pod_groups.drain(5)", "coscheduling.drain(5)"]


async def test_drain_placements_leaves_the_queued_writes() -> None:
    calls: list[str] = []
    await fakes(calls).drain_placements(0.5)
    assert calls == ["binder.drain(0.5)", "preemption.drain(0.5)",
                     "binder.abort", "preemption.abort"]


async def test_abort_stops_all_six() -> None:
    calls: list[str] = []
    await fakes(calls).abort()
    assert calls == [f"{name}.abort" for name in NAMES]


async def test_the_pod_group_writers_are_skipped_when_off() -> None:
    calls: list[str] = []
    writes = fakes(calls, optional=False)
    await writes.drain(1)
    await writes.abort()
    assert not any(call.startswith(("pod_groups", "coscheduling")) for call in calls)
    assert len(calls) == 6 + 4


def test_build_makes_each_writer_on_the_one_client() -> None:
    raw = cast(RawApi, RecordingApi())
    binder = Binder(raw)
    writes = Writes.build(raw, binder, Nominator(), pod_groups=True, coscheduling=True)
    assert writes.binder is binder
    assert isinstance(writes.pod_groups, PodGroupConditionWriter)
    assert isinstance(writes.coscheduling, GroupStatusWriter)
    bare = Writes.build(raw, binder, Nominator())
    assert (bare.pod_groups, bare.coscheduling) == (None, None)


@pytest.mark.parametrize("lease_lost", [False, True])
async def test_a_lost_lease_stops_every_real_writer(lease_lost: bool) -> None:
    """All six real writers, each with a write waiting on the API server: once
    aborted, none of them gets through; without the abort, each does."""
    recording = RecordingApi()
    raw = cast(RawApi, recording)
    gate = asyncio.Event()  # every request waits here
    for method in ("POST", "PATCH", "DELETE"):
        recording.hold[(method, "")] = gate
    writes = Writes.build(raw, Binder(raw), Nominator(), pod_groups=True, coscheduling=True)
    pod = make_pod("p").obj()
    preemptor = make_pod("preemptor").info()
    writes.binder.track(asyncio.get_running_loop().create_task(
        _bind(writes.binder, pod), name="bind-p"))
    writes.preemption.preempt(preemptor, "n1", [make_pod("victim").info()], "DefaultPreemption")
    writes.events.failed_scheduling(pod, "kpysched", "no fit")
    writes.status.set_unschedulable_condition(pod, "Unschedulable", "no fit", None)
    assert writes.pod_groups is not None and writes.coscheduling is not None
    writes.pod_groups.set_scheduled_condition(make_pod_group("g", 2), "False",
                                              "Unschedulable", "no fit")
    writes.coscheduling.write(cs.PodGroup(
        metadata=api.ObjectMeta(name="cg", namespace="default", uid="uid-cg"),
        spec=cs.PodGroupSpec(min_member=2)), {"phase": cs.SCHEDULING})
    await asyncio.sleep(0.01)
    assert writes.binder.in_flight() == 1 and writes.binder.started("bind-p")
    assert writes.preemption.is_running(preemptor.uid)
    if lease_lost:
        await writes.abort()
        assert writes.binder.in_flight() == 0 and not writes.binder.started("bind-p")
    gate.set()
    await asyncio.sleep(0.05)
    if lease_lost:
        assert recording.requests == []
        return
    paths = [path for _, path, _ in recording.requests]
    for written in ("/pods/p/binding", "/pods/victim", "/events", "/pods/p/status",
                    "/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/g/status",
                    "/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/cg/status"):
        assert any(written in path for path in paths), (written, paths)
    await writes.drain(5)


async def _bind(binder: Binder, pod: api.Pod) -> None:
    await binder.bind(pod, "n1")
