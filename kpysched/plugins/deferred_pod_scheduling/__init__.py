"""DeferredPodScheduling: a running pod whose in-place resize the kubelet deferred is
scheduled again to its own node, so preemption can make room (v1.37, alpha gate
InPlacePodVerticalScalingSchedulerPreemption, off by default).

plugin.py holds the plugin and its queueing hints; kpysched/framework/deferred_resize.py
says what "deferred" means (the queue and the cycle ask it too), plugins/_shared/resize.py
what the other plugins do with such a pod. May import objects/, cache/, framework/ and
plugins/_shared/.
"""

from kpysched.plugins.deferred_pod_scheduling.plugin import (
    NAME,
    REASON_NODE_DISABLES_RESIZE_PREEMPTION,
    SPEC,
    DeferredPodScheduling,
    new,
)

__all__ = ["NAME", "REASON_NODE_DISABLES_RESIZE_PREEMPTION", "SPEC", "DeferredPodScheduling",
           "new"]
