"""v1.37's pod-group algorithm: placement feasibility instead of Permit, and the
PodGroupPostFilter point instead of each member's PostFilter.

kube-scheduler v1.37.2 (GenericWorkload on) changed how a pod group's cycle decides
(upstream's podGroupSchedulingDefaultAlgorithm and podGroupCycle):

- GangScheduling's PlacementFeasible rule says, before the first member and after
  each, whether the gang can still make its minCount (1 for a basic policy) from the
  members already scheduled and those left to try: Unschedulable ("minCount (N)
  cannot be satisfied: S scheduled, R remaining") ends the cycle early, Wait ("... is
  not yet satisfied ...") keeps going, Success is the quorum. Members are no longer
  asked by Permit inside the cycle, and a member that fits nowhere does not preempt
  there (no PostFilter), so its note is the bare "0/N nodes are available: ...".
- When the group is Unschedulable, the PodGroupPostFilter plugins run once for the
  whole group (DynamicResources, then DefaultPreemption, which may preempt for the
  whole group: pod_group_preemption.py), and what they say is appended to the
  group's message, which every held-back member and the PodGroup's condition carry.

v1.36 keeps its own rules (pod_group_cycle.py); this module is used only as 1.37.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime import Framework
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.scheduling.attempt import Attempt, GroupOutcome, MemberResult
from kpysched.scheduling.pod_group_preemption import GroupPreemption

# The release from which a pod group's cycle follows these rules.
PLACEMENT_FEASIBLE_FROM = 37

# The plugins (named, not imported: the core imports no plugin) whose rules run here.
GANG_SCHEDULING = "GangScheduling"
DYNAMIC_RESOURCES = "DynamicResources"
DEFAULT_PREEMPTION = "DefaultPreemption"
# Where DynamicResources' PreFilter leaves its state (plugins/dynamic_resources): upstream's
# PodGroupPostFilter of that plugin reads the group's share of it, and fails when no
# member's PreFilter ran in the cycle.
DRA_PRE_FILTER_STATE = "PreFilter" + DYNAMIC_RESOURCES

# Upstream's errPodGroupUnschedulable (the same words as in v1.36).
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
# What DynamicResources' PodGroupPostFilter says when it has finished (it returns
# Unschedulable whatever it did).
CLAIMS_CLEANED_UP = "deallocation and deletion of ResourceClaims completed"
PREEMPTION_PREFIX = "pod group preemption: "

TryMember = Callable[[Attempt, list[Callable[[], None]]], MemberResult]


def min_count(group: PodGroup) -> int:
    """The members a group needs placed: its gang's minCount, 1 for a basic policy."""
    gang = group.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_count


def feasibility(needed: int, scheduled: int, remaining: int) -> Status:
    """GangScheduling's PlacementFeasible: can the group still make `needed`?"""
    if remaining + scheduled < needed:
        return Status.unschedulable(
            f"minCount ({needed}) cannot be satisfied: {scheduled} scheduled, "
            f"{remaining} remaining", plugin=GANG_SCHEDULING)
    if scheduled < needed:
        return Status(Code.WAIT, [f"minCount ({needed}) is not yet satisfied: "
                                  f"{scheduled} scheduled, {remaining} remaining"],
                      GANG_SCHEDULING)
    return SUCCESS


def _copy(status: Status) -> Status:
    return replace(status, reasons=list(status.reasons))


def decide(framework: Framework, attempts: list[Attempt], group: PodGroupState,
           pod_group: PodGroup | None, try_member: TryMember) -> GroupOutcome:
    """The group's algorithm as v1.37: members in turn on the snapshot, the gang's
    feasibility checked before and after each; every assumption undone at the end
    (`try_member` pushes each one's undo). Members not reached fail with the group's
    status."""
    return complete(require_one_placed(
        try_in_turn(framework, attempts, group, pod_group, try_member)), attempts)


def try_in_turn(framework: Framework, attempts: list[Attempt], group: PodGroupState,
                pod_group: PodGroup | None, try_member: TryMember) -> GroupOutcome:
    """The members tried in turn: the outcome holds only those tried, and may be a
    Success with none placed (require_one_placed)."""
    # Without GangScheduling in the profile nothing is checked (no PlacementFeasible
    # plugin); without its PodGroup the cycle cannot run (the group is held earlier).
    checks = (pod_group is not None
              and any(p.NAME == GANG_SCHEDULING for p in framework.permit_plugins))
    needed = min_count(pod_group) if checks and pod_group is not None else 0
    scheduled, remaining = group.scheduled_count(), len(attempts)
    outcome = GroupOutcome([], SUCCESS)
    status = feasibility(needed, scheduled, remaining) if checks else SUCCESS
    undo: list[Callable[[], None]] = []
    try:
        if status.code == Code.UNSCHEDULABLE:
            outcome.status = Status.unschedulable(POD_GROUP_UNSCHEDULABLE, *status.reasons,
                                                  plugin=status.plugin)
            return outcome
        for attempt in attempts:
            member = try_member(attempt, undo)
            outcome.members.append(member)
            if not member.status.ok and not member.status.is_rejected:
                status = Status.error("failed to schedule other pod from a pod group: "
                                      f"{member.status.message()}")
                break
            remaining -= 1
            if member.status.ok:
                scheduled += 1
            status = feasibility(needed, scheduled, remaining) if checks else SUCCESS
            if status.code == Code.UNSCHEDULABLE:
                break
        if status.code == Code.WAIT:
            status = Status.unschedulable(POD_GROUP_UNSCHEDULABLE, *status.reasons,
                                          plugin=status.plugin)
        outcome.status = status
        return outcome
    finally:
        for step in reversed(undo):
            step()


