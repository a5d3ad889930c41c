"""Generated Pods and Nodes, from watch lines to the API requests the scheduler makes.

Each example is a small cluster in wire shape (tests/unit/fuzz/strategies.py) fed the way
the informers feed a running scheduler: watch lines through the Decoder into the stores,
whose handlers fill the cache and the queue. Every pod that pops is scheduled by the
default profile, bindings and preemption included, against a recording API that plays
the API server's part: a Binding comes back as the pod's update, a deleted victim as
its deletion. Halfway, generated updates and deletions of the same objects arrive.

The properties:
- decoding never raises: an object that does not fit is logged by name and skipped;
- the informer callbacks never raise, whatever the objects hold;
- every pending pod of ours ends bound (a Binding was posted) or with a FailedScheduling
  event whose message gives the reason, or is held at PreEnqueue (scheduling gates, a
  preemption under way), and the loop goes on to the next pod;
- no plugin and no part of the cycle crashes: a pod that cannot be judged is rejected
  with a reason, never with a Python exception's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, cast

from hypothesis import example, given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from kpysched.api.client import RawApi
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.informers.decode import Decoder, ObjectEvent
from kpysched.informers.store import Store, T
from kpysched.objects.api import Node, NodeList, Pod, PodList
from kpysched.plugins import IN_TREE
from kpysched.scheduling.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.scheduling.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.fuzz import strategies as s

SCHEDULER_NAME = "kpysched"  # the default profile's
# Log events that mean a bug rather than a verdict.
CRASHES = ("plugin.raised", "scheduling_cycle.crashed", "bind.crashed")
# Rejected pods are retried while the loop is idle: a bound on the cycles per phase.
ATTEMPTS_PER_POD = 3
POP_WAIT_SECONDS = 0.01


@dataclass
class Change:
    """A later watch event for one of the example's objects: MODIFIED (with `new`) or
    DELETED."""

    kind: str  # "node", "running" or "pending"
    index: int
    new: dict[str, Any] | None


@dataclass
class Cluster:
    nodes: list[dict[str, Any]]
    running: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    changes: list[Change] = field(default_factory=list)


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    node_count = draw(st.sampled_from((1, 2, 3, 4, 0)))  # shrinks towards one node
    node_names = tuple(f"node-{i}" for i in range(node_count))
    strategies = {"node": s.nodes, "running": s.pods(node_names, assigned=True),
                  "pending": s.pods(node_names, assigned=False)}
    cluster = Cluster(
        nodes=[s.named(draw(s.nodes), name) for name in node_names],
        running=[s.named(draw(strategies["running"]), f"running-{i}")
                 for i in range(draw(st.integers(0, 4)))],
        pending=[s.named(draw(strategies["pending"]), f"pending-{i}")
                 for i in range(draw(st.integers(1, 4)))],
    )
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(("pending", "running", "node")))
        objects = getattr(cluster, kind if kind != "node" else "nodes")
        if not objects:
            continue
        index = draw(st.integers(0, len(objects) - 1))
        new = draw(st.one_of(st.none(), strategies[kind]))
        cluster.changes.append(Change(kind, index, None if new is None else s.named(
            new, objects[index]["metadata"]["name"])))
    return cluster


def watch_line(event_type: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, ensure_ascii=False).encode()


def apply(decoder: Decoder[T], store: Store[T], line: bytes) -> None:
    """What the reflector does with one watch line."""
    item = decoder.decode_event(line)
    if isinstance(item, ObjectEvent):
        if item.type == "DELETED":
            store.delete(item.obj)
        else:
            store.upsert(item.obj)


class FakeCluster:
    """The informers' side: objects as last sent, and the watch lines that carry them."""

    def __init__(self, scheduler: Scheduler) -> None:
        pod_handler = PodEventHandler(scheduler, scheduler.context.writes.events)
        pod_handler.on_leading()
        self.pod_store: Store[Pod] = Store(pod_handler)
        self.node_store: Store[Node] = Store(NodeEventHandler(scheduler))
        self.pod_decoder = Decoder("pods", Pod, PodList)
        self.node_decoder = Decoder("nodes", Node, NodeList)
        self.raw_pods: dict[str, dict[str, Any]] = {}  # uid -> the last pod sent
        self.version = 1

    def send_node(self, event_type: str, node: dict[str, Any]) -> None:
        apply(self.node_decoder, self.node_store, watch_line(event_type, self._next(node)))

    def send_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        pod = self._next(pod)
        if event_type == "DELETED":
            self.raw_pods.pop(pod["metadata"]["uid"], None)
        else:
            self.raw_pods[pod["metadata"]["uid"]] = pod
        apply(self.pod_decoder, self.pod_store, watch_line(event_type, pod))

    def _next(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.version)}}

    def answer(self, method: str, path: str, body: Any) -> None:
        """What the API server's watch sends after a write the scheduler made."""
        if method == "POST" and path.endswith("/binding"):
            pod = self.raw_pods.get(body["metadata"]["uid"])
            if pod is not None:
                # The fuzz may have sent a malformed spec (a list, a string) after the
                # scheduler read a good one; the binding still sets spec.nodeName.
                sent = pod.get("spec")
                spec = {**(sent if isinstance(sent, dict) else {}),
                        "nodeName": body["target"]["name"]}
                self.send_pod("MODIFIED", {**pod, "spec": spec})
        elif method == "DELETE" and "/pods/" in path:
            pod = self.raw_pods.get(body["preconditions"]["uid"])
            if pod is not None:
                self.send_pod("DELETED", pod)


