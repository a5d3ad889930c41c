"""A node with some of its pods taken off or given back, as preemption's dry run needs.

Upstream clones the NodeInfo, removes and re-adds pods on the clone, tells the
PreFilter extensions (AddPod/RemovePod) each time, and runs the Filter chain on the
clone. `ClonedNode` does exactly that and always works.

When, for this pod, every Filter plugin that still runs either looks at the Node
object alone (NodeOnlyFilterPlugin) or can judge a node from its pod totals
(PodTotalsFilterPlugin), and no PreFilter extension is active, nothing needs the
clone: `TotalsNode` keeps only the node's pod count and summed requests and asks
those plugins about the unchanged node with those totals. Same verdicts, without
copying the node's pods for every node tried; `TotalsChain` finds the plugins to
ask once per cycle instead of once per node.

`TotalsBatch` goes one step further for preemption's many candidate nodes: their
totals are numpy columns, every node's next step is one vector call of each
PodTotalsVectorFilterPlugin, and the node-only Filters are judged once by their
vector forms. It answers pass or fail only; the caller asks a node on its own
wherever it needs the exact status.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import numpy.typing as npt

from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.pod_totals import PodTotals, TotalsColumns
from kpysched.framework.runtime.guard import plugin_raised
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.pod import PodInfo

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo
    from kpysched.cache.snapshot import Snapshot

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_REQUESTS = operator.attrgetter("requests")


class FilterPoints(Protocol):
    """What the simulated nodes ask of the profile's scheduling points. SchedulingPoints
    (scheduling_points.py) is the one implementation; it builds the simulations, so
    this module names it by this protocol instead of importing it back."""

    @property
    def shared(self) -> fw.SharedHandle: ...

    @property
    def filter_plugins(self) -> Sequence[fw.FilterPlugin]: ...

    @property
    def pre_filter_extension_plugins(self) -> Sequence[fw.PreFilterPlugin]: ...

    @property
    def node_only_filter_names(self) -> frozenset[str]: ...

    @property
    def pod_totals_filter_names(self) -> frozenset[str]: ...

    def nominated_blockers(self, pod: PodInfo, node_name: str) -> list[PodInfo]: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         added: PodInfo, node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            removed: PodInfo, node: NodeInfo) -> Status: ...

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                                  covered: frozenset[str] = frozenset()) -> Status: ...

    def _plugin_timed(self, state: CycleState, plugin: str, point: str, status: Status,
                      started: float, scale: int = 1) -> None: ...


def can_use_totals(points: FilterPoints, state: CycleState) -> bool:
    """Whether every Filter this pod meets is node-only or PodTotals-capable, and no
    PreFilter extension would have to be told of the changes."""
    skipped = state.skip_filter_plugins
    if any(plugin.NAME not in skipped for plugin in points.pre_filter_extension_plugins):
        return False
    judged_without_clone = points.node_only_filter_names | points.pod_totals_filter_names
    return all(plugin.NAME in skipped or plugin.NAME in judged_without_clone
               for plugin in points.filter_plugins)


class TotalsChain:
    """The Filter chain of one cycle where can_use_totals holds, with the plugins still
    running and the nodes holding nominated pods found once."""

    __slots__ = ("_nominated_nodes", "_plugins", "_pod", "_points", "_state")

    def __init__(self, points: FilterPoints, state: CycleState, pod: PodInfo) -> None:
        self._points = points
        self._state = state
        self._pod = pod
        skipped = state.skip_filter_plugins
        node_only = points.node_only_filter_names
        self._plugins = [(plugin, plugin.NAME in node_only) for plugin in points.filter_plugins
                         if plugin.NAME not in skipped]
        self._nominated_nodes: frozenset[str] | None = None  # found on first use

    # --- NodeSimulator ------------------------------------------------------------------

    def node(self, node: NodeInfo) -> TotalsNode:
        return TotalsNode(self, node)

    def batch(self, nodes: Sequence[NodeInfo]) -> TotalsBatch | None:
        """A TotalsBatch over `nodes` (snapshot nodes), when every pod-dependent Filter
        still running has the vector form and answers for this pod."""
        plugins = []
        for plugin, node_only in self._plugins:
            if node_only:
                continue
            if fw.PodTotalsVectorFilterPlugin not in type(plugin).__mro__:
                return None
            plugins.append(cast(fw.PodTotalsVectorFilterPlugin, plugin))
        snapshot = self._points.shared.snapshot
        index, infos = snapshot.index, snapshot.node_infos
        rows = [index.get(node.name, -1) for node in nodes]
        if any(row < 0 or infos[row] is not node for row, node in zip(rows, nodes, strict=True)):
            return None  # not the snapshot's own NodeInfos: its columns do not describe them
        at = np.array(rows, dtype=np.int64)
        columns = snapshot.columns
        totals = TotalsColumns(at, columns.pod_count[at].copy(), columns.requested_cpu[at].copy(),
                               columns.requested_memory[at].copy(),
                               columns.requested_ephemeral[at].copy())
        batch = TotalsBatch(self, nodes, totals, plugins, snapshot)
        if batch.fits(np.zeros(0, dtype=np.int64)) is None:
            return None
        return batch

    # --- for TotalsNode and TotalsBatch ---------------------------------------------------

    def node_only_verdicts(self, snapshot: Snapshot, nodes: Sequence[NodeInfo],
                           rows: IntArray) -> BoolArray:
        """Whether each of `nodes` (snapshot `rows`) passes the node-only Filters: by
        their vector forms over the snapshot where they have one, else node by node."""
        passed = np.ones(len(nodes), dtype=np.bool_)
        state, pod = self._state, self._pod
        for plugin, node_only in self._plugins:
            if not node_only:
                continue
            verdict = None
            if fw.VectorFilterPlugin in type(plugin).__mro__:
                try:
                    verdict = cast(fw.VectorFilterPlugin, plugin).filter_vector(
                        state, pod, snapshot)
                except Exception:
                    verdict = None  # the per-node way below reports it as the plugin's
            if verdict is not None:
                passed &= verdict[rows]
            else:
                passed &= np.fromiter((self._ask(plugin, node, None).ok for node in nodes),
                                      dtype=np.bool_, count=len(nodes))
        return passed

    def has_blockers(self, node: NodeInfo) -> bool:
        """Whether a nominated pod on the node outranks or equals the pod."""
        return (node.name in self._nodes_with_nominated_pods()
                and bool(self._points.nominated_blockers(self._pod, node.name)))

    def vector_verdict(self, plugin: fw.PodTotalsVectorFilterPlugin, snapshot: Snapshot,
                       totals: TotalsColumns) -> BoolArray | None:
        """One plugin's verdict over `totals`; None when it cannot answer or raised (the
        per-node way then reports the error as the plugin's)."""
        state = self._state
        started = time.perf_counter()
        try:
            verdict = plugin.filter_with_pod_totals_vector(state, self._pod, snapshot, totals)
        except Exception:
            return None
        if state.record_plugin_metrics and verdict is not None and len(verdict):
            self._points._plugin_timed(state, plugin.NAME, "Filter", SUCCESS, started)
        return verdict

    def _nodes_with_nominated_pods(self) -> frozenset[str]:
        if self._nominated_nodes is None:
            shared = self._points.shared
            self._nominated_nodes = (frozenset(shared.nominated_node_names())
                                     if shared.has_nominated_pods() else frozenset())
        return self._nominated_nodes

    def filter_with_nominated(self, node: NodeInfo, totals: PodTotals,
                              node_only_passed: bool = False) -> Status:
        """Upstream's two-pass filter on `node` with `totals`: first with the nominated
        pods that outrank or equal the pod added, then as it is."""
        if node.name in self._nodes_with_nominated_pods():
            status = self.filter_nominated_pass(node, totals)
            if not status.ok:
                return status
        return self._run(node, totals, node_only_passed)

    def filter_nominated_pass(self, node: NodeInfo, totals: PodTotals) -> Status:
        """Only the first pass: `totals` plus the nominated pods that outrank or equal
        the pod (Success when there are none)."""
        blockers = self._points.nominated_blockers(self._pod, node.name)
        if not blockers:
            return SUCCESS
        with_nominated = totals.copy()
        for other in blockers:
            with_nominated.add(other)
        return self._run(node, with_nominated, False)

    def _run(self, node: NodeInfo, totals: PodTotals, node_only_passed: bool) -> Status:
        """run_filter, asking node-only plugins about the node as it is and the others
        about the node with `totals`."""
        for plugin, node_only in self._plugins:
            if node_only and node_only_passed:
                continue
            status = self._ask(plugin, node, None if node_only else totals)
            if status is not SUCCESS and not status.ok:
                return status
        return SUCCESS

    def _ask(self, plugin: fw.FilterPlugin, node: NodeInfo, totals: PodTotals | None) -> Status:
        """One Filter plugin on the node (with `totals`, or as it is for a node-only
        one), worded as run_filter words a rejection or an error."""
        state, pod = self._state, self._pod
        started = time.perf_counter()
        try:
            if totals is None:
                status = plugin.filter(state, pod, node)
            else:
                status = cast(fw.PodTotalsFilterPlugin, plugin).filter_with_pod_totals(
                    state, pod, node, totals)
            if state.record_plugin_metrics:
                self._points._plugin_timed(state, plugin.NAME, "Filter", status, started)
        except Exception as error:
            status = plugin_raised(plugin.NAME, "Filter", error)
        if status is SUCCESS or status.ok:
            return status
        if status.code == Code.ERROR:
            return Status.error(f'running "{plugin.NAME}" filter plugin: '
                                f"{status.message()}", plugin.NAME)
        return status.with_plugin(plugin.NAME)


