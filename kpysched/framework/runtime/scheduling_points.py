"""The scheduling cycle's extension points: PreFilter, Filter (node by node and as a
vector over the snapshot), the PreFilter extensions, PostFilter, PreScore and Score
with NormalizeScore and weights, each with upstream's error wording. A plugin that
raises is an Error status naming it (guard.py), never an exception out of here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from kpysched.decisions.record import PluginScores, compact, compact_within
from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.pod_totals import PodTotals
from kpysched.framework.runtime import node_simulation
from kpysched.framework.runtime.cooperative import give_loop_a_turn, paused_seconds
from kpysched.framework.runtime.guard import plugin_raised
from kpysched.framework.runtime.instrumented import Instrumented
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.pod import PodInfo

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo
    from kpysched.cache.snapshot import Snapshot

BoolArray = npt.NDArray[np.bool_]


_NO_SCORES: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)


def _score_error(plugin: str, status: Status) -> Status:
    return Status.error(
        f'running Score plugins: plugin "{plugin}" failed with: {status.message()}', plugin)


def _normalize_error(plugin: str, status: Status) -> Status:
    return Status.error(
        f'running Normalize on Score plugins: plugin "{plugin}" failed with: '
        f"{status.message()}", plugin)


# Outside sampled cycles, one per-node Filter call in this many is timed plugin by
# plugin (and counted this many times) for the slow-cycle report.
FILTER_TIMING_STRIDE = 16


class SchedulingPoints(Instrumented):
    # The raw scores of the plugin just scored, kept only while a decision is recorded.
    _raw_scores: npt.NDArray[np.int64] | None = None
    # The last nominated_pass made, with the state and pod it is for: the Filter pass
    # asks it for every node with nominated pods, so it is made once per cycle.
    _nominated_pass_memo: tuple[CycleState, PodInfo, Callable[[NodeInfo], Status]] | None = None

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[fw.PreFilterResult, Status, set[str]]:
        started = time.perf_counter()
        outcome = self._run_pre_filter(state, pod, nodes)
        self.observe("PreFilter", outcome[1], started)
        return outcome

    def _run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[fw.PreFilterResult, Status, set[str]]:
        """Upstream's RunPreFilterPlugins: the merged node restriction, the status, and
        the plugins that restricted nodes. An Unschedulable plugin does not stop the
        others (preemption needs their state); UnschedulableAndUnresolvable does."""
        result = fw.PreFilterResult()
        restricting: set[str] = set()
        rejected: Status | None = None
        for plugin in self.pre_filter_plugins:
            started = time.perf_counter()
            try:
                narrowed, status = plugin.pre_filter(state, pod, nodes)
            except Exception as error:
                narrowed, status = None, plugin_raised(plugin.NAME, "PreFilter", error)
            self._plugin_timed(state, plugin.NAME, "PreFilter", status, started)
            if status.code == Code.SKIP:
                state.skip_filter_plugins.add(plugin.NAME)
                continue
            if not status.ok:
                status.with_plugin(plugin.NAME)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return result, status, set()
                if status.code == Code.UNSCHEDULABLE:
                    rejected = status
                    continue
                return result, Status.error(
                    f'running PreFilter plugin "{plugin.NAME}": {status.message()}',
                    plugin.NAME), set()
            if narrowed is None or narrowed.node_names is None:
                continue
            restricting.add(plugin.NAME)
            if result.node_names is None:
                result.node_names = set(narrowed.node_names)
            else:
                result.node_names &= narrowed.node_names
            if not result.node_names:
                names = sorted(restricting)
                message = (f"node(s) didn't satisfy plugin {names[0]}" if len(names) == 1 else
                           f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] "
                           "simultaneously")
                return result, Status.unresolvable(message, plugin=plugin.NAME), restricting
        return result, rejected or SUCCESS, restricting

    def filter_mask(self, state: CycleState, pod: PodInfo, snapshot: Snapshot
                    ) -> tuple[BoolArray | None, dict[str, BoolArray]] | Status:
        """The combined verdict of the vector-capable Filter plugins over every snapshot
        row, and each plugin's own verdict (the per-node pass may skip a plugin on the
        rows it passed). (None, {}) when no plugin could vectorise for this pod; an
        Error status when one raised."""
        mask: BoolArray | None = None
        verdicts: dict[str, BoolArray] = {}
        for plugin in self.vector_filter_plugins:
            if plugin.NAME in state.skip_filter_plugins:
                continue
            give_loop_a_turn()
            started = time.perf_counter()
            try:
                verdict = plugin.filter_vector(state, pod, snapshot)
                state.add_plugin_seconds(plugin.NAME, "Filter", time.perf_counter() - started)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "Filter", error)
                return Status.error(
                    f'running "{plugin.NAME}" filter plugin: {status.message()}', plugin.NAME)
            if verdict is None:
                continue
            mask = verdict if mask is None else mask & verdict
            verdicts[plugin.NAME] = verdict
        return mask, verdicts

    def run_filter(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                   covered: frozenset[str] = frozenset()) -> Status:
        """Filter plugins in order, stopping at the first rejection. `covered` names
        plugins whose vector verdict already passed this node."""
        skip = state.skip_filter_plugins
        sampled = state.record_plugin_metrics
        timed = sampled or state.filter_calls % FILTER_TIMING_STRIDE == 0
        state.filter_calls += 1
        for plugin in self.filter_plugins:
            if (skip and plugin.NAME in skip) or (covered and plugin.NAME in covered):
                continue
            try:
                if timed:
                    started = time.perf_counter()
                    status = plugin.filter(state, pod, node)
                    self._plugin_timed(state, plugin.NAME, "Filter", status, started,
                                       1 if sampled else FILTER_TIMING_STRIDE)
                else:
                    status = plugin.filter(state, pod, node)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "Filter", error)
            if status is not SUCCESS and not status.ok:
                if status.code == Code.ERROR:
                    return Status.error(
                        f'running "{plugin.NAME}" filter plugin: {status.message()}', plugin.NAME)
                return status.with_plugin(plugin.NAME)
        return SUCCESS

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         added: PodInfo, node: NodeInfo) -> Status:
        return self._run_pre_filter_extensions(
            state, "PreFilterExtensionAddPod",
            lambda plugin: plugin.add_pod(state, pod, added, node))

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            removed: PodInfo, node: NodeInfo) -> Status:
        return self._run_pre_filter_extensions(
            state, "PreFilterExtensionRemovePod",
            lambda plugin: plugin.remove_pod(state, pod, removed, node))

    def _run_pre_filter_extensions(
        self, state: CycleState, point: str, call: Callable[[fw.PreFilterExtensions], Status],
    ) -> Status:
        """AddPod/RemovePod of every PreFilter plugin that has them and was not skipped."""
        for plugin in self.pre_filter_extension_plugins:
            if plugin.NAME in state.skip_filter_plugins:
                continue
            try:
                status = call(cast(fw.PreFilterExtensions, plugin))
            except Exception as error:
                status = plugin_raised(plugin.NAME, point, error)
            if not status.ok:
                return status.with_plugin(plugin.NAME)
        return SUCCESS

    def nominated_blockers(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """Nominated pods on the node that outrank or equal `pod` (upstream's rule)."""
        return [other for other in self.shared.nominated_pods_for_node(node_name)
                if other.uid != pod.uid and other.priority >= pod.priority]

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                                  covered: frozenset[str] = frozenset()) -> Status:
        """Upstream's two-pass filter: first as if the node also ran the nominated pods
        of equal or higher priority, then as it is; the pod must pass both."""
        if self.shared.has_nominated_pods() and self.nominated_blockers(pod, node.name):
            status = self.nominated_pass(state, pod)(node)
            if not status.ok:
                return status
        # The node as it is: here a vector verdict over the snapshot row still holds.
        return self.run_filter(state, pod, node, covered)

    def nominated_pass(self, state: CycleState, pod: PodInfo) -> Callable[[NodeInfo], Status]:
        """The first pass of run_filter_with_nominated, for any number of nodes of this
        cycle: the node with the nominated pods that outrank or equal `pod` added, or
        Success when it has none. By pod totals when the cycle's Filters allow (one
        TotalsChain for all the nodes), else on a clone, as upstream."""
        memo = self._nominated_pass_memo
        if memo is not None and memo[0] is state and memo[1] is pod:
            return memo[2]
        runner: Callable[[NodeInfo], Status]
        if node_simulation.can_use_totals(self, state):
            chain = node_simulation.TotalsChain(self, state, pod)
            runner = lambda node: chain.filter_nominated_pass(  # noqa: E731
                node, PodTotals.of(node))
        else:
            runner = lambda node: self._nominated_pass_on_clone(state, pod, node)  # noqa: E731
        self._nominated_pass_memo = (state, pod, runner)
        return runner

    def _nominated_pass_on_clone(self, state: CycleState, pod: PodInfo,
                                 node: NodeInfo) -> Status:
        blockers = self.nominated_blockers(pod, node.name)
        if not blockers:
            return SUCCESS
        with_nominated_state = state.clone()
        with_nominated = node.clone()
        for other in blockers:
            with_nominated.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(
                with_nominated_state, pod, other, with_nominated)
            if not status.ok:
                return status
        return self.run_filter(with_nominated_state, pod, with_nominated)

    def node_simulator(self, state: CycleState, pod: PodInfo) -> fw.NodeSimulator:
        """Preemption's simulated nodes for this pod's cycle: without clones when the
        Filters it meets allow (node_simulation.can_use_totals), else upstream's clones."""
        if node_simulation.can_use_totals(self, state):
            return node_simulation.TotalsChain(self, state, pod)
        return node_simulation.CloningSimulator(self, state, pod)

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[fw.PostFilterResult | None, Status, list[str]]:
        started = time.perf_counter()
        outcome = self._run_post_filter(state, pod, statuses)
        self.observe("PostFilter", outcome[1], started)
        return outcome

    def _run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[fw.PostFilterResult | None, Status, list[str]]:
        """Upstream's RunPostFilterPlugins: the first success wins, an unresolvable
        rejection or an error ends it; otherwise the reasons of every plugin are
        collected, and the last rejecting plugin's result is kept (an empty nomination
        there means "clear it")."""
        result: fw.PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for plugin in self.post_filter_plugins:
            started = time.perf_counter()
            try:
                outcome, status = plugin.post_filter(state, pod, statuses)
            except Exception as error:
                outcome = None
                status = plugin_raised(plugin.NAME, "PostFilter", error)
                status.reasons = [f'running PostFilter plugin "{plugin.NAME}": '
                                  f"{status.message()}"]
            state.add_plugin_seconds(plugin.NAME, "PostFilter", time.perf_counter() - started)
            if status.ok:
                # A success may say what it did (v1.37's DefaultPreemption: "preemption:
                # found a potential placement ..."): upstream appends any PostFilter
                # message to the FailedScheduling text.
                return outcome, status, list(status.reasons)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return outcome, status.with_plugin(plugin.NAME), list(status.reasons)
            if not status.is_rejected:
                # An error ends PostFilter at once; its text is the whole PostFilter
                # message (e.g. "not found" from a plugin whose PreFilter never ran).
                failed = Status.error(status.message(), plugin.NAME)
                return None, failed, [status.message()]
            if outcome is not None:
                result = outcome
            reasons.extend(status.reasons)
            rejector = rejector or plugin.NAME
        return result, Status(Code.UNSCHEDULABLE, reasons, rejector), reasons

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        started = time.perf_counter()
        outcome = self._run_pre_score(state, pod, nodes)
        self.observe("PreScore", outcome, started)
        return outcome

    def _run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        for plugin in self.pre_score_plugins:
            give_loop_a_turn()
            started = time.perf_counter()
            try:
                status = plugin.pre_score(state, pod, nodes)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "PreScore", error)
            self._plugin_timed(state, plugin.NAME, "PreScore", status, started)
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(plugin.NAME)
            elif not status.ok:
                # Any PreScore failure is an error: the pod was already found feasible.
                return Status.error(
                    f'running PreScore plugin "{plugin.NAME}": {status.message()}', plugin.NAME)
        return SUCCESS

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
        snapshot: Snapshot | None = None,
        rows: Sequence[int] | npt.NDArray[np.int64] | None = None,
    ) -> tuple[list[int], Status]:
        totals, status = self.run_score_totals(state, pod, nodes, snapshot, rows)
        return totals.tolist(), status

    def run_score_totals(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
        snapshot: Snapshot | None = None,
        rows: Sequence[int] | npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], Status]:
        """run_score with the totals as an array: the algorithm picks the best in numpy."""
        started = time.perf_counter()
        outcome = self._run_score(state, pod, nodes, snapshot, rows)
        self.observe("Score", outcome[1], started)
        return outcome

    def _run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
        snapshot: Snapshot | None = None,
        rows: Sequence[int] | npt.NDArray[np.int64] | None = None,
    ) -> tuple[npt.NDArray[np.int64], Status]:
        """Weighted total score per node (same order as `nodes`). With `snapshot` and
        the snapshot `rows` of `nodes`, vector-capable plugins score all rows at once
        and stay in numpy through normalisation and weighting."""
        totals = np.zeros(len(nodes), dtype=np.int64)
        picked_rows = np.asarray(rows, dtype=np.int64) if rows is not None else None
        # The least and greatest total the scored plugins' weights allow (for the record).
        least = most = 0
        for plugin in self.score_plugins:
            if plugin.NAME in state.skip_score_plugins:
                continue
            give_loop_a_turn()
            self._raw_scores = None  # set below only by a plugin that normalises
            started, paused = time.perf_counter(), paused_seconds()
            try:
                values = self._vector_scores(state, pod, plugin, snapshot, picked_rows)
            except Exception as error:
                return totals, _score_error(
                    plugin.NAME, plugin_raised(plugin.NAME, "Score", error))
            if values is None:
                values, status = self._node_scores(state, pod, plugin, nodes)
                if not status.ok:
                    return totals, status
            # The node-by-node pass may pause between nodes: that time is not the plugin's.
            state.add_plugin_seconds(plugin.NAME, "Score", time.perf_counter() - started
                                     - (paused_seconds() - paused))
            invalid = np.flatnonzero((values < fw.MIN_NODE_SCORE) | (values > fw.MAX_NODE_SCORE))
            if invalid.size:
                # Upstream's wording, "should in the range" included.
                return totals, Status.error(
                    "applying score defaultWeights on Score plugins: plugin "
                    f'"{plugin.NAME}" returns an invalid score {int(values[invalid[0]])}, it '
                    f"should in the range of [{fw.MIN_NODE_SCORE}, {fw.MAX_NODE_SCORE}] "
                    "after normalizing", plugin.NAME)
            weight = self.weights.get(plugin.NAME, 1)
            totals += values * weight
            if state.decision is not None:
                # Compact arrays, not lists (decisions.record): copies, as a vector
                # plugin may hand out a view of a buffer it reuses. The values were
                # checked in range just above; a plugin that does not normalise has its
                # raw scores equal to them, and the record keeps one copy for both.
                normalized = compact_within(values, fw.MIN_NODE_SCORE, fw.MAX_NODE_SCORE)
                raw = (compact(self._raw_scores) if self._raw_scores is not None
                       else normalized)
                state.decision.scores.append(PluginScores(plugin.NAME, weight, raw, normalized))
                self._raw_scores = None
                least += min(weight * fw.MIN_NODE_SCORE, weight * fw.MAX_NODE_SCORE)
                most += max(weight * fw.MIN_NODE_SCORE, weight * fw.MAX_NODE_SCORE)
        if state.decision is not None:
            state.decision.totals = compact_within(totals, least, most)
        return totals, SUCCESS

    def _node_scores(self, state: CycleState, pod: PodInfo, plugin: fw.ScorePlugin,
                     nodes: Sequence[NodeInfo]) -> tuple[npt.NDArray[np.int64], Status]:
        """Normalised scores of `nodes`, node by node."""
        scores: list[fw.NodeScore] = []
        point = "Score"
        try:
            for node in nodes:
                give_loop_a_turn()
                value, status = plugin.score(state, pod, node)
                if not status.ok:
                    return _NO_SCORES, _score_error(plugin.NAME, status)
                scores.append(fw.NodeScore(node.name, value))
            if fw.ScoreExtensions in type(plugin).__mro__:
                if state.decision is not None:  # the raw scores, before normalising
                    self._raw_scores = np.fromiter((s.score for s in scores),
                                                   dtype=np.int64, count=len(scores))
                point = "ScoreExtensionNormalize"
                status = cast(fw.ScoreExtensions, plugin).normalize_score(state, pod, scores)
                if not status.ok:
                    return _NO_SCORES, _normalize_error(plugin.NAME, status)
        except Exception as error:
            status = plugin_raised(plugin.NAME, point, error)
            return _NO_SCORES, (_score_error(plugin.NAME, status) if point == "Score"
                                else _normalize_error(plugin.NAME, status))
        values = np.fromiter((s.score for s in scores), dtype=np.int64, count=len(scores))
        return values, SUCCESS

    def _vector_scores(self, state: CycleState, pod: PodInfo, plugin: fw.ScorePlugin,
                       snapshot: Snapshot | None,
                       rows: npt.NDArray[np.int64] | None) -> npt.NDArray[np.int64] | None:
        """Normalised scores of `rows` from a plugin's vector forms; None to fall back."""
        mro = type(plugin).__mro__
        if rows is None or snapshot is None or fw.VectorScorePlugin not in mro:
            return None
        if fw.ScoreExtensions in mro and fw.VectorNormalizePlugin not in mro:
            return None  # it normalises, but only node by node
        if fw.RowsScorePlugin in mro:
            values = cast(fw.RowsScorePlugin, plugin).score_rows(state, pod, snapshot, rows)
        else:
            every_row = cast(fw.VectorScorePlugin, plugin).score_vector(state, pod, snapshot)
            values = every_row[rows] if every_row is not None else None
        if values is None:
            return None
        if fw.VectorNormalizePlugin in mro:
            if state.decision is not None:  # the raw scores, before normalising in place
                self._raw_scores = values.copy()
            return cast(fw.VectorNormalizePlugin, plugin).normalize_vector(state, pod, values)
        return values
