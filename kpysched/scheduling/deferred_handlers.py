"""The informer side of InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha,
off): which bound pods enter and leave the scheduling queue, as upstream's addPod,
updatePod and deletePod do for a deferred in-place resize.

A bound pod of one of our profiles whose PodResizePending condition says Deferred is
queued (the cycle then checks its new size against its own node and preempts there
if need be); it leaves the queue when the condition stops saying so or the pod goes;
while it stays deferred its updates (a new size asked) update its queued copy, so the
queue's TargetPod hints hear them. With the gate off nothing here does anything.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from kpysched.framework.deferred_resize import is_pod_resize_deferred
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.queue.scheduling_queue import SchedulingQueue

log = structlog.get_logger(__name__)


class DeferredResizes:
    def __init__(self, queue: SchedulingQueue,
                 responsible_for: Callable[[str], bool]) -> None:
        self._queue = queue
        self._responsible_for = responsible_for  # by schedulerName

    def _enabled_for(self, pod: api.Pod) -> bool:
        return self._queue.deferred_resize and self._responsible_for(pod.spec.scheduler_name)

    def on_add(self, pod: PodInfo) -> None:
        """A bound pod first seen (a start or relist) already deferred."""
        if self._enabled_for(pod.pod) and is_pod_resize_deferred(pod.pod):
            self._queue.add(pod)

    def on_update(self, old: api.Pod, new: PodInfo) -> None:
        """A bound pod changed: its resize became deferred, stopped being deferred, or
        changed while deferred."""
        if not self._enabled_for(new.pod):
            return
        was, now = is_pod_resize_deferred(old), is_pod_resize_deferred(new.pod)
        queue = self._queue
        if now and not was:
            log.info("pod.resize_deferred", pod=new.key, node=new.node_name)
            queue.add(new)
        elif was and not now:
            log.info("pod.resize_no_longer_deferred", pod=new.key)
            queue.delete(new.uid)
        elif was and now:
            queue.update(new)

    def on_delete(self, pod: api.Pod) -> None:
        """A bound pod gone (deleted, or finished: upstream's informer drops those)."""
        if self._enabled_for(pod) and is_pod_resize_deferred(pod):
            self._queue.delete(pod.metadata.uid)