class ClonedNode:
    """Upstream's way: a clone of the node and its own copy of the cycle state, with
    the PreFilter extensions told of every pod taken off or given back."""

    __slots__ = ("_node", "_pod", "_points", "_state")

    def __init__(self, points: FilterPoints, state: CycleState, pod: PodInfo,
                 node: NodeInfo) -> None:
        self._points = points
        self._state = state.clone()
        self._pod = pod
        self._node = node.clone()

    def remove_pod(self, victim: PodInfo) -> Status:
        self._node.remove_pod(victim.uid)
        return self._points.run_pre_filter_extension_remove_pod(
            self._state, self._pod, victim, self._node)

    def add_pod(self, victim: PodInfo) -> Status:
        self._node.add_pod(victim)
        return self._points.run_pre_filter_extension_add_pod(
            self._state, self._pod, victim, self._node)

    def filter(self, node_only_passed: bool = False) -> Status:
        points = self._points
        return points.run_filter_with_nominated(
            self._state, self._pod, self._node,
            points.node_only_filter_names if node_only_passed else frozenset())


class TotalsNode:
    """The node left as it is, with the pods taken off or given back kept in its
    PodTotals; only for cycles where can_use_totals holds."""

    __slots__ = ("_chain", "_node", "_totals")

    def __init__(self, chain: TotalsChain, node: NodeInfo) -> None:
        self._chain = chain
        self._node = node
        self._totals = PodTotals.of(node)

    def remove_pod(self, victim: PodInfo) -> Status:
        self._totals.remove(victim)
        return SUCCESS

    def add_pod(self, victim: PodInfo) -> Status:
        self._totals.add(victim)
        return SUCCESS

    def filter(self, node_only_passed: bool = False) -> Status:
        return self._chain.filter_with_nominated(self._node, self._totals, node_only_passed)


