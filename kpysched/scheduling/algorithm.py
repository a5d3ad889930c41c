"""One scheduling decision: filter nodes, score the feasible ones, pick the best.

Follows upstream's schedulePod: PreFilter, Filter over a rotating window of
nodes bounded by percentageOfNodesToScore, the extenders' filters on what passed,
PreScore/Score/NormalizeScore with weights plus the extenders' scores, and a
uniformly random choice among the top-scoring nodes.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import NodeRows
from kpysched.cache.snapshot import Snapshot
from kpysched.decisions.record import compact, record_fit
from kpysched.extenders import steps as extender_steps
from kpysched.extenders.registry import Extenders
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import FilterPlugin, PreFilterResult, VectorReasonsPlugin
from kpysched.framework.runtime import Framework
from kpysched.framework.runtime.cooperative import give_loop_a_turn
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo

NO_NODES_AVAILABLE = "no nodes available to schedule pods"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


_NAME = operator.attrgetter("name")
IntArray = npt.NDArray[np.int64]


def _rotated(count: int, start: int) -> IntArray:
    """Rows 0..count-1 starting at `start` and wrapping (np.roll without its checks)."""
    rows = np.arange(count, dtype=np.int64)
    return np.concatenate((rows[start:], rows[:start])) if start else rows


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's adaptive rule)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage <= 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    wanted = num_all_nodes * min(percentage, 100) // 100
    return max(wanted, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    evaluated_nodes: int
    feasible_nodes: int


@dataclass(slots=True)
class FitResult:
    """What PreFilter and Filter found for one pod: the feasible nodes (NodeRows when
    the vector path found them), how many nodes were examined and why the others
    failed; `error` when an Error status ended the search. The rest is what a decision
    record tells of the search (decisions.record.record_fit)."""

    diagnosis: Diagnosis
    feasible: Sequence[NodeInfo] = ()
    processed: int = 0
    error: Status | None = None
    pre_filter_nodes: AbstractSet[str] | None = None  # PreFilterResult's node set
    pre_filter_message: str = ""  # a PreFilter rejection, shared by every node
    nominated_node_tried: str | None = None  # evaluated first (preemption made room)
    absent_reason: str = ""  # why nodes outside PreFilterResult's set do not fit
    mask: npt.NDArray[np.bool_] | None = None  # the vector verdict over every row
    searched: bool = False  # the Filter pass ran: its rejections are the record's
    # Some feasible nodes are an extender's answer, not the snapshot's (scored alone).
    fresh_nodes: bool = False

    @property
    def total_nodes(self) -> int:
        return self.diagnosis.num_all_nodes

    @property
    def node_to_status(self) -> dict[str, Status]:
        return self.diagnosis.node_to_status

    @property
    def vector_rejected(self) -> int:
        """Rows the vector verdict ruled out while other nodes fitted."""
        if self.mask is None or not self.feasible:
            return 0
        return int(self.total_nodes - int(self.mask.sum()))


class Algorithm:
    def __init__(self, percentage_of_nodes_to_score: int = 0,
                 rng: random.Random | None = None, extenders: Extenders | None = None) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._next_start_node_index = 0
        self._rng = rng or random.Random()
        # The scheduler extenders, shared by every profile as upstream's are.
        self.extenders = extenders if extenders else None

    def schedule(self, framework: Framework, state: CycleState, pod: PodInfo,
                 snapshot: Snapshot) -> ScheduleResult | Diagnosis | Status:
        """A result, a Diagnosis (fits nowhere), or an Error status."""
        if not (snapshot.node_infos if state.placement is None else state.placement):
            return Status.unresolvable(NO_NODES_AVAILABLE)
        fit = self._find_nodes_that_fit(framework, state, pod, snapshot)
        decision = state.decision
        if decision is not None:
            record_fit(decision, fit)
        if fit.error is not None:
            return fit.error
        feasible, processed = fit.feasible, fit.processed
        if not feasible:
            return fit.diagnosis
        if decision is not None:
            decision.evaluated_nodes = processed
            decision.feasible = _names(feasible)
        if len(feasible) == 1:
            # Nothing to compare: upstream skips PreScore/Score for a single candidate.
            return ScheduleResult(feasible[0].name, processed, 1)
        status = framework.run_pre_score(state, pod, feasible)
        if not status.ok:
            return status
        if fit.fresh_nodes:
            # Upstream scores the NodeInfos an extender's Nodes answer made, without
            # their pods: node by node, not from the snapshot's columns.
            totals, status = framework.run_score_totals(state, pod, feasible)
        else:
            # Score rows come from the vector path's rows when it found the nodes.
            rows = (feasible.rows if isinstance(feasible, NodeRows)
                    else np.fromiter(map(snapshot.index.__getitem__, _names(feasible)),
                                     dtype=np.int64, count=len(feasible)))
            # With a decision recorded, this also puts the totals (as an array) in it.
            totals, status = framework.run_score_totals(state, pod, feasible, snapshot, rows)
        if not status.ok:
            return status
        if self.extenders is not None:
            said = decision.extenders if decision is not None else None
            totals = totals + extender_steps.prioritize(self.extenders, pod, feasible, said)
            if decision is not None:
                decision.totals = compact(totals)
        chosen, top = self._select_host(feasible, totals)
        if decision is not None:
            decision.ties = (feasible.names_of(top) if isinstance(feasible, NodeRows)
                             else [feasible[position].name for position in top.tolist()])
        return ScheduleResult(chosen, processed, len(feasible))

    def _find_nodes_that_fit(
        self, framework: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> FitResult:
        """Feasible nodes (as NodeRows when the vector path found them), how many nodes
        were examined, and why the others failed."""
        # A pod group tried inside a placement looks only at its nodes (upstream's
        # ListNodesInPlacement); plugins still see the whole snapshot.
        within = state.placement
        all_nodes = (snapshot.node_infos if within is None
                     else [snapshot.by_name[name] for name in within])
        diagnosis = Diagnosis(len(all_nodes))
        pre_result, status, restricting = framework.run_pre_filter(
            state, pod, snapshot.node_infos)
        fit = FitResult(diagnosis, pre_filter_nodes=pre_result.node_names)
        if not status.ok:
            if status.code == Code.ERROR:
                fit.error = status
                return fit
            # Every node shares the PreFilter verdict (preemption reads it per node).
            diagnosis.pre_filter_msg = status.message()
            diagnosis.unschedulable_plugins |= restricting | {status.plugin}
            diagnosis.absent_status = status
            fit.pre_filter_message = status.message()
            return fit

        nominated = self._evaluate_nominated_node(framework, state, pod, snapshot, pre_result)
        fit.nominated_node_tried = pod.pod.status.nominated_node_name or None
        if nominated is not None and self.extenders is not None:
            # Upstream's evaluateNominatedNode asks the extenders about it too.
            passed = self._pass_extenders(state, pod, [nominated], diagnosis)
            if isinstance(passed, Status):
                fit.error = passed
                return fit
            known = self._known(passed, snapshot, fit)
            nominated = known[0] if known else None
        if nominated is not None:
            fit.feasible, fit.processed = [nominated], 1
            return fit

        nodes: list[NodeInfo] = all_nodes
        if pre_result.node_names is not None:
            inside = frozenset(within or ())
            nodes = [found for name in sorted(pre_result.node_names)
                     if (found := snapshot.get(name)) is not None
                     and (within is None or name in inside)]
            diagnosis.absent_status = Status.unresolvable(
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]")
            fit.absent_reason = diagnosis.absent_status.reasons[0]
            diagnosis.unschedulable_plugins |= restricting
        count = len(nodes)
        if count == 0:
            return fit
        percentage = framework.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        to_find = num_feasible_nodes_to_find(percentage, count)
        extenders = self.extenders
        if not framework.score_plugins and (
                extenders is None or not (extenders.has_filters or extenders.has_prioritizers)):
            to_find = 1  # nothing would rank them: the first feasible node is the answer
        start = self._next_start_node_index % count

        # A vector verdict (whole-snapshot only) prunes the rows up front.
        mask: npt.NDArray[np.bool_] | None = None
        verdicts: dict[str, npt.NDArray[np.bool_]] = {}
        if nodes is snapshot.node_infos and framework.filter_plugins:
            verdict = framework.filter_mask(state, pod, snapshot)
            if isinstance(verdict, Status):
                fit.error = verdict
                return fit
            mask, verdicts = verdict
        covered = frozenset(verdicts)

        # The two-pass check only matters while some pod is nominated somewhere.
        nominations = framework.shared.has_nominated_pods()
        run_filter = (framework.run_filter_with_nominated if nominations
                      else framework.run_filter)
        feasible: Sequence[NodeInfo] = []
        processed = count
        active = {p.NAME for p in framework.filter_plugins} - state.skip_filter_plugins
        if not framework.filter_plugins:
            feasible = [nodes[(start + i) % count] for i in range(min(to_find, count))]
            processed = len(feasible)
        elif mask is not None and active <= covered and not nominations:
            # Every active Filter judged all rows at once: take the first passing rows in
            # rotating order without a per-node pass.
            feasible_rows, examined = _first_passing(mask, start, to_find)
            feasible = NodeRows(nodes, snapshot.names, feasible_rows)
            if len(feasible) >= to_find:
                processed = examined
        else:
            order = _rotated(count, start)
            positions = np.flatnonzero(mask[order]) if mask is not None else range(count)
            found_nodes: list[NodeInfo] = []
            feasible = found_nodes
            for position in positions:
                give_loop_a_turn()  # between nodes: a long pass lets the loop run
                info = nodes[int(order[position])]
                node_status = run_filter(state, pod, info, covered)
                if node_status.ok:
                    found_nodes.append(info)
                    if len(feasible) >= to_find:
                        processed = int(position) + 1
                        break
                elif node_status.code == Code.ERROR:
                    fit.error = node_status
                    return fit
                else:
                    diagnosis.node_to_status[info.name] = node_status
                    diagnosis.unschedulable_plugins.add(node_status.plugin)
        if extenders is not None and feasible:
            passed = self._pass_extenders(state, pod, feasible, diagnosis)
            if isinstance(passed, Status):
                # Upstream has moved its start index on before it asks the extenders.
                self._next_start_node_index = (
                    (self._next_start_node_index + processed) % len(all_nodes))
                fit.error = passed
                return fit
            if passed is not feasible:  # else every node was kept in order: rows stay
                feasible = self._known(passed, snapshot, fit)
        if mask is not None and not feasible:
            # Reasons for rows the vector verdict rejected are only needed now. The
            # chain runs in order but skips the plugins whose own verdict passed the
            # row, so the first failing plugin is the one reported, as upstream's.
            failed = _reasons_for_rejected(framework, state, pod, snapshot, mask, verdicts,
                                           diagnosis)
            if failed is not None:
                fit.error = failed
                return fit
        # Upstream advances the index modulo all nodes, even when PreFilter narrowed them.
        self._next_start_node_index = (self._next_start_node_index + processed) % len(all_nodes)
        fit.feasible, fit.processed, fit.mask, fit.searched = feasible, processed, mask, True
        return fit

    def _pass_extenders(self, state: CycleState, pod: PodInfo, feasible: Sequence[NodeInfo],
                        diagnosis: Diagnosis) -> Sequence[NodeInfo] | Status:
        assert self.extenders is not None
        decision = state.decision
        return extender_steps.filter_nodes(
            self.extenders, pod, feasible, diagnosis,
            decision.extenders if decision is not None else None)

    @staticmethod
    def _known(nodes: Sequence[NodeInfo], snapshot: Snapshot,
               fit: FitResult) -> list[NodeInfo]:
        """The extenders' nodes that the snapshot knows (a name it does not know cannot
        be assumed); notes in `fit` when some are not the snapshot's own NodeInfos."""
        known = [node for node in nodes if node.name in snapshot.index]
        fit.fresh_nodes = any(snapshot.get(node.name) is not node for node in known)
        return known

    @staticmethod
    def _evaluate_nominated_node(framework: Framework, state: CycleState, pod: PodInfo,
                                 snapshot: Snapshot,
                                 pre_result: PreFilterResult) -> NodeInfo | None:
        """A pod that preemption made room for tries its nominated node first, and takes
        it without scoring when it fits (upstream's evaluateNominatedNode)."""
        name = pod.pod.status.nominated_node_name
        if not name or (pre_result.node_names is not None and name not in pre_result.node_names):
            return None
        if state.placement is not None and name not in state.placement:
            return None  # nominated outside the placement the group is tried in
        info = snapshot.get(name)
        if info is None:
            return None
        status = framework.run_filter_with_nominated(state, pod, info)
        return info if status.ok else None

    def _select_host(self, feasible: Sequence[NodeInfo],
                     totals: IntArray) -> tuple[str, IntArray]:
        """The chosen node, uniformly among the top-scoring ones, and where those are
        in `feasible`. randrange(n) draws exactly as choice() does from n items, so a
        seeded choice is the same as choice() over the top names in feasible order."""
        top = np.flatnonzero(totals == totals.max())
        pick = 0 if len(top) == 1 else self._rng.randrange(len(top))
        return feasible[int(top[pick])].name, top


