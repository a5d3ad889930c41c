"""The scheduler's failure paths: nothing a plugin, a bind or a lost lease does may end
the loop, lose a pod, or let a replica write after it lost the lease.

The scheduler is built as the application builds it (default profile plus a scriptable
`Raiser` plugin on every extension point); the API is a recording stand-in whose
answers each test sets, since what crosses the real API server is covered by the e2e
suite (tests/e2e/test_failure_paths.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec
import pytest
from structlog.testing import capture_logs

from kpysched.api.client import RawApi
from kpysched.api.response import ApiResponse
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.framework.status import Code, Status
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.scheduling.event_handlers import PodEventHandler
from kpysched.scheduling.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node, make_pod
from tests.unit.framework.fake_plugins import Script, fake

RAISER = "Raiser"
RAISER_POINTS = ("preFilter", "filter", "preScore", "score", "normalize", "reserve",
                 "permit", "preBind", "preBindPreFlight", "bind", "postBind")


@dataclass
class Harness:
    scheduler: Scheduler
    api: RecordingApi
    script: Script

    async def start(self, *pods: api.Pod) -> None:
        """Run the scheduling cycle of each pod, leaving its binding in flight."""
        for pod in pods:
            self.scheduler.queue.add(make_info(pod))
            queued = await self.scheduler.queue.pop()
            assert queued is not None
            self.scheduler.schedule_one(queued)

    async def add_and_schedule(self, *pods: api.Pod) -> None:
        await self.start(*pods)
        await self.settle()

    async def settle(self) -> None:
        await self.scheduler.drain_writes(timeout=5)

    def where(self, pod: api.Pod) -> str | None:
        return self.scheduler.queue.where(pod.metadata.uid)


def make_info(pod: api.Pod) -> Any:
    from kpysched.objects.pod import PodInfo
    return PodInfo.of(pod)


def pod(name: str, cpu: str = "100m") -> api.Pod:
    built = make_pod(name).req(cpu=cpu).obj()
    built.spec.scheduler_name = "kpysched"
    return built


def node(name: str, cpu: str = "4") -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


def make_harness(*, raiser_binds: bool = False) -> Harness:
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": RAISER}]}}
    if raiser_binds:  # Raiser is the only bind plugin
        plugins["bind"] = {"disabled": [{"name": "DefaultBinder"}]}
    config = parse_config({
        "apiVersion": API_VERSION, "kind": KIND,
        "profiles": [{"schedulerName": "kpysched", "plugins": plugins}],
    })
    registry = {**IN_TREE, RAISER: fake(RAISER, *RAISER_POINTS)}
    recording = RecordingApi()
    scheduler = build_scheduler(config, build_profiles(config, registry), registry,
                                cast(RawApi, recording))
    script = scheduler.frameworks["kpysched"].plugin(RAISER).script
    script.normalize = lambda scores: Status()
    scheduler.cache.add_or_update_node(node("n1"))
    scheduler.cache.add_or_update_node(node("n2"))
    return Harness(scheduler, recording, script)


@pytest.fixture
def harness() -> Harness:
    return make_harness()


# --- a raising plugin fails its pod, never the loop -------------------------------------

@pytest.mark.parametrize(("point", "message"), [
    ("preFilter", 'running PreFilter plugin "Raiser": RuntimeError: Raiser exploded at '
                  "preFilter"),
    ("filter", 'running "Raiser" filter plugin: RuntimeError: Raiser exploded at filter'),
    ("preScore", 'running PreScore plugin "Raiser": RuntimeError: Raiser exploded at '
                 "preScore"),
    ("score", 'running Score plugins: plugin "Raiser" failed with: RuntimeError: Raiser '
              "exploded at score"),
    ("normalize", 'running Normalize on Score plugins: plugin "Raiser" failed with: '
                  "RuntimeError: Raiser exploded at normalize"),
    ("reserve", 'running Reserve plugin "Raiser": RuntimeError: Raiser exploded at reserve'),
    ("permit", 'running Permit plugin "Raiser": RuntimeError: Raiser exploded at permit'),
    ("preBind", 'running PreBind plugin "Raiser": RuntimeError: Raiser exploded at preBind'),
], ids=lambda value: value if " " not in value else "")
async def test_a_raising_plugin_fails_only_its_pod(harness: Harness, point: str,
                                                   message: str) -> None:
    harness.script.raise_at = {point}
    victim = pod("victim")
    await harness.add_and_schedule(victim)
    assert harness.api.events("FailedScheduling") == [message]
    assert harness.where(victim) == "backoff"  # an error: retried after backoff
    assert not harness.scheduler.cache.has_pod(victim.metadata.uid)  # nothing left assumed
    condition = harness.api.sent("PATCH", "/pods/victim/status")[0]["status"]["conditions"][0]
    assert (condition["reason"], condition["message"]) == ("SchedulerError", message)
    if point in ("reserve", "permit", "preBind"):
        assert f"{RAISER}.unreserve" in harness.script.log

    # The loop goes on: the next pod is placed once the plugin behaves.
    harness.script.raise_at = set()
    other = pod("other")
    await harness.add_and_schedule(other)
    assert [body["metadata"]["name"] for body in harness.api.sent("POST", "/binding")] == [
        "other"]


async def test_a_raising_bind_plugin_fails_the_binding() -> None:
    harness = make_harness(raiser_binds=True)
    harness.script.raise_at = {"bind"}
    failed = pod("failed")
    await harness.add_and_schedule(failed)
    assert harness.api.events("FailedScheduling") == [
        'running Bind plugin "Raiser": RuntimeError: Raiser exploded at bind']
    assert harness.api.events("Scheduled") == []
    assert not harness.scheduler.cache.has_pod(failed.metadata.uid)
    assert f"{RAISER}.unreserve" in harness.script.log
    assert harness.where(failed) == "backoff"


async def test_a_raising_post_bind_leaves_the_pod_bound(harness: Harness) -> None:
    harness.script.raise_at = {"postBind"}
    bound = pod("bound")
    await harness.add_and_schedule(bound)
    assert len(harness.api.sent("POST", "/binding")) == 1
    assert len(harness.api.events("Scheduled")) == 1
    assert harness.api.events("FailedScheduling") == []
    assert harness.api.sent("PATCH", "/status") == []  # no PodScheduled=False
    assert harness.scheduler.cache.is_assumed(bound.metadata.uid)  # until the informer says
    assert f"{RAISER}.unreserve" not in harness.script.log
    assert harness.where(bound) is None


async def test_a_bug_in_the_cycle_fails_the_pod_and_the_loop_goes_on(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> Any:
        raise KeyError("lost row")

    monkeypatch.setattr(harness.scheduler.context.algorithm, "schedule", broken)
    victim = pod("victim")
    await harness.add_and_schedule(victim)
    assert harness.api.events("FailedScheduling") == [
        "scheduling cycle failed: KeyError: 'lost row'"]
    assert harness.where(victim) == "backoff"
    monkeypatch.undo()
    await harness.add_and_schedule(pod("next"))
    assert len(harness.api.sent("POST", "/binding")) == 1


async def test_run_survives_a_raising_plugin(harness: Harness) -> None:
    harness.script.raise_at = {"filter"}
    loop = asyncio.create_task(harness.scheduler.run())
    harness.scheduler.queue.add(make_info(pod("a")))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if harness.where(pod("a")) == "backoff":
            break
    assert not loop.done()
    harness.script.raise_at = set()
    harness.scheduler.queue.add(make_info(pod("b")))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if harness.api.sent("POST", "/binding"):
            break
    harness.scheduler.stop()
    await loop
    assert harness.api.sent("POST", "/binding")[0]["metadata"]["name"] == "b"


async def test_the_loop_yields_the_core_before_each_decision(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[str] = []
    monkeypatch.setattr("kpysched.scheduling.scheduler.os.sched_yield",
                        lambda: steps.append("yield"))
    decide = harness.scheduler.schedule_one
    monkeypatch.setattr(harness.scheduler, "schedule_one",
                        lambda queued: (steps.append("decide"), decide(queued)))
    loop = asyncio.create_task(harness.scheduler.run())
    for name in ("a", "b", "c"):
        harness.scheduler.queue.add(make_info(pod(name)))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if len(harness.api.sent("POST", "/binding")) == 3:
            break
    harness.scheduler.stop()
    await loop

    assert steps == ["yield", "decide"] * 3


# --- rejections at Reserve, Permit and PreBind ------------------------------------------

@pytest.mark.parametrize(("point", "message", "where"), [
    # Upstream wraps a Reserve or Permit rejection as a FitError over the chosen node.
    ("reserve", "0/1 nodes are available: 1 no room.", "unschedulable"),
    ("permit", "0/1 nodes are available: 1 no room.", "unschedulable"),
    # After Permit no plugin's rejection is judged by events any more (upstream calls
    # Done there): the pod retries after backoff.
    ("pre_bind", "no room", "backoff"),
])
async def test_rejection_after_the_choice_undoes_the_assumption(harness: Harness, point: str,
                                                                 message: str,
                                                                 where: str) -> None:
    setattr(harness.script, point, Status.unschedulable("no room"))
    rejected = pod("rejected")
    await harness.add_and_schedule(rejected)
    assert harness.api.events("FailedScheduling") == [message]
    assert not harness.scheduler.cache.has_pod(rejected.metadata.uid)
    assert f"{RAISER}.unreserve" in harness.script.log
    assert harness.api.sent("POST", "/binding") == []
    assert harness.where(rejected) == where


# --- failed binds ------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "server_message"), [
    (409, 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to '
          'node "n2"'),
    (404, 'pods "p" not found'),
], ids=["conflict", "not-found"])
async def test_a_failed_bind_reads_as_upstream_and_requeues(harness: Harness, status: int,
                                                            server_message: str) -> None:
    body = json.dumps({"kind": "Status", "message": server_message}).encode()
    harness.api.answers[("POST", "/binding")] = ApiResponse(status, body)
    failed = pod("p")
    await harness.add_and_schedule(failed)
    assert harness.api.events("FailedScheduling") == [
        f'running Bind plugin "DefaultBinder": {server_message}']
    assert not harness.scheduler.cache.has_pod(failed.metadata.uid)
    assert harness.where(failed) == "backoff"


async def test_a_failed_bind_moves_the_pods_it_was_blocking(harness: Harness) -> None:
    scheduler = harness.scheduler
    scheduler.cache.remove_node("n2")
    scheduler.cache.add_or_update_node(node("n1", cpu="1"))
    release = asyncio.Event()
    harness.api.hold[("POST", "/binding")] = release
    harness.api.answers[("POST", "/binding")] = ApiResponse(404, b'{"message":"gone"}')
    big_a, big_b = pod("a", cpu="800m"), pod("b", cpu="800m")
    await harness.start(big_a, big_b)
    await asyncio.sleep(0)
    assert harness.where(big_b) == "unschedulable"  # Insufficient cpu, behind assumed a
    release.set()
    await harness.settle()
    # a's bind failed: the room it held is free again, so b goes back to be retried.
    assert harness.where(big_b) in ("active", "backoff")
    assert harness.where(big_a) == "backoff"


# --- preemption of a pod waiting at Permit ----------------------------------------------

async def test_preempting_a_waiting_pod_rejects_it_in_memory(harness: Harness) -> None:
    harness.script.permit = Status(Code.WAIT)
    harness.script.permit_timeout = 60
    waiting = pod("waiting")
    await harness.start(waiting)
    await asyncio.sleep(0)
    framework = harness.scheduler.frameworks["kpysched"]
    assert waiting.metadata.uid in framework.waiting_pods

    preemptor = make_info(pod("preemptor"))
    victim = framework.waiting_pods[waiting.metadata.uid].pod
    framework.handle.preempt(preemptor, "n1", [victim], "DefaultPreemption")
    await harness.settle()
    assert harness.api.sent("DELETE", "/pods/waiting") == []
    assert harness.api.events("Preempted") == [
        f"Preempted by pod {preemptor.uid} on node n1 (in kube-scheduler memory)."]
    assert harness.api.events("FailedScheduling") == [
        "waiting on permit for pod: preempted"]
    assert harness.where(waiting) == "backoff"
    assert not harness.scheduler.cache.has_pod(waiting.metadata.uid)


class _Gate(asyncio.Event):
    """An event that also says when something has started waiting on it (a RecordingApi
    hold reached by its request, a held PreBind entered)."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = asyncio.Event()

    async def wait(self) -> Literal[True]:
        self.reached.set()
        return await super().wait()