def require_one_placed(outcome: GroupOutcome) -> GroupOutcome:
    """Upstream asks at least one member placed of a successful cycle (a gang whose
    minCount was met before it, with no member fitting now, is Unschedulable)."""
    if outcome.status.ok and not any(member.status.ok for member in outcome.members):
        outcome.status = Status.unschedulable(POD_GROUP_UNSCHEDULABLE)
    return outcome


def complete(outcome: GroupOutcome, attempts: list[Attempt]) -> GroupOutcome:
    """Members the cycle did not reach fail with the group's status as it is now."""
    for attempt in attempts[len(outcome.members):]:
        outcome.members.append(MemberResult(attempt, _copy(outcome.status)))
    return outcome


# DefaultPreemption's PodGroupPostFilter for this cycle's group (pod_group_preemption.py).
PreemptGroup = Callable[[], GroupPreemption]


@runtime_checkable
class ClaimCleanUp(Protocol):
    """DynamicResources' PodGroupPostFilter (plugins/dynamic_resources): what the
    members tried in the cycle hold is freed as their PostFilter would."""

    def pod_group_post_filter(self, members: Sequence[tuple[PodInfo, CycleState]]
                              ) -> Status: ...


def post_filter(framework: Framework, attempts: Sequence[Attempt],
                preempt: PreemptGroup, *, constrained: bool = False
                ) -> tuple[Status, dict[str, str] | None]:
    """The PodGroupPostFilter point for an Unschedulable group (upstream's
    RunPodGroupPostFilterPlugins): the first Success (with its nominations, member uid
    to node) or Unresolvable answer wins, an Error fails the group, else the
    Unschedulable ones' reasons together. `constrained`: the group was tried placement
    by placement and its PodGroup has scheduling constraints, which DynamicResources'
    point leaves alone (a bare Unschedulable)."""
    reasons: list[str] = []
    rejector = ""
    for plugin in framework.post_filter_plugins:
        nominations = None
        if plugin.NAME == DYNAMIC_RESOURCES:
            # Its group state is written by the first member's PreFilter.
            found = any(a.state.get(DRA_PRE_FILTER_STATE) is not None for a in attempts)
            if constrained:
                status = Status.unschedulable()
            elif not found:
                status = Status.error("not found")
            elif isinstance(plugin, ClaimCleanUp):
                status = plugin.pod_group_post_filter(
                    [(a.queued.pod_info, a.state) for a in attempts])
            else:
                status = Status.unschedulable(CLAIMS_CLEANED_UP)
        elif plugin.NAME == DEFAULT_PREEMPTION:
            preemption = preempt()
            status, nominations = preemption.status, preemption.nominations
            if status.message():
                status = Status(status.code, [PREEMPTION_PREFIX + status.message()])
        else:
            continue  # only these two implement the point upstream
        if status.ok:
            return status, nominations
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return status.with_plugin(plugin.NAME), None
        if status.code != Code.UNSCHEDULABLE:
            return Status.error(f'error in "{plugin.NAME}" PodGroupPostFilter plugins: '
                                f"{status.message()}", plugin=plugin.NAME), None
        reasons.extend(status.reasons)
        rejector = rejector or plugin.NAME
    return Status.unschedulable(*reasons, plugin=rejector), None


def group_priority(pod_group: PodGroup | CompositePodGroup | None) -> int:
    """Upstream's PodGroupPriority (CompositePodGroupPriority for a tree's root):
    spec.priority, 0 when unset."""
    if pod_group is None or pod_group.spec.priority is None:
        return 0
    return pod_group.spec.priority


def invalid_group(members: Iterable[PodInfo], placed: Iterable[PodInfo],
                  pod_group: PodGroup | CompositePodGroup | None) -> str | None:
    """v1.37's validatePodGroup beyond the scheduler name: every member, queued or
    placed, has the group's priority and the first member's preemption policy
    (PodGroupPreemptionPolicy off). The error's text, or None."""
    priority = group_priority(pod_group)
    policy: str | None = None
    for pod in [*members, *placed]:
        if pod.priority != priority:
            return ("all pods in a single pod group should have the same priority as "
                    f"the pod group's priority, got {pod.priority} and {priority}")
        own = pod.pod.spec.preemption_policy or "PreemptLowerPriority"
        if policy is None:
            policy = own
        elif own != policy:
            return ("all pods in a single pod group should have the same preemption "
                    f"policy, got {own} and {policy}")
    return None
