"""SchedulingQueue.state_of: where a pod is and what would move it (for explain)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource, with_hints
from kpysched.plugins import scheduling_gates
from kpysched.queue.pod_state import triggers
from tests.unit.queue.test_scheduling_queue import (
    FIT,
    TAINT,
    FakeClock,
    fail_with_error,
    make_queue,
    pod,
    pop_now,
    rejected_pod,
)


async def test_an_unschedulable_pod_says_which_events_would_requeue_it() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    info = pod("p")
    await rejected_pod(queue, clock, info, TAINT, FIT)
    state = queue.state_of(info.uid)
    assert state is not None
    body = state.to_json()
    assert body["queue"] == "unschedulable"
    assert body["attempts"] == 1
    assert body["rejectedBy"] == [FIT, TAINT]
    events = [(t["plugin"], t["event"]) for t in body["requeueOn"]]
    # FIT registered Pod Delete|ScaleDown and Node Add|Allocatable; TAINT Node Add|Taint.
    assert events == [(FIT, "PodDelete"), (FIT, "PodUpdatePodScaleDown"), (FIT, "NodeAdd"),
                      (FIT, "NodeUpdateNodeAllocatable"), (TAINT, "NodeAdd"),
                      (TAINT, "NodeUpdateNodeTaint")]
    assert body["requeueOn"][-1]["text"] == "a node has its taints changed (or is uncordoned)"
    assert "waitingSince" in body and "movedByFlushAt" in body
    assert "backoffUntil" not in body


async def test_a_backing_off_pod_says_until_when() -> None:
    clock = FakeClock()
    queue = make_queue(clock, initial=4.0)
    info = pod("p")
    queue.add(info)
    fail_with_error(queue, await pop_now(queue))
    state = queue.state_of(info.uid)
    assert state is not None
    body = state.to_json()
    assert body["queue"] == "backoff"
    assert body["backoffUntil"].endswith("Z")
    assert "requeueOn" not in body  # an error retries after backoff whatever happens


async def test_a_gated_pod_names_its_gate_and_a_bound_pod_is_not_held() -> None:
    clock = FakeClock()
    registered = scheduling_gates.SchedulingGates().events_to_register()
    queue = make_queue(clock, registered={"SchedulingGates": [
        r if isinstance(r, ClusterEvent) else r.event for r in registered]})
    gated = pod("g", gates=["example.com/wait"])
    queue.add(gated)
    state = queue.state_of(gated.uid)
    assert state is not None
    assert state.to_json()["queue"] == "gated"
    assert state.to_json()["gatedBy"] == "SchedulingGates"
    assert [t.event for t in state.requeue_on] == ["PodUpdatePodSchedulingGatesEliminated"]
    assert queue.state_of("no-such-uid") is None


@pytest.mark.parametrize(("action", "expected"), [
    (ActionType.ADD | ActionType.UPDATE_NODE_LABEL, ["NodeAdd", "NodeUpdateNodeLabel"]),
    (ActionType.ALL, None),
])
def test_triggers_split_a_registration_into_single_actions(
        action: ActionType, expected: list[str] | None) -> None:
    found = triggers("P", with_hints([ClusterEvent(Resource.NODE, action)]))
    names = [t.event for t in found]
    if expected is not None:
        assert names == expected
    else:
        # Add, Delete and every update action (v1.37's two new ones included).
        assert names[:2] == ["NodeAdd", "NodeDelete"] and len(names) == 15
