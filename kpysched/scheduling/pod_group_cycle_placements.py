"""A pod group's algorithm with TopologyAwareWorkloadScheduling on (v1.37's alpha gate):
upstream's podGroupSchedulingPlacementAlgorithm, used for every upstream PodGroup
while the gate is on.

1. The PlacementGenerate point cuts the snapshot's nodes into placements
   (TopologyPlacementGenerator: one per domain of the PodGroup's topology constraint;
   the whole cluster when it has none). When it fails, its status is the group's.
2. The group is tried inside each placement in turn (pod_group_placement.try_in_turn),
   each member with a fresh cycle state and looking only at the placement's nodes
   (CycleState.placement); every assumption is undone after each placement. An Error
   in one ends the cycle with it.
3. No placement fits: the group is Unschedulable, "0/N placements are available, first
   placement status: <its error>", and the members keep what the first placement told
   them (a member that fit nowhere there: "0/K nodes are available", K its nodes).
4. One fits: it is taken. Several: the PlacementScore point ranks them by weighted
   total, and the highest wins. On a tie upstream draws at random; kpysched takes the
   first in the generator's order.
The winner's members, and the cycle states they were tried with, are the outcome that
pod_group_cycle_37 and pod_group_results act on. Each generation and each placement
tried are counted as upstream's (scheduler_generated_placements_total,
scheduler_placement_evaluations_total and its duration; an Error is not counted).
"""

from __future__ import annotations

import time

from kpysched.cache.pod_groups import PodGroupState
from kpysched.decisions.record import Decision
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.placement import (
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    ProposedAssignment,
    ScheduledMember,
)
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.objects.scheduling import PodGroup
from kpysched.scheduling import pod_group_placement as algorithm
from kpysched.scheduling.attempt import Attempt, GroupOutcome
from kpysched.scheduling.context import CycleContext

TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"


def placements_on(framework: Framework) -> bool:
    """Whether a v1.37 pod group is tried placement by placement."""
    features = framework.handle.features
    return features.release >= 37 and features.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)


def none_available(placements: int, first: Status) -> Status:
    """Upstream's status when the group fit in no placement. The first placement's
    error is its pod-group error when it has one, else its message."""
    error = (algorithm.POD_GROUP_UNSCHEDULABLE
             if first.reasons[:1] == [algorithm.POD_GROUP_UNSCHEDULABLE] else first.message())
    return Status.unschedulable(
        algorithm.POD_GROUP_UNSCHEDULABLE,
        f"0/{placements} placements are available, first placement status: {error}")


def scheduled_members(context: CycleContext, group: PodGroupState
                      ) -> tuple[ScheduledMember, ...]:
    """The members assumed or bound before this cycle, each with its node (an assumed
    one's node is the cache's)."""
    found = []
    for pod in group.placed_pods():
        node = pod.node_name
        if not node:
            assumed = context.cache.assumed_pod(pod.uid)
            node = assumed.node_name if assumed is not None else ""
        found.append(ScheduledMember(pod, node))
    return tuple(found)


def decide_in_placements(framework: Framework, context: CycleContext,
                         attempts: list[Attempt], group: PodGroupState,
                         pod_group: PodGroup | None, name: str,
                         try_member: algorithm.TryMember,
                         parent: Placement | None = None,
                         namespace: str = "", root: bool = True) -> GroupOutcome:
    """The group's outcome over the placements cut from `parent` (the whole cluster
    when None; a CompositePodGroup's placement for a group of its tree);
    `attempts` take on the cycle states of the placement whose outcome it is. A group
    of a tree may have no member waiting: then `namespace` names its namespace; and it
    is not the root (`root` False), so it may succeed with none of its members placed
    now (upstream asks a placed member of the root's result only)."""
    namespace = attempts[0].queued.pod_info.namespace if attempts else namespace
    info = PodGroupInfo(namespace, name, pod_group, group, scheduled_members(context, group))
    placements, status = framework.run_placement_generate(
        info, context.snapshot.node_infos if parent is None else parent.nodes)
    if not status.ok:
        return algorithm.complete(GroupOutcome([], status), attempts)
    metrics, profile = context.metrics, framework.profile_name
    metrics.placements_generated(profile, len(placements))
    first: tuple[GroupOutcome, list[Attempt]] | None = None
    fitted: list[tuple[Placement, GroupOutcome, list[Attempt]]] = []
    for placement in placements:
        started = time.perf_counter()
        # A placement of every node restricts nothing (upstream forgets it): the
        # algorithm keeps its whole-snapshot (vector) path.
        inside = restriction(context, placement)
        trial = [fresh(attempt, inside) for attempt in attempts]
        outcome = algorithm.try_in_turn(framework, trial, group, pod_group, try_member)
        if outcome.status.code == Code.ERROR:
            return _adopted(algorithm.complete(outcome, trial), attempts, trial)
        if first is None:
            first = (outcome, trial)
        if outcome.status.ok:
            fitted.append((placement, outcome, trial))
        metrics.placement_evaluated("feasible" if outcome.status.ok else "infeasible",
                                    profile, time.perf_counter() - started)
    if not fitted:
        assert first is not None  # the generator gives at least one placement
        outcome, trial = first
        outcome.status = none_available(len(placements), outcome.status)
        return _adopted(algorithm.complete(outcome, trial), attempts, trial)
    chosen = 0
    if len(fitted) > 1:
        assignments = [PodGroupAssignments(placement, proposed(outcome))
                       for placement, outcome, _ in fitted]
        totals, status = framework.run_placement_score(info, assignments)
        if not status.ok:
            return algorithm.complete(GroupOutcome([], status), attempts)
        chosen = max(range(len(totals)), key=lambda index: (totals[index], -index))
    _, outcome, trial = fitted[chosen]
    if root:
        outcome = algorithm.require_one_placed(outcome)
    return _adopted(algorithm.complete(outcome, trial), attempts, trial)


def restriction(context: CycleContext, placement: Placement) -> tuple[str, ...] | None:
    """The node names a member tried inside `placement` may use; None for every node."""
    if len(placement.nodes) == len(context.snapshot.node_infos):
        return None
    return tuple(node.name for node in placement.nodes)


def fresh(attempt: Attempt, placement: tuple[str, ...] | None) -> Attempt:
    """The member tried anew inside a placement: a cycle state of its own, and, when
    decisions are recorded, a record of its own (the placement kept hands its record
    to the attempt)."""
    state = CycleState(attempt.state.record_plugin_metrics)
    state.placement = placement
    recorded = attempt.state.decision
    if recorded is not None:
        state.decision = Decision(recorded.pod, recorded.uid, recorded.profile,
                                  recorded.attempt, recorded.time)
    return Attempt(attempt.framework, attempt.queued, state, attempt.started, attempt.pod)


def _adopted(outcome: GroupOutcome, attempts: list[Attempt],
             trial: list[Attempt]) -> GroupOutcome:
    """Hand the trial's cycle states (and decision records) to the cycle's attempts, so
    binding, requeueing and explain carry on from the placement decided on. The
    placement restriction goes: the binding cycle looks at the chosen node only."""
    for attempt, tried in zip(attempts, trial, strict=True):
        tried.state.placement = None
        attempt.state = tried.state
    return outcome


def proposed(outcome: GroupOutcome) -> tuple[ProposedAssignment, ...]:
    return tuple(ProposedAssignment(member.attempt.pod, member.result.node_name)
                 for member in outcome.members
                 if member.status.ok and member.result is not None
                 and member.result.node_name)
