"""GangScheduling (upstream's plugin of that name: v1.36 alpha with the GenericWorkload
and GangScheduling gates on, v1.37 beta brought by GenericWorkload alone): the members
of a PodGroup with a gang policy are scheduled all together or not at all.

- PreEnqueue holds a member until its PodGroup exists and at least minCount members
  do; a new member or the PodGroup's creation releases them (queueing hints).
- Permit makes each member wait (5 minutes) until minCount members of its group are
  assumed or bound; the member that completes the quorum lets the others through.
  In a v1.36 pod-group scheduling cycle it counts on the cycle's own copy of the
  group, where the members tried before it are assumed. v1.37 asks it only in the
  binding cycle: its pod-group cycle counts with the plugin's PlacementFeasible rule
  instead (kpysched/scheduling/pod_group_placement.py, as the core names no plugin).
- With v1.37's CompositePodGroup on, a PodGroup under a CompositePodGroup answers for
  its whole tree (upstream's hierarchy rules): PreEnqueue holds a member until the
  tree's root has its quorum of ready children (a PodGroup is ready with minCount
  members, 1 for basic; a composite group with minGroupCount ready children, 1 for
  basic), and Permit waits until the root has its quorum counting placed members,
  then lets every assumed member of the tree through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from kpysched.cache.pod_groups import PodGroupState, group_name
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, PermitPlugin, PreEnqueuePlugin
from kpysched.framework.pod_group_tree import (
    EntityKey,
    GroupTree,
    key_of,
    parent_key,
    pod_group_key,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.composite_pod_groups import CompositePodGroup, min_group_count
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup

NAME = "GangScheduling"

# How long a member waits at Permit for the rest of its gang.
PERMIT_TIMEOUT_SECONDS = 5 * 60.0

WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"


# v1.37 alpha: PodGroups under CompositePodGroups (named: plugins read no config).
COMPOSITE_POD_GROUP = "CompositePodGroup"


def waiting_for_tree(root: str) -> str:
    return f'waiting for composite pod group "{root}" tree to meet quorum'


def waiting_for_group(name: str) -> str:
    # Upstream's text, its "pods's" included.
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


def same_group(pod: PodInfo, other: PodInfo) -> bool:
    """Upstream's MatchingSchedulingGroup."""
    name = group_name(pod.pod)
    return (name is not None and pod.namespace == other.namespace
            and name == group_name(other.pod))


def schedulable_after_pod_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    _, added = objects_as(PodInfo, old, new)
    if added is None or not same_group(pod, added):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_pod_group_added(pod: PodInfo, old: object,
                                      new: object) -> QueueingHint:
    _, added = objects_as(PodGroup, old, new)
    if (added is None or pod.namespace != added.metadata.namespace
            or group_name(pod.pod) != added.metadata.name):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_pod_group_updated(pod: PodInfo, old: object,
                                        new: object) -> QueueingHint:
    """v1.37: the pod's own group lowered its gang's minCount, so fewer members may do."""
    before, after = objects_as(PodGroup, old, new)
    if before is None or after is None:
        raise ValueError("a PodGroup update without both objects")
    if (pod.namespace != after.metadata.namespace
            or group_name(pod.pod) != after.metadata.name):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE if _min_count_fell(before, after) else QueueingHint.QUEUE_SKIP


def _min_count_fell(before: PodGroup, after: PodGroup) -> bool:
    """The group's gang asks for fewer members than before."""
    old_gang = before.spec.scheduling_policy.gang
    new_gang = after.spec.scheduling_policy.gang
    return (old_gang is not None and new_gang is not None
            and new_gang.min_count < old_gang.min_count)


# A member's group is immutable; in v1.36 PodGroups are too, so only additions can
# help. v1.37 also hears a PodGroup whose gang minCount went down.
_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD),
                         schedulable_after_pod_added),
    ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, ActionType.ADD),
                         schedulable_after_pod_group_added),
)
_EVENTS_FROM_37 = (
    *_EVENTS,
    ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, ActionType.UPDATE),
                         schedulable_after_pod_group_updated),
)
# The release whose PodGroups (scheduling.k8s.io/v1beta1) may lower minCount.
MIN_COUNT_UPDATES_FROM = 37


