"""Pod status writes: the PodScheduled condition and nominatedNodeName.

Written as upstream's updatePod does (a strategic-merge patch of pods/status, only
when something changed; lastTransitionTime kept while the status stays False), but
off the scheduling loop and coalesced per pod: while a pod's patch waits for a
writer, a newer one for the same pod replaces it. The backlog is therefore at most
one entry per pending pod however many attempts fail, and never a task per write.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import structlog

from kpysched.api.client import RawApi
from kpysched.api.times import api_time
from kpysched.objects import api

log = structlog.get_logger(__name__)

WRITERS = 4


@dataclass(slots=True)
class _Pending:
    namespace: str
    name: str
    status: dict[str, Any]


class PodStatusWriter:
    # Built-in kinds take strategic-merge patches; custom resources only merge patches.
    CONTENT_TYPE = "application/strategic-merge-patch+json"

    def __init__(self, raw: RawApi, writers: int = WRITERS) -> None:
        self._raw = raw
        self._writers = writers
        self._pending: dict[str, _Pending] = {}  # by pod uid, newest patch per pod
        self._ready: asyncio.Queue[str] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_progress = 0
        # Pods with a patch under way now, set when it ends: flush waits on them.
        self._writing: dict[str, asyncio.Event] = {}
        self._aborted = False

    def set_unschedulable_condition(self, pod: api.Pod, reason: str, message: str,
                                    nominated_node: str | None = None) -> None:
        """PodScheduled=False with the event's message, and the nominated node when
        preemption chose one ("" clears it); nothing when both are already so."""
        nomination_changes = (nominated_node is not None
                              and nominated_node != pod.status.nominated_node_name)
        current = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
        same = (current is not None and current.status == "False"
                and current.reason == reason and current.message == message)
        if same and not nomination_changes:
            return
        # As podutil.UpdatePodCondition: the transition time moves only with the status.
        since = (current.last_transition_time
                 if current is not None and current.status == "False"
                 and current.last_transition_time else api_time())
        status: dict[str, Any] = {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": since,
        }]}
        if nomination_changes:
            status["nominatedNodeName"] = nominated_node or None
        self.patch(pod, status)

    async def write_nominated_node(self, pod: api.Pod, node: str) -> None:
        """status.nominatedNodeName = node, written now, before the binding goes on (a
        queued patch could reach the API server after the binding, which refuses a
        nominated node on a bound pod); unless it already is. A failure is logged and
        the binding goes on, as upstream's."""
        if self._aborted or pod.status.nominated_node_name == node:
            return
        meta = pod.metadata
        await self._write(_Pending(meta.namespace, meta.name, {"nominatedNodeName": node}))

    def patch(self, pod: api.Pod, status: dict[str, Any]) -> None:
        """Queue a strategic-merge patch of the pod's status, merged into any patch
        for the same pod that has not gone out yet (later keys win)."""
        meta = pod.metadata
        self._queue(meta.uid, meta.namespace, meta.name, status)

    def _queue(self, uid: str, namespace: str, name: str, status: dict[str, Any]) -> None:
        if self._aborted:
            return
        waiting = self._pending.get(uid)
        if waiting is not None:
            waiting.status.update(status)
            return
        self._pending[uid] = _Pending(namespace, name, dict(status))
        self._start().put_nowait(uid)

    @property
    def queued(self) -> int:
        return len(self._pending)

    def _start(self) -> asyncio.Queue[str]:
        if self._ready is None:
            self._ready = asyncio.Queue()
            loop = asyncio.get_running_loop()
            for index in range(self._writers):
                task = loop.create_task(self._write_forever(), name=f"status writer {index}")
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        return self._ready

    async def _write_forever(self) -> None:
        assert self._ready is not None
        ready = self._ready
        while True:
            uid = await ready.get()
            pending = self._pending.pop(uid, None)
            if pending is None:
                ready.task_done()
                continue
            self._in_progress += 1
            try:
                await self._write_tracked(uid, pending)
            except Exception:
                log.exception("pod_status.write_crashed", pod=f"{pending.namespace}/{pending.name}")
            finally:
                self._in_progress -= 1
                ready.task_done()

    async def flush(self, uid: str) -> None:
        """Write now what is queued for this pod and wait for a patch of it already under
        way. Called before a pod is bound: a failed attempt's PodScheduled=False must
        reach the API server before the binding, never after it (upstream, without
        SchedulerAsyncAPICalls, writes it before the pod can be retried)."""
        while not self._aborted:
            writing = self._writing.get(uid)
            if writing is not None:
                await writing.wait()
                continue
            pending = self._pending.pop(uid, None)
            if pending is None:
                return
            # Its entry in the ready queue finds nothing pending and is skipped.
            await self._write_tracked(uid, pending)

    async def _write_tracked(self, uid: str, pending: _Pending) -> None:
        done = asyncio.Event()
        self._writing[uid] = done
        try:
            await self._write(pending)
        finally:
            if self._writing.get(uid) is done:
                del self._writing[uid]
            done.set()

    def _path(self, namespace: str, name: str) -> str:
        return f"/api/v1/namespaces/{namespace}/pods/{name}/status"

    async def _write(self, pending: _Pending) -> None:
        response = await self._raw.request(
            "PATCH", self._path(pending.namespace, pending.name),
            {"status": pending.status}, content_type=self.CONTENT_TYPE)
        if not response.ok and response.status != 404:
            log.warning("pod_status.patch_failed", object=f"{pending.namespace}/{pending.name}",
                        path=self._path(pending.namespace, pending.name),
                        status=response.status, message=response.message())

    async def drain(self, timeout: float) -> None:
        """Graceful stop: wait (bounded) for the patches still queued."""
        if self._ready is None or self._aborted:
            return
        try:
            await asyncio.wait_for(self._ready.join(), timeout)
        except TimeoutError:
            log.warning("pod_status.drain_timeout", left=len(self._pending))

    async def abort(self) -> None:
        """The lease is lost: write nothing more."""
        self._aborted = True
        self._pending.clear()
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
