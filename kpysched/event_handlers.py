"""Informer callbacks: route pod and node changes into the cache and the queue.

As upstream's eventhandlers.go: pending pods of our profiles go to the queue;
assigned pods (bound by anyone, the default scheduler included) count against
their node in the cache; node and assigned-pod changes are cluster events that
may move unschedulable pods back.
"""

from __future__ import annotations

import structlog

from kpysched.events import EventRecorder
from kpysched.framework import events as ev
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from kpysched.scheduler import Scheduler

log = structlog.get_logger(__name__)

ASSIGNED_POD_ADD = ev.ClusterEvent(ev.Resource.ASSIGNED_POD, ev.ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE = ev.ClusterEvent(ev.Resource.ASSIGNED_POD, ev.ActionType.UPDATE,
                                      "AssignedPodUpdate")


def _is_assigned(pod: api.Pod) -> bool:
    return bool(pod.spec.node_name)


def _is_terminal(pod: api.Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


class PodEventHandler:
    def __init__(self, scheduler: Scheduler, recorder: EventRecorder) -> None:
        self._scheduler = scheduler
        self._recorder = recorder
        self._reported_malformed: set[str] = set()

    def _info(self, pod: api.Pod) -> PodInfo | None:
        try:
            return PodInfo.of(pod)
        except (QuantityError, ValueError) as error:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            if pod.metadata.uid not in self._reported_malformed:
                self._reported_malformed.add(pod.metadata.uid)
                log.warning("pod.malformed", pod=key, reason=str(error))
                if self._scheduler.responsible_for(pod.spec.scheduler_name):
                    self._recorder.failed_scheduling(
                        pod, pod.spec.scheduler_name, f"pod cannot be scheduled: {error}")
            return None

    def _pending_and_ours(self, pod: api.Pod) -> bool:
        return (not _is_assigned(pod) and pod.metadata.deletion_timestamp is None
                and self._scheduler.responsible_for(pod.spec.scheduler_name))

    def on_add(self, pod: api.Pod) -> None:
        if _is_assigned(pod):
            if _is_terminal(pod):
                return
            info = self._info(pod)
            if info is not None:
                self._scheduler.cache.add_or_update_pod(info)
                self._scheduler.queue.move_on_event(ASSIGNED_POD_ADD)
        elif self._pending_and_ours(pod):
            info = self._info(pod)
            if info is not None:
                self._scheduler.queue.add(info)

    def on_update(self, old: api.Pod, new: api.Pod) -> None:
        queue, cache = self._scheduler.queue, self._scheduler.cache
        if _is_assigned(new):
            if not _is_assigned(old):
                queue.delete(new.metadata.uid)  # bound (by us or anyone): no longer pending
            if _is_terminal(new):
                cache.remove_pod(new.metadata.uid)
                queue.move_on_event(ev.ASSIGNED_POD_DELETE)
                return
            info = self._info(new)
            if info is not None:
                cache.add_or_update_pod(info)
                queue.move_on_event(ASSIGNED_POD_UPDATE if _is_assigned(old) else ASSIGNED_POD_ADD)
        elif self._pending_and_ours(new):
            info = self._info(new)
            if info is not None:
                queue.update(info)
        else:
            queue.delete(new.metadata.uid)  # terminating, or handed to another scheduler

    def on_delete(self, pod: api.Pod) -> None:
        uid = pod.metadata.uid
        self._reported_malformed.discard(uid)
        if _is_assigned(pod) and self._scheduler.cache.has_pod(uid):
            self._scheduler.cache.remove_pod(uid)
            self._scheduler.queue.move_on_event(ev.ASSIGNED_POD_DELETE)
        self._scheduler.queue.delete(uid)
        for framework in self._scheduler.frameworks.values():
            waiting = framework.waiting_pods.get(uid)
            if waiting is not None:
                waiting.reject("", "pod deleted while waiting on permit")


def node_update_event(old: api.Node, new: api.Node) -> ev.ClusterEvent | None:
    """Which scheduling-relevant properties changed, as one ClusterEvent."""
    action = ev.ActionType(0)
    if old.status.allocatable != new.status.allocatable:
        action |= ev.ActionType.UPDATE_NODE_ALLOCATABLE
    if old.metadata.labels != new.metadata.labels:
        action |= ev.ActionType.UPDATE_NODE_LABEL
    if (old.spec.taints != new.spec.taints
            or old.spec.unschedulable != new.spec.unschedulable):
        action |= ev.ActionType.UPDATE_NODE_TAINT
    if old.metadata.annotations != new.metadata.annotations:
        action |= ev.ActionType.UPDATE_NODE_ANNOTATION
    if not action:
        return None
    return ev.ClusterEvent(ev.Resource.NODE, action, "NodeUpdate")


class NodeEventHandler:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def on_add(self, node: api.Node) -> None:
        try:
            self._scheduler.cache.add_or_update_node(node)
        except (QuantityError, ValueError) as error:
            log.warning("node.malformed", node=node.metadata.name, reason=str(error))
            return
        self._scheduler.queue.move_on_event(ev.NODE_ADD)

    def on_update(self, old: api.Node, new: api.Node) -> None:
        try:
            self._scheduler.cache.add_or_update_node(new)
        except (QuantityError, ValueError) as error:
            log.warning("node.malformed", node=new.metadata.name, reason=str(error))
            return
        event = node_update_event(old, new)
        if event is not None:
            self._scheduler.queue.move_on_event(event)

    def on_delete(self, node: api.Node) -> None:
        self._scheduler.cache.remove_node(node.metadata.name)
