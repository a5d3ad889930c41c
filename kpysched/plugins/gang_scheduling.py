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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.cache.pod_groups import group_name
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
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup

NAME = "GangScheduling"

# How long a member waits at Permit for the rest of its gang.
PERMIT_TIMEOUT_SECONDS = 5 * 60.0

WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"


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
    old_gang = before.spec.scheduling_policy.gang
    new_gang = after.spec.scheduling_policy.gang
    if old_gang is None or new_gang is None or new_gang.min_count >= old_gang.min_count:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


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
        if self._handle.features.release >= MIN_COUNT_UPDATES_FROM:
            return _EVENTS_FROM_37
        return _EVENTS

    def _min_count(self, pod: PodInfo, name: str) -> int | None:
        """The gang's minCount; None when the group has no gang policy. KeyError when
        the PodGroup is unknown."""
        group = self._handle.pod_group(pod.namespace, name)
        if group is None:
            raise KeyError(name)
        gang = group.spec.scheduling_policy.gang
        return None if gang is None else gang.min_count

    def pre_enqueue(self, pod: PodInfo) -> Status:
        name = group_name(pod.pod)
        if name is None:
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


def new(args: None, handle: Handle) -> GangScheduling:
    return GangScheduling(handle)


SPEC = PluginSpec(NAME, GangScheduling, new, None)