def _pre_bind_held(harness: Harness) -> _Gate:
    """PreBind has work (its pre-flight says Success) and waits until the event is set."""
    gate = _Gate()
    raiser = harness.scheduler.frameworks["kpysched"].plugin(RAISER)

    async def slow_pre_bind(*_: Any) -> Status:
        await gate.wait()
        return Status()

    raiser.pre_bind = slow_pre_bind
    harness.script.pre_bind_pre_flight = Status()
    return gate


async def test_preempting_a_pod_in_pre_bind_cancels_its_binding(harness: Harness) -> None:
    """Issue 32 item 1: a victim still in PreBind was never bound; upstream cancels its
    binding (podInPreBind.CancelPod) and never deletes it."""
    harness.scheduler.cache.remove_node("n2")
    gate = _pre_bind_held(harness)
    low = make_pod("low").req(cpu="3").priority(0).obj()
    low.spec.scheduler_name = "kpysched"
    await harness.start(low)
    await asyncio.wait_for(gate.reached.wait(), 5)  # in PreBind, not merely on its way
    framework = harness.scheduler.frameworks["kpysched"]
    assert low.metadata.uid in framework.pods_in_pre_bind

    high = make_pod("high").req(cpu="3").priority(1000).obj()
    high.spec.scheduler_name = "kpysched"
    await harness.start(high)
    await asyncio.sleep(0.01)
    assert harness.api.sent("DELETE", "/pods/low") == []
    # No DisruptionTarget: only its own failure's PodScheduled=False.
    assert [c["type"] for body in harness.api.sent("PATCH", "/pods/low/status")
            for c in body["status"].get("conditions", [])] == ["PodScheduled"]
    assert harness.api.events("Preempted") == [
        f"Preempted by pod {high.metadata.uid} on node n1 (in kube-scheduler memory)."]
    assert harness.api.events("FailedScheduling")[-1] == (
        'running PreBind plugin "Raiser": preempted by DefaultPreemption')
    assert not harness.scheduler.cache.has_pod(low.metadata.uid)
    assert low.metadata.uid not in framework.pods_in_pre_bind
    assert harness.where(low) == "backoff"
    # The room it held is free: the preemptor was moved to be retried (AssignedPodDelete).
    assert harness.where(high) in ("active", "backoff")
    gate.set()
    await harness.settle()
    assert harness.api.sent("POST", "/pods/low/binding") == []


