"""Where a failed or skipped pod goes next (issue 32 item 10): a pod being deleted is
passed over with upstream's "skip schedule deleting pod" event, a plugin's Pending
answer lets its Queue hint skip the backoff, and a rejection at PreBind keeps no
rejecting plugin, so the pod retries after its backoff (in the error backoff queue)
instead of waiting on the plugin's events or being popped again at once.

Upstream: pkg/scheduler/schedule_one.go (skipPodSchedule, bindingCycle,
handleSchedulingFailure), framework/types.go (Diagnosis.AddPluginStatus) and
backend/queue/scheduling_queue.go (isPodWorthRequeuing).
"""

from __future__ import annotations

import msgspec
import pytest

from kpysched.framework.status import Code, Status
from kpysched.objects import api
from kpysched.scheduling.event_handlers import PodEventHandler
from tests.unit.builders import make_pod
from tests.unit.scheduling.test_scheduler import RAISER, Harness, make_harness, make_info, pod


@pytest.fixture
def harness() -> Harness:
    return make_harness()


def terminating(name: str) -> api.Pod:
    built = make_pod(name).req(cpu="100m").terminating().obj()
    built.spec.scheduler_name = "kpysched"
    return built


async def test_a_pod_being_deleted_is_skipped_with_upstreams_event(harness: Harness) -> None:
    deleting = terminating("deleting")
    await harness.add_and_schedule(deleting)
    assert harness.api.events("FailedScheduling") == [
        "skip schedule deleting pod: default/deleting"]
    assert harness.api.sent("POST", "/binding") == []
    assert harness.api.sent("PATCH", "/status") == []  # no condition written
    assert harness.where(deleting) is None  # not requeued


async def test_a_pod_already_terminating_when_first_seen_gets_the_event_too(
        harness: Harness) -> None:
    """A start or relist during a pending pod's deletion: upstream's informer queues it
    (addPodToSchedulingQueue filters on assignment and scheduler name only), so the pop
    reports it; dropping it at the add said nothing."""
    handler = PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events)
    handler.on_leading()
    deleting = terminating("late")
    handler.on_add(deleting)
    assert harness.where(deleting) == "active"
    queued = await harness.scheduler.queue.pop()
    assert queued is not None and queued.pod_info.terminating
    harness.scheduler.schedule_one(queued)
    await harness.settle()
    assert harness.api.events("FailedScheduling") == [
        "skip schedule deleting pod: default/late"]
    assert harness.where(deleting) is None


async def test_a_terminating_pod_updated_after_its_skip_is_queued_and_skipped_again(
        harness: Harness) -> None:
    """Upstream's Update adds a pod it holds nowhere: a terminating pending pod's later
    update (a finalizer removed, a label) brings it back, and the pop reports it again."""
    handler = PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events)
    handler.on_leading()
    deleting = terminating("again")
    handler.on_add(deleting)
    for _ in range(2):
        queued = await harness.scheduler.queue.pop()
        assert queued is not None
        harness.scheduler.schedule_one(queued)
        await harness.settle()
        assert harness.where(deleting) is None
        relabelled = msgspec.structs.replace(deleting, metadata=msgspec.structs.replace(
            deleting.metadata, labels={"touched": "yes"},
            resource_version=str(int(deleting.metadata.resource_version or "1") + 1)))
        handler.on_update(deleting, relabelled)
        deleting = relabelled
    assert harness.api.events("FailedScheduling") == [
        "skip schedule deleting pod: default/again"] * 2
    assert harness.where(deleting) == "active"


async def test_a_queued_pod_that_starts_terminating_stays_queued_until_popped(
        harness: Harness) -> None:
    handler = PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events)
    harness.script.reject = {"n1": Status.unschedulable("no", plugin=RAISER),
                             "n2": Status.unschedulable("no", plugin=RAISER)}
    waiting = pod("waiting")
    handler.on_add(waiting)
    queued = await harness.scheduler.queue.pop()
    assert queued is not None
    harness.scheduler.schedule_one(queued)
    assert harness.where(waiting) in ("backoff", "unschedulable")
    deleting = msgspec.structs.replace(waiting, metadata=msgspec.structs.replace(
        waiting.metadata, deletion_timestamp="2026-01-01T00:00:00Z", resource_version="2"))
    handler.on_update(waiting, deleting)
    # As upstream's queue: still there (the next pop passes over it with the event).
    assert harness.where(waiting) in ("backoff", "unschedulable")
    harness.scheduler.queue.activate([waiting.metadata.uid])
    queued = await harness.scheduler.queue.pop()
    assert queued is not None and queued.pod_info.terminating
    harness.scheduler.schedule_one(queued)
    await harness.settle()
    assert harness.api.events("FailedScheduling")[-1] == (
        "skip schedule deleting pod: default/waiting")
    assert harness.where(waiting) is None


@pytest.mark.parametrize("code", [Code.PENDING, Code.UNSCHEDULABLE],
                         ids=["pending", "unschedulable"])
async def test_a_pending_answer_marks_its_plugin_pending(harness: Harness, code: Code) -> None:
    # The queue's hints then send the pod to the active queue at once when that plugin
    # says Queue (tests/unit/queue/test_queueing_hints.py holds that rule).
    rejection = Status(code, ["waiting on an outside controller"], RAISER)
    harness.script.reject = {"n1": rejection, "n2": rejection}
    waiting = pod("waiting")
    await harness.add_and_schedule(waiting)
    assert harness.where(waiting) == "unschedulable"
    info = harness.scheduler.queue._unschedulable.get(waiting.metadata.uid)
    assert info is not None
    assert info.unschedulable_plugins == {RAISER}
    assert info.pending_plugins == ({RAISER} if code == Code.PENDING else set())


async def test_a_pending_answer_at_permit_marks_its_plugin_pending(harness: Harness) -> None:
    harness.script.permit = Status(Code.PENDING, ["later"], RAISER)
    waiting = pod("waiting")
    await harness.add_and_schedule(waiting)
    info = harness.scheduler.queue._unschedulable.get(waiting.metadata.uid)
    assert info.pending_plugins == {RAISER}


async def test_a_prebind_rejection_keeps_no_plugin_and_waits_out_its_backoff(
        harness: Harness) -> None:
    harness.script.pre_bind = Status.unschedulable("volume not ready", plugin=RAISER)
    failed = pod("failed")
    await harness.add_and_schedule(failed)
    assert harness.api.events("FailedScheduling") == ["volume not ready"]
    assert harness.where(failed) == "backoff"
    queue = harness.scheduler.queue
    info = queue._backoff.get(failed.metadata.uid)
    assert info is not None and info.unschedulable_plugins == set()
    # In the error backoff queue: an idle scheduler does not pop it before its backoff.
    assert queue._backoff.pop_rejected() is None
    assert queue.where(failed.metadata.uid) == "backoff"


async def test_a_permit_rejection_still_names_its_plugin(harness: Harness) -> None:
    # Upstream turns a Permit rejection (WaitOnPermit too) into a FitError naming it.
    harness.script.permit = Status.unschedulable("not now", plugin=RAISER)
    failed = pod("failed")
    harness.scheduler.queue.add(make_info(failed))
    queued = await harness.scheduler.queue.pop()
    assert queued is not None
    harness.scheduler.schedule_one(queued)
    await harness.settle()
    assert queued.unschedulable_plugins == {RAISER}
