"""EventRecorder (series, bounded queue, retries) and PodStatusWriter (coalescing,
transition times): the write paths behind what `kubectl describe pod` shows."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from kpysched.api.client import RawApi
from kpysched.api.response import ApiResponse
from kpysched.objects import api
from kpysched.writes.event_recorder import EventRecorder
from kpysched.writes.pod_status import PodStatusWriter
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod


def pod(name: str = "p", resource_version: str = "1") -> api.Pod:
    built = make_pod(name).obj()
    built.metadata.resource_version = resource_version
    return built


def recorder(recording: RecordingApi, **options: float) -> EventRecorder:
    return EventRecorder(cast(RawApi, recording), instance="host", **options)  # type: ignore[arg-type]


async def test_repeats_fold_into_one_series() -> None:
    recording = RecordingApi()
    events = recorder(recording)
    subject = pod()
    for attempt in range(20):
        events.failed_scheduling(subject, "kpysched", f"0/3 nodes are available ({attempt})")
        await events.drain(5)  # each attempt a while after the last, as with backoff
    created = recording.sent("POST", "/events")
    patched = [body for method, path, body in recording.requests if method == "PATCH"]
    assert len(created) == 1
    # The note of the first occurrence stays, as upstream's series keeps it.
    assert created[0]["note"] == "0/3 nodes are available (0)"
    assert created[0]["reportingInstance"] == "kpysched-host"
    # The series is written when it starts (count 2); later counts wait for the upkeep.
    assert len(patched) == 1 and patched[0]["series"]["count"] >= 2


async def test_upkeep_writes_the_final_count_of_an_ended_series() -> None:
    recording = RecordingApi()
    now = [0.0]
    events = EventRecorder(cast(RawApi, recording), instance="host", finish_seconds=0.05,
                           clock=lambda: now[0])
    subject = pod()
    for _ in range(5):
        events.failed_scheduling(subject, "kpysched", "no")
        await events.drain(5)
    # Written so far: the Event, then its series at count 2; 3 more only counted.
    assert [body["series"]["count"] for body in recording.sent("PATCH", "")] == [2]
    now[0] = 10.0  # quiet for longer than the finish time
    for _ in range(40):
        await asyncio.sleep(0.01)
        counts = [body["series"]["count"] for method, _, body in recording.requests
                  if method == "PATCH"]
        if counts and counts[-1] == 5:
            break
    assert counts[-1] == 5
    await events.abort()


async def test_a_new_resource_version_is_a_new_event() -> None:
    recording = RecordingApi()
    events = recorder(recording)
    events.failed_scheduling(pod(resource_version="1"), "kpysched", "no")
    events.failed_scheduling(pod(resource_version="2"), "kpysched", "no")
    await events.drain(5)
    assert len(recording.sent("POST", "/events")) == 2  # upstream's key has the reference


async def test_the_queue_is_bounded_and_overflow_is_counted() -> None:
    recording = RecordingApi()
    gate = asyncio.Event()
    recording.hold[("POST", "/events")] = gate
    events = EventRecorder(cast(RawApi, recording), instance="host", max_queued=10,
                           writers=2)
    dropped: list[str] = []

    class Counter:
        def event_dropped(self, reason: str) -> None:
            dropped.append(reason)

    events.metrics = Counter()
    for index in range(100):
        events.failed_scheduling(pod(f"p{index}"), "kpysched", "no")
    await asyncio.sleep(0.01)
    assert events.queued <= 10
    # All 100 came in one burst: ten fit, the rest never became tasks or writes.
    assert events.dropped == 90
    assert dropped == ["queue_full"] * 90
    gate.set()
    await events.drain(5)
    assert len(recording.sent("POST", "/events")) == 10


async def test_server_errors_are_retried_and_rejections_abandoned() -> None:
    recording = RecordingApi()
    recording.answers[("POST", "/events")] = ApiResponse(503, b"{}")
    events = EventRecorder(cast(RawApi, recording), instance="host", retry_sleep=0.001)
    events.failed_scheduling(pod("busy"), "kpysched", "no")
    await events.drain(5)
    assert len(recording.sent("POST", "/events")) == 12  # maxTriesPerEvent

    recording.requests.clear()
    recording.answers[("POST", "/events")] = ApiResponse(422, b"{}")
    events.failed_scheduling(pod("invalid"), "kpysched", "no")
    await events.drain(5)
    assert len(recording.sent("POST", "/events")) == 1


async def test_an_event_waiting_for_its_retry_holds_back_no_other() -> None:
    """Found by the reliability soak: with writers asleep between tries, a few failed
    writes filled the queue and fresh events were dropped. One writer, a first write
    that fails and an hour-long retry pause: the next event is still written at once."""
    recording = RecordingApi()
    failures = [ApiResponse(503, b"{}")]
    plain = recording.request

    async def first_fails(method: str, path: str, body: object = None,
                          **options: object) -> ApiResponse:
        if failures:
            recording.requests.append((method, path, body))
            return failures.pop()
        return await plain(method, path, body, **options)

    recording.request = first_fails  # type: ignore[method-assign]
    events = EventRecorder(cast(RawApi, recording), instance="host", writers=1,
                           retry_sleep=3600)
    events.failed_scheduling(pod("unlucky"), "kpysched", "no")
    events.failed_scheduling(pod("next"), "kpysched", "no")
    await asyncio.sleep(0.05)
    written = [body["regarding"]["name"] for body in recording.sent("POST", "/events")]
    assert written == ["unlucky", "next"]  # the first failed, the second went through
    assert events.dropped == 0


async def test_in_flight_counts_queued_writing_and_retrying_events() -> None:
    """The soak reads this through /debug/cache before it checks that every pending pod
    has its FailedScheduling event: it must stay above zero until the write is done."""
    recording = RecordingApi()
    release = asyncio.Event()
    failures = [ApiResponse(503, b"{}")]
    plain = recording.request

    async def slow_then_fails_once(method: str, path: str, body: object = None,
                                   **options: object) -> ApiResponse:
        await release.wait()
        if failures:
            return failures.pop()
        return await plain(method, path, body, **options)

    recording.request = slow_then_fails_once  # type: ignore[method-assign]
    events = EventRecorder(cast(RawApi, recording), instance="host", writers=1,
                           retry_sleep=0.05)
    events.failed_scheduling(pod("a"), "kpysched", "no")
    events.failed_scheduling(pod("b"), "kpysched", "no")
    await asyncio.sleep(0.01)
    assert events.in_flight == 2  # one being written, one queued
    release.set()
    await asyncio.sleep(0.01)
    assert events.in_flight == 1  # "a" failed once and waits for its retry
    await events.drain(5)
    assert events.in_flight == 0
    assert sorted(b["regarding"]["name"] for b in recording.sent("POST", "/events")) == \
        ["a", "b"]


async def test_long_notes_are_cut_as_upstream() -> None:
    recording = RecordingApi()
    events = recorder(recording)
    events.failed_scheduling(pod(), "kpysched", "x" * 2000)
    await events.drain(5)
    note = recording.sent("POST", "/events")[0]["note"]
    assert len(note) == 1024 and note.endswith("x ...")


# --- pod status -----------------------------------------------------------------------------

def with_condition(subject: api.Pod, status: str, since: str) -> api.Pod:
    subject.status.conditions = [api.PodCondition(
        type="PodScheduled", status=status, reason="Unschedulable", message="old",
        last_transition_time=since)]
    return subject


async def test_patches_for_one_pod_coalesce_while_queued() -> None:
    recording = RecordingApi()
    gate = asyncio.Event()
    recording.hold[("PATCH", "/status")] = gate
    writer = PodStatusWriter(cast(RawApi, recording), writers=1)
    writer.set_unschedulable_condition(pod("first"), "Unschedulable", "m0")
    await asyncio.sleep(0)  # the writer takes "first" and waits on the server
    for index in range(1, 50):
        writer.set_unschedulable_condition(pod("second"), "Unschedulable", f"m{index}")
    writer.patch(pod("second"), {"nominatedNodeName": "n1"})
    assert writer.queued == 1
    gate.set()
    await writer.drain(5)
    second = recording.sent("PATCH", "/pods/second/status")
    assert len(second) == 1
    assert second[0]["status"]["conditions"][0]["message"] == "m49"
    assert second[0]["status"]["nominatedNodeName"] == "n1"


async def test_flush_writes_a_queued_patch_now_and_waits_for_one_under_way() -> None:
    """Issue 32 item 4: before a pod is bound, what a failed attempt queued for it is
    written (in order), whatever the backlog of other pods' patches."""
    recording = RecordingApi()
    gate = asyncio.Event()
    recording.hold[("PATCH", "/pods/busy/status")] = gate
    writer = PodStatusWriter(cast(RawApi, recording), writers=1)
    writer.set_unschedulable_condition(pod("busy"), "Unschedulable", "m")
    await asyncio.sleep(0)  # the only writer waits on the server for "busy"
    writer.set_unschedulable_condition(pod("p"), "Unschedulable", "m")
    await asyncio.wait_for(writer.flush(pod("p").metadata.uid), 1)
    assert len(recording.sent("PATCH", "/pods/p/status")) == 1
    assert writer.queued == 0

    flushing = asyncio.create_task(writer.flush(pod("busy").metadata.uid))
    await asyncio.sleep(0.01)
    assert not flushing.done()  # its patch is still under way
    gate.set()
    await asyncio.wait_for(flushing, 1)
    await writer.drain(5)
    assert len(recording.sent("PATCH", "/pods/p/status")) == 1  # written once