class TotalsBatch:
    """The NodeBatch of a TotalsChain: the nodes' PodTotals as columns, changed by
    whole steps and judged by the plugins' vector forms."""

    __slots__ = ("_chain", "_node_only_passed", "_nodes", "_plugins", "_snapshot", "_totals")

    def __init__(self, chain: TotalsChain, nodes: Sequence[NodeInfo], totals: TotalsColumns,
                 plugins: list[fw.PodTotalsVectorFilterPlugin], snapshot: Snapshot) -> None:
        self._chain = chain
        self._nodes = nodes
        self._totals = totals
        self._plugins = plugins
        self._snapshot = snapshot
        self._node_only_passed = chain.node_only_verdicts(snapshot, nodes, totals.rows)

    def covers(self, position: int) -> bool:
        return bool(self._node_only_passed[position]) and not self._chain.has_blockers(
            self._nodes[position])

    def remove(self, positions: IntArray, pods: Sequence[PodInfo]) -> None:
        self._change(positions, pods, -1)

    def add(self, positions: IntArray, pods: Sequence[PodInfo]) -> None:
        self._change(positions, pods, 1)

    def _change(self, positions: IntArray, pods: Sequence[PodInfo], sign: int) -> None:
        if not pods:
            return
        totals = self._totals
        amounts = sign * np.array([(r.milli_cpu, r.memory, r.ephemeral_storage)
                                   for r in map(_REQUESTS, pods)], dtype=np.int64)
        np.add.at(totals.pod_count, positions, sign)
        np.add.at(totals.milli_cpu, positions, amounts[:, 0])
        np.add.at(totals.memory, positions, amounts[:, 1])
        np.add.at(totals.ephemeral_storage, positions, amounts[:, 2])

    def fits(self, positions: IntArray) -> BoolArray | None:
        selected = self._totals.take(positions)
        passed = np.ones(len(positions), dtype=np.bool_)
        for plugin in self._plugins:
            verdict = self._chain.vector_verdict(plugin, self._snapshot, selected)
            if verdict is None:
                return None
            passed &= verdict
        return passed


class CloningSimulator:
    """The NodeSimulator of cycles that need upstream's clones; no batches."""

    __slots__ = ("_pod", "_points", "_state")

    def __init__(self, points: FilterPoints, state: CycleState, pod: PodInfo) -> None:
        self._points = points
        self._state = state
        self._pod = pod

    def node(self, node: NodeInfo) -> ClonedNode:
        return ClonedNode(self._points, self._state, self._pod, node)

    def batch(self, nodes: Sequence[NodeInfo]) -> None:
        return None
