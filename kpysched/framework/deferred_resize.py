"""A running pod whose in-place resize the kubelet deferred (component-helpers'
IsPodResizeDeferred), as every layer that treats it apart needs to recognise it.

With InPlacePodVerticalScalingSchedulerPreemption (v1.37, alpha, off) such a pod comes
back to the scheduler although it is bound: the event handlers queue it, the cycle
checks it against its own node (preempting there if the larger size does not fit) and
never binds it, and most plugins pass it over. The queue, the scheduling steps and the
plugins all ask this one predicate, so it lives in the framework they share.
"""

from __future__ import annotations

from typing import Final

from kpysched.objects import api

IN_PLACE_RESIZE_PREEMPTION_GATE: Final = "InPlacePodVerticalScalingSchedulerPreemption"
POD_RESIZE_PENDING: Final = "PodResizePending"
REASON_DEFERRED: Final = "Deferred"


def is_pod_resize_deferred(pod: api.Pod) -> bool:
    """The pod's first PodResizePending condition says the kubelet deferred the resize."""
    for condition in pod.status.conditions:
        if condition.type == POD_RESIZE_PENDING:
            return condition.reason == REASON_DEFERRED
    return False
