"""TopologyPlacementGenerator (upstream's topologyaware plugin, TopologyPlacement): a
PlacementGenerate plugin for v1.37's alpha gate TopologyAwareWorkloadScheduling. A
PodGroup whose spec.schedulingConstraints.topology names a node label key is tried in
one placement per value of that label (one rack, one zone); a group without the
constraint gets the whole parent placement.

plugin.py holds the plugin. May import objects/, cache/ and framework/.
"""

from kpysched.plugins.topology_aware.plugin import NAME, SPEC, TopologyPlacement, new

__all__ = ["NAME", "SPEC", "TopologyPlacement", "new"]
