"""Driving the live scheduler's own code over a simulated cluster.

`build_scheduler` builds the Scheduler, frameworks, Cache and SchedulingQueue as
`kpysched run` does; the world's objects reach them through the informer handlers
(PodEventHandler, NodeEventHandler, the listers' indexes), and the pods to place
are added to the queue one at a time and decided by `Scheduler.schedule_one`. The
API the scheduler writes to is `OfflineApi`, an in-memory stand-in that answers every
write as the API server would and turns bindings, status patches and victim
deletions into the informer events the live scheduler would then receive. Nothing
here can reach a cluster: the scheduler never holds a connection.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from kpysched.api.client import RawApi
from kpysched.api.response import ApiResponse
from kpysched.app import build_scheduler
from kpysched.config import EffectiveProfile, SchedulerConfiguration
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.features import Features
from kpysched.decisions import record
from kpysched.framework.cluster_events import ActionType, ClusterEvent
from kpysched.framework.cluster_events import Resource as EventResource
from kpysched.framework.registry import PluginSpec
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.scheduling.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.simulate.snapshot import resource_specs
from kpysched.simulate.world import World

# How long a binding may take before it is left as it is (the pod stays assumed on its
# node): a PreBind that waits for another controller (a PV binder, a DRA driver) never
# finishes in a simulated cluster.
BIND_SETTLE_SECONDS = 2.0
# A pod is tried at most this many times in all (a preemptor needs two).
MAX_ATTEMPTS = 4
POP_WAIT_SECONDS = 0.05

_POD_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)(?:/(binding|status))?$")
_NAMESPACE_CHANGE = ClusterEvent(EventResource.NAMESPACE, ActionType.ADD | ActionType.UPDATE,
                                 "NamespaceChange")

PLACED = "placed"
PENDING = "pending"
ERROR = "error"


@dataclass(slots=True)
class _Change:
    """An informer event the API server would send after a write."""

    action: str  # "update" or "delete"
    old: api.Pod
    new: api.Pod | None


class OfflineApi:
    """RawApi's stand-in: pods kept in memory, every write answered as accepted.

    POST pods/<name>/binding sets spec.nodeName, PATCH pods/<name>/status applies
    nominatedNodeName and conditions, DELETE pods/<name> removes the pod (preemption);
    each becomes a `_Change` for the runner to deliver. Events and anything else are
    recorded and answered 201/200."""

    def __init__(self) -> None:
        self.pods: dict[str, api.Pod] = {}
        self.requests: list[tuple[str, str]] = []
        self.changes: list[_Change] = []

    def sibling(self, lane: str | None = None) -> OfflineApi:
        return self

    async def request(self, method: str, path: str, body: Any = None,
                      **_: Any) -> ApiResponse:
        self.requests.append((method, path))
        matched = _POD_PATH.match(path)
        if matched is None:
            return ApiResponse(201 if method == "POST" else 200, b"{}")
        key = f"{matched.group(1)}/{matched.group(2)}"
        pod = self.pods.get(key)
        if pod is None:
            return ApiResponse(404, msgspec.json.encode(
                {"kind": "Status", "code": 404, "reason": "NotFound",
                 "message": f'pods "{matched.group(2)}" not found'}))
        subresource = matched.group(3)
        if method == "POST" and subresource == "binding":
            new = msgspec.structs.replace(pod, spec=msgspec.structs.replace(
                pod.spec, node_name=body["target"]["name"]))
        elif method == "PATCH" and subresource == "status":
            new = _patched_status(pod, body.get("status") or {})
        elif method == "DELETE" and subresource is None:
            del self.pods[key]
            self.changes.append(_Change("delete", pod, None))
            return ApiResponse(200, b"{}")
        else:
            return ApiResponse(200, b"{}")
        self.pods[key] = new
        self.changes.append(_Change("update", pod, new))
        return ApiResponse(201 if method == "POST" else 200, b"{}")

    def take_changes(self) -> list[_Change]:
        changes, self.changes = self.changes, []
        return changes


def _patched_status(pod: api.Pod, patch: Mapping[str, Any]) -> api.Pod:
    status = pod.status
    if "nominatedNodeName" in patch:
        status = msgspec.structs.replace(status,
                                         nominated_node_name=patch["nominatedNodeName"] or "")
    if "conditions" in patch:
        patched = msgspec.convert(patch["conditions"], list[api.PodCondition], str_keys=True)
        kept = [c for c in status.conditions if c.type not in {p.type for p in patched}]
        status = msgspec.structs.replace(status, conditions=[*kept, *patched])
    return msgspec.structs.replace(pod, status=status)


@dataclass(slots=True)
class Placement:
    """Where one pod went, as its last attempt decided."""

    pod: str  # namespace/name
    outcome: str  # placed, pending, error
    node: str | None = None
    message: str = ""  # the FailedScheduling text when pending
    ties: list[str] = field(default_factory=list)  # the nodes it was chosen among
    victims: list[str] = field(default_factory=list)  # pods preempted for it
    nominated_node: str | None = None
    attempts: int = 0
    # Placed by a retry during a later pod's step (a cluster event moved it back).
    placed_after: str | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tied(self) -> bool:
        return len(self.ties) > 1


class Simulation:
    """One simulated cluster and the live scheduler's code over it."""

    def __init__(self, config: SchedulerConfiguration, profiles: Sequence[EffectiveProfile],
                 registry: Mapping[str, PluginSpec], *, seed: int = 0,
                 features: Features = DEFAULT_FEATURES) -> None:
        """`features`: the release (and gates) the profiles were built for."""
        self.api = OfflineApi()
        self.listers = Listers()
        # Decisions are read back after every step, so the store only needs the
        # attempts of one step.
        # The seed breaks ties as a live kpysched started with the same tie_break_seed
        # (KPYSCHED_TIE_BREAK_SEED) does.
        # The extenders are asked what they would decide, but never to bind: a
        # simulation writes nothing anywhere.
        config = config.model_copy(update={"extenders": [
            extender.model_copy(update={"bind_verb": ""}) for extender in config.extenders]})
        self.scheduler = build_scheduler(config, profiles, registry, cast(RawApi, self.api),
                                         self.listers, decision_records=10_000,
                                         tie_break_seed=seed, features=features)
        queue = self.scheduler.queue
        # Wired as `kpysched run` wires them (app.run).
        self.listers.namespaces.on_change = (
            lambda _, old, new: queue.move_on_event(_NAMESPACE_CHANGE, old, new))
        self.listers.storage.requeue_with(queue.move_on_event)
        self.listers.resources.requeue_with(queue.move_on_event)
        self.pod_handler = PodEventHandler(self.scheduler, self.scheduler.context.writes.events)
        self.pod_handler.on_leading()
        self.node_handler = NodeEventHandler(self.scheduler)
        self.placements: dict[str, Placement] = {}
        self.skipped_pending: list[str] = []  # the world's own pending pods of our profiles

    def load(self, world: World) -> None:
        """Every object of the world, through the handlers the informers call."""
        for node in world.of("nodes"):
            self.node_handler.on_add(node)
        indexes = {resource: index for _, _, _, index, resource in self.listers.specs()}
        for spec in resource_specs():
            index = indexes.get(spec.resource)
            if index is not None:
                for obj in world.of(spec.resource):
                    index.on_add(obj)
        for pod in world.of("pods"):
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            if not pod.spec.node_name and self.scheduler.responsible_for(pod.spec.scheduler_name):
                self.skipped_pending.append(key)
                continue
            self.api.pods[key] = pod
            self.pod_handler.on_add(pod)

    async def place(self, pod: api.Pod) -> list[Placement]:
        """Add `pod` as a new pending pod and run its scheduling cycle, then the cycles
        of the pods that what followed moved back to the queue (a preemptor whose
        victims are gone, a pod an affinity now satisfies). The placements this step
        changed, `pod`'s first."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        placement = Placement(key, PENDING)
        self.placements[key] = placement
        if not self.scheduler.responsible_for(pod.spec.scheduler_name):
            placement.outcome = ERROR
            placement.message = (f"no profile has schedulerName {pod.spec.scheduler_name!r} "
                                 f"(profiles: {', '.join(self.scheduler.frameworks)})")
            return [placement]
        self.api.pods[key] = pod
        self.pod_handler.on_add(pod)
        if self.scheduler.queue.where(pod.metadata.uid) == "gated":
            placement.message = "pod has scheduling gates"
            return [placement]
        changed = [placement]
        queue = self.scheduler.queue
        retries = 0
        while True:
            counts = queue.pending_counts()
            if counts["active"] == 0:
                # Pods backing off: the live scheduler retries them once their backoff
                # ends, which in a simulation is now (at most once each per step).
                if counts["backoff"] == 0 or retries >= counts["backoff"]:
                    break
                retries += 1
            try:
                queued = await asyncio.wait_for(queue.pop(), POP_WAIT_SECONDS)
            except TimeoutError:
                break  # only pods backing off after an error: they wait for their backoff
            if queued is None:
                break
            popped = queued.pod_info.key
            target = self.placements.get(popped)
            if target is None or target.attempts >= MAX_ATTEMPTS:
                queue.delete(queued.pod_info.uid)  # not ours to place, or given up on
                continue
            self.scheduler.schedule_one(queued)
            await self._settle()
            target.attempts += 1
            self._read_decisions(target, queued.pod_info.pod)
            if target is not placement:
                if target.outcome == PLACED:
                    target.placed_after = key
                if target not in changed:
                    changed.append(target)
        return changed

    async def _settle(self) -> None:
        """Let the attempt's writes finish and deliver what they changed, as the
        informers would, until nothing more changes."""
        writes = self.scheduler.context.writes
        while True:
            await writes.binder.drain(BIND_SETTLE_SECONDS)
            await writes.binder.abort()  # still waiting: leave the pod assumed
            await writes.preemption.drain(BIND_SETTLE_SECONDS)
            await writes.status.drain(BIND_SETTLE_SECONDS)
            changes = self.api.take_changes()
            if not changes:
                return
            for change in changes:
                if change.new is None:
                    self.pod_handler.on_delete(change.old)
                    victim = f"{change.old.metadata.namespace}/{change.old.metadata.name}"
                    if (placed := self.placements.get(victim)) is not None:
                        placed.outcome, placed.node = PENDING, None
                        placed.message = "preempted"
                else:
                    self.pod_handler.on_update(change.old, change.new)

    def _read_decisions(self, placement: Placement, pod: api.Pod) -> None:
        store = self.scheduler.context.decisions
        assert store is not None
        decisions = store.for_pod(pod.metadata.namespace, pod.metadata.name)
        placement.decisions += decisions[len(placement.decisions):]
        if not placement.decisions:
            return
        last = placement.decisions[-1]
        placement.ties = list(last.get("ties") or [])
        placement.nominated_node = last.get("nominated_node") or placement.nominated_node
        for decision in placement.decisions:
            preemption = decision.get("preemption")
            if preemption and preemption.get("chosen"):
                chosen = next((c for c in preemption["candidates"]
                               if c["node"] == preemption["chosen"]), None)
                if chosen is not None:
                    placement.victims = list(chosen["victims"])
        if last["outcome"] in (record.SCHEDULED, record.BOUND):
            placement.outcome, placement.node, placement.message = PLACED, last["node"], ""
        elif last["outcome"] == record.ERROR:
            placement.outcome, placement.message = ERROR, last["message"]
        else:
            placement.outcome, placement.message = PENDING, last["message"]

    async def close(self) -> None:
        await self.scheduler.abort_writes()
        extenders = self.scheduler.context.algorithm.extenders
        if extenders is not None:
            await extenders.close()