class GangScheduling(PreEnqueuePlugin, PermitPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        if self._handle.features.enabled(COMPOSITE_POD_GROUP):
            return self._tree_events()
        if self._handle.features.release >= MIN_COUNT_UPDATES_FROM:
            return _EVENTS_FROM_37
        return _EVENTS

    # --- with CompositePodGroup on: the same events, heard across a member's tree ----

    def _tree_events(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD),
                                 self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, ActionType.ADD),
                                 self._after_group_added),
            ClusterEventWithHint(ClusterEvent(Resource.POD_GROUP, ActionType.UPDATE),
                                 self._after_pod_group_updated),
            ClusterEventWithHint(ClusterEvent(Resource.COMPOSITE_POD_GROUP, ActionType.ADD),
                                 self._after_group_added),
        )

    def _same_tree(self, pod: PodInfo, namespace: str, key: EntityKey) -> bool:
        """Upstream's areSameHierarchy: the member's tree (complete, from its root)
        holds the group `key` names."""
        name = group_name(pod.pod)
        if name is None or namespace != pod.namespace:
            return False
        tree = self._handle.pod_group_tree(pod.namespace, name)
        return tree is not None and any(node.key == key for node in tree.nodes())

    def _after_pod_added(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        _, added = objects_as(PodInfo, old, new)
        added_group = group_name(added.pod) if added is not None else None
        if added is None or added_group is None or not self._same_tree(
                pod, added.namespace, pod_group_key(added.namespace, added_group)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def _after_group_added(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        if not isinstance(new, PodGroup | CompositePodGroup):
            return QueueingHint.QUEUE_SKIP
        if self._same_tree(pod, new.metadata.namespace, key_of(new)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _after_pod_group_updated(self, pod: PodInfo, old: object,
                                 new: object) -> QueueingHint:
        before, after = objects_as(PodGroup, old, new)
        if before is None or after is None:
            raise ValueError("a PodGroup update without both objects")
        meta = after.metadata
        if not self._same_tree(pod, meta.namespace, pod_group_key(meta.namespace, meta.name)):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if _min_count_fell(before, after) else QueueingHint.QUEUE_SKIP

    def _min_count(self, pod: PodInfo, name: str) -> int | None:
        """The gang's minCount; None when the group has no gang policy. KeyError when
        the PodGroup is unknown."""
        group = self._handle.pod_group(pod.namespace, name)
        if group is None:
            raise KeyError(name)
        gang = group.spec.scheduling_policy.gang
        return None if gang is None else gang.min_count

    def _tree(self, pod: PodInfo, name: str) -> GroupTree | None:
        """The tree the member's PodGroup is part of, when that PodGroup has a parent
        and CompositePodGroup is on; else None (the PodGroup's own rules apply)."""
        if not self._handle.features.enabled(COMPOSITE_POD_GROUP):
            return None
        group = self._handle.pod_group(pod.namespace, name)
        if group is None or group.spec.parent_composite_pod_group_name is None:
            return None
        parent = parent_key(group)
        assert parent is not None
        # An incomplete tree (a group above not seen yet): its parent, bare.
        return self._handle.pod_group_tree(pod.namespace, name) or GroupTree(parent)

    def _tree_ready(self, tree: GroupTree, state: CycleState | None,
                    count: Callable[[PodGroupState], int]) -> bool:
        """Upstream's isCPGTreeReady: enough ready children under the root, each
        counted by `count` (members known, or placed)."""
        if tree.composite is None:
            group = tree.pod_group
            if group is None:
                return False
            gang = group.spec.scheduling_policy.gang
            needed = 1 if gang is None else gang.min_count
            meta = group.metadata
            return count(self._handle.pod_group_state(state, meta.namespace,
                                                      meta.name)) >= needed
        ready = sum(1 for child in tree.children if self._tree_ready(child, state, count))
        return ready >= min_group_count(tree.composite)

    def pre_enqueue(self, pod: PodInfo) -> Status:
        name = group_name(pod.pod)
        if name is None:
            return SUCCESS
        tree = self._tree(pod, name)
        if tree is not None:
            if tree.composite is None:
                return Status.unresolvable(
                    "failed to build hierarchy snapshot: composite pod group object not "
                    f"found in state for {tree.key}", plugin=NAME)
            if not self._tree_ready(tree, None, PodGroupState.all_count):
                return Status.unresolvable(waiting_for_tree(tree.key.name), plugin=NAME)
            return SUCCESS
        try:
            min_count = self._min_count(pod, name)
        except KeyError:
            return Status.unresolvable(waiting_for_group(name), plugin=NAME)
        if min_count is None:
            return SUCCESS
        members = self._handle.pod_group_state(None, pod.namespace, name).all_count()
        if members < min_count:
            return Status.unresolvable(WAITING_FOR_MEMBERS, plugin=NAME)
        return SUCCESS

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        name = group_name(pod.pod)
        if name is None:
            return SUCCESS, 0.0
        try:
            min_count = self._min_count(pod, name)
        except KeyError:
            # As upstream's lister error: retried when the group comes back.
            return Status.error(f"failed to get podGroup {pod.namespace}/{name}: "
                                f'podgroup.scheduling.k8s.io "{name}" not found'), 0.0
        tree = self._tree(pod, name)
        if tree is not None:
            return self._permit_tree(state, tree)
        if min_count is None:
            return SUCCESS, 0.0
        group = self._handle.pod_group_state(state, pod.namespace, name)
        if group.scheduled_count() < min_count:
            # Members that wait for this one (or were turned away before it came) are
            # worth another try now.
            self._handle.activate(group.unscheduled_pods())
            return Status(Code.WAIT, [WAITING_FOR_QUORUM]), PERMIT_TIMEOUT_SECONDS
        for uid in group.assumed_uids():
            self._handle.allow_waiting_pod(uid, NAME)
        return SUCCESS, 0.0


    def _permit_tree(self, state: CycleState, tree: GroupTree) -> tuple[Status, float]:
        """Upstream's permitPodForHierarchy: wait until the root has its quorum of
        placed children, then let every assumed member of the tree go."""
        if tree.composite is None:
            return Status.error("failed to build hierarchy snapshot: composite pod group "
                                f"object not found in state for {tree.key}"), 0.0
        states = [self._handle.pod_group_state(state, leaf.key.namespace, leaf.key.name)
                  for leaf in tree.leaves()]
        if not self._tree_ready(tree, state, PodGroupState.scheduled_count):
            self._handle.activate([pod for group in states
                                   for pod in group.unscheduled_pods()])
            return (Status(Code.WAIT, [waiting_for_tree(tree.key.name)]),
                    PERMIT_TIMEOUT_SECONDS)
        for group in states:
            for uid in group.assumed_uids():
                self._handle.allow_waiting_pod(uid, NAME)
        return SUCCESS, 0.0


def new(args: None, handle: Handle) -> GangScheduling:
    return GangScheduling(handle)


SPEC = PluginSpec(NAME, GangScheduling, new, None)
