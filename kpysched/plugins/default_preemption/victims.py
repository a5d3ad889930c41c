"""Preemption victims as v1.37 sees them with GenericWorkload on: a unit that goes whole.

A pod that is a member of a PodGroup whose disruptionMode is `all` cannot be evicted
alone: every placed member of its group is one victim, wherever each runs. Any other
pod is a victim of its own. A victim's priority is its PodGroup's (spec.priority, 0
when unset) for a member of an existing group, else the pod's own.

Ordering (upstream's MoreImportantVictim): higher priority first; then a pod group's
members before plain pods; then the larger unit; then the one that started earlier.
PDB accounting is per victim: one pod of it over a budget makes the whole unit
violating (a group cannot be reprieved in part).

With v1.37's CompositePodGroup on, a member's tree counts (upstream's
TraverseHierarchyUp): its priority is its highest known group's, and the highest
group with disruptionMode all, a CompositePodGroup included, makes every placed pod
below it one victim, ranked above a PodGroup's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.pod_groups import group_name
from kpysched.framework.interfaces import NodeSimulation
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.composite_pod_groups import CompositeDisruptionMode, CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import DisruptionMode, PodGroup
from kpysched.plugins.default_preemption.selection import pod_start_nanos, split_by_pdb_violation

# Upstream's victim ranks (victimRank): a pod group's member outranks a plain pod, a
# CompositePodGroup's subtree taken whole outranks both.
_RANK_POD = 1
_RANK_POD_GROUP = 2
_RANK_COMPOSITE = 3
# scheduling.k8s.io's WorkloadMaxTreeDepth: how far up a tree is followed.
_MAX_TREE_DEPTH = 4

# A pod's PodGroup by namespace and name (the informer's), or None.
PodGroupLookup = Callable[[str, str], PodGroup | None]
# With v1.37's CompositePodGroup on: a CompositePodGroup by namespace and name, or None.
CompositeLookup = Callable[[str, str], CompositePodGroup | None]
# What a pod goes with: (kind, namespace, name) of a PodGroup or CompositePodGroup.
UnitKey = tuple[str, str, str]
POD_GROUP_KIND = "PodGroup"
COMPOSITE_KIND = "CompositePodGroup"


@dataclass(slots=True)
class Victim:
    pods: list[PodInfo]
    priority: int
    rank: int
    earliest_start: int  # nanoseconds; a pod not started counts as started "now"

    @property
    def is_group(self) -> bool:
        return self.rank == _RANK_POD_GROUP


def group_priority(group: PodGroup) -> int:
    """Upstream's PodGroupPriority: spec.priority, 0 when unset."""
    return group.spec.priority if group.spec.priority is not None else 0


def _ancestry(pod: PodInfo, lookup: PodGroupLookup, composites: CompositeLookup | None
              ) -> list[tuple[UnitKey, PodGroup | CompositePodGroup]]:
    """The pod's PodGroup and, with CompositePodGroup on, the groups above it, bottom
    up, as far as they are known (upstream's TraverseHierarchyUp)."""
    name = group_name(pod.pod)
    group = lookup(pod.namespace, name) if name is not None else None
    if name is None or group is None:
        return []
    found: list[tuple[UnitKey, PodGroup | CompositePodGroup]] = [
        ((POD_GROUP_KIND, pod.namespace, name), group)]
    parent = group.spec.parent_composite_pod_group_name
    while composites is not None and parent is not None and len(found) < _MAX_TREE_DEPTH:
        key = (COMPOSITE_KIND, pod.namespace, parent)
        above = composites(pod.namespace, parent)
        if above is None or any(seen == key for seen, _ in found):
            break
        found.append((key, above))
        parent = above.spec.parent_composite_pod_group_name
    return found


def pod_priority(pod: PodInfo, lookup: PodGroupLookup,
                 composites: CompositeLookup | None = None) -> int:
    """Upstream's GetPodPriority: a member of an existing PodGroup has the group's, or,
    with CompositePodGroup on, its tree's highest known group's."""
    ancestry = _ancestry(pod, lookup, composites)
    if not ancestry:
        return pod.priority
    top = ancestry[-1][1]
    return top.spec.priority if top.spec.priority is not None else 0


def whole_unit(pod: PodInfo, lookup: PodGroupLookup,
                 composites: CompositeLookup | None = None) -> UnitKey | None:
    """The unit `pod` goes with: its highest group with disruptionMode all (upstream's
    getHighestAllAncestor), or None."""
    whole = None
    for key, group in _ancestry(pod, lookup, composites):
        mode = group.spec.disruption_mode
        # Single (the default), or v1alpha2's string, which v1.36 ignores.
        if isinstance(mode, DisruptionMode | CompositeDisruptionMode) and mode.all is not None:
            whole = key
    return whole


def _victim(pods: list[PodInfo], priority: int, rank: int, now: int) -> Victim:
    # Upstream keeps the first pod's start, then any earlier one.
    earliest = min(pod_start_nanos(pod, now) for pod in pods)
    return Victim(pods, priority, rank, earliest)


