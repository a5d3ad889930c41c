"""The queue's view of pod-group trees (v1.37's workload forest, CompositePodGroup).

With CompositePodGroup on, the queue takes a workload's whole tree as one entity, its
root's: a pod's entity is found by walking from its PodGroup up the parent links to
the root, and the tree is rebuilt from the root down when the entity is popped. This
forest holds the PodGroups and CompositePodGroups the queue has seen, so that what it
decides follows only the events it was given, whatever the cache meanwhile knows.

A child is linked to its parent as soon as the child is seen, whether or not the
parent has been: when the parent comes, its children are already there. A parent
link never changes (the API server keeps it immutable), so an update only replaces
the object. With the gate off a PodGroup's parent is ignored: every PodGroup is a
root of its own. A loop of parents (which the API server cannot refuse, as each
object is checked alone) has no root: its groups are not scheduled, as upstream's.
"""

from __future__ import annotations

import structlog

from kpysched.framework.pod_group_tree import (
    EntityKey,
    EntityKind,
    GroupTree,
    composite_key,
    key_of,
    parent_key,
    pod_group_key,
)
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.scheduling import PodGroup

log = structlog.get_logger(__name__)


class WorkloadForest:
    def __init__(self, *, composite_pod_groups: bool) -> None:
        self._enabled = composite_pod_groups
        self.pod_groups: dict[EntityKey, PodGroup] = {}
        self.composites: dict[EntityKey, CompositePodGroup] = {}
        # A parent's direct children (PodGroups and CompositePodGroups), kept whether
        # or not the parent itself has been seen.
        self.children: dict[EntityKey, set[EntityKey]] = {}

    def _parent(self, group: PodGroup | CompositePodGroup) -> EntityKey | None:
        if isinstance(group, PodGroup) and not self._enabled:
            return None
        return parent_key(group)

    def _link(self, group: PodGroup | CompositePodGroup) -> None:
        parent = self._parent(group)
        if parent is not None:
            self.children.setdefault(parent, set()).add(key_of(group))

    def _unlink(self, group: PodGroup | CompositePodGroup) -> None:
        parent = self._parent(group)
        siblings = self.children.get(parent) if parent is not None else None
        if parent is None or siblings is None:
            return
        siblings.discard(key_of(group))
        if not siblings:
            del self.children[parent]

    def add_pod_group(self, group: PodGroup) -> None:
        self.pod_groups[key_of(group)] = group
        self._link(group)

    def update_pod_group(self, group: PodGroup) -> None:
        self.pod_groups[key_of(group)] = group

    def delete_pod_group(self, group: PodGroup) -> None:
        self.pod_groups.pop(key_of(group), None)
        self._unlink(group)

    def add_composite(self, group: CompositePodGroup) -> None:
        self.composites[key_of(group)] = group
        self._link(group)

    def update_composite(self, group: CompositePodGroup) -> None:
        self.composites[key_of(group)] = group

    def delete_composite(self, group: CompositePodGroup) -> None:
        self.composites.pop(key_of(group), None)
        self._unlink(group)

    def pod_group(self, key: EntityKey) -> PodGroup | None:
        return self.pod_groups.get(key)

    def composite(self, key: EntityKey) -> CompositePodGroup | None:
        return self.composites.get(key)

    def root_of_pod_group(self, namespace: str, name: str) -> EntityKey | None:
        """The root of the tree the PodGroup belongs to (itself when it has no parent),
        or None when the PodGroup, or a composite group above it, has not been seen,
        or its parents loop."""
        key = pod_group_key(namespace, name)
        group = self.pod_groups.get(key)
        if group is None:
            return None
        parent = self._parent(group)
        return key if parent is None else self._root_above(parent)

    def root_of_composite(self, namespace: str, name: str) -> EntityKey | None:
        """The root of the tree the CompositePodGroup belongs to (itself when it has
        no parent); None as root_of_pod_group."""
        return self._root_above(composite_key(namespace, name))

    def _root_above(self, start: EntityKey) -> EntityKey | None:
        seen: set[EntityKey] = set()
        current = start
        while True:
            if current in seen:
                log.error("workload_forest.cycle", group=f"{start.namespace}/{start.name}")
                return None
            seen.add(current)
            group = self.composites.get(current)
            if group is None:
                return None
            parent = parent_key(group)
            if parent is None:
                return current
            current = parent

    def leaf_pod_groups(self, root: EntityKey) -> list[PodGroup]:
        """Every PodGroup in the subtree of `root` (breadth first); the PodGroup
        itself for a PodGroup root."""
        if root.kind is EntityKind.POD_GROUP:
            group = self.pod_groups.get(root)
            return [] if group is None else [group]
        leaves: list[PodGroup] = []
        pending = [root]
        seen: set[EntityKey] = set()
        while pending:
            current = pending.pop(0)
            if current in seen:
                log.error("workload_forest.cycle", group=f"{root.namespace}/{root.name}")
                return leaves
            seen.add(current)
            for child in sorted(self.children.get(current, ()), key=str):
                if (leaf := self.pod_groups.get(child)) is not None:
                    leaves.append(leaf)
                if child in self.composites:
                    pending.append(child)
        return leaves

    def tree(self, root: EntityKey) -> GroupTree | None:
        """The subtree under `root` as the queue hands it to a cycle; None when `root`
        has not been seen."""
        if root.kind is EntityKind.POD_GROUP:
            group = self.pod_groups.get(root)
            return None if group is None else GroupTree(root, pod_group=group)
        composite = self.composites.get(root)
        return None if composite is None else self._subtree(root, composite, set())

    def _subtree(self, key: EntityKey, composite: CompositePodGroup,
                 seen: set[EntityKey]) -> GroupTree | None:
        if key in seen:
            log.error("workload_forest.cycle", group=f"{key.namespace}/{key.name}")
            return None
        seen.add(key)
        node = GroupTree(key, composite=composite)
        for child in sorted(self.children.get(key, ()), key=str):
            if (leaf := self.pod_groups.get(child)) is not None:
                node.children.append(GroupTree(child, pod_group=leaf))
            if (inner := self.composites.get(child)) is not None:
                subtree = self._subtree(child, inner, seen)
                if subtree is not None:
                    node.children.append(subtree)
        return node


def forest_changed(forest: WorkloadForest, old: object, new: object) -> None:
    """Feed `forest` one informer change of a PodGroup or CompositePodGroup."""
    if new is None:
        if isinstance(old, PodGroup):
            forest.delete_pod_group(old)
        elif isinstance(old, CompositePodGroup):
            forest.delete_composite(old)
    elif old is None:
        if isinstance(new, PodGroup):
            forest.add_pod_group(new)
        elif isinstance(new, CompositePodGroup):
            forest.add_composite(new)
    elif isinstance(new, PodGroup):
        forest.update_pod_group(new)
    elif isinstance(new, CompositePodGroup):
        forest.update_composite(new)