@dataclass
class Run:
    api: RecordingApi
    logs: list[dict[str, Any]]
    pods: dict[str, Pod]  # uid -> decoded pod, as the informer holds it at the end
    queue_places: dict[str, str | None]

    def log_events(self, *names: str) -> list[dict[str, Any]]:
        return [entry for entry in self.logs if entry["event"] in names]

    def failed_scheduling(self, uid: str) -> list[str]:
        return [body["note"] for body in self.api.sent("POST", "/events")
                if body["reason"] == "FailedScheduling" and body["regarding"]["uid"] == uid]

    def bound(self, uid: str) -> bool:
        return any(body["metadata"]["uid"] == uid for body in self.api.sent("POST", "/binding"))


async def next_pod(scheduler: Scheduler) -> QueuedPodInfo | None:
    """What the loop would pop now: an active pod, or (the scheduler being idle) one
    rejected pod sitting out its backoff; None when it would wait."""
    counts = scheduler.queue.pending_counts()
    if counts["active"]:
        return await scheduler.queue.pop()
    if counts["backoff"]:
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(scheduler.queue.pop(), POP_WAIT_SECONDS)
    return None


async def schedule_rounds(scheduler: Scheduler, fake: FakeCluster, api: RecordingApi,
                          attempts: int) -> None:
    """Schedule what the loop would pop, let the bindings finish, play back what the
    API server would send; until nothing moves or `attempts` cycles have run."""
    answered = 0
    while attempts:
        while attempts and (queued := await next_pod(scheduler)) is not None:
            scheduler.schedule_one(queued)
            attempts -= 1
            await asyncio.sleep(0)  # bindings run between decisions, as in Scheduler.run
        await scheduler.drain_placements(timeout=5)
        requests = api.requests[answered:]
        answered += len(requests)
        for request in requests:
            fake.answer(*request)
        if not requests:
            return


async def run(cluster: Cluster) -> Run:
    recording = RecordingApi()
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND})
    scheduler = build_scheduler(config, build_profiles(config, IN_TREE), IN_TREE,
                                cast(RawApi, recording))
    fake = FakeCluster(scheduler)
    pods = len(cluster.running) + len(cluster.pending)
    with capture_logs() as logs:
        for node in cluster.nodes:
            fake.send_node("ADDED", node)
        for pod in [*cluster.running, *cluster.pending]:
            fake.send_pod("ADDED", pod)
        await schedule_rounds(scheduler, fake, recording, ATTEMPTS_PER_POD * pods)
        for change in cluster.changes:
            objects = cluster.nodes if change.kind == "node" else getattr(cluster, change.kind)
            old = objects[change.index]
            send = fake.send_node if change.kind == "node" else fake.send_pod
            send("DELETED" if change.new is None else "MODIFIED", change.new or old)
        await schedule_rounds(scheduler, fake, recording, ATTEMPTS_PER_POD * pods)
        await scheduler.drain_writes(timeout=5)
        await scheduler.abort_writes()  # ends the event and status writers' tasks
    pods = dict(fake.pod_store.objects)
    return Run(recording, logs, pods, {uid: scheduler.queue.where(uid) for uid in pods})