async def test_a_pre_bind_that_ends_before_it_sees_the_cancel_still_fails(
        harness: Harness) -> None:
    """Upstream's MarkPrebound after RunPreBindPlugins: cancelled first, no Bind."""
    harness.script.pre_bind_pre_flight = Status()
    framework = harness.scheduler.frameworks["kpysched"]
    p = pod("p")
    cancelled: list[bool] = []

    async def pre_bind_then_cancelled(*_: Any) -> Status:
        # Preemption's cancel lands after PreBind's last await, before it is marked done.
        entry = framework.pods_in_pre_bind[p.metadata.uid]
        asyncio.get_running_loop().call_soon(
            lambda: cancelled.append(entry.cancel_pod("preempted by DefaultPreemption")))
        return Status()

    framework.plugin(RAISER).pre_bind = pre_bind_then_cancelled
    await harness.start(p)
    await harness.settle()
    assert cancelled == [True]
    assert harness.api.sent("POST", "/pods/p/binding") == []
    assert harness.api.events("FailedScheduling") == ["preempted by DefaultPreemption"]
    assert harness.where(p) == "backoff"


async def test_a_victim_past_pre_bind_is_deleted(harness: Harness) -> None:
    """Once PreBind is over the pod is being bound: cancelling fails, so it is deleted."""
    harness.scheduler.cache.remove_node("n2")
    harness.script.pre_bind_pre_flight = Status()
    held = _Gate()
    harness.api.hold[("POST", "/pods/low/binding")] = held
    low = make_pod("low").req(cpu="3").priority(0).obj()
    low.spec.scheduler_name = "kpysched"
    await harness.start(low)
    # Its Bind call is parked at the gate: past PreBind for sure. (A fixed sleep here
    # raced the binding cycle on a loaded machine: low could still be before or in
    # PreBind, and was then cancelled instead of deleted.)
    await asyncio.wait_for(held.reached.wait(), 5)
    framework = harness.scheduler.frameworks["kpysched"]
    assert low.metadata.uid not in framework.pods_in_pre_bind  # in Bind now
    high = make_pod("high").req(cpu="3").priority(1000).obj()
    high.spec.scheduler_name = "kpysched"
    await harness.start(high)
    held.set()
    await harness.settle()
    assert len(harness.api.sent("DELETE", "/pods/low")) == 1
    assert harness.api.events("Preempted") == [
        f"Preempted by pod {high.metadata.uid} on node n1"]


