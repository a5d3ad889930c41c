"""The PodTopologySpread plugin: extension points over the filtering and scoring halves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    NodeScore,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    VectorFilterPlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins.pod_topology_spread import filtering, scoring
from kpysched.plugins.pod_topology_spread.args import SYSTEM_DEFAULTING, PodTopologySpreadArgs
from kpysched.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    Constraint,
    MatchCounter,
    SelectorError,
    parse_constraints,
    parse_selector,
)
from kpysched.plugins.pod_topology_spread.hints import SpreadHints

NAME = "PodTopologySpread"

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

# A pod added, relabelled or deleted changes the counts; a new toleration matters to
# constraints with nodeTaintsPolicy: Honor.
_POD_EVENT = ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                          | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE)
# Nodes coming, going, relabelled or retainted change the domains.
_NODE_EVENT = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.DELETE
                           | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT)


def _not_found(key: str, prefix: str = "") -> Status:
    return Status.error(f'{prefix}reading "{key}" from cycleState: not found', plugin=NAME)


class PodTopologySpread(PreFilterPlugin, PreFilterExtensions, VectorFilterPlugin,
                        PreScorePlugin, ScorePlugin, ScoreExtensions):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: PodTopologySpreadArgs, handle: Handle) -> None:
        self._handle = handle
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)
        self._defaults = args.effective_defaults()
        self._system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self._counter = MatchCounter()
        # The defaults parsed once per action, for every pod without constraints of
        # its own (PreFilter and PreScore each ask). None when a default has
        # matchLabelKeys: the pod's labels enter the parse, so it is made per pod.
        self._parsed_defaults: dict[str, tuple[Constraint, ...]] | None = (
            None if any(c.match_label_keys for c in self._defaults) else {})

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        hints = SpreadHints(lambda pod: self.constraints(pod, DO_NOT_SCHEDULE))
        return (ClusterEventWithHint(_POD_EVENT, hints.schedulable_after_pod_change),
                ClusterEventWithHint(_NODE_EVENT, hints.schedulable_after_node_change))

    def _parsed_default_constraints(self, pod: api.Pod, action: str) -> tuple[Constraint, ...]:
        """The default constraints of `action` for `pod`, kept parsed when they can be."""
        parsed = self._parsed_defaults
        if parsed is None:
            return parse_constraints(self._defaults, pod.metadata.labels, action)
        found = parsed.get(action)
        if found is None:
            # Kept only once parsed: a default that does not parse raises for every
            # pod, as it would parsed per pod.
            found = parsed[action] = parse_constraints(self._defaults, {}, action)
        return found

    def _default_constraints(self, pod: api.Pod, action: str) -> tuple[Constraint, ...]:
        constraints = self._parsed_default_constraints(pod, action)
        if not constraints:
            return ()
        selector = parse_selector(self._handle.default_spread_selector(pod))
        if selector.empty or selector.nothing:
            return ()
        return tuple(replace(constraint, selector=selector) for constraint in constraints)

    def constraints(self, pod: api.Pod, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints for `action`, or the defaults when it has none."""
        kind = "hard" if action == DO_NOT_SCHEDULE else "soft"
        if pod.spec.topology_spread_constraints:
            try:
                return parse_constraints(pod.spec.topology_spread_constraints,
                                         pod.metadata.labels, action)
            except SelectorError as error:
                raise SelectorError(
                    f"obtaining pod's {kind} topology spread constraints: {error}") from None
        try:
            return self._default_constraints(pod, action)
        except SelectorError as error:
            raise SelectorError(
                f"setting default {kind} topology spread constraints: {error}") from None

    # --- PreFilter / Filter -----------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        try:
            constraints = self.constraints(pod.pod, DO_NOT_SCHEDULE)
        except SelectorError as error:
            return None, Status.error(f"get constraints from pod: {error}", plugin=NAME)
        if not constraints:
            # Written anyway so AddPod/RemovePod on a skipped plugin are harmless no-ops.
            state.write(PRE_FILTER_KEY, filtering.PreFilterState())
            return None, Status.skip()
        snapshot = self._handle.snapshot
        if nodes is snapshot.node_infos:
            # Every row of the snapshot: count over its label columns at once.
            computed = filtering.compute_state_rows(pod.pod, constraints, snapshot,
                                                    self._counter)
        else:
            computed = filtering.compute_state(pod.pod, constraints, nodes, self._counter)
        state.write(PRE_FILTER_KEY, computed)
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo,
                node: NodeInfo) -> Status:
        return self._update(state, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo,
                   node: NodeInfo) -> Status:
        return self._update(state, pod, removed, node, -1)

    def _update(self, state: CycleState, pod: PodInfo, changed: PodInfo, node: NodeInfo,
                delta: int) -> Status:
        current: filtering.PreFilterState | None = state.get(PRE_FILTER_KEY)
        if current is None:
            return _not_found(PRE_FILTER_KEY)
        state.write(PRE_FILTER_KEY, current.with_pod(pod.pod, changed.pod, node, delta))
        return SUCCESS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        """Filter over every snapshot row from the label columns; None (judge node by
        node) when PreFilter left no state, so that the per-node path reports it."""
        current: filtering.PreFilterState | None = state.get(PRE_FILTER_KEY)
        if current is None:
            return None
        if not current.constraints:
            return np.ones(len(snapshot.node_infos), dtype=np.bool_)
        return filtering.passing_rows(current, pod.pod, snapshot.labels)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        current: filtering.PreFilterState | None = state.get(PRE_FILTER_KEY)
        if current is None:
            return _not_found(PRE_FILTER_KEY)
        if not current.constraints:
            return SUCCESS
        missing_label, too_skewed = filtering.violated(current, pod.pod, node)
        if missing_label:
            return Status.unresolvable(REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
        if too_skewed:
            return Status.unschedulable(REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
        return SUCCESS

    # --- PreScore / Score / NormalizeScore ---------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        all_nodes = self._handle.snapshot.node_infos
        if not all_nodes:
            return Status.skip()
        try:
            constraints = self.constraints(pod.pod, SCHEDULE_ANYWAY)
        except SelectorError as error:
            return Status.error(f"calculating preScoreState: {error}", plugin=NAME)
        if not constraints:
            return Status.skip()
        # System defaults let nodes without a zone label still spread by hostname.
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self._system_defaulted
        state.write(PRE_SCORE_KEY, scoring.compute_state(pod.pod, constraints, nodes, all_nodes,
                                                         require_all, self._counter))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        current: scoring.PreScoreState | None = state.get(PRE_SCORE_KEY)
        if current is None:
            return 0, _not_found(PRE_SCORE_KEY, "error ")
        return scoring.raw_score(current, node), SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        current: scoring.PreScoreState | None = state.get(PRE_SCORE_KEY)
        if current is None:
            return _not_found(PRE_SCORE_KEY, "error ")
        scoring.normalize(current, scores)
        return SUCCESS


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args if args is not None else PodTopologySpreadArgs(), handle)


SPEC = PluginSpec(NAME, PodTopologySpread, new, PodTopologySpreadArgs)