@pytest.mark.parametrize(("previous", "kept"), [
    ("False", True),
    ("True", False),
], ids=["still-false-keeps-time", "status-change-new-time"])
async def test_transition_time_moves_only_with_the_status(previous: str, kept: bool) -> None:
    recording = RecordingApi()
    writer = PodStatusWriter(cast(RawApi, recording))
    subject = with_condition(pod(), previous, "2020-01-01T00:00:00Z")
    writer.set_unschedulable_condition(subject, "Unschedulable", "a new message")
    await writer.drain(5)
    condition = recording.sent("PATCH", "/status")[0]["status"]["conditions"][0]
    assert (condition["lastTransitionTime"] == "2020-01-01T00:00:00Z") is kept


async def test_an_unchanged_condition_is_not_written() -> None:
    recording = RecordingApi()
    writer = PodStatusWriter(cast(RawApi, recording))
    subject = with_condition(pod(), "False", "2020-01-01T00:00:00Z")
    writer.set_unschedulable_condition(subject, "Unschedulable", "old")
    await writer.drain(5)
    assert recording.requests == []


async def test_repeats_before_the_first_write_create_it_with_the_series() -> None:
    recording = RecordingApi()
    events = recorder(recording)
    for _ in range(7):
        events.failed_scheduling(pod(), "kpysched", "no")
    await events.drain(5)
    created = recording.sent("POST", "/events")
    assert [body["series"]["count"] for body in created] == [7]
    assert recording.sent("PATCH", "") == []


async def test_writers_start_as_events_queue_up_and_leave_when_it_is_empty() -> None:
    recording = RecordingApi()
    release = asyncio.Event()
    recording.hold[("POST", "/events")] = release
    events = EventRecorder(cast(RawApi, recording), instance="host", writers=3)
    assert events._tasks == set()  # nothing recorded: no task at all
    for name in ("a", "b", "c", "d", "e"):
        events.failed_scheduling(pod(name), "kpysched", "no")
    await asyncio.sleep(0.01)
    writers = {task for task in events._tasks if task.get_name() == "event writer"}
    assert len(writers) == 3 and events.in_flight == 5  # the limit holds
    release.set()
    await events.drain(timeout=5)
    await asyncio.sleep(0)
    assert len(recording.sent("POST", "/events")) == 5
    # Only the series upkeep is left; the writers went with the queue.
    assert [task.get_name() for task in events._tasks] == ["event series upkeep"]
    await events.abort()
