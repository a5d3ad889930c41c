"""What users see: events.k8s.io/v1 Events and the pod's PodScheduled condition.

Both are written as upstream kube-scheduler writes them so `kubectl describe pod`
reads the same: reportingController is the profile's scheduler name, Scheduled /
FailedScheduling reasons, the same notes, and a status patch of PodScheduled.
Writes run as background tasks: the scheduling loop never waits on them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
from typing import Any

import structlog

from kpysched.apiclient import RawApi
from kpysched.objects import api

log = structlog.get_logger(__name__)

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"


def _micro_time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, raw: RawApi, instance: str | None = None) -> None:
        self._raw = raw
        self._host = instance or socket.gethostname()
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def event(self, pod: api.Pod, controller: str, type_: str, reason: str, action: str,
              note: str, related: api.Pod | None = None) -> None:
        meta = pod.metadata
        now = dt.datetime.now(dt.UTC)
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.name}.{int(now.timestamp() * 1e9):x}",
                         "namespace": meta.namespace},
            "eventTime": _micro_time(),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self._host}",
            "action": action,
            "reason": reason,
            "regarding": {"kind": "Pod", "apiVersion": "v1", "namespace": meta.namespace,
                          "name": meta.name, "uid": meta.uid,
                          "resourceVersion": meta.resource_version},
            "note": note[:1024],
            "type": type_,
        }
        if related is not None:
            body["related"] = {"kind": "Pod", "apiVersion": "v1",
                               "namespace": related.metadata.namespace,
                               "name": related.metadata.name, "uid": related.metadata.uid}
        self._spawn(self._post(body))

    async def _post(self, body: dict[str, Any]) -> None:
        namespace = body["metadata"]["namespace"]
        response = await self._raw.request(
            "POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body)
        if not response.ok:
            log.warning("event.write_failed", status=response.status, reason=body["reason"],
                        message=response.message())

    def scheduled(self, pod: api.Pod, controller: str, node_name: str) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        self.event(pod, controller, "Normal", SCHEDULED, "Binding",
                   f"Successfully assigned {key} to {node_name}")

    def failed_scheduling(self, pod: api.Pod, controller: str, message: str) -> None:
        self.event(pod, controller, "Warning", FAILED_SCHEDULING, "Scheduling", message)

    def set_unschedulable_condition(self, pod: api.Pod, reason: str, message: str,
                                    nominated_node: str | None = None) -> None:
        """PodScheduled=False with the same message as the event, and the nominated node
        when preemption chose one ("" clears it); patched only when something changed."""
        nomination_changes = (nominated_node is not None
                              and nominated_node != pod.status.nominated_node_name)
        condition_same = any(
            c.type == "PodScheduled" and c.status == "False" and c.reason == reason
            and c.message == message for c in pod.status.conditions)
        if condition_same and not nomination_changes:
            return
        status: dict[str, Any] = {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": _time(),
        }]}
        if nomination_changes:
            status["nominatedNodeName"] = nominated_node or None
        self._spawn(self._patch_status(pod, {"status": status}))

    def patch_status(self, pod: api.Pod, status: dict[str, Any]) -> None:
        """A background strategic-merge patch of pods/status (e.g. clearing nominations)."""
        self._spawn(self._patch_status(pod, {"status": status}))

    async def _patch_status(self, pod: api.Pod, patch: dict[str, Any]) -> None:
        meta = pod.metadata
        response = await self._raw.request(
            "PATCH", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status", patch,
            content_type="application/strategic-merge-patch+json")
        if not response.ok and response.status != 404:
            log.warning("pod_condition.patch_failed", pod=f"{meta.namespace}/{meta.name}",
                        status=response.status, message=response.message())

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) for writes still in flight, e.g. at shutdown."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
