"""TopologyPlacement: one placement per topology domain of the group's constraint.

- No constraint: the parent placement, unchanged.
- With a constraint on label key K: the parent's nodes are grouped by their value of
  K; nodes without K belong to no placement. Placements come in the order their
  domain first appears among the parent's nodes (upstream walks a Go map, so its
  order is random; kpysched's is stable).
- Members already assumed or bound pin the group to their domain: only that
  domain's placement is offered (none when the parent has no node of it). Members on
  nodes the snapshot does not know, or on nodes without K, or in two domains, are an
  Error: the group cannot be placed consistently.

Only the first topology constraint counts (the API allows one). A CompositePodGroup
(v1.37's CompositePodGroup gate) is cut the same way by its own constraint, its
members placed being those of every PodGroup below it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ClusterEventWithHint
from kpysched.framework.interfaces import Handle
from kpysched.framework.placement import (
    Placement,
    PlacementGeneratePlugin,
    PodGroupInfo,
    ScheduledMember,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.scheduling import PodGroup

NAME = "TopologyPlacementGenerator"


def topology_key(group: PodGroup | CompositePodGroup | None) -> str | None:
    """The label key of the group's (first) topology constraint, or None; a
    CompositePodGroup's constrains its whole subtree."""
    if group is None:
        return None
    constraints = group.spec.scheduling_constraints
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


class TopologyPlacement(PlacementGeneratePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()  # it never rejects a pod at a point that requeues

    def generate_placements(self, group: PodGroupInfo,
                            parent: Placement) -> tuple[list[Placement], Status]:
        key = topology_key(group.pod_group or group.composite)
        if key is None:
            return [parent], SUCCESS
        required: str | None = None
        if group.scheduled:
            required, problem = self._scheduled_domain(key, group.scheduled)
            if problem:
                return [], Status.error(
                    f"cannot determine domain for already scheduled pods: {problem}", NAME)
        by_domain: dict[str, list[NodeInfo]] = {}
        for node in parent.nodes:
            domain = node.labels.get(key)
            if domain is not None and (required is None or domain == required):
                by_domain.setdefault(domain, []).append(node)
        return [Placement(domain, tuple(nodes)) for domain, nodes in by_domain.items()], SUCCESS

    def _scheduled_domain(self, key: str,
                          scheduled: Sequence[ScheduledMember]) -> tuple[str | None, str]:
        """The one domain the members placed so far are in, or a problem's words."""
        snapshot = self._handle.snapshot
        found: str | None = None
        for member in scheduled:
            pod = member.pod.key
            node = snapshot.get(member.node_name)
            if node is None:
                return None, (f"getting node for pod {pod}: nodeinfo not found for node "
                              f'name "{member.node_name}"')
            domain = node.labels.get(key)
            if domain is None:
                return None, f"no topology domain found for pod {pod}"
            if found is not None and domain != found:
                return None, f"more than 1 domain found for pod group: {found}, {domain}"
            found = domain
        return found, ""


def new(_args: None, handle: Handle) -> TopologyPlacement:
    return TopologyPlacement(handle)


SPEC = PluginSpec(NAME, TopologyPlacement, new)