def _names(nodes: Sequence[NodeInfo]) -> Sequence[str]:
    """The names of `nodes`; for NodeRows a view, made a list only when read."""
    return nodes.names() if isinstance(nodes, NodeRows) else list(map(_NAME, nodes))


def _first_passing(mask: npt.NDArray[np.bool_], start: int,
                   wanted: int) -> tuple[IntArray, int]:
    """The first `wanted` passing rows in rotating order from `start`, and how many rows
    that order went through to find them (all rows when fewer pass)."""
    hits = np.flatnonzero(mask)
    if start:
        split = int(np.searchsorted(hits, start))
        after = hits[split:]
        hits = after if len(after) >= wanted else np.concatenate((after, hits[:split]))
    # A copy, not a view: a decision record keeps these rows, and a view would keep
    # the whole index array of every passing row alive with them (~40 KB at 5000 nodes).
    rows = hits[:wanted].copy()
    count = len(mask)
    if len(rows) < wanted:
        return rows, count
    return rows, (int(rows[-1]) - start) % count + 1


def _reasons_for_rejected(framework: Framework, state: CycleState, pod: PodInfo,
                          snapshot: Snapshot, mask: npt.NDArray[np.bool_],
                          verdicts: dict[str, npt.NDArray[np.bool_]],
                          diagnosis: Diagnosis) -> Status | None:
    """Each rejected row's status into the diagnosis; an Error status ends it.

    Rows share few pass patterns (which vector plugins passed them). For each pattern,
    the first plugin in profile order that rejects is the one to report: when only
    vector plugins come before it and it can state its reasons for many rows at once
    (NodeResourcesFit), it does so for the whole pattern; otherwise each row runs the
    Filter chain without the plugins that passed it. A node with nominated pods takes
    the full two-pass chain: with those pods added, another plugin may fail first."""
    nodes = snapshot.node_infos
    names = list(verdicts)
    active = [plugin for plugin in framework.filter_plugins
              if plugin.NAME not in state.skip_filter_plugins]
    rejected = np.flatnonzero(~mask)
    by_row: dict[int, Status] = {}
    if framework.shared.has_nominated_pods():
        # A node whose first pass (with its nominated pods) fails reports that; one that
        # passes it reports the second pass, the node as it is: a plain row below.
        nominated_pass = framework.nominated_pass(state, pod)
        for name in framework.shared.nominated_node_names():
            row = snapshot.index.get(name)
            if row is not None and not mask[row]:
                status = nominated_pass(nodes[row])
                if not status.ok:
                    by_row[row] = status
    plain = rejected[~np.isin(rejected, list(by_row))] if by_row else rejected
    # A row's pattern as one integer: bit i set when vector plugin names[i] passed it.
    patterns = np.zeros(len(plain), dtype=np.int64)
    for bit, name in enumerate(names):
        patterns |= verdicts[name][plain].astype(np.int64) << bit
    unique, group_of = np.unique(patterns, return_inverse=True)
    for group, pattern in enumerate(unique.tolist()):
        rows = plain[group_of == group]
        passed = frozenset(name for bit, name in enumerate(names) if pattern >> bit & 1)
        statuses = _stated_at_once(state, pod, snapshot, active, verdicts, passed, rows)
        if statuses is None:
            statuses = [_filter_between_turns(framework, state, pod, nodes[row], passed)
                        for row in rows.tolist()]
        by_row.update(zip(rows.tolist(), statuses, strict=True))
    # In row order, as the per-node pass records them; the first Error in that order
    # ends the cycle instead.
    in_order = rejected.tolist()
    statuses_in_order = list(map(by_row.__getitem__, in_order))
    # Thousands of rows share a few Status objects: look at each distinct one once.
    distinct = _distinct(statuses_in_order)
    if any(status.code == Code.ERROR for status in distinct.values()):
        return next(status for status in statuses_in_order if status.code == Code.ERROR)
    diagnosis.node_to_status.update(
        zip(map(_NAME, map(nodes.__getitem__, in_order)), statuses_in_order, strict=True))
    diagnosis.unschedulable_plugins.update({status.plugin for status in distinct.values()})
    return None


