"""DefaultPreemption: when a pod fits nowhere, evict lower-priority pods to make room.

PostFilter runs upstream's preemption evaluator (framework/preemption) with the
DefaultPreemption rules: check the preemptor may preempt at all; dry-run every
node a Filter rejected as resolvable (Unschedulable), starting at a random offset
and stopping once enough candidates are found; on each, remove every
lower-priority pod and check the preemptor fits, then give back as many of them as
still let it fit (PDB-violating ones first, most important first); pick one node
by upstream's criteria and hand the victims to the handle, which deletes them
without the scheduling loop waiting (upstream's async preemption, on by default).

Statuses carry upstream's texts behind "preemption: ", which the scheduler appends
to the FailedScheduling message after the Filter summary.

Subclasses may override `is_eligible_pod` and `more_important_pod`, the same two
customisation points upstream's plugin exposes.

A v1.37 pod group preempts for the whole group at PodGroupPostFilter, which the core
runs (scheduling/pod_group_preemption.py, with victims.py's whole-group victims);
PreEnqueue holds its members while that preemption runs. Not carried over:
topology-aware workload scheduling and composite pod groups (alpha).
"""

from __future__ import annotations

import itertools
import operator
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.pod_groups import group_name
from kpysched.decisions.record import Preemption, PreemptionCandidate
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from kpysched.framework.cluster_events import Resource as EventResource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import (
    Handle,
    NodeSimulation,
    NodeSimulator,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects import api
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins._shared.args import invalid
from kpysched.plugins.default_preemption.batch import NodeVictims, select_victims_on_nodes
from kpysched.plugins.default_preemption.extenders import call_extenders
from kpysched.plugins.default_preemption.selection import (
    Candidate,
    aggregate_errors,
    more_important_pod,
    pick_one_node_and_criterion,
    sort_by_default_importance,
    sort_by_importance,
    split_by_pdb_violation,
    terminating_by_preemption,
)
from kpysched.plugins.default_preemption.victims import (
    CompositeLookup,
    UnitKey,
    extension_error,
    placed_on,
    pod_priority,
    select_units,
    victims_on,
)

NAME = "DefaultPreemption"

MESSAGE_PREFIX = "preemption: "
REASON_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
REASON_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
REASON_NO_VICTIMS = "No preemption victims found for incoming pod"
REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
REASON_NO_NODES = "no nodes available"
REASON_NO_CANDIDATE = "no candidate node for preemption"

PREEMPT_NEVER = "Never"

# From v1.37 a successful preemption's status names the node and the victim count, and
# a victim's PDB accounting stops at its first violated budget.
_V1_37 = 37

_DEFAULT_PERCENTAGE = 10
_DEFAULT_ABSOLUTE = 100

# A node the Filter pass did not report on: upstream's default absent-node status.
_ABSENT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

_NAME_OF = operator.attrgetter("name")

# The fewest nodes the dry run works out at once (in a batch where it can).
_MIN_CHUNK = 64


class DefaultPreemptionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    min_candidate_nodes_percentage: int = Field(
        default=_DEFAULT_PERCENTAGE, alias="minCandidateNodesPercentage", strict=True)
    min_candidate_nodes_absolute: int = Field(
        default=_DEFAULT_ABSOLUTE, alias="minCandidateNodesAbsolute", strict=True)

    @field_validator("min_candidate_nodes_percentage", mode="before")
    @classmethod
    def _default_percentage(cls, value: Any) -> Any:
        return _DEFAULT_PERCENTAGE if value is None else value

    @field_validator("min_candidate_nodes_absolute", mode="before")
    @classmethod
    def _default_absolute(cls, value: Any) -> Any:
        return _DEFAULT_ABSOLUTE if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> Self:
        percentage = self.min_candidate_nodes_percentage
        absolute = self.min_candidate_nodes_absolute
        errors: list[str] = []
        if not 0 <= percentage <= 100:
            errors.append(f"minCandidateNodesPercentage: Invalid value: {percentage}: "
                          "not in valid range [0, 100]")
        if absolute < 0:
            errors.append(f"minCandidateNodesAbsolute: Invalid value: {absolute}: "
                          "not in valid range [0, inf)")
        if percentage == 0 and absolute == 0:
            errors.append("minCandidateNodesPercentage: Invalid value: 0: "
                          "cannot be zero at the same time as minCandidateNodesAbsolute")
            errors.append("minCandidateNodesAbsolute: Invalid value: 0: "
                          "cannot be zero at the same time as minCandidateNodesPercentage")
        if errors:
            raise invalid(errors)
        return self


# Upstream's PreEnqueue answer while this pod's victims are still being removed.
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
WAITING_FOR_GROUP_PREEMPTION = "waiting for the preemption for this pod group to be finished"


def _never_on_its_own(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A held preemptor also carries the plugins that rejected it (NodeResourcesFit, ...):
    their hints judge whether a victim's deletion helps. This plugin only holds the pod
    while victims go, and the executor releases it when they are gone."""
    return QueueingHint.QUEUE_SKIP


# Registered so that a held preemptor is looked at when a pod goes away (upstream's
# isPodSchedulableAfterPodDeletion).
_VICTIM_DELETED = (
    ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), _never_on_its_own),
)


def _unchanged(method: Callable[..., object], default: Callable[..., object]) -> bool:
    """Whether a customisation point is still DefaultPreemption's own (neither a
    subclass nor the instance replaced it), so a faster form of its rule may be used."""
    return getattr(method, "__func__", None) is default


def _resolvable_nodes(nodes: Sequence[NodeInfo], statuses: dict[str, Status]
                      ) -> list[NodeInfo]:
    """The nodes, in order, that a Filter rejected as resolvable (Unschedulable).
    Thousands of nodes share a few Status objects (vector reasons), so each distinct
    status is judged once and the nodes are picked by C-level map/compress."""
    distinct = dict(zip(map(id, statuses.values()), statuses.values(), strict=True))
    resolvable = {key for key, status in distinct.items() if status.code == Code.UNSCHEDULABLE}
    found = map(id, map(statuses.get, map(_NAME_OF, nodes)))
    return list(itertools.compress(nodes, map(resolvable.__contains__, found)))


class DefaultPreemption(PreEnqueuePlugin, PostFilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: DefaultPreemptionArgs, handle: Handle,
                 rng: random.Random | None = None,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self._args = args
        self._handle = handle
        self._rng = rng or random.Random()
        self._clock = clock
        # "Now" for pods without a start time, fixed per preemption attempt.
        self._now = clock()
        # Behaving as v1.37 (its success message, its PDB accounting).
        self._v137 = handle.features.release >= _V1_37
        # v1.37 with GenericWorkload: pod groups preempt as one (pod_group_preemption.py).
        self._group_preemption = self._v137 and handle.features.enabled("GenericWorkload")
        # Each group's placed members, for one preemption attempt (_placed_members).
        self._placed: Callable[[UnitKey], Sequence[PodInfo]] | None = None
        # v1.37's CompositePodGroup on: victims count their tree (victims.py).
        self._composites: CompositeLookup | None = (
            handle.composite_pod_group if handle.features.enabled("CompositePodGroup")
            else None)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Only the PreEnqueue hold below rejects; its hint defers to the other rejectors.
        return _VICTIM_DELETED

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Hold a preemptor back while its preemption is still being carried out, so it
        cannot preempt a second set of victims before the first are gone. As v1.37
        with GenericWorkload on, a pod group's member is held while its group's
        preemption runs (the group preempts as one, in the PodGroup's name)."""
        group = pod.pod.spec.scheduling_group
        if self._group_preemption and group is not None and group.pod_group_name:
            found: PodGroup | CompositePodGroup | None = self._handle.pod_group(
                pod.namespace, group.pod_group_name)
            if self._composites is not None and found is not None:
                # With CompositePodGroup on, the tree preempts in its root's name.
                tree = self._handle.pod_group_tree(pod.namespace, group.pod_group_name)
                found = None if tree is None else (tree.composite or tree.pod_group)
            if found is not None and self._handle.is_pod_running_preemption(
                    found.metadata.uid):
                return Status.unresolvable(WAITING_FOR_GROUP_PREEMPTION)
            return SUCCESS
        if self._handle.is_pod_running_preemption(pod.uid):
            return Status.unresolvable(WAITING_FOR_PREEMPTION)
        return SUCCESS

    # --- customisation points (upstream's IsEligiblePod and MoreImportantPod) --------

    def is_eligible_pod(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Extra rules a victim must pass besides having lower priority than the preemptor."""
        return True

    def more_important_pod(self, first: PodInfo, second: PodInfo) -> bool:
        """Whether `first` should be kept over `second`: higher priority, then older."""
        return more_important_pod(first, second, self._now)

    # --- PostFilter --------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        result, status = self.preempt(state, pod, statuses)
        if (metrics := self._handle.metrics) is not None:
            # v1.37's preemption_evaluation_duration_seconds (the eviction is a task
            # of its own here, so the call is the evaluation).
            metrics.preemption_evaluation("pod", status.code.label,
                                          time.perf_counter() - started)
        message = status.message()
        if message:
            return result, Status(status.code, [MESSAGE_PREFIX + message])
        return result, status

    def preempt(self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
                ) -> tuple[PostFilterResult | None, Status]:
        """Upstream's Evaluator.Preempt: None keeps the pod's nomination as it is; an empty
        nominated node name clears it; a node name nominates the pod there."""
        self._now = self._clock()
        self._placed = None
        nominated = pod.pod.status.nominated_node_name
        eligible, reason = self.pod_eligible_to_preempt_others(
            pod, statuses.get(nominated, _ABSENT))
        if not eligible:
            return None, Status.unschedulable(reason)

        all_nodes = self._handle.snapshot.node_infos
        if not all_nodes:
            return None, Status.error(REASON_NO_NODES)
        potential = _resolvable_nodes(all_nodes, statuses)
        candidates: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        if potential:
            offset, count = self.offset_and_num_candidates(len(potential))
            candidates, node_statuses, errors = self.dry_run_preemption(
                state, pod, potential, self._handle.pdbs(), offset, count)
            if errors and not candidates:
                return None, Status.error(aggregate_errors(errors))
        if not candidates:
            fit_error = Diagnosis(len(all_nodes), node_statuses,
                                  absent_status=Status.unresolvable(REASON_NOT_HELPFUL))
            return PostFilterResult(""), Status.unschedulable(fit_error.message())

        narrowed = call_extenders(self._handle, pod, candidates,
                                  state.decision.extenders if state.decision else None)
        if isinstance(narrowed, Status):
            return None, narrowed
        if not narrowed:
            return None, Status.unschedulable(REASON_NO_CANDIDATE)
        candidates = list(narrowed)
        best, criterion = self.select_candidate_and_criterion(candidates)
        if state.decision is not None:
            state.decision.preemption = Preemption(
                [PreemptionCandidate(c.name, [v.key for v in c.victims], c.num_pdb_violations)
                 for c in candidates],
                best.name, criterion)
        if (metrics := self._handle.metrics) is not None:
            # A single pod's candidate counts no pod-group disruptions upstream (only
            # a group's evaluation sets them), but its budget violations.
            metrics.preemption_disruptions("pod", 0, best.num_pdb_violations)
        self._handle.preempt(pod, best.name, best.victims, NAME)
        if self._v137:
            # The pod still waits for its victims to go: its FailedScheduling says where.
            return PostFilterResult(best.name), Status(Code.SUCCESS, [
                f"found a potential placement for pod on node {best.name}, "
                f"preempting {len(best.victims)} victims"])
        return PostFilterResult(best.name), SUCCESS

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_status: Status) -> tuple[bool, str]:
        """Never for preemptionPolicy Never; not while victims of an earlier preemption
        still terminate on the nominated node, unless that node is now out of reach."""
        if pod.pod.spec.preemption_policy == PREEMPT_NEVER:
            return False, REASON_PREEMPT_NEVER
        nominated = pod.pod.status.nominated_node_name
        if not nominated:
            return True, ""
        if nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        info = self._handle.snapshot.get(nominated)
        if info is not None:
            for other in info.pods.values():
                if self._preemption_allowed(info, other, pod) and terminating_by_preemption(other):
                    return False, REASON_TERMINATING_ON_NOMINATED
        return True, ""

    def _preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        priority = (pod_priority(victim, self._handle.pod_group, self._composites)
                    if self._group_preemption else victim.priority)
        return priority < preemptor.priority and self.is_eligible_pod(
            node, victim, preemptor)

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random place to start the dry run, and how many candidates to look for:
        minCandidateNodesPercentage of the nodes, at least minCandidateNodesAbsolute,
        at most all of them."""
        wanted = num_nodes * self._args.min_candidate_nodes_percentage // 100
        wanted = max(wanted, self._args.min_candidate_nodes_absolute)
        return self._rng.randrange(num_nodes), min(wanted, num_nodes)

    def dry_run_preemption(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
        pdbs: Sequence[api.PodDisruptionBudget], offset: int, count: int,
    ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """Candidates (those violating no PDB first), the status of each node that gave
        none, and the error messages met. Nodes are tried from `offset` round the list
        until `count` candidates are found, at least one of them violating no PDB; each
        list keeps at most `count` candidates."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[str] = []
        simulator = self._handle.node_simulator(state, pod)
        for info, (victims, num_violations, found_status) in self._victims_from(
                state, pod, nodes, pdbs, offset, count, simulator):
            status = found_status
            if status.ok and victims:
                found = violating if num_violations else non_violating
                if len(found) < count:
                    found.append(Candidate(info.name, tuple(victims), num_violations))
                if non_violating and len(non_violating) + len(violating) >= count:
                    break
                continue
            if status.ok:
                status = Status.error(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            node_statuses[info.name] = status
        return non_violating + violating, node_statuses, errors

    def _victims_from(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
        pdbs: Sequence[api.PodDisruptionBudget], offset: int, count: int,
        simulator: NodeSimulator,
    ) -> Iterator[tuple[NodeInfo, NodeVictims]]:
        """select_victims_on_node's answer for each node from `offset` round the list;
        the caller stops taking them once it has its candidates. Where the simulator has
        batches, `count` nodes at a time are worked out together (pure vector verdicts,
        so working out a few nodes past the stopping point changes nothing)."""
        def one_node(info: NodeInfo) -> NodeVictims:
            return self.select_victims_on_node(state, pod, info, pdbs, simulator.node)

        def reprieve_order(potential: list[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
            return split_by_pdb_violation(self._by_importance(potential), pdbs,
                                          first_violation_ends=self._v137)

        total = len(nodes)
        chunk_size = max(count, _MIN_CHUNK)
        for start in range(0, total, chunk_size):
            chunk = [nodes[(offset + i) % total]
                     for i in range(start, min(start + chunk_size, total))]
            # A pod group's member is a victim of its own kind (victims.py): such nodes
            # are worked out one by one.
            batch = None if any(map(self._has_group_members, chunk)) else simulator.batch(chunk)
            found = None if batch is None else select_victims_on_nodes(
                chunk, batch, lambda info: self._potential_victims(info, pod),
                reprieve_order, self._by_importance, one_node)
            if found is None:
                # Node by node, and only as far as the caller reads: upstream runs no
                # Filter on nodes past the point where it has its candidates.
                yield from ((info, one_node(info)) for info in chunk)
            else:
                yield from zip(chunk, found, strict=True)

    def _potential_victims(self, node: NodeInfo, pod: PodInfo) -> list[PodInfo]:
        """The node's pods the preemptor may evict."""
        if _unchanged(self.is_eligible_pod, DefaultPreemption.is_eligible_pod):
            priority = pod.priority
            return [other for other in node.pods.values() if other.priority < priority]
        return [other for other in node.pods.values()
                if self._preemption_allowed(node, other, pod)]

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo,
        pdbs: Sequence[api.PodDisruptionBudget],
        simulate: Callable[[NodeInfo], NodeSimulation] | None = None,
    ) -> NodeVictims:
        """The fewest pods, least important first, whose removal lets `pod` fit on `node`,
        and how many of them violate a PDB. `state` and `node` are left as they are: the
        simulation (the handle's, unless `simulate` is given) works on its own copies."""
        if simulate is None:
            simulate = self._handle.node_simulator(state, pod).node
        if self._has_group_members(node):
            return self._select_unit_victims_on_node(pod, node, pdbs, simulate)
        potential = self._potential_victims(node, pod)
        if not potential:
            return [], 0, Status.unresolvable(REASON_NO_VICTIMS)
        simulated = simulate(node)

        def remove(victim: PodInfo) -> Status:
            status = simulated.remove_pod(victim)
            return status if status.ok else extension_error("RemovePod", status)

        for victim in potential:
            status = remove(victim)
            if not status.ok:
                return [], 0, status
        status = simulated.filter()
        if not status.ok:
            return [], 0, status

        potential = self._by_importance(potential)
        violating, non_violating = split_by_pdb_violation(
            potential, pdbs, first_violation_ends=self._v137)
        victims: list[PodInfo] = []

        def reprieve(candidate: PodInfo) -> Status | bool:
            """Give the pod back; True if the preemptor still fits with it."""
            status = simulated.add_pod(candidate)
            if not status.ok:
                return extension_error("AddPod", status)
            # The node passed every Filter above; only its pods changed since.
            if simulated.filter(node_only_passed=True).ok:
                return True
            status = remove(candidate)
            if not status.ok:
                return status
            victims.append(candidate)
            return False

        num_violations = 0
        for group in (violating, non_violating):
            for candidate in group:
                fits = reprieve(candidate)
                if isinstance(fits, Status):
                    return [], 0, fits
                if not fits and group is violating:
                    num_violations += 1
        if violating and non_violating:
            victims = self._by_importance(victims)
        return victims, num_violations, SUCCESS

    # --- v1.37 with GenericWorkload: pod groups' members as victims -----------------

    def _has_group_members(self, node: NodeInfo) -> bool:
        """Whether victims on `node` follow v1.37's pod-group rules (victims.py)."""
        return self._group_preemption and any(
            group_name(other.pod) is not None for other in node.pods.values())

    def _placed_members(self) -> Callable[[UnitKey], Sequence[PodInfo]]:
        """Each group's members as they sit on the snapshot's nodes, worked out once per
        preemption attempt (upstream reads the group's scheduled pods)."""
        if self._placed is None:
            self._placed = placed_on(self._handle.snapshot.node_infos,
                                     self._handle.pod_group, self._composites)
        return self._placed

    def _select_unit_victims_on_node(
        self, pod: PodInfo, node: NodeInfo, pdbs: Sequence[api.PodDisruptionBudget],
        simulate: Callable[[NodeInfo], NodeSimulation],
    ) -> NodeVictims:
        """select_victims_on_node over victims.py's units: a member of a group with
        disruptionMode all goes with its whole group (wherever its members run), a
        member's priority is its group's, and units are ordered, reprieved and
        counted against budgets whole. Members on other nodes are deleted with their
        unit but not simulated: only this node's pods are taken off and given back
        (upstream also runs the PreFilter extensions for them, which only spread and
        affinity constraints read)."""
        snapshot = self._handle.snapshot
        units = [unit for unit in victims_on([node], self._handle.pod_group, self._now,
                                             self._placed_members(), self._composites)
                 if unit.priority < pod.priority and all(
                     self.is_eligible_pod(snapshot.get(p.node_name) or node, p, pod)
                     for p in unit.pods)]
        if not units:
            return [], 0, Status.unresolvable(REASON_NO_VICTIMS)
        return select_units(units, node.name, simulate(node), pdbs)

    def _by_importance(self, pods: Sequence[PodInfo]) -> list[PodInfo]:
        if _unchanged(self.more_important_pod, DefaultPreemption.more_important_pod):
            return sort_by_default_importance(pods, self._now)
        return sort_by_importance(pods, self.more_important_pod)

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate:
        """The one candidate, or the best by upstream's criteria."""
        return self.select_candidate_and_criterion(candidates)[0]

    def select_candidate_and_criterion(self, candidates: Sequence[Candidate]
                                       ) -> tuple[Candidate, str]:
        """select_candidate's choice and the criterion that made it (decision records)."""
        return pick_one_node_and_criterion(candidates, self._now)


def new(args: DefaultPreemptionArgs | None, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args if args is not None else DefaultPreemptionArgs(), handle)


SPEC = PluginSpec(NAME, DefaultPreemption, new, DefaultPreemptionArgs)
