"""Actuating a preemption decision against the API, off the scheduling loop.

As upstream's executor: each victim first gets the DisruptionTarget condition
(reason PreemptionByScheduler), then is deleted, then a Preempted event is
recorded; lower-priority pods nominated to the same node lose that nomination.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from kpysched.api.client import RawApi
from kpysched.api.times import api_time
from kpysched.objects.pod import PodInfo
from kpysched.queue.nominator import Nominator
from kpysched.writes.event_recorder import EventRecorder
from kpysched.writes.pod_status import PodStatusWriter

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Preemptor:
    """Who the room is made for, as the writes name it: a pod, or (v1.37) a pod group
    (upstream's podGroupExecutorPreemptor, its kind "podgroup")."""

    uid: str
    key: str
    scheduler_name: str
    priority: int
    kind: str  # upstream's preemptor type: "pod" or "podgroup"
    related: dict[str, str]  # the Preempted event's related object

    @classmethod
    def of_pod(cls, pod: PodInfo) -> Preemptor:
        meta = pod.pod.metadata
        return cls(pod.uid, pod.key, pod.pod.spec.scheduler_name, pod.priority, "pod",
                   {"kind": "Pod", "apiVersion": "v1", "namespace": meta.namespace,
                    "name": meta.name, "uid": meta.uid})


class PreemptionExecutor:
    def __init__(self, raw: RawApi, recorder: EventRecorder, status_writer: PodStatusWriter,
                 nominator: Nominator, on_finished: Callable[[], object] | None = None) -> None:
        self._raw = raw
        self._recorder = recorder
        self._status_writer = status_writer
        self._nominator = nominator
        self._on_finished = on_finished
        self._tasks: set[asyncio.Task[None]] = set()
        # Preemptor uid -> its tasks still removing victims: one preemptor may have
        # several (a group's members, or a retry before the first finished), and it is
        # held until the last of them ends.
        self._running: dict[str, int] = {}

    def is_running(self, uid: str) -> bool:
        return uid in self._running

    def preempt(self, preemptor: PodInfo | Preemptor, node_name: str,
                victims: Sequence[PodInfo], plugin: str, in_memory: Sequence[PodInfo] = (),
                on_failed: Callable[[], object] | None = None,
                on_done: Callable[[bool], object] | None = None) -> None:
        """Delete `victims`; `in_memory` ones were only waiting at Permit or in PreBind
        and were already sent back to the queue, so they just get the Preempted event.
        `on_failed` runs when a victim could not be removed: the preemptor, parked
        among the unschedulable, would otherwise wait for an unrelated event or the
        5-minute flush (upstream's prepareCandidateAsync activates it). `on_done` is
        told, once the removals end, whether every victim went (not called when none
        was left to delete)."""
        if isinstance(preemptor, PodInfo):
            preemptor = Preemptor.of_pod(preemptor)
        for victim in in_memory:
            self._recorder.event(
                victim.pod, preemptor.scheduler_name, "Normal", "Preempted",
                "Preempting", f"{_preempted_by(preemptor, node_name)} (in kube-scheduler memory).",
                related=preemptor.related)
        # Lower-priority pods nominated here would compete for the room being freed.
        for other in self._nominator.pods_for_node(node_name):
            if other.uid != preemptor.uid and other.priority < preemptor.priority:
                self._nominator.delete(other.uid)
                self._status_writer.patch(other.pod, {"nominatedNodeName": None})
        pending = [v for v in victims if v.pod.metadata.deletion_timestamp is None]
        if not pending:
            return
        self._running[preemptor.uid] = self._running.get(preemptor.uid, 0) + 1
        task = asyncio.get_running_loop().create_task(
            self._run(preemptor, node_name, pending, on_failed, on_done),
            name=f"preempt for {preemptor.key}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, preemptor: Preemptor, node_name: str, victims: Sequence[PodInfo],
                   on_failed: Callable[[], object] | None,
                   on_done: Callable[[bool], object] | None) -> None:
        *first, last = victims
        removed = False
        try:
            # As upstream: all victims but the last at once, then the last unless one
            # of the others could not be removed (the preemptor is then retried sooner).
            removed = all(await asyncio.gather(
                *(self._preempt_one(preemptor, node_name, victim) for victim in first)))
            if removed:
                removed = await self._preempt_one(preemptor, node_name, last)
        finally:
            left = self._running.get(preemptor.uid, 0) - 1
            if left > 0:
                self._running[preemptor.uid] = left
            else:
                self._running.pop(preemptor.uid, None)
            if self._on_finished is not None:
                self._on_finished()
        if on_done is not None:
            on_done(removed)
        if not removed and on_failed is not None:
            on_failed()

    async def _preempt_one(self, preemptor: Preemptor, node_name: str, victim: PodInfo) -> bool:
        """True once the victim is gone or going (404 counts: already deleted)."""
        meta = victim.pod.metadata
        path = f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}"
        scheduler_name = preemptor.scheduler_name
        condition: dict[str, Any] = {
            "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": (f"{scheduler_name}: preempting to accommodate a higher priority "
                        f"{preemptor.kind}"),
            "lastTransitionTime": api_time(),
        }
        patched = await self._raw.request(
            "PATCH", f"{path}/status", {"status": {"conditions": [condition]}},
            content_type="application/strategic-merge-patch+json")
        if patched.status == 404:
            return True  # already gone
        if not patched.ok:
            log.warning("preemption.condition_failed", victim=victim.key,
                        preemptor=preemptor.key, status=patched.status,
                        message=patched.message())
            return False
        deleted = await self._raw.request(
            "DELETE", path, {"preconditions": {"uid": meta.uid}})
        if deleted.status == 404:
            return True
        if not deleted.ok:
            log.warning("preemption.delete_failed", victim=victim.key, preemptor=preemptor.key,
                        status=deleted.status, message=deleted.message())
            return False
        log.info("preemption.victim_deleted", victim=victim.key, preemptor=preemptor.key,
                 node=node_name)
        self._recorder.event(
            victim.pod, scheduler_name, "Normal", "Preempted", "Preempting",
            _preempted_by(preemptor, node_name), related=preemptor.related)
        return True

    async def drain(self, timeout: float) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def abort(self) -> None:
        """The lease is lost: stop deleting victims at once."""
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)


def _preempted_by(preemptor: Preemptor, node_name: str) -> str:
    return f"Preempted by {preemptor.kind} {preemptor.uid} on node {node_name}"
