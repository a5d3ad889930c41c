"""A running pod whose in-place resize the kubelet deferred, through the whole scheduler
(v1.37, InPlacePodVerticalScalingSchedulerPreemption): upstream's
TestEventHandlers_DeferredResize table (queued on add, on turning deferred, dropped when
no longer deferred, updated while deferred; nothing with the gate off), its
TestHandleSchedulingFailureForDeferredResizePod (requeued, never nominated nor
reported), TestScheduler_DeferredResizePluginSkipping (only NodeName and
NodeResourcesFit judge it among the Filter plugins with a PreFilter), and the cycle end
to end: a resize that does not fit preempts a lower-priority pod on its own node only;
one that fits ends as upstream's assume error and retries after backoff, writing
nothing."""

from __future__ import annotations

import pytest

from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.deferred_resize import IN_PLACE_RESIZE_PREEMPTION_GATE
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node, make_pod, make_pod_group
from tests.unit.scheduler_harness import SchedulerHarness, build_harness

GATE_ON = Features.from_gates({IN_PLACE_RESIZE_PREEMPTION_GATE: True}, release=37)
GATE_OFF = Features.from_gates({}, release=37)


def harness(features: Features, *nodes: api.Node) -> SchedulerHarness:
    return build_harness({"schedulerName": "kpysched"}, features,
                         Listers(release=37), *nodes)


def bound_pod(name: str, node: str = "node1", *, deferred: bool = False,
              cpu: str | None = None, priority: int = 0,
              scheduler: str = "kpysched") -> api.Pod:
    builder = make_pod(name).uid(name).node(node).priority(priority)
    if cpu is not None:
        builder.req(cpu=cpu)
    built: api.Pod = builder.obj()
    built.spec.scheduler_name = scheduler
    if deferred:
        built.status.conditions.append(api.PodCondition(
            type="PodResizePending", status="True", reason="Deferred"))
    return built


def node(name: str = "node1", cpu: str = "4") -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods="110").obj()


# --- the event handlers (TestEventHandlers_DeferredResize) ----------------------------

PLAIN = bound_pod("pod1")
DEFERRED = bound_pod("pod1", deferred=True)
DEFERRED_LARGER = bound_pod("pod1", deferred=True, cpu="2")


@pytest.mark.parametrize(("gate_on", "initial", "updated", "in_queue"), [
    pytest.param(True, DEFERRED, None, True,
                 id="add-feature-gate-enabled-assigned-pod-with-deferred-resize"),
    pytest.param(False, DEFERRED, None, False,
                 id="add-feature-gate-disabled-assigned-pod-with-deferred-resize"),
    pytest.param(True, PLAIN, DEFERRED, True,
                 id="update-feature-gate-enabled-assigned-pod-transitions-to-deferred-resize"),
    pytest.param(True, DEFERRED, PLAIN, False,
                 id="update-feature-gate-enabled-assigned-pod-transitions-out-of-deferred-resize"),
    pytest.param(True, DEFERRED, DEFERRED_LARGER, True,
                 id="update-feature-gate-enabled-requests-change-while-remaining-deferred"),
    pytest.param(False, PLAIN, DEFERRED, False,
                 id="update-feature-gate-disabled-assigned-pod-transitions-to-deferred-resize"),
    pytest.param(False, DEFERRED, DEFERRED_LARGER, False,
                 id="update-feature-gate-disabled-requests-change-while-remaining-deferred"),
])
def test_event_handlers(gate_on: bool, initial: api.Pod, updated: api.Pod | None,
                        in_queue: bool) -> None:
    built = harness(GATE_ON if gate_on else GATE_OFF, node())
    built.pods.on_add(initial)
    if updated is not None:
        built.pods.on_update(initial, updated)
    scheduler = built.scheduler
    assert scheduler.queue.contains("pod1") is in_queue
    assert scheduler.cache.has_pod("pod1")  # in the cache either way
    if updated is DEFERRED_LARGER and in_queue:
        # The queued copy is the latest: it asks for the new size.
        popped = scheduler.queue.pop_specific("pod1")
        assert popped is not None and popped.pod_info.requests.milli_cpu == 2000


def test_a_deferred_pod_of_another_scheduler_is_not_queued() -> None:
    built = harness(GATE_ON, node())
    built.pods.on_add(bound_pod("pod1", deferred=True, scheduler="default-scheduler"))
    assert not built.scheduler.queue.contains("pod1")


def test_a_deleted_deferred_pod_leaves_the_queue() -> None:
    built = harness(GATE_ON, node())
    built.pods.on_add(DEFERRED)
    built.pods.on_delete(DEFERRED)
    assert not built.scheduler.queue.contains("pod1")
    assert not built.scheduler.cache.has_pod("pod1")


# --- one cycle -------------------------------------------------------------------------

async def test_a_resize_that_does_not_fit_preempts_on_its_own_node_only() -> None:
    """pod1 (priority 100) grows from 1 to 3 CPUs on a 4-CPU node holding low (2 CPUs,
    priority 0): low is the victim. node2 has room, but a bound pod stays where it is.
    The deferred pod is neither nominated nor reported (no FailedScheduling, no
    PodScheduled patch), as upstream's handleSchedulingFailure returns early for it."""
    built = harness(GATE_ON, node("node1"), node("node2"))
    built.pods.on_add(bound_pod("low", cpu="2"))
    before = bound_pod("pod1", cpu="1", priority=100)
    built.pods.on_add(before)
    built.pods.on_update(before, bound_pod("pod1", cpu="3", priority=100, deferred=True))
    await built.schedule_all()
    deleted = [path.rsplit("/", 1)[-1] for method, path, _ in built.api.requests
               if method == "DELETE" and "/pods/" in path]
    assert deleted == ["low"]
    assert built.notes("Preempted") == {"low": "Preempted by pod pod1 on node node1"}
    assert built.notes("FailedScheduling") == {}
    assert not [path for method, path, _ in built.api.requests
                if method == "PATCH" and path.endswith("/pods/pod1/status")]
    assert built.bound() == {}
    assert built.scheduler.queue.where("pod1") == "unschedulable"
    assert built.scheduler.queue.nominator.node_of("pod1") == ""