def _filter_between_turns(framework: Framework, state: CycleState, pod: PodInfo,
                          node: NodeInfo, passed: frozenset[str]) -> Status:
    give_loop_a_turn()
    return framework.run_filter(state, pod, node, passed)


def _distinct(statuses: list[Status]) -> dict[int, Status]:
    """The distinct Status objects by id, in order of first appearance (C-level zip)."""
    return dict(zip(map(id, statuses), statuses, strict=True))


def _stated_at_once(state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    active: list[FilterPlugin], verdicts: dict[str, npt.NDArray[np.bool_]],
                    passed: frozenset[str], rows: IntArray) -> list[Status] | None:
    """The statuses of `rows` from their first rejecting plugin's vector reasons, when
    every plugin before it passed them by vector verdict; else None (ask row by row)."""
    for plugin in active:
        if plugin.NAME in passed:
            continue
        if plugin.NAME not in verdicts or VectorReasonsPlugin not in type(plugin).__mro__:
            return None
        try:
            statuses = cast(VectorReasonsPlugin, plugin).filter_statuses(
                state, pod, snapshot, rows)
        except Exception:  # the row-by-row chain reports it as the plugin's error
            return None
        if statuses is None or Code.SUCCESS in {status.code for status in statuses}:
            return None
        return statuses
    return None
