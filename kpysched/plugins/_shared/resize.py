"""In-place resize as the scheduler sees it (component-helpers' IsPodResizeDeferred).

With InPlacePodVerticalScalingSchedulerPreemption (alpha, off in v1.37) a pod already
on a node whose resize the kubelet deferred comes back to the scheduler: it is
checked against its own node only (DeferredPodScheduling), and the plugins that judge
where a pod may go, not whether its resources fit, skip it.
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


def resize_preemption_disabled(node: api.Node) -> bool:
    """Someone asked that resizes not preempt pods on this node."""
    policy = node.spec.pod_preemption_policy
    return policy is not None and bool(policy.disable_resize_preemption)
