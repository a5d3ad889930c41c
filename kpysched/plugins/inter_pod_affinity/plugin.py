"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

Filter keeps a pod where its required affinity terms find matching pods in the
node's topology domain (or nowhere yet, for the first pod of a group matching
itself), where its required anti-affinity terms find none, and where no existing
pod's required anti-affinity selects it. Score prefers domains holding pods that
the pod's preferred terms like (and that like it back), normalised min..max to
0..100.

Upstream's statuses: a node failing the pod's own affinity is
UnschedulableAndUnresolvable (preemption cannot add pods); failing either
anti-affinity check is Unschedulable (removing pods may help). A pod whose
selectors do not parse fails PreFilter as UnschedulableAndUnresolvable and
PreScore as an Error.

Queueing hints (hints.py): a scheduled pod added, relabelled or deleted helps when it
newly satisfies the pod's affinity or stops (or stopped) being what its
anti-affinity, or the deleted pod's, refused (matching all its terms in v1.36, any
one of them from v1.37); a node when it joins or moves between the domains of the
pod's terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

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
    RowsScorePlugin,
    ScoreExtensions,
    VectorFilterPlugin,
    VectorNormalizePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.args import invalid
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins._shared.row_counts import RowCountsCache
from kpysched.plugins.inter_pod_affinity import filtering, hints, scoring
from kpysched.plugins.inter_pod_affinity.common import incoming_weighted_terms
from kpysched.plugins.inter_pod_affinity.existing_terms import ExistingTerms, worth_keeping
from kpysched.plugins.inter_pod_affinity.score_sums import ScoreSums

NAME = "InterPodAffinity"

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_MIN_HARD_WEIGHT, _MAX_HARD_WEIGHT = 0, 100

# From this release on the incoming pod's namespaceSelector counts only through the
# namespaces it resolved to.
RESOLVED_SELECTORS_FROM = 37
# From this release on a pod matching any one of the anti-affinity terms counts.
ANY_ANTI_TERM_HINT_FROM = 37


