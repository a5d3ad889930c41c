"""PodGroupPodsCount (upstream's podgrouppodscount plugin): a PlacementScore plugin for
v1.37's alpha gate TopologyAwareWorkloadScheduling that favours the placements where
more of the group's pods go.

plugin.py holds the plugin. May import objects/, cache/ and framework/.
"""

from kpysched.plugins.pod_group_pods_count.plugin import (
    NAME,
    NO_PODS_ASSIGNED,
    SPEC,
    PodGroupPodsCount,
    new,
)

__all__ = ["NAME", "NO_PODS_ASSIGNED", "SPEC", "PodGroupPodsCount", "new"]
