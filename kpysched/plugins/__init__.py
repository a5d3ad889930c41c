"""In-tree plugins: one room per upstream plugin, listed explicitly in IN_TREE.

A single-file plugin is <name>.py; a package plugin keeps its class in
<name>/plugin.py behind a short __init__ (NAME, SPEC, the class, its args, new);
node_resources/ holds Fit and BalancedAllocation, as upstream's noderesources does.
_shared/ holds the helpers plugins of several rooms use.

Plugins import objects/, cache/, framework/ and one another's public names; the
framework never imports a plugin (it finds them through this registry and the
entry-point group). Beyond those layers today: dynamic_resources imports api.times and
api.response (claim writes), default_preemption imports
decisions.record, volume_binding's prebind api.response (for typing).
"""

from __future__ import annotations

from kpysched.framework.registry import PluginSpec
from kpysched.plugins import (
    coscheduling,
    default_binder,
    default_preemption,
    deferred_pod_scheduling,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_unschedulable,
    node_volume_limits,
    pod_group_pods_count,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    topology_aware,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from kpysched.plugins.node_resources import (
    balanced_allocation as node_resources_balanced_allocation,
)
from kpysched.plugins.node_resources import fit as node_resources_fit

IN_TREE: dict[str, PluginSpec] = {
    spec.name: spec
    for spec in (
        priority_sort.SPEC,
        scheduling_gates.SPEC,
        node_unschedulable.SPEC,
        node_name.SPEC,
        taint_toleration.SPEC,
        node_affinity.SPEC,
        node_ports.SPEC,
        node_resources_fit.SPEC,
        node_resources_balanced_allocation.SPEC,
        inter_pod_affinity.SPEC,
        pod_topology_spread.SPEC,
        # v1.37, InPlacePodVerticalScalingSchedulerPreemption (alpha): in the default
        # profile, before NodeResourcesFit, only with that gate on.
        deferred_pod_scheduling.SPEC,
        dynamic_resources.SPEC,
        default_preemption.SPEC,
        image_locality.SPEC,
        volume_restrictions.SPEC,
        node_volume_limits.SPEC,
        volume_binding.SPEC,
        volume_zone.SPEC,
        default_binder.SPEC,
        node_declared_features.SPEC,
        gang_scheduling.SPEC,
        # v1.37, TopologyAwareWorkloadScheduling (alpha): a pod group's placements.
        topology_aware.SPEC,
        pod_group_pods_count.SPEC,
        # scheduler-plugins' Coscheduling: in no default profile, enabled by name.
        coscheduling.SPEC,
    )
}

# Score weights of the default profile (KubeSchedulerConfiguration v1), for the
# score plugins that exist here.
DEFAULT_WEIGHTS: dict[str, int] = {
    taint_toleration.NAME: 3,
    node_affinity.NAME: 2,
    pod_topology_spread.NAME: 2,
    node_resources_fit.NAME: 1,
    node_resources_balanced_allocation.NAME: 1,
    inter_pod_affinity.NAME: 2,
    image_locality.NAME: 1,
}
