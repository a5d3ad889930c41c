"""A workload's tree of groups (v1.37's alpha CompositePodGroup).

With the gate on, a PodGroup or a CompositePodGroup may name a CompositePodGroup of
its namespace as its parent; the PodGroups are the leaves and own the pods. The
scheduler then takes a whole tree, from its root, as one entity: queued, tried and
placed together. `EntityKey` names a node of the tree (upstream's fwk.EntityKey: the
same name may be a PodGroup and a CompositePodGroup at once), `GroupTree` is one root
with its subtree as the queue hands it out (upstream's framework.PodGroupInfo with its
Children).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.scheduling import PodGroup


class EntityKind(Enum):
    POD_GROUP = "PodGroup"
    COMPOSITE_POD_GROUP = "CompositePodGroup"


@dataclass(frozen=True, slots=True)
class EntityKey:
    kind: EntityKind
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind.value}/{self.namespace}/{self.name}"


def pod_group_key(namespace: str, name: str) -> EntityKey:
    return EntityKey(EntityKind.POD_GROUP, namespace, name)


def composite_key(namespace: str, name: str) -> EntityKey:
    return EntityKey(EntityKind.COMPOSITE_POD_GROUP, namespace, name)


def key_of(group: PodGroup | CompositePodGroup) -> EntityKey:
    meta = group.metadata
    if isinstance(group, PodGroup):
        return pod_group_key(meta.namespace, meta.name)
    return composite_key(meta.namespace, meta.name)


def parent_key(group: PodGroup | CompositePodGroup) -> EntityKey | None:
    """The CompositePodGroup `group` names as its parent, or None for a root."""
    parent = group.spec.parent_composite_pod_group_name
    return None if parent is None else composite_key(group.metadata.namespace, parent)


@dataclass(slots=True)
class GroupTree:
    """One group and, for a composite group, its subtree. Exactly one of `pod_group`
    and `composite` is set (a leaf or a composite)."""

    key: EntityKey
    pod_group: PodGroup | None = None
    composite: CompositePodGroup | None = None
    # In no particular order; child_groups() gives the order they are tried in.
    children: list[GroupTree] = field(default_factory=list)

    @property
    def creation_timestamp(self) -> str:
        group = self.pod_group if self.pod_group is not None else self.composite
        assert group is not None
        # RFC 3339 in UTC with whole seconds, as the API server writes it, so strings
        # order as times do; an unset one is Go's zero time, before every other.
        return group.metadata.creation_timestamp or ""

    def child_groups(self) -> list[GroupTree]:
        """The children in the order the cycle tries them: oldest first, by name
        between equals (upstream's GetChildGroups); none for a PodGroup."""
        if self.composite is None:
            return []
        return sorted(self.children, key=lambda child: (child.creation_timestamp,
                                                        child.key.name))

    def nodes(self) -> Iterator[GroupTree]:
        """This group and every group below it."""
        yield self
        for child in self.children:
            yield from child.nodes()

    def leaves(self) -> Iterator[GroupTree]:
        """Every PodGroup of the subtree, this one included when it is a PodGroup."""
        if self.composite is None:
            yield self
            return
        for child in self.child_groups():
            yield from child.leaves()
