"""Coscheduling (scheduler-plugins' plugin of that name): the pods of a PodGroup
(scheduling.x-k8s.io/v1alpha1, joined with the label scheduling.x-k8s.io/pod-group)
are placed together, at least minMember of them, or none.

kpysched runs every group through its pod-group scheduling cycle (pod_group_cycle.py):
all waiting members are tried in one snapshot and bound only when minMember fit, so
no member holds resources while its group waits. The plugin supplies the policy:

- QueueSort orders by priority, then by the PodGroup's creation time (a plain pod's
  first attempt), then by name, so groups are not interleaved.
- PreEnqueue holds a member, without an event, until its PodGroup exists and it has
  minMember members that are not scheduling-gated. Its hints release a held member
  once that is so (a new member, the PodGroup); room on the nodes (a node, a deleted
  pod) wakes only members rejected because their group did not fit.
- PreFilter turns the group away while the cluster lacks its minResources.
- Permit counts the placed members of the cycle's copy of the group: Wait until
  minMember are placed (for scheduleTimeoutSeconds, else permitWaitingTimeSeconds),
  then Success for the one that completes it, which lets the others through.

Where the texts are scheduler-plugins' own, they are kept.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar

import structlog

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.pod_groups import coscheduling_group_name
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    PermitPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
    QueueSortPlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.coscheduling import PodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from kpysched.plugins.coscheduling import capacity
from kpysched.plugins.coscheduling.args import (
    DEFAULT_REJECT_PERCENTAGE,
    CoschedulingArgs,
)

NAME = "Coscheduling"
# scheduler-plugins' DefaultWaitTime, when neither the group nor the args set one.
DEFAULT_WAIT_SECONDS = 60

log = structlog.get_logger(__name__)

# Queue timestamps are monotonic; PodGroups carry wall-clock times.
_WALL_MINUS_MONOTONIC = time.time() - time.monotonic()


class _Hold(enum.Enum):
    """Why PreEnqueue holds a member."""

    NO_GROUP = "its PodGroup is not there"
    TOO_FEW = "fewer than minMember members"
    GATED = "fewer than minMember members not scheduling-gated"


def not_found(namespace: str, name: str) -> str:
    return f'PodGroup "{namespace}/{name}" not found'


def too_few_members(pod: PodInfo, members: int, min_member: int) -> str:
    # scheduler-plugins' PreFilter text.
    return (f"pre-filter pod {pod.pod.metadata.name} cannot find enough sibling pods, "
            f"current pods number: {members}, minMember of group: {min_member}")


def gated_members(pod: PodInfo) -> str:
    return (f"pre-filter pod {pod.pod.metadata.name} cannot proceed due to gated pods in "
            "the same PodGroup")


def waiting_for_quorum(namespace: str, name: str, min_member: int) -> str:
    return f"waiting for {min_member} pods of PodGroup {namespace}/{name} to be placed"


@functools.lru_cache(maxsize=4096)  # QueueSort asks on every heap comparison
def _epoch(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _same_group(pod: PodInfo, other: PodInfo) -> bool:
    name = coscheduling_group_name(pod.pod)
    return (name is not None and pod.namespace == other.namespace
            and name == coscheduling_group_name(other.pod))


def schedulable_after_pod_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A new member may complete its group's minMember."""
    _, added = objects_as(PodInfo, old, new)
    return QueueingHint.QUEUE if added is not None and _same_group(pod, added) \
        else QueueingHint.QUEUE_SKIP