def victims_on(nodes: Iterable[NodeInfo], lookup: PodGroupLookup, now: int,
               placed_members: Callable[[UnitKey], Sequence[PodInfo]],
               composites: CompositeLookup | None = None) -> list[Victim]:
    """Every pod on `nodes` as victims, in node and pod order: a member of a group with
    disruptionMode all (with CompositePodGroup on, of any group above it) brings that
    group's placed members (`placed_members`, wherever they run) along as one
    victim."""
    seen: set[UnitKey] = set()
    victims: list[Victim] = []
    for info in nodes:
        for pod in info.pods.values():
            whole = whole_unit(pod, lookup, composites)
            priority = pod_priority(pod, lookup, composites)
            if whole is None:
                rank = _RANK_POD if group_name(pod.pod) is None else _RANK_POD_GROUP
                victims.append(_victim([pod], priority, rank, now))
                continue
            if whole in seen:
                continue
            seen.add(whole)
            members = list(placed_members(whole)) or [pod]
            rank = _RANK_POD_GROUP if whole[0] == POD_GROUP_KIND else _RANK_COMPOSITE
            victims.append(_victim(members, priority, rank, now))
    return victims


def placed_on(nodes: Iterable[NodeInfo], lookup: PodGroupLookup | None = None,
              composites: CompositeLookup | None = None
              ) -> Callable[[UnitKey], list[PodInfo]]:
    """`placed_members` for victims_on when `nodes` are the whole cluster: each group's
    members as they sit on those nodes, and (given both lookups, CompositePodGroup on)
    each CompositePodGroup's, those of every PodGroup below it."""
    by_unit: dict[UnitKey, list[PodInfo]] = {}
    for info in nodes:
        for pod in info.pods.values():
            name = group_name(pod.pod)
            if name is None:
                continue
            by_unit.setdefault((POD_GROUP_KIND, pod.namespace, name), []).append(pod)
            if lookup is not None and composites is not None:
                for key, _ in _ancestry(pod, lookup, composites)[1:]:
                    by_unit.setdefault(key, []).append(pod)
    return lambda key: by_unit.get(key, [])


def _compare(first: Victim, second: Victim) -> int:
    """-1 when `first` is more important (kept over `second`), 1 when less, else 0."""
    if first.priority != second.priority:
        return -1 if first.priority > second.priority else 1
    if first.rank != second.rank:
        return -1 if first.rank > second.rank else 1
    if len(first.pods) != len(second.pods):
        return -1 if len(first.pods) > len(second.pods) else 1
    if first.earliest_start != second.earliest_start:
        return -1 if first.earliest_start < second.earliest_start else 1
    return 0


_IMPORTANCE = functools.cmp_to_key(_compare)


def by_importance(victims: Iterable[Victim]) -> list[Victim]:
    """Most important first (upstream's MoreImportantVictim)."""
    return sorted(victims, key=_IMPORTANCE)


def split_victims_by_pdb_violation(
    victims: Sequence[Victim], pdbs: Sequence[api.PodDisruptionBudget],
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """(violating with how many of their pods violate, non-violating), each in input
    order; budgets are spent pod by pod across the victims in order, as v1.37's
    FilterVictimsWithPDBViolation does."""
    pods = [pod for victim in victims for pod in victim.pods]
    violating_pods, _ = split_by_pdb_violation(pods, pdbs, first_violation_ends=True)
    over = {pod.uid for pod in violating_pods}
    violating: list[tuple[Victim, int]] = []
    non_violating: list[Victim] = []
    for victim in victims:
        count = sum(1 for pod in victim.pods if pod.uid in over)
        if count:
            violating.append((victim, count))
        else:
            non_violating.append(victim)
    return violating, non_violating


def extension_error(verb: str, status: Status) -> Status:
    """A PreFilter extension failure, worded as upstream's framework wraps it."""
    return Status.error(f'running {verb} on PreFilter plugin "{status.plugin}": '
                        f"{status.message()}")


def select_units(units: Sequence[Victim], node_name: str, simulated: NodeSimulation,
                 pdbs: Sequence[api.PodDisruptionBudget]) -> tuple[list[PodInfo], int, Status]:
    """SelectVictimsOnNode over units that may be preempted: all taken off `node_name`
    (the simulated node), then given back most important first (those over a budget
    first) while the preemptor still fits. The pods of the units that must go, most
    important first, and how many of them violate a budget.

    Members of a unit on other nodes go with it but are not simulated: only this
    node's pods are taken off and given back (upstream also runs the PreFilter
    extensions for the others, which only spread and affinity constraints read)."""
    def here(unit: Victim) -> list[PodInfo]:
        return [p for p in unit.pods if p.node_name == node_name]

    def take(unit: Victim) -> Status:
        for victim in here(unit):
            status = simulated.remove_pod(victim)
            if not status.ok:
                return extension_error("RemovePod", status)
        return SUCCESS

    for unit in units:
        status = take(unit)
        if not status.ok:
            return [], 0, status
    status = simulated.filter()
    if not status.ok:
        return [], 0, status
    violating, non_violating = split_victims_by_pdb_violation(by_importance(units), pdbs)
    chosen: list[Victim] = []
    num_violations = 0
    for unit, count in [*violating, *((unit, 0) for unit in non_violating)]:
        for victim in here(unit):
            status = simulated.add_pod(victim)
            if not status.ok:
                return [], 0, extension_error("AddPod", status)
        # The node passed every Filter above; only its pods changed since.
        if simulated.filter(node_only_passed=True).ok:
            continue  # reprieved
        status = take(unit)
        if not status.ok:
            return [], 0, status
        chosen.append(unit)
        num_violations += count
    if violating and non_violating:
        chosen = by_importance(chosen)
    return [p for unit in chosen for p in unit.pods], num_violations, SUCCESS