async def test_permit_waits_are_capped_at_fifteen_minutes(harness: Harness) -> None:
    harness.script.permit = Status(Code.WAIT)
    harness.script.permit_timeout = 3600
    waiting = pod("waiting")
    await harness.start(waiting)
    framework = harness.scheduler.frameworks["kpysched"]
    timer = framework.waiting_pods[waiting.metadata.uid].timers[RAISER]
    loop = asyncio.get_running_loop()
    assert timer.when() - loop.time() == pytest.approx(900, abs=5)
    framework.waiting_pods[waiting.metadata.uid].allow(RAISER)
    await harness.settle()


# --- a pod deleted while it is being bound gives its room back at once -----------------

def _terminating(pod_: api.Pod) -> api.Pod:
    meta = msgspec.structs.replace(pod_.metadata, deletion_timestamp="2026-01-01T00:00:00Z",
                                   resource_version="2")
    return msgspec.structs.replace(pod_, metadata=meta)


async def test_a_pod_deleted_during_a_long_bind_frees_its_room_at_once(
        harness: Harness) -> None:
    """Issue 32 item 2 (upstream's handleAssumedPodDeletion): forgotten on the delete
    event, the pod it blocked moved (AssignedPodDelete), not when the Bind call fails."""
    harness.scheduler.cache.remove_node("n2")
    held = asyncio.Event()
    harness.api.hold[("POST", "/binding")] = held
    harness.api.answers[("POST", "/binding")] = ApiResponse(404, b'{"message":"gone"}')
    a, b = pod("a", cpu="3"), pod("b", cpu="3")
    await harness.start(a, b)
    assert harness.where(b) == "unschedulable"
    moved: list[str] = []
    move = harness.scheduler.queue.move_on_event
    harness.scheduler.queue.move_on_event = (  # type: ignore[method-assign]
        lambda event, *rest, **kw: (moved.append(event.queue_label()), move(event, *rest, **kw)))

    PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events).on_delete(a)
    assert not harness.scheduler.cache.has_pod(a.metadata.uid)
    assert harness.where(b) in ("active", "backoff")
    assert moved == ["AssignedPodDelete"]

    held.set()  # the Bind call fails now: nothing more to undo, nothing moved twice
    await harness.settle()
    assert moved == ["AssignedPodDelete"]
    assert harness.where(a) is None