def schedulable_after_own_relabel(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """The held member itself moved to another group (its label changed): that group,
    not the one that held it, decides now."""
    before, after = objects_as(PodInfo, old, new)
    if (before is None or after is None or after.uid != pod.uid
            or coscheduling_group_name(before.pod) == coscheduling_group_name(after.pod)):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


def schedulable_after_pod_group_change(pod: PodInfo, old: object,
                                       new: object) -> QueueingHint:
    """The member's own PodGroup appeared, or its spec changed (status writes do not
    help anyone)."""
    before, after = objects_as(PodGroup, old, new)
    if (after is None or pod.namespace != after.metadata.namespace
            or coscheduling_group_name(pod.pod) != after.metadata.name):
        return QueueingHint.QUEUE_SKIP
    if before is not None and before.spec == after.spec:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


# A new member arrives unscheduled; bindings (assigned pods added, thousands a minute
# when busy) cannot help a group and are not even offered to its hints.
_MEMBER_ADDED = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
_MEMBER_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL),
                         schedulable_after_own_relabel),
    # v1.37 reports the pending pod's own update as TargetPod (never emitted as v1.36).
    ClusterEventWithHint(ClusterEvent(Resource.TARGET_POD, ActionType.UPDATE_POD_LABEL),
                         schedulable_after_own_relabel),
    ClusterEventWithHint(ClusterEvent(Resource.COSCHEDULING_POD_GROUP,
                                      ActionType.ADD | ActionType.UPDATE),
                         schedulable_after_pod_group_change),
)

# A member rejected by this plugin is one that fit but whose group did not: what can
# make the group fit is what can make any pod fit. Coarse on purpose: the members that
# did not fit are woken by their own rejecting plugins' precise hints anyway.
_ROOM_EVENTS = (
    # Changes that can give a pod room (not conditions or annotations: a Ready node's
    # heartbeat must not retry every failed group).
    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                 | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
    # Room freed on a node: a pod on it deleted (or finished).
    ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE),
)


