"""minResources: whether the cluster has, free and summed over all nodes, what a PodGroup
says it needs (scheduler-plugins' CheckClusterResource). Pods of the group itself
already on a node count as free, since they are the group's own. Only a coarse
pre-check: a group that passes may still not fit node by node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kpysched.cache.node_info import NodeInfo
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource


def wanted(min_resources: Mapping[str, str | int], min_member: int) -> Resource:
    """The group's minResources, with room for minMember pods. QuantityError when a
    quantity does not parse."""
    need = Resource.from_mapping(min_resources)
    need.set(PODS, min_member)
    return need


def _own_by_node(own: Sequence[PodInfo]) -> dict[str, list[PodInfo]]:
    by_node: dict[str, list[PodInfo]] = {}
    for pod in own:
        if pod.node_name:
            by_node.setdefault(pod.node_name, []).append(pod)
    return by_node


def _free_on(node: NodeInfo, own: Sequence[PodInfo]) -> Resource:
    free = node.allocatable.clone()
    free.subtract(node.requested)
    for pod in own:
        free.add(pod.requests)
    free.allowed_pod_number = node.allocatable.allowed_pod_number - (len(node.pods) - len(own))
    return free


def shortfall(need: Resource, nodes: Sequence[NodeInfo],
              own: Sequence[PodInfo]) -> dict[str, int]:
    """What the cluster lacks of `need`, by resource name; empty when it has it all.
    `own` are the group's placed members (bound or assumed), whose room counts as free;
    they come from the group's state, so no node's pods are walked. Nodes with less
    than nothing free of a resource (overcommitted) count as none."""
    missing = {name: need.get(name) for name in _names(need) if need.get(name) > 0}
    own_by_node = _own_by_node(own)
    for node in nodes:
        if not missing:
            break
        if node.node is None:
            continue
        free = _free_on(node, own_by_node.get(node.name, ()))
        for name in list(missing):
            missing[name] -= max(free.get(name), 0)
            if missing[name] <= 0:
                del missing[name]
    return missing


def _names(resource: Resource) -> list[str]:
    return [CPU, MEMORY, EPHEMERAL_STORAGE, PODS, *resource.scalar]


def describe(missing: Mapping[str, int]) -> str:
    """`cpu 1500m, pods 2`: what is missing, in the units people write."""
    parts = []
    for name in sorted(missing):
        amount = missing[name]
        if name == CPU:
            parts.append(f"{name} {amount}m" if amount % 1000 else f"{name} {amount // 1000}")
        else:
            parts.append(f"{name} {amount}")
    return ", ".join(parts)