@pytest.mark.parametrize("how", ["deleted", "terminating"])
async def test_a_pod_leaving_while_waiting_at_permit_is_rejected_at_once(
        harness: Harness, how: str) -> None:
    """Issue 32 item 2: not held until the Permit timeout (up to 15 minutes)."""
    harness.scheduler.cache.remove_node("n2")
    harness.script.permit = Status(Code.WAIT, ["wait"])
    harness.script.permit_timeout = 300.0
    a, b = pod("a", cpu="3"), pod("b", cpu="3")
    await harness.start(a, b)
    framework = harness.scheduler.frameworks["kpysched"]
    assert a.metadata.uid in framework.waiting_pods
    handler = PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events)
    if how == "deleted":
        handler.on_delete(a)
    else:
        handler.on_update(a, _terminating(a))
    await asyncio.sleep(0.01)
    assert a.metadata.uid not in framework.waiting_pods
    assert not harness.scheduler.cache.has_pod(a.metadata.uid)
    assert harness.where(b) in ("active", "backoff")
    assert f"{RAISER}.unreserve" in harness.script.log
    await harness.settle()
    assert harness.api.sent("POST", "/pods/a/binding") == []


async def test_an_update_of_a_pod_being_bound_still_changes_nothing(harness: Harness) -> None:
    harness.script.permit = Status(Code.WAIT, ["wait"])
    harness.script.permit_timeout = 300.0
    a = pod("a")
    await harness.start(a)
    later = msgspec.structs.replace(
        a, metadata=msgspec.structs.replace(a.metadata, resource_version="2"))
    PodEventHandler(harness.scheduler, harness.scheduler.context.writes.events).on_update(a, later)
    framework = harness.scheduler.frameworks["kpysched"]
    assert a.metadata.uid in framework.waiting_pods
    assert harness.scheduler.cache.is_assumed(a.metadata.uid)
    framework.waiting_pods[a.metadata.uid].allow(RAISER)
    await harness.settle()
    assert harness.api.sent("POST", "/pods/a/binding")


# --- a preemption whose API calls fail sends its preemptor back at once ----------------

def _bound_victim(harness: Harness, name: str, cpu: str) -> api.Pod:
    victim = make_pod(name).req(cpu=cpu).priority(0).node("n1").obj()
    victim.spec.scheduler_name = "kpysched"
    harness.scheduler.cache.add_or_update_pod(make_info(victim))
    return victim


@pytest.mark.parametrize("failing", ["PATCH", "DELETE"])
async def test_a_failed_preemption_activates_its_preemptor(harness: Harness,
                                                           failing: str) -> None:
    """Issue 32 item 3 (upstream's prepareCandidateAsync: Activate on any error): not
    left nominated among the unschedulable until the 5-minute flush."""
    harness.scheduler.cache.remove_node("n2")
    _bound_victim(harness, "victim", "3")
    suffix = "/pods/victim/status" if failing == "PATCH" else "/pods/victim"
    harness.api.answers[(failing, suffix)] = ApiResponse(
        500, b'{"message":"etcdserver: request timed out"}')
    preemptor = make_pod("preemptor").req(cpu="3").priority(1000).obj()
    preemptor.spec.scheduler_name = "kpysched"
    await harness.start(preemptor)
    assert harness.where(preemptor) == "unschedulable"
    await harness.settle()
    assert harness.api.events("Preempted") == []
    assert harness.where(preemptor) == "active"