class Coscheduling(QueueSortPlugin, PreEnqueuePlugin, PreFilterPlugin, PermitPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: CoschedulingArgs, handle: Handle) -> None:
        self._args = args
        self._handle = handle
        self._events = (ClusterEventWithHint(_MEMBER_ADDED, self.schedulable_after_member_added),
                        *_MEMBER_EVENTS,
                        *(ClusterEventWithHint(event, self.schedulable_after_room)
                          for event in _ROOM_EVENTS))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return self._events

    def schedulable_after_member_added(self, pod: PodInfo, old: object,
                                       new: object) -> QueueingHint:
        """A new member of the pod's group, once the group has it: Queue only when the
        group is complete now. While it is still short, PreEnqueue would only hold the
        pod again: a gang of n members arriving one by one ran it about n*n/2 times on
        its held members instead of the n-1 that release them."""
        if schedulable_after_pod_added(pod, old, new) is QueueingHint.QUEUE_SKIP:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE_SKIP if self._hold(pod) is not None else QueueingHint.QUEUE

    def schedulable_after_room(self, pod: PodInfo, old: object, new: object) -> QueueingHint:
        """Room on the nodes (a node added or changed, a pod deleted) may let a rejected
        group fit, but never lifts what PreEnqueue holds a member for: its PodGroup
        missing or short of members. Those wait for a member or the PodGroup; asking
        them again cost every node of an initial LIST a look at every held pod."""
        return QueueingHint.QUEUE_SKIP if self._hold(pod) is not None else QueueingHint.QUEUE

    def _group(self, pod: PodInfo) -> tuple[str | None, PodGroup | None]:
        name = coscheduling_group_name(pod.pod)
        if name is None:
            return None, None
        return name, self._handle.coscheduling_pod_group(pod.namespace, name)

    # --- QueueSort ---------------------------------------------------------------------

    def _sort_key(self, queued: QueuedPodInfo) -> tuple[float, str]:
        """(since, name): the PodGroup's creation time and namespace/group for a member
        of a listed group, else the pod's first attempt and namespace/pod (or group).
        One label and one PodGroup lookup (the heaps compare thousands of times)."""
        pod = queued.pod_info
        name = coscheduling_group_name(pod.pod)
        if name is not None:
            group = self._handle.coscheduling_pod_group(pod.namespace, name)
            created = _epoch(group.metadata.creation_timestamp) if group is not None else None
            if created is not None:
                return created, f"{pod.namespace}/{name}"
        first = queued.initial_attempt_timestamp
        since = (first if first is not None else queued.timestamp) + _WALL_MINUS_MONOTONIC
        return since, f"{pod.namespace}/{name if name is not None else pod.pod.metadata.name}"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = a.pod_info.priority, b.pod_info.priority
        if first != second:
            return first > second
        # The earlier time first; on a tie (a group's members, or groups created in the
        # same second) the smaller name.
        return self._sort_key(a) < self._sort_key(b)

    # --- PreEnqueue ----------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        hold = self._hold(pod)
        if hold is None:
            return SUCCESS
        reason, name, count, min_member = hold
        if reason is _Hold.NO_GROUP:
            return Status.unresolvable(not_found(pod.namespace, name), plugin=NAME)
        if reason is _Hold.TOO_FEW:
            return Status.unresolvable(too_few_members(pod, count, min_member), plugin=NAME)
        return Status.unresolvable(gated_members(pod), plugin=NAME)

    def _hold(self, pod: PodInfo) -> tuple[_Hold, str, int, int] | None:
        """Why PreEnqueue holds the member (with its group's name, member count and
        minMember), or None when it does not."""
        name, group = self._group(pod)
        if name is None:
            return None
        if group is None:
            return _Hold.NO_GROUP, name, 0, 0
        state = self._handle.pod_group_state(None, pod.namespace, name)
        count, min_member = state.all_count(), group.spec.min_member
        if count < min_member:
            return _Hold.TOO_FEW, name, count, min_member
        gated = sum(1 for member in state.all_pods() if member.pod.spec.scheduling_gates)
        if count - gated < min_member:
            return _Hold.GATED, name, count, min_member
        return None

    # --- PreFilter -----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        name, group = self._group(pod)
        if name is None or group is None or not group.spec.min_resources:
            return None, SUCCESS
        try:
            need = capacity.wanted(group.spec.min_resources, group.spec.min_member)
        except QuantityError as error:
            return None, Status.unresolvable(
                f"PodGroup {pod.namespace}/{name} has an invalid minResources: {error}",
                plugin=NAME)
        placed = self._handle.pod_group_state(state, pod.namespace, name).placed_pods()
        missing = capacity.shortfall(need, nodes, placed)
        if missing:
            return None, Status.unresolvable(
                f"PodGroup {pod.namespace}/{name} needs more than the cluster has free "
                f"(minResources and minMember pods); short of {capacity.describe(missing)}",
                plugin=NAME)
        return None, SUCCESS

    # --- Permit --------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        name, group = self._group(pod)
        if name is None:
            return SUCCESS, 0.0
        if group is None:
            return Status.unschedulable("PodGroup not found", plugin=NAME), 0.0
        placed = self._handle.pod_group_state(state, pod.namespace, name)
        min_member = group.spec.min_member
        if placed.scheduled_count() < min_member:
            wait = float(group.spec.schedule_timeout_seconds
                         or self._args.permit_waiting_time_seconds or DEFAULT_WAIT_SECONDS)
            return Status(Code.WAIT, [waiting_for_quorum(pod.namespace, name, min_member)],
                          NAME), wait
        for uid in placed.assumed_uids():
            self._handle.allow_waiting_pod(uid, NAME)
        return SUCCESS, 0.0


def new(args: CoschedulingArgs | None, handle: Handle) -> Coscheduling:
    args = args if args is not None else CoschedulingArgs()
    if args.pod_group_backoff_seconds or (
            args.pod_group_reject_percentage != DEFAULT_REJECT_PERCENTAGE):
        log.warning("config.field_ignored", plugin=NAME,
                    fields=["podGroupBackoffSeconds", "podGroupRejectPercentage"],
                    reason="groups are tried whole and each member backs off on its own")
    return Coscheduling(args, handle)


# scheduler-plugins' configuration files write its args with their own group.
SPEC = PluginSpec(NAME, Coscheduling, new, CoschedulingArgs,
                  args_api_version="config.x-k8s.io/v1")
