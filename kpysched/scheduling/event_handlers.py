"""Informer callbacks: route pod and node changes into the cache and the queue.

As upstream's eventhandlers.go: pending pods of our profiles go to the queue;
assigned pods (bound by anyone, the default scheduler included) count against
their node in the cache; node and assigned-pod changes are cluster events that
may move unschedulable pods back. With InPlacePodVerticalScalingSchedulerPreemption a
bound pod of ours whose resize the kubelet deferred is queued as well, and leaves the
queue when the resize is no longer deferred (deferred_handlers.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import structlog

from kpysched.framework import cluster_events as ev
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from kpysched.scheduling.deferred_handlers import DeferredResizes
from kpysched.scheduling.scheduler import Scheduler
from kpysched.writes.event_recorder import EventRecorder

log = structlog.get_logger(__name__)


def _is_assigned(pod: api.Pod) -> bool:
    return bool(pod.spec.node_name)


def _priority_at_most(priority: int) -> Callable[[PodInfo], bool]:
    """Upstream's getLEPriorityPreCheck: room a nominated pod held is for its peers."""
    return lambda pod: pod.priority <= priority


# Where a pod waits to be popped (not in flight).


def _is_terminal(pod: api.Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


@contextmanager
def _handling(scheduler: Scheduler, label: str) -> Iterator[None]:
    """scheduler_event_handling_duration_seconds{event}: the whole handler, cache update
    and queue moves included, under the event's upstream label."""
    started = time.perf_counter()
    try:
        yield
    finally:
        scheduler.context.metrics.event_handled(label, time.perf_counter() - started)


def _pod_label(pod: api.Pod, action: str, release: int) -> str:
    """The handler's event label, as the release spells it (see ev.release_label)."""
    label = f"{'AssignedPod' if _is_assigned(pod) else 'UnschedulablePod'}{action}"
    return ev.release_label(label, release)


class PodEventHandler:
    def __init__(self, scheduler: Scheduler, recorder: EventRecorder, *,
                 gang_scheduling: bool = False) -> None:
        self._scheduler = scheduler
        self._gang_scheduling = gang_scheduling
        self._recorder = recorder
        self._reported_malformed: set[str] = set()
        # Malformed pods of ours seen while standing by: only the leader writes, so
        # their event waits until this replica leads.
        self._unreported: dict[str, tuple[api.Pod, str]] = {}
        self._leading = False
        self._deferred = DeferredResizes(scheduler.queue, scheduler.responsible_for)

    def on_leading(self) -> None:
        """This replica now schedules: report the malformed pods it kept quiet about."""
        self._leading = True
        for pod, reason in self._unreported.values():
            self._report(pod, reason)
        self._unreported.clear()

    def _report(self, pod: api.Pod, reason: str) -> None:
        self._recorder.failed_scheduling(
            pod, pod.spec.scheduler_name, f"pod cannot be scheduled: {reason}")

    def _info(self, pod: api.Pod) -> PodInfo | None:
        try:
            return PodInfo.of(pod)
        except (QuantityError, ValueError) as error:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            if pod.metadata.uid not in self._reported_malformed:
                self._reported_malformed.add(pod.metadata.uid)
                log.warning("pod.malformed", pod=key, reason=str(error))
                if self._scheduler.responsible_for(pod.spec.scheduler_name):
                    if self._leading:
                        self._report(pod, str(error))
                    else:
                        self._unreported[pod.metadata.uid] = (pod, str(error))
            return None

    def _pending_and_ours(self, pod: api.Pod) -> bool:
        return (not _is_assigned(pod) and pod.metadata.deletion_timestamp is None
                and self._scheduler.responsible_for(pod.spec.scheduler_name))

    def _terminating_and_ours(self, pod: api.Pod) -> bool:
        return (pod.metadata.deletion_timestamp is not None and not _is_assigned(pod)
                and self._scheduler.responsible_for(pod.spec.scheduler_name))

    def on_add(self, pod: api.Pod) -> None:
        with _handling(self._scheduler, self._label(pod, "Add")):
            self._add(pod)

    def _add(self, pod: api.Pod) -> None:
        if _is_assigned(pod):
            if _is_terminal(pod):
                return
            info = self._info(pod)
            if info is not None:
                self._deferred.on_add(info)
                self._scheduler.cache.add_or_update_pod(info)
                self._scheduler.queue.move_on_assigned_pod(ev.ASSIGNED_POD_ADD, None, info)
        elif self._terminating_and_ours(pod):
            # Already terminating when first seen (a start or relist in the middle of
            # its deletion): upstream's informer queues it all the same, and popped it
            # is passed over with the "skip schedule deleting pod" event. Its group is
            # not told: a leaving member completes no gang.
            info = self._info(pod)
            if info is not None:
                self._scheduler.queue.add(info)
        elif self._pending_and_ours(pod):
            info = self._info(pod)
            if info is not None:
                groups = self._scheduler.cache.pod_groups
                if groups is not None:
                    groups.add_or_update(info)
                self._scheduler.queue.add(info)
                name = groups.name_of(pod) if groups is not None else None
                if self._gang_scheduling and groups is not None and name is not None:
                    # A new member may complete its gang's minCount: the hint releases
                    # the members PreEnqueue held. Only its own group's members can
                    # gain, so only they are asked (not the whole unschedulable pool
                    # on every pending pod's add).
                    members = groups.get(info.namespace, name).unscheduled_pods()
                    self._scheduler.queue.move_members_on_event(
                        (member.uid for member in members if member.uid != info.uid),
                        ev.UNSCHEDULED_POD_ADD, None, info)

    def _label(self, pod: api.Pod, action: str) -> str:
        return _pod_label(pod, action, self._scheduler.queue.release)

    def on_update(self, old: api.Pod, new: api.Pod) -> None:
        with _handling(self._scheduler, self._label(new, "Update")):
            self._update(old, new)

    def _update(self, old: api.Pod, new: api.Pod) -> None:
        queue, cache = self._scheduler.queue, self._scheduler.cache
        if _is_assigned(new):
            if not _is_assigned(old):
                queue.delete(new.metadata.uid)  # bound (by us or anyone): no longer pending
            if _is_terminal(new):
                # Gone for scheduling, as upstream's informer (which lists no finished
                # pods) reports it: deleted, in its final state.
                cache.remove_pod(new.metadata.uid)
                self._deferred.on_delete(old)
                queue.move_on_event(ev.ASSIGNED_POD_DELETE, self._quiet_info(new), None)
                return
            info = self._info(new)
            if info is None:
                return
            if _is_assigned(old):
                self._deferred.on_update(old, info)
            cache.add_or_update_pod(info)
            if not _is_assigned(old):
                queue.move_on_assigned_pod(ev.ASSIGNED_POD_ADD, None, info)
                return
            # One event per changed scheduling property, as upstream's updateAssignedPodInCache.
            before = self._quiet_info(old) or info
            for event in ev.pod_update_events(before, info, release=queue.release):
                queue.move_on_assigned_pod(event, before, info)
            return
        if cache.is_assumed(new.metadata.uid):
            if new.metadata.deletion_timestamp is None:
                # Being bound: its own updates (such as the nominatedNodeName the binding
                # cycle writes) must not make it a queued or nominated pod again
                # (upstream ignores updates of assumed pods too).
                return
            if old.metadata.deletion_timestamp is None:
                # Terminating while bound: its room is given back now (upstream's
                # updatePodInSchedulingQueue -> handleAssumedPodDeletion).
                self._scheduler.forget_deleted_assumed_pod(new.metadata.uid)
        # A terminating pending pod stays (or, updated after a pop passed over it, comes
        # back) in the queue, as upstream's Update keeps or adds it: each pop passes over
        # it with a FailedScheduling "skip schedule deleting pod" event
        # (Scheduler.skip_terminating).
        if self._pending_and_ours(new) or self._terminating_and_ours(new):
            info = self._info(new)
            if info is not None:
                if cache.pod_groups is not None:
                    cache.pod_groups.add_or_update(info)
                queue.update(info, old.status.nominated_node_name)
        else:
            queue.delete(new.metadata.uid)  # terminating, or handed to another scheduler
        nominated = old.status.nominated_node_name
        if (nominated and nominated != new.status.nominated_node_name
                and self._scheduler.responsible_for(old.spec.scheduler_name)):
            # The room held on the nominated node is free for pods of no higher priority.
            queue.move_on_event(ev.ASSIGNED_POD_DELETE, self._quiet_info(old), None,
                                pre_check=_priority_at_most(old.spec.priority or 0))

    @staticmethod
    def _quiet_info(pod: api.Pod) -> PodInfo | None:
        """An older version of a pod, only to compare with; malformed ones were reported."""
        try:
            return PodInfo.of(pod)
        except (QuantityError, ValueError):
            return None

    def on_delete(self, pod: api.Pod) -> None:
        with _handling(self._scheduler, self._label(pod, "Delete")):
            self._delete(pod)

    def _delete(self, pod: api.Pod) -> None:
        uid = pod.metadata.uid
        self._reported_malformed.discard(uid)
        self._unreported.pop(uid, None)
        if _is_assigned(pod) and self._scheduler.cache.has_pod(uid):
            self._scheduler.cache.remove_pod(uid)
            self._scheduler.queue.move_on_event(ev.ASSIGNED_POD_DELETE, self._quiet_info(pod),
                                                None)
        self._scheduler.queue.delete(uid)
        if not _is_assigned(pod) and self._scheduler.cache.pod_groups is not None:
            self._scheduler.cache.pod_groups.delete(pod)
        if self._scheduler.cache.is_assumed(uid):
            # Deleted while being bound: its room is given back now, not when its
            # binding fails (upstream's handleAssumedPodDeletion); that move covers
            # the pods its nomination held back too.
            self._scheduler.forget_deleted_assumed_pod(uid)
        elif (not _is_assigned(pod) and pod.status.nominated_node_name
                and self._scheduler.responsible_for(pod.spec.scheduler_name)):
            self._scheduler.queue.move_on_event(
                ev.ASSIGNED_POD_DELETE, self._quiet_info(pod), None,
                pre_check=_priority_at_most(pod.spec.priority or 0))


def node_update_event(old: api.Node, new: api.Node,
                      release: int = 36) -> list[ev.ClusterEvent]:
    """One event per changed scheduling property, in upstream's order
    (NodeSchedulingPropertiesChange); a node turning unschedulable helps no pod. v1.37
    also reports a changed spec.podPreemptionPolicy."""
    actions: list[ev.ActionType] = []
    if old.spec.unschedulable and not new.spec.unschedulable:
        actions.append(ev.ActionType.UPDATE_NODE_TAINT)
    if old.status.allocatable != new.status.allocatable:
        actions.append(ev.ActionType.UPDATE_NODE_ALLOCATABLE)
    if old.metadata.labels != new.metadata.labels:
        actions.append(ev.ActionType.UPDATE_NODE_LABEL)
    if old.spec.taints != new.spec.taints:
        actions.append(ev.ActionType.UPDATE_NODE_TAINT)
    if _condition_statuses(old) != _condition_statuses(new):
        actions.append(ev.ActionType.UPDATE_NODE_CONDITION)
    if old.metadata.annotations != new.metadata.annotations:
        actions.append(ev.ActionType.UPDATE_NODE_ANNOTATION)
    if (release >= ev.TARGET_POD_RELEASE
            and old.spec.pod_preemption_policy != new.spec.pod_preemption_policy):
        actions.append(ev.ActionType.UPDATE_NODE_PREEMPTION_POLICY)
    # The API server keeps declaredFeatures sorted, so list equality is set equality.
    if old.status.declared_features != new.status.declared_features:
        actions.append(ev.ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ev.ClusterEvent(ev.Resource.NODE, action) for action in actions]


def _condition_statuses(node: api.Node) -> dict[str, str]:
    """Only a condition's status counts, never its heartbeat times (as upstream)."""
    return {condition.type: condition.status for condition in node.status.conditions}


class NodeEventHandler:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def on_add(self, node: api.Node) -> None:
        with _handling(self._scheduler, ev.NODE_ADD.queue_label()):
            try:
                self._scheduler.cache.add_or_update_node(node)
            except (QuantityError, ValueError) as error:
                log.warning("node.malformed", node=node.metadata.name, reason=str(error))
                return
            self._scheduler.queue.move_on_event(ev.NODE_ADD, None, node)

    def on_update(self, old: api.Node, new: api.Node) -> None:
        events = node_update_event(old, new, self._scheduler.queue.release)
        label = events[0].queue_label() if events else "NodeUpdate"
        with _handling(self._scheduler, label):
            try:
                self._scheduler.cache.add_or_update_node(new)
            except (QuantityError, ValueError) as error:
                log.warning("node.malformed", node=new.metadata.name, reason=str(error))
                return
            for event in events:
                self._scheduler.queue.move_on_event(event, old, new)

    def on_delete(self, node: api.Node) -> None:
        with _handling(self._scheduler, ev.NODE_DELETE.queue_label()):
            self._scheduler.queue.move_on_event(ev.NODE_DELETE, node, None)
            self._scheduler.cache.remove_node(node.metadata.name)