async def test_a_successful_preemption_leaves_its_preemptor_to_the_delete_events(
        harness: Harness) -> None:
    harness.scheduler.cache.remove_node("n2")
    _bound_victim(harness, "victim", "3")
    preemptor = make_pod("preemptor").req(cpu="3").priority(1000).obj()
    preemptor.spec.scheduler_name = "kpysched"
    await harness.start(preemptor)
    await harness.settle()
    assert len(harness.api.sent("DELETE", "/pods/victim")) == 1
    assert harness.where(preemptor) == "unschedulable"


async def test_once_a_victim_cannot_be_removed_the_last_is_spared(harness: Harness) -> None:
    """As upstream: all victims but the last in parallel, the last only if they went."""
    harness.scheduler.cache.remove_node("n2")
    _bound_victim(harness, "v1", "2")
    _bound_victim(harness, "v2", "2")
    harness.api.answers[("DELETE", "/pods/v1")] = ApiResponse(403, b'{"message":"denied"}')
    harness.api.answers[("DELETE", "/pods/v2")] = ApiResponse(403, b'{"message":"denied"}')
    preemptor = make_pod("preemptor").req(cpu="4").priority(1000).obj()
    preemptor.spec.scheduler_name = "kpysched"
    await harness.start(preemptor)
    await harness.settle()
    deleted = [path for method, path, _ in harness.api.requests if method == "DELETE"]
    assert len(deleted) == 1  # the first; the last is spared
    assert harness.where(preemptor) == "active"


# --- a failed attempt's PodScheduled=False never lands after the binding ---------------

async def test_a_failed_attempts_status_patch_goes_out_before_the_binding(
        harness: Harness) -> None:
    """Issue 32 item 4: the coalesced patch waited behind other writes and reached the
    API server after the pod was bound, leaving PodScheduled=False on a running pod."""
    for name in ("n1", "n2"):
        harness.scheduler.cache.remove_node(name)
    gate = asyncio.Event()
    harness.api.hold[("PATCH", "/status")] = gate  # status writes are slow
    p = pod("p")
    await harness.start(p)  # no nodes: fails, its patch is queued
    await asyncio.sleep(0.01)
    harness.scheduler.cache.add_or_update_node(node("n3"))
    harness.scheduler.queue.activate([p.metadata.uid])
    queued = await harness.scheduler.queue.pop()
    assert queued is not None
    harness.scheduler.schedule_one(queued)
    await asyncio.sleep(0.01)
    assert harness.api.sent("POST", "/binding") == []  # waits for the patch
    gate.set()
    await harness.settle()
    order = [path.rsplit("/", 1)[-1] for _, path, _ in harness.api.requests
             if path.endswith(("/binding", "/status"))]
    assert order == ["status", "binding"]


# --- the lease is lost while bindings are in flight -------------------------------------

async def test_a_lost_lease_stops_every_binding_before_it_writes(harness: Harness) -> None:
    held = asyncio.Event()
    harness.api.hold[("POST", "/binding")] = held  # bindings stuck on a slow API server
    pods = [pod(f"p{i}") for i in range(5)]
    await harness.start(*pods)
    await asyncio.sleep(0.01)
    await harness.scheduler.abort_writes()
    held.set()  # the API server answers now: too late, nothing may go out
    await asyncio.sleep(0.01)
    assert harness.api.sent("POST", "/binding") == []
    assert harness.api.events("Scheduled") == []
    harness.scheduler.context.writes.events.failed_scheduling(pods[0], "kpysched", "after the loss")
    await asyncio.sleep(0.01)
    assert harness.api.sent("POST", "/events") == []


async def test_a_graceful_stop_cancels_bindings_that_outlive_the_grace(
        harness: Harness) -> None:
    """Issue 32 item 9: the Lease is released after drain_placements, so a binding still
    running then must not write afterwards (a standby may lead already)."""
    held = asyncio.Event()
    harness.api.hold[("POST", "/binding")] = held  # the API server answers slowly
    await harness.start(pod("late"))
    await harness.scheduler.drain_placements(0.05)
    assert harness.scheduler.bindings_in_flight() == 0
    held.set()  # it answers now, after the release: nothing may go out
    await asyncio.sleep(0.01)
    assert harness.api.sent("POST", "/binding") == []