def _events(release: int) -> tuple[ClusterEventWithHint, ...]:
    pod_hint = (hints.schedulable_after_pod_change_any_anti
                if release >= ANY_ANTI_TERM_HINT_FROM else hints.schedulable_after_pod_change)
    return (
        # Added pods may satisfy affinity; deleted or relabelled ones may lift anti-affinity.
        ClusterEventWithHint(
            ClusterEvent(Resource.POD,
                         ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            pod_hint),
        ClusterEventWithHint(
            ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            hints.schedulable_after_node_change),
    )


class InterPodAffinityArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    hard_pod_affinity_weight: int = Field(default=1, alias="hardPodAffinityWeight",
                                          strict=True)
    ignore_preferred_terms_of_existing_pods: bool = Field(
        default=False, alias="ignorePreferredTermsOfExistingPods", strict=True)

    @field_validator("hard_pod_affinity_weight", mode="before")
    @classmethod
    def _default_weight(cls, value: Any) -> Any:
        return 1 if value is None else value  # null means "unset": upstream's default

    @field_validator("ignore_preferred_terms_of_existing_pods", mode="before")
    @classmethod
    def _default_ignore(cls, value: Any) -> Any:
        return False if value is None else value

    @model_validator(mode="after")
    def _validate(self) -> Self:
        weight = self.hard_pod_affinity_weight
        if not _MIN_HARD_WEIGHT <= weight <= _MAX_HARD_WEIGHT:
            raise invalid([f"hardPodAffinityWeight: Invalid value: {weight}: not in valid "
                           f"range [{_MIN_HARD_WEIGHT}, {_MAX_HARD_WEIGHT}]"])
        return self


def _has_preferred_terms(pod: PodInfo) -> bool:
    affinity = pod.pod.spec.affinity
    if affinity is None:
        return False
    return bool(
        (affinity.pod_affinity is not None
         and affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution)
        or (affinity.pod_anti_affinity is not None
            and affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution))


def _not_found(key: str, verb: str) -> Status:
    return Status.error(f'{verb} "{key}" from cycleState: not found', plugin=NAME)


class InterPodAffinity(PreFilterPlugin, PreFilterExtensions, VectorFilterPlugin,
                       PreScorePlugin, RowsScorePlugin, ScoreExtensions,
                       VectorNormalizePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: InterPodAffinityArgs, handle: Handle) -> None:
        self._args = args
        self._handle = handle
        # v1.36 matches the incoming pod's namespaceSelector against no labels beside the
        # names it resolved to (common.py); v1.37 fixed that (ungated).
        self._unresolved_selectors = handle.features.release < RESOLVED_SELECTORS_FROM
        # InPlacePodVerticalScalingSchedulerPreemption: a deferred resize is passed over.
        self._deferred_resize = handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE)
        # Pods matching the incoming pods' terms, per node, across cycles.
        self._row_counts = RowCountsCache(filtering.KEPT_ROW_COUNTS)
        # Existing pods' required anti-affinity terms by the rows holding them.
        self._existing_anti = ExistingTerms(filtering.required_anti_terms)
        # And their terms that can add to a score, for pods without preferred terms.
        self._existing_scoring = ExistingTerms(
            scoring.scoring_terms(args.hard_pod_affinity_weight))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _events(self._handle.features.release)

    def _own_namespace_labels(self, pod: PodInfo) -> Mapping[str, str]:
        labels = self._handle.namespace_labels(pod.namespace)
        return labels if labels is not None else {}

    # --- PreFilter / Filter -------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        terms = pod.pod_affinity
        if terms.parse_error:
            return None, Status.unresolvable(f"parsing pod: {terms.parse_error}", plugin=NAME)
        # Read before any namespace's labels are: counts kept under it never mix in
        # labels older than it says.
        namespaces_version = self._handle.namespace_labels_version()
        computed = filtering.compute_state(pod, nodes, self._handle.snapshot,
                                           self._handle.namespace_labels, self._row_counts,
                                           self._existing_anti,
                                           unresolved_selectors=self._unresolved_selectors,
                                           namespaces_version=namespaces_version)
        if (not computed.existing_anti_affinity_counts and not terms.required
                and not terms.required_anti):
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, computed)
        return None, SUCCESS

    def _update(self, state: CycleState, other: PodInfo, node: NodeInfo, delta: int) -> Status:
        current: filtering.PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if current is None:
            return _not_found(_PRE_FILTER_KEY, "error reading")
        updated = current.with_pod(other, node, delta)
        if updated is not current:
            state.write(_PRE_FILTER_KEY, updated)
        return SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo,
                node: NodeInfo) -> Status:
        return self._update(state, added, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo,
                   node: NodeInfo) -> Status:
        return self._update(state, removed, node, -1)

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        """Filter over every snapshot row from the label columns; None (judge node by
        node) when PreFilter left no state, so that the per-node path reports it."""
        computed: filtering.PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if computed is None:
            return None
        return filtering.passing_rows(computed, snapshot.labels)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        computed: filtering.PreFilterState | None = state.get(_PRE_FILTER_KEY)
        if computed is None:
            return _not_found(_PRE_FILTER_KEY, "error reading")
        labels = node.labels
        if not filtering.satisfies_pod_affinity(computed, labels):
            return Status.unresolvable(REASON_AFFINITY, plugin=NAME)
        if not filtering.satisfies_pod_anti_affinity(computed, labels):
            return Status.unschedulable(REASON_ANTI_AFFINITY, plugin=NAME)
        if not filtering.satisfies_existing_pods_anti_affinity(computed, labels):
            return Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY, plugin=NAME)
        return SUCCESS

    # --- PreScore / Score -----------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        has_preferred = _has_preferred_terms(pod)
        if self._args.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return Status.skip()
        snapshot = self._handle.snapshot
        terms = pod.pod_affinity
        if terms.parse_error:
            return Status.error(f"failed to parse pod: {terms.parse_error}", plugin=NAME)
        namespaces_version = self._handle.namespace_labels_version()  # as in pre_filter
        lookup = self._handle.namespace_labels
        own_labels = self._own_namespace_labels(pod)
        # Upstream scores over every node of the snapshot, not only the feasible ones.
        unresolved = self._unresolved_selectors
        preferred = incoming_weighted_terms(terms.preferred, lookup,
                                            unresolved_selectors=unresolved)
        preferred_anti = incoming_weighted_terms(terms.preferred_anti, lookup,
                                                 unresolved_selectors=unresolved)
        if not has_preferred:
            topology_score = self._existing_pods_score(pod, snapshot, own_labels)
        elif scoring.rows_pay(preferred, preferred_anti):
            topology_score = scoring.incoming_terms_rows_score(
                snapshot, preferred, preferred_anti, self._row_counts, namespaces_version)
            topology_score.add(self._existing_pods_score(pod, snapshot, own_labels))
        elif scoring.columns_pay(preferred, preferred_anti):
            topology_score = ScoreSums(
                scoring.incoming_terms_score(snapshot, preferred, preferred_anti))
            topology_score.add(self._existing_pods_score(pod, snapshot, own_labels))
        else:
            topology_score = ScoreSums(scoring.topology_score(
                pod, snapshot.node_infos, all_pods=True, preferred=preferred,
                preferred_anti=preferred_anti, namespace_labels=own_labels,
                hard_weight=self._args.hard_pod_affinity_weight))
        if not topology_score:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, scoring.PreScoreState(topology_score))
        return SUCCESS

    def _existing_pods_score(self, pod: PodInfo, snapshot: Snapshot,
                             own_labels: Mapping[str, str]) -> ScoreSums:
        """What the existing pods' own terms add: from the rows holding each distinct
        term where many nodes hold such pods, else by walking those pods."""
        holding = snapshot.have_pods_with_affinity
        if worth_keeping(len(holding), len(snapshot.node_infos)):
            return scoring.existing_terms_score(pod, snapshot, self._existing_scoring,
                                                own_labels)
        return ScoreSums(scoring.topology_score(
            pod, holding.values(), all_pods=False, preferred=(), preferred_anti=(),
            namespace_labels=own_labels, hard_weight=self._args.hard_pod_affinity_weight))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        computed: scoring.PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if computed is None:
            return 0, _not_found(_PRE_SCORE_KEY, "failed to read")
        return scoring.node_score(computed, node), SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None:
        computed: scoring.PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if computed is None:
            return None  # the per-node form reports the missing state
        return scoring.rows_score(computed, snapshot)

    def score_rows(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        computed: scoring.PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if computed is None:
            return None
        return scoring.rows_score(computed, snapshot, rows)

    def normalize_vector(self, state: CycleState, pod: PodInfo,
                         scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        computed: scoring.PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if computed is None or not computed.topology_score:
            return scores.copy()
        return scoring.normalize_rows(scores)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        computed: scoring.PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if computed is None:
            return _not_found(_PRE_SCORE_KEY, "failed to read")
        if computed.topology_score:
            scoring.normalize(scores)
        return SUCCESS


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args if args is not None else InterPodAffinityArgs(), handle)


SPEC = PluginSpec(NAME, InterPodAffinity, new, InterPodAffinityArgs)
