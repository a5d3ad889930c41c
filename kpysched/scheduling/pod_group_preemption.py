"""DefaultPreemption's PodGroupPostFilter as kube-scheduler v1.37.2 runs it: room for a
whole pod group, found across the cluster at once (upstream's PodGroupEvaluator).

When a v1.37 group's cycle ends Unschedulable:

1. The group must be eligible: its policy must not be Never (pod_group_policy.py:
   the PodGroup's own with PodGroupPreemptionPolicy on, a tree's root
   CompositePodGroup's for a tree, else Never when any member has it). If a member's
   nominated node still has a lower-priority pod terminating by preemption, the
   group's earlier preemption is under way: it keeps its nominations and waits.
2. Every pod of the cluster is a victim (victims.py: a group with disruptionMode all
   goes whole); those of lower priority than the group are taken off the snapshot,
   and the group's algorithm runs again on what is left (`schedule_again`). If the
   group does not fit even so, its status is the answer.
3. The victims are given back one by one, most important first (those over a
   PodDisruptionBudget before the others): each stays if every member the second run
   placed still passes its Filters on its node, the members before it assumed and
   Reserved there; else it is a victim.
4. The victims are evicted in the group's name (upstream's candidate "cluster"), and
   every member placed by the second run is nominated to its node. The group waits
   for the victims to go ("found a placement for podgroup, preempting N victims").

The snapshot is left as it was found.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kpysched.cache.pod_groups import group_name
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Code, Status
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption.selection import terminating_by_preemption
from kpysched.plugins.default_preemption.victims import (
    CompositeLookup,
    PodGroupLookup,
    Victim,
    by_importance,
    extension_error,
    placed_on,
    pod_priority,
    split_victims_by_pdb_violation,
    victims_on,
)
from kpysched.scheduling import pod_group_policy as policy
from kpysched.scheduling.binding_cycle import assumed_copy

NOT_ELIGIBLE = "not eligible due to preemptionPolicy=Never."
# The preemptor label of upstream's preemption metrics for a group.
PREEMPTOR = "podgroup"
NO_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
# Upstream's name for the candidate of a group's preemption: the whole cluster. The
# Preempted events say "on node cluster".
CLUSTER = "cluster"


@dataclass(slots=True)
class Assignment:
    """A member the second run placed: where, and the cycle state it was placed with."""

    pod: PodInfo
    node: str
    state: CycleState


# The group's algorithm again, on the snapshot as it is: the members it placed (in the
# order tried) and the group's status. Every assumption it made is undone on return.
ScheduleAgain = Callable[[], tuple[list[Assignment], Status]]


@dataclass(slots=True)
class GroupPreemption:
    """What the group's preemption decided."""

    status: Status
    # Member uid -> node to nominate it to ("" clears it); None leaves nominations be.
    nominations: dict[str, str] | None = None
    victims: list[PodInfo] = field(default_factory=list)
    # Victims that are whole pod groups, and victims' pods over a budget.
    disruptions: int = 0
    pdb_violations: int = 0


def preempt_for_group(
    framework: Framework, snapshot: Snapshot, priority: int, members: Sequence[PodInfo],
    lookup: PodGroupLookup, pdbs: Sequence[api.PodDisruptionBudget],
    schedule_again: ScheduleAgain, now: int | None = None,
    composites: CompositeLookup | None = None, root: CompositePodGroup | None = None,
) -> GroupPreemption:
    """Upstream's PodGroupEvaluator.Preempt without the eviction (the caller's),
    counted in v1.37's workload preemption metrics. `composites`: with
    CompositePodGroup on, victims count their trees (victims.py). `root`: the tree's
    CompositePodGroup when a tree preempts, whose policy is the tree's."""
    metrics = framework.metrics if isinstance(framework.metrics, SchedulerMetrics) else None
    found = _preempt(framework, snapshot, priority, members, lookup, pdbs, schedule_again,
                     now, metrics, composites, root)
    if metrics is not None:
        metrics.workload_preemption_attempt(found.status.code.label)
    return found


def _preempt(framework: Framework, snapshot: Snapshot, priority: int,
             members: Sequence[PodInfo], lookup: PodGroupLookup,
             pdbs: Sequence[api.PodDisruptionBudget], schedule_again: ScheduleAgain,
             now: int | None, metrics: SchedulerMetrics | None,
             composites: CompositeLookup | None,
             root: CompositePodGroup | None) -> GroupPreemption:
    if _policy(framework, members, lookup, root) == policy.NEVER:
        return GroupPreemption(Status.unschedulable(NOT_ELIGIBLE))
    if _ongoing(snapshot, priority, members, lookup, composites):
        return GroupPreemption(
            Status(Code.SUCCESS, [ONGOING]),
            {m.uid: m.pod.status.nominated_node_name or "" for m in members})
    started = time.perf_counter()
    found = _evaluate(framework, snapshot, priority, lookup, pdbs, schedule_again, now,
                      composites)
    if metrics is not None:
        metrics.preemption_evaluation(PREEMPTOR, found.status.code.label,
                                      time.perf_counter() - started)
        if found.status.ok:
            # Upstream counts the victims when it carries the preemption out, which
            # it does for every placement found (none left to go included).
            metrics.group_preemption_chosen(len(found.victims), found.disruptions,
                                            found.pdb_violations)
    return found