# --- NominatedNodeNameForExpectation: announce the node before a PreBind with work ------

def _nominations(recording: RecordingApi, name: str) -> list[Any]:
    return [body["status"].get("nominatedNodeName")
            for body in recording.sent("PATCH", f"/pods/{name}/status")
            if "nominatedNodeName" in body.get("status", {})]


async def test_prebind_with_work_announces_the_node_as_nominated_first(
        harness: Harness) -> None:
    harness.script.pre_bind_pre_flight = Status()
    p = pod("p")
    await harness.add_and_schedule(p)
    log = harness.script.log
    assert log.index("Raiser.preBindPreFlight") < log.index("Raiser.preBind")
    [nominated] = _nominations(harness.api, "p")
    assert nominated in ("n1", "n2")
    assert harness.api.sent("POST", "/pods/p/binding")


async def test_prebind_without_work_writes_no_nomination(harness: Harness) -> None:
    await harness.add_and_schedule(pod("p"))  # the fake's pre-flight says Skip
    assert _nominations(harness.api, "p") == []
    assert harness.api.sent("POST", "/pods/p/binding")


async def test_a_failing_pre_flight_fails_the_binding_with_upstream_text(
        harness: Harness) -> None:
    harness.script.pre_bind_pre_flight = Status.error("no pod volume found for node")
    await harness.add_and_schedule(pod("p"))
    assert "Raiser.preBind" not in harness.script.log
    assert not harness.api.sent("POST", "/pods/p/binding")
    [note] = harness.api.events("FailedScheduling")
    assert note == 'running PreBindPreFlight "Raiser": no pod volume found for node'



async def test_a_binding_error_clears_the_nomination_it_wrote(harness: Harness) -> None:
    """Issue 33 item 2: upstream fails a binding cycle with clearNominatedNode, judged on
    the pod as the informer has it (the assumed pod's own updates never reach the
    queue): the nominatedNodeName written before PreBind goes again."""
    harness.scheduler.cache.remove_node("n2")
    harness.script.pre_bind_pre_flight = Status()
    harness.script.pre_bind = Status.error("volumes did not bind")
    p = pod("p")
    seen = msgspec.structs.replace(
        p, status=msgspec.structs.replace(p.status, nominated_node_name="n1"))
    harness.scheduler.context.pods = lambda: {p.metadata.uid: seen}
    await harness.add_and_schedule(p)
    assert _nominations(harness.api, "p") == ["n1", None]
    [last] = [body["status"] for body in harness.api.sent("PATCH", "/pods/p/status")][-1:]
    assert last["conditions"][0]["message"] == (
        'running PreBind plugin "Raiser": volumes did not bind')
    assert harness.scheduler.queue.nominator.nodes() == set()
    assert harness.where(p) == "backoff"


@pytest.mark.parametrize("reserve", [Status(Code.UNSCHEDULABLE, ["no room"]),
                                     Status.error("broken")], ids=["rejected", "error"])
async def test_a_failed_reserve_clears_the_pods_nomination(harness: Harness,
                                                           reserve: Status) -> None:
    """Upstream's prepareForBindingCycle failures carry clearNominatedNode too."""
    harness.script.reserve = reserve
    p = pod("p")
    p.status.nominated_node_name = "n2"  # from an earlier preemption
    await harness.add_and_schedule(p)
    assert _nominations(harness.api, "p") == [None]


# --- a slow cycle is reported with the plugin that took it ------------------------------

def _slow_normalize(scores: list[Any]) -> Status:
    time.sleep(0.05)  # stands in for a plugin holding the loop
    return Status()


@pytest.mark.parametrize(("threshold", "reported"), [(0.04, True), (10.0, False)],
                         ids=["over-the-threshold", "under-it"])
async def test_a_slow_cycle_is_logged_and_counted_with_its_slowest_plugin(
        threshold: float, reported: bool) -> None:
    harness = make_harness()
    metrics = SchedulerMetrics(process_metrics=False)
    harness.scheduler.context.metrics = metrics
    harness.scheduler.slow_cycle_seconds = threshold
    harness.script.normalize = _slow_normalize
    with capture_logs() as logs:
        await harness.add_and_schedule(pod("slow"))
    slow = [entry for entry in logs if entry["event"] == "scheduling_cycle.slow"]
    counted = metrics.registry.get_sample_value(
        "kpysched_slow_cycles_total",
        {"profile": "kpysched", "plugin": RAISER, "extension_point": "Score"})
    if reported:
        assert len(slow) == 1
        assert (slow[0]["pod"], slow[0]["plugin"], slow[0]["extension_point"]) == (
            "default/slow", RAISER, "Score")
        assert slow[0]["plugin_seconds"] >= 0.05 and slow[0]["seconds"] >= 0.05
        assert counted == 1.0
    else:
        assert slow == [] and counted is None
    # Slow or not, the pod is placed.
    assert [body["metadata"]["name"] for body in harness.api.sent("POST", "/binding")] == [
        "slow"]


