"""In-place resize as the plugins see it (the predicate is the framework's,
kpysched.framework.deferred_resize).

With InPlacePodVerticalScalingSchedulerPreemption (alpha, off in v1.37) a pod already
on a node whose resize the kubelet deferred comes back to the scheduler: it is
checked against its own node only (DeferredPodScheduling), and the plugins that judge
where a pod may go, not whether its resources fit, skip it.
"""

from __future__ import annotations

from kpysched.framework.deferred_resize import (
    IN_PLACE_RESIZE_PREEMPTION_GATE,
    POD_RESIZE_PENDING,
    REASON_DEFERRED,
    is_pod_resize_deferred,
)
from kpysched.objects import api

__all__ = ["IN_PLACE_RESIZE_PREEMPTION_GATE", "POD_RESIZE_PENDING", "REASON_DEFERRED",
           "is_pod_resize_deferred", "resize_preemption_disabled", "skips_deferred_pod"]


def skips_deferred_pod(enabled: bool, pod: api.Pod) -> bool:
    """Whether a plugin that judges where a pod may go (not whether its resources fit)
    passes this pod over: PreFilter answers Skip, Filter Success (as upstream's plugins
    do for a deferred resize with the gate on; `enabled` is the gate)."""
    return enabled and is_pod_resize_deferred(pod)


def resize_preemption_disabled(node: api.Node) -> bool:
    """Someone asked that resizes not preempt pods on this node."""
    policy = node.spec.pod_preemption_policy
    return policy is not None and bool(policy.disable_resize_preemption)