def _evaluate(framework: Framework, snapshot: Snapshot, priority: int,
              lookup: PodGroupLookup, pdbs: Sequence[api.PodDisruptionBudget],
              schedule_again: ScheduleAgain, now: int | None,
              composites: CompositeLookup | None) -> GroupPreemption:
    """Upstream's PodGroupEvaluator.evaluate: the victims, or why there are none."""
    now = time.time_ns() if now is None else now
    nodes = snapshot.node_infos
    everyone = victims_on(nodes, lookup, now, placed_on(nodes, lookup, composites),
                          composites)
    potential = [v for v in everyone if v.priority < priority]
    if not potential:
        return GroupPreemption(Status.unresolvable(NO_VICTIMS))
    return _Dry(framework, snapshot).run(potential, pdbs, schedule_again)


def _policy(framework: Framework, members: Sequence[PodInfo], lookup: PodGroupLookup,
            root: CompositePodGroup | None) -> str:
    gate = framework.handle.features.enabled(policy.GATE)
    if root is not None:
        return policy.tree_policy(root, members, gate=gate)
    name = group_name(members[0].pod) if members and gate else None
    pod_group = lookup(members[0].namespace, name) if name is not None else None
    return policy.group_policy(pod_group, members, gate=gate)


def _ongoing(snapshot: Snapshot, priority: int, members: Sequence[PodInfo],
             lookup: PodGroupLookup, composites: CompositeLookup | None) -> bool:
    """A member's nominated node still has a lower-priority pod its preemption is
    removing (upstream's isOngoingPreemption)."""
    nominated = {m.pod.status.nominated_node_name for m in members
                 if m.pod.status.nominated_node_name}
    for name in nominated:
        info = snapshot.get(name)
        if info is None:
            continue
        if any(pod_priority(pod, lookup, composites) < priority
               and terminating_by_preemption(pod)
               for pod in info.pods.values()):
            return True
    return False


class _Dry:
    """The dry run on the cycle's snapshot; every change is undone, last first."""

    def __init__(self, framework: Framework, snapshot: Snapshot) -> None:
        self._framework = framework
        self._snapshot = snapshot
        self._undo: list[Callable[[], None]] = []

    def run(self, potential: list[Victim], pdbs: Sequence[api.PodDisruptionBudget],
            schedule_again: ScheduleAgain) -> GroupPreemption:
        try:
            for victim in potential:
                self._take_off(victim)
            assignments, status = schedule_again()
            if not status.ok:
                return GroupPreemption(status)
            violating, non_violating = split_victims_by_pdb_violation(
                by_importance(potential), pdbs)
            chosen: list[Victim] = []
            pdb_violations = 0
            for victim, count in violating:
                if not self._reprieve(victim, assignments):
                    chosen.append(victim)
                    pdb_violations += count
            for victim in non_violating:
                if not self._reprieve(victim, assignments):
                    chosen.append(victim)
        except PreFilterExtensionError as error:
            return GroupPreemption(Status.error(str(error)))
        finally:
            for step in reversed(self._undo):
                step()
            self._undo.clear()
        pods = [pod for victim in by_importance(chosen) for pod in victim.pods]
        return GroupPreemption(
            Status(Code.SUCCESS, [f"found a placement for podgroup, preempting "
                                  f"{len(pods)} victims"]),
            {a.pod.uid: a.node for a in assignments}, pods,
            disruptions=sum(1 for victim in chosen if victim.is_group),
            pdb_violations=pdb_violations)

    def _take_off(self, victim: Victim) -> None:
        by_node: dict[str, set[str]] = {}
        for pod in victim.pods:
            by_node.setdefault(pod.node_name, set()).add(pod.uid)
        for node, uids in by_node.items():
            self._undo.append(self._snapshot.remove_pods(node, uids))

    def _reprieve(self, victim: Victim, assignments: Sequence[Assignment]) -> bool:
        """Give `victim` back; True if every member still fits where it was placed
        (it stays given back), False if not (it is taken off again: a victim)."""
        framework, snapshot = self._framework, self._snapshot
        given_back: list[Callable[[], None]] = []
        for pod in victim.pods:
            given_back.append(snapshot.assume_pod(pod, pod.node_name))
            node = snapshot.by_name[pod.node_name]
            for a in assignments:
                _must(framework.run_pre_filter_extension_add_pod(a.state, a.pod, pod, node),
                      "AddPod")
        fits = True
        placed: list[tuple[Assignment, PodInfo, Callable[[], None]]] = []
        try:
            for a in assignments:
                node = snapshot.by_name[a.node]
                if not framework.run_filter_with_nominated(a.state, a.pod, node).ok:
                    fits = False
                    break
                # The members after it were placed with it there: so they see it.
                assumed = assumed_copy(a.pod, a.node)
                restore = snapshot.assume_pod(assumed, a.node)
                framework.run_reserve(a.state, assumed, a.node)
                placed.append((a, assumed, restore))
        finally:
            for a, assumed, restore in reversed(placed):
                framework.run_unreserve(a.state, assumed, a.node)
                restore()
        if fits:
            self._undo.extend(given_back)
            return True
        for step in reversed(given_back):
            step()
        for pod in victim.pods:
            node = snapshot.by_name[pod.node_name]
            for a in assignments:
                _must(framework.run_pre_filter_extension_remove_pod(a.state, a.pod, pod,
                                                                    node), "RemovePod")
        return False


class PreFilterExtensionError(Exception):
    """A PreFilter extension failed while victims were given back or taken off."""


def _must(status: Status, verb: str) -> None:
    if not status.ok:
        raise PreFilterExtensionError(extension_error(verb, status).message())