# --- a long cycle gives the loop turns --------------------------------------------------

def _signal_decisions(harness: Harness) -> asyncio.Event:
    """An event set each time the scheduler has finished a scheduling cycle."""
    decided = asyncio.Event()
    schedule_one = harness.scheduler.schedule_one

    def scheduled(queued: Any) -> None:
        schedule_one(queued)
        decided.set()

    harness.scheduler.schedule_one = scheduled  # type: ignore[method-assign]
    return decided


def _long_cycle_harness() -> tuple[Harness, list[float]]:
    """40 nodes whose per-node Filter takes 4 ms each (a 160 ms cycle), and the times
    the Filter calls ended."""
    harness = make_harness()
    for index in range(3, 41):
        harness.scheduler.cache.add_or_update_node(node(f"n{index}"))
    filtered: list[float] = []

    def slow_filter(_: str) -> None:
        time.sleep(0.004)
        filtered.append(time.perf_counter())

    harness.script.on_filter = slow_filter
    return harness, filtered


async def test_a_long_cycle_lets_other_tasks_run_while_it_goes_on() -> None:
    """Per-node Filter taking 4 ms on 40 nodes holds the loop 160 ms: the cycle pauses
    between nodes, so a task ticking meanwhile runs in the middle of the cycle, and the
    pod is still placed once."""
    harness, filtered = _long_cycle_harness()
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    decided = _signal_decisions(harness)
    ticker = asyncio.create_task(tick())
    loop = asyncio.create_task(harness.scheduler.run())
    harness.scheduler.queue.add(make_info(pod("long")))
    try:
        await asyncio.wait_for(decided.wait(), 10)
    finally:
        harness.scheduler.stop()
        ticker.cancel()
        await asyncio.gather(loop, ticker, return_exceptions=True)
    await harness.settle()
    assert len(filtered) == 40
    during = [t for t in ticks if filtered[0] < t < filtered[-1]]
    assert len(during) >= 2, "the loop never ran while the cycle went on"
    assert [body["metadata"]["name"] for body in harness.api.sent("POST", "/binding")] == [
        "long"]


async def test_a_pod_deleted_while_its_cycle_paused_is_neither_assumed_nor_bound() -> None:
    harness, filtered = _long_cycle_harness()
    started = asyncio.Event()
    slow_filter = harness.script.on_filter
    assert slow_filter is not None
    harness.script.on_filter = lambda name: (started.set(), slow_filter(name))[1]
    doomed = pod("doomed")

    async def delete_mid_cycle() -> None:
        await started.wait()
        # As the informer's delete handler does, while the cycle is paused.
        harness.scheduler.queue.delete(doomed.metadata.uid)

    decided = _signal_decisions(harness)
    deleter = asyncio.create_task(delete_mid_cycle())
    loop = asyncio.create_task(harness.scheduler.run())
    harness.scheduler.queue.add(make_info(doomed))
    try:
        async with asyncio.timeout(10):
            await deleter
            await decided.wait()
    finally:
        harness.scheduler.stop()
        await asyncio.gather(loop, return_exceptions=True)
    await harness.settle()
    assert len(filtered) == 40  # the cycle ran to its end
    assert harness.api.sent("POST", "/binding") == []
    assert not harness.scheduler.cache.has_pod(doomed.metadata.uid)
    assert harness.where(doomed) is None


def test_the_handles_pod_lister_reads_the_pod_informer(harness: Harness) -> None:
    """VolumeBinding's PreBind asks it (issue 33 item 8): by uid at once, by name for a
    pod recreated under it, None once gone; no lister without a pod informer."""
    handle = harness.scheduler.frameworks["kpysched"].handle
    assert handle.pod_lister is None
    first, again = pod("p"), pod("p")
    store = {first.metadata.uid: first}
    harness.scheduler.context.pods = lambda: store
    lister = handle.pod_lister
    assert lister is not None
    assert lister.get("default", "p", first.metadata.uid) is first
    store = {again.metadata.uid: again}
    assert lister.get("default", "p", first.metadata.uid) is again
    store = {}
    assert lister.get("default", "p", first.metadata.uid) is None
