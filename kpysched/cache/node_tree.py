"""NodeTree: the order in which scheduling cycles walk the nodes, as upstream's.

Upstream's cache keeps nodes grouped by zone (region + zone labels), zones in the
order they were first seen and nodes in each zone in the order they were added,
and lists them round-robin over zones: a1, b1, c1, a2, b2, ... The order matters
because with the adaptive percentageOfNodesToScore a cycle stops after the first
N feasible nodes from a rotating start: walking zones round-robin makes that window
span every zone, so placements spread over zones as kube-scheduler's do.
"""

from __future__ import annotations

from kpysched.objects import api

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
# Deprecated names that still count when the new ones are missing (GetZoneKey).
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(node: api.Node) -> str:
    """Upstream's GetZoneKey: "" without region and zone, else region:\\0:zone."""
    labels = node.metadata.labels
    zone = labels.get(ZONE_LABEL, labels.get(BETA_ZONE_LABEL, ""))
    region = labels.get(REGION_LABEL, labels.get(BETA_REGION_LABEL, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}  # insertion-ordered: first seen first
        self._zone_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._zone_of)

    def add_or_update(self, node: api.Node) -> bool:
        """Place a node; True when the order changed (a new node or a zone move)."""
        name = node.metadata.name
        zone = zone_key(node)
        current = self._zone_of.get(name)
        if current == zone:
            return False
        if current is not None:
            self._remove_from(current, name)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone
        return True

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is not None:
            self._remove_from(zone, name)

    def _remove_from(self, zone: str, name: str) -> None:
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]  # a zone that comes back goes to the end, as upstream

    def ordered(self) -> list[str]:
        """Node names round-robin over zones (upstream's nodeTree.list)."""
        zones = list(self._zones.values())
        ordered: list[str] = []
        depth = max((len(names) for names in zones), default=0)
        for index in range(depth):
            ordered.extend(names[index] for names in zones if index < len(names))
        return ordered