def check(cluster: Cluster, outcome: Run) -> None:
    crashed = [f"{entry['event']}: {entry.get('error') or entry.get('exc_info')}"
               for entry in outcome.log_events(*CRASHES)]
    assert crashed == []
    # An object the decoder skipped was logged with its uid.
    skipped = {entry.get("uid") for entry in outcome.log_events("informer.decode_failed")}
    changed = {cluster.pending[c.index]["metadata"]["uid"] for c in cluster.changes
               if c.kind == "pending"}
    for raw in cluster.pending:
        uid = raw["metadata"]["uid"]
        pod = outcome.pods.get(uid)
        if pod is None:
            assert uid in skipped or uid in changed, f"pod {uid} neither decoded nor reported"
            continue
        notes = outcome.failed_scheduling(uid)
        if pod.spec.scheduler_name != SCHEDULER_NAME:
            if uid not in changed:
                assert notes == [] and not outcome.bound(uid), "another scheduler's pod"
            continue
        if pod.metadata.deletion_timestamp is not None:
            continue
        assert outcome.bound(uid) or notes or outcome.queue_places[uid] == "gated", (
            f"pod {pod.metadata.name} has no verdict (queue: {outcome.queue_places[uid]})")
        assert all(notes), "a FailedScheduling event without a reason"


@given(clusters())
@example(Cluster(  # a 5000-digit request and an unparseable one, next to a plain pod
    nodes=[s.named(s.EXAMPLE_NODE, "node-0")],
    running=[],
    pending=[s.named(s.example_pod(cpu="1" + "0" * 5000), "pending-0"),
             s.named(s.example_pod(cpu="1k1"), "pending-1"),
             s.named(s.example_pod(cpu="100m"), "pending-2")]))
@example(Cluster(  # a victim preempted for a higher-priority pod, its deletion echoed
    nodes=[s.named(s.EXAMPLE_NODE, "node-0")],
    running=[s.named(s.example_pod(cpu="4", node="node-0", priority=0), "running-0")],
    pending=[s.named(s.example_pod(cpu="1", priority=1000), "pending-0")]))
@example(Cluster(  # int64 overflow: the largest node, requests summing past int64
    nodes=[s.named(s.example_node(cpu="9223372036854775807", memory="1Ei"), "node-0")],
    running=[s.named(s.example_pod(cpu="9223372036854775807", node="node-0"), "running-0")],
    pending=[s.named(s.example_pod(cpu="9223372036854775807"), "pending-0"),
             s.named(s.example_pod(cpu="1e3"), "pending-1")]))
@example(Cluster(  # selectors the API server would refuse: In with no values, Gt "abc"
    nodes=[s.named(s.EXAMPLE_NODE, "node-0")],
    running=[],
    pending=[s.named(s.example_pod(affinity=s.required_node_affinity(
                 {"key": "zone", "operator": "In"})), "pending-0"),
             s.named(s.example_pod(affinity=s.required_node_affinity(
                 {"key": "zone", "operator": "Gt", "values": ["abc"]})), "pending-1"),
             s.named(s.example_pod(topologySpreadConstraints=[{
                 "maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Maybe",
                 "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}]),
                 "pending-2")]))
@example(Cluster(  # a thousand labels on every object, anti-affinity over all of them
    nodes=[s.named({**s.EXAMPLE_NODE, "metadata": {"labels": {f"k{i}": "v" for i in range(
        1000)}}}, "node-0")],
    running=[s.named(s.example_pod(node="node-0", labels={f"k{i}": "v" for i in range(1000)}),
                     "running-0")],
    pending=[s.named(s.example_pod(affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": "k1", "labelSelector": {"matchLabels": {"k999": "v"}}}]}}),
        "pending-0")]))
def test_every_pod_gets_a_verdict_and_nothing_crashes(cluster: Cluster) -> None:
    check(cluster, asyncio.run(run(cluster)))


def test_the_harness_sees_bindings_rejections_and_preemption() -> None:
    """The fake API server is not a no-op: a victim's deletion comes back and lets its
    preemptor bind, a malformed pod is told why, a plain pod binds."""
    cluster = Cluster(
        nodes=[s.named(s.EXAMPLE_NODE, "node-0")],
        running=[s.named(s.example_pod(cpu="4", node="node-0"), "running-0")],
        pending=[s.named(s.example_pod(cpu="1", priority=1000), "pending-0"),
                 s.named(s.example_pod(cpu="1k1", priority=1000), "pending-1")])
    outcome = asyncio.run(run(cluster))
    check(cluster, outcome)
    assert outcome.api.sent("DELETE", "/pods/running-0")
    assert outcome.bound("uid-pending-0")
    assert outcome.failed_scheduling("uid-pending-1") == [
        "pod cannot be scheduled: invalid quantity '1k1': unable to parse quantity's suffix"]