async def test_with_the_gate_off_the_same_resize_is_left_alone() -> None:
    built = harness(GATE_OFF, node("node1"), node("node2"))
    built.pods.on_add(bound_pod("low", cpu="2"))
    before = bound_pod("pod1", cpu="1", priority=100)
    built.pods.on_add(before)
    built.pods.on_update(before, bound_pod("pod1", cpu="3", priority=100, deferred=True))
    await built.schedule_all()
    assert built.api.requests == []


async def test_a_resize_that_fits_ends_as_an_assume_error_and_writes_nothing() -> None:
    """Upstream never reaches DeferredPodScheduling's Permit: its cache refuses to assume
    a pod it holds, so the cycle ends in an error and the pod retries after backoff."""
    built = harness(GATE_ON, node("node1"))
    before = bound_pod("pod1", cpu="1", priority=100)
    built.pods.on_add(before)
    built.pods.on_update(before, bound_pod("pod1", cpu="3", priority=100, deferred=True))
    await built.schedule_all()
    assert built.api.requests == []
    assert built.scheduler.queue.where("pod1") == "backoff"
    assert built.scheduler.cache.has_pod("pod1") and not built.scheduler.cache.is_assumed("pod1")


async def test_a_resize_that_can_never_fit_waits_unschedulable() -> None:
    built = harness(GATE_ON, node("node1"))
    before = bound_pod("pod1", cpu="1", priority=100)
    built.pods.on_add(before)
    built.pods.on_update(before, bound_pod("pod1", cpu="5", priority=100, deferred=True))
    await built.schedule_all()
    assert built.api.requests == []
    assert built.scheduler.queue.where("pod1") == "unschedulable"


def test_only_node_name_and_fit_judge_a_deferred_resize() -> None:
    """TestScheduler_DeferredResizePluginSkipping, in the default v1.37 profile: every
    Filter plugin with a PreFilter but NodeName, NodeResourcesFit and
    DeferredPodScheduling itself skips the pod."""
    built = harness(GATE_ON, node("node1"))
    framework = built.scheduler.frameworks["kpysched"]
    pod = PodInfo.of(bound_pod("pod1", deferred=True, cpu="1"))
    state = CycleState()
    framework.run_pre_filter(state, pod, built.scheduler.context.snapshot.node_infos)
    with_pre_filter = {p.NAME for p in framework.pre_filter_plugins}
    filters = {p.NAME for p in framework.filter_plugins}
    judging = (with_pre_filter & filters) - state.skip_filter_plugins
    assert judging == {"NodeName", "NodeResourcesFit", "DeferredPodScheduling"}


async def test_a_pod_growing_on_the_same_node_brings_a_waiting_resize_back() -> None:
    """NodeResourcesFit's AssignedPod UpdatePodScaleUp hint (gate on): the queue asks it
    for every scale-up, not only for pods with cross-topology terms."""
    built = harness(GATE_ON, node("node1"), node("node2"))
    before = bound_pod("pod1", cpu="1", priority=100)
    built.pods.on_add(before)
    built.pods.on_update(before, bound_pod("pod1", cpu="5", priority=100, deferred=True))
    await built.schedule_all()
    queue = built.scheduler.queue
    assert queue.where("pod1") == "unschedulable"
    elsewhere = bound_pod("other", "node2", cpu="1")
    built.pods.on_add(elsewhere)
    built.pods.on_update(elsewhere, bound_pod("other", "node2", cpu="2"))
    assert queue.where("pod1") == "unschedulable"
    neighbour = bound_pod("neighbour", cpu="1")
    built.pods.on_add(neighbour)
    built.pods.on_update(neighbour, bound_pod("neighbour", cpu="2"))
    assert queue.where("pod1") in ("active", "backoff")


async def test_a_deferred_member_of_a_pod_group_is_scheduled_alone() -> None:
    """TestPriorityQueue_DeferredPodGroupCompatibility: with GenericWorkload on too, a
    deferred resize whose pod names a PodGroup is tried as a pod of its own (it already
    runs; only its size changes), so it preempts as any deferred resize does."""
    features = Features.from_gates(
        {IN_PLACE_RESIZE_PREEMPTION_GATE: True, "GenericWorkload": True}, release=37)
    built = build_harness({"schedulerName": "kpysched"}, features,
                          Listers(generic_workload=True, release=37), node("node1"))
    assert built.listers.workloads is not None
    group = make_pod_group("pg1")  # basic policy: no minCount to wait for
    group.spec.priority = 100
    built.listers.workloads.pod_groups.on_add(group)
    built.pods.on_add(bound_pod("low", cpu="2"))
    before = bound_pod("pod1", cpu="1", priority=100)
    before.spec.scheduling_group = api.PodSchedulingGroup(pod_group_name="pg1")
    built.pods.on_add(before)
    after = bound_pod("pod1", cpu="3", priority=100, deferred=True)
    after.spec.scheduling_group = api.PodSchedulingGroup(pod_group_name="pg1")
    built.pods.on_update(before, after)
    await built.schedule_all()
    assert built.notes("Preempted") == {"low": "Preempted by pod pod1 on node node1"}
    assert built.notes("FailedScheduling") == {}
