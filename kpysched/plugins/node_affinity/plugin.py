"""NodeAffinity: spec.nodeSelector, required and preferred node affinity, addedAffinity.

Filter keeps nodes matching the pod's nodeSelector and required node affinity
(and the scheduler-enforced `addedAffinity` of the args); PreFilter narrows the
candidates to the node names that `matchFields metadata.name In` terms allow.
Score sums the weights of the preferred terms a node matches, normalised to
0..100. Terms upstream cannot parse (unknown operator, bad values) never match
in Filter and make PreScore fail, as upstream's lazy parsing does.

Queueing hint: a node added or relabelled helps only if it now matches the pod's
required affinity and nodeSelector (and addedAffinity), and, for an update, did not
match before.

Vector forms: Filter and Score also judge every snapshot row at once over the
snapshot's label columns (masks.py); they must agree with the per-node forms, which
stay for preemption's simulated nodes and for the rejection reasons, built node by node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import msgspec
import msgspec.inspect
import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kpysched.cache.label_index import LabelIndex
from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    NodeOnlyFilterPlugin,
    NodeScore,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScoreExtensions,
    VectorNormalizePlugin,
    VectorReasonsPlugin,
    VectorScorePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.labels import node_selector_term_matches
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.args import (
    invalid,
    is_int64,
    label_value_errors,
    qualified_name_errors,
    unknown_fields,
)
from kpysched.plugins._shared.go_math import default_normalize_score
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins.node_affinity import masks

NAME = "NodeAffinity"

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"

_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_OBJECT_NAME_FIELD = "metadata.name"
_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")


def _requirement_errors(requirement: api.NodeSelectorRequirement, path: str) -> list[str]:
    operator, values = requirement.operator, requirement.values
    if operator not in _LABEL_OPERATORS:
        return [f"{path}.operator: Unsupported value: {operator!r}"]
    errors = [f"{path}.key: {e}" for e in qualified_name_errors(requirement.key)]
    if operator in ("In", "NotIn") and not values:
        errors.append(f"{path}.values: for 'in', 'notin' operators, values set can't be empty")
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(f"{path}.values: values set must be empty for exists and does not exist")
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(f"{path}.values: for 'Gt', 'Lt' operators, exactly one value is "
                          "required")
        errors += [f"{path}.values[{i}]: for 'Gt', 'Lt' operators, the value must be an integer"
                   for i, value in enumerate(values) if not is_int64(value)]
    for index, value in enumerate(values):
        errors += [f"{path}.values[{index}]: {e}" for e in label_value_errors(value)]
    return errors


def term_errors(term: api.NodeSelectorTerm, path: str) -> list[str]:
    """Why upstream's node selector parser rejects a term (empty when it parses)."""
    errors: list[str] = []
    for index, requirement in enumerate(term.match_expressions):
        errors += _requirement_errors(requirement, f"{path}.matchExpressions[{index}]")
    for index, requirement in enumerate(term.match_fields):
        field_path = f"{path}.matchFields[{index}]"
        if requirement.operator not in _FIELD_OPERATORS:
            errors.append(f"{field_path}.operator: Unsupported value: {requirement.operator!r}")
        elif len(requirement.values) != 1:
            errors.append(f"{field_path}.values: must have one element")
    return errors


def _is_empty(term: api.NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def _usable_terms(selector: api.NodeSelector) -> tuple[api.NodeSelectorTerm, ...]:
    """Terms that can match: empty terms match nothing, unparsable ones never match."""
    return tuple(term for term in selector.node_selector_terms
                 if not _is_empty(term) and not term_errors(term, ""))


def _weighted_terms(
    terms: Sequence[api.PreferredSchedulingTerm], path: str
) -> tuple[tuple[tuple[int, api.NodeSelectorTerm], ...], list[str]]:
    """Preferred terms that count (non-zero weight, non-empty), plus parse errors."""
    kept: list[tuple[int, api.NodeSelectorTerm]] = []
    errors: list[str] = []
    for index, term in enumerate(terms):
        if term.weight == 0 or _is_empty(term.preference):
            continue
        problems = term_errors(term.preference, f"{path}[{index}]")
        if problems:
            errors += problems
        else:
            kept.append((term.weight, term.preference))
    return tuple(kept), errors


class NodeAffinityArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              arbitrary_types_allowed=True)

    added_affinity: api.NodeAffinity | None = Field(default=None, alias="addedAffinity")

    @field_validator("added_affinity", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            unknown = unknown_fields(value, msgspec.inspect.type_info(api.NodeAffinity))
            if unknown:
                raise ValueError("; ".join(unknown))
            try:
                return msgspec.convert(value, api.NodeAffinity)
            except msgspec.ValidationError as error:
                raise ValueError(str(error)) from None
        return value

    @model_validator(mode="after")
    def _validate(self) -> Self:
        affinity = self.added_affinity
        if affinity is None:
            return self
        errors: list[str] = []
        required = affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            path = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            for index, term in enumerate(required.node_selector_terms):
                if not _is_empty(term):
                    errors += term_errors(term, f"{path}[{index}]")
        _, preferred_errors = _weighted_terms(
            affinity.preferred_during_scheduling_ignored_during_execution,
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution")
        errors += preferred_errors
        if errors:
            raise invalid(errors)
        return self


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """The pod's nodeSelector and required node affinity, ready to match (upstream's
    RequiredNodeAffinity, also used by PodTopologySpread's nodeAffinityPolicy).

    Terms that do not parse are dropped, as upstream's lazy parser does.
    """

    node_selector: tuple[tuple[str, str], ...]
    # None: no required affinity; otherwise terms ORed (no usable term: nothing matches).
    terms: tuple[api.NodeSelectorTerm, ...] | None

    @classmethod
    def of(cls, pod: api.Pod) -> RequiredNodeAffinity:
        selector = _required_affinity(pod)
        return cls(tuple(pod.spec.node_selector.items()),
                   None if selector is None else _usable_terms(selector))

    def matches(self, node: NodeInfo) -> bool:
        return self.matches_labels(node.labels, node.name)

    def matches_labels(self, labels: Mapping[str, str], name: str) -> bool:
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        if self.terms is None:
            return True
        return any(node_selector_term_matches(term, labels, name) for term in self.terms)

    def rows(self, labels: LabelIndex) -> npt.NDArray[np.bool_]:
        """`matches` for every row of a snapshot's label index at once."""
        rows = masks.node_selector_rows(self.node_selector, labels)
        if self.terms is not None:
            rows &= masks.any_term_rows(self.terms, labels)
        return rows


@dataclass(frozen=True, slots=True)
class _Preferred:
    terms: tuple[tuple[int, api.NodeSelectorTerm], ...]


def _required_affinity(pod: api.Pod) -> api.NodeSelector | None:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    return affinity.node_affinity.required_during_scheduling_ignored_during_execution


def _preferred_terms(pod: api.Pod) -> Sequence[api.PreferredSchedulingTerm]:
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return ()
    return affinity.node_affinity.preferred_during_scheduling_ignored_during_execution


def _named_nodes(selector: api.NodeSelector) -> set[str] | None:
    """Node names the terms can only match, from `metadata.name In` fields; None: any node."""
    names: set[str] = set()
    for term in selector.node_selector_terms:
        term_names: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == _OBJECT_NAME_FIELD and requirement.operator == "In":
                values = set(requirement.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            # Terms are ORed: one term without a name restriction admits every node.
            return None
        names |= term_names
    return names


_NODE_EVENT = ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)


def _pod_matches(pod: api.Pod, required: RequiredNodeAffinity, node: api.Node) -> bool:
    """Upstream's RequiredNodeAffinity.Match: when no term matched and some term did not
    parse, it is an error (which the queue counts as Queue), not a plain no."""
    labels = node.metadata.labels
    if any(labels.get(key) != value for key, value in required.node_selector):
        return False
    if required.matches_labels(labels, node.metadata.name):
        return True
    selector = _required_affinity(pod)
    if selector is not None:
        problems = [error for term in selector.node_selector_terms
                    for error in term_errors(term, "")]
        if problems:
            raise ValueError("; ".join(problems))
    return False


class NodeAffinity(PreFilterPlugin, VectorReasonsPlugin, NodeOnlyFilterPlugin, PreScorePlugin,
                   VectorScorePlugin, ScoreExtensions, VectorNormalizePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, args: NodeAffinityArgs, *, deferred_resize: bool = False) -> None:
        self._deferred_resize = deferred_resize  # InPlacePodVerticalScalingSchedulerPreemption
        self._added_terms: tuple[api.NodeSelectorTerm, ...] | None = None
        self._added_preferred: tuple[tuple[int, api.NodeSelectorTerm], ...] = ()
        affinity = args.added_affinity
        if affinity is not None:
            required = affinity.required_during_scheduling_ignored_during_execution
            if required is not None:
                self._added_terms = _usable_terms(required)
            self._added_preferred, _ = _weighted_terms(
                affinity.preferred_during_scheduling_ignored_during_execution, "")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (ClusterEventWithHint(_NODE_EVENT, self.schedulable_after_node_change),)

    def schedulable_after_node_change(self, pod: PodInfo, old: object,
                                      new: object) -> QueueingHint:
        """A node added or relabelled: does it newly match the pod's required affinity?"""
        original, modified = objects_as(api.Node, old, new)
        if modified is None:
            raise ValueError("a node event without the node")
        labels, name = modified.metadata.labels, modified.metadata.name
        if self._added_terms is not None and not any(
                node_selector_term_matches(term, labels, name) for term in self._added_terms):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity.of(pod.pod)
        if not _pod_matches(pod.pod, required, modified):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        if _pod_matches(pod.pod, required, original):
            return QueueingHint.QUEUE_SKIP  # it matched before: the change is not the news
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        selector = _required_affinity(pod.pod)
        if selector is None and self._added_terms is None and not pod.pod.spec.node_selector:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, RequiredNodeAffinity.of(pod.pod))
        if selector is None or not selector.node_selector_terms:
            return None, SUCCESS
        names = _named_nodes(selector)
        if names is None:
            return None, SUCCESS
        if not names:
            return None, Status.unresolvable(REASON_CONFLICT, plugin=NAME)
        return PreFilterResult(names), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        if self._added_terms is not None and not any(
            node_selector_term_matches(term, node.labels, node.name) for term in self._added_terms
        ):
            return Status.unresolvable(REASON_ENFORCED, plugin=NAME)
        required: RequiredNodeAffinity | None = state.get(_PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity.of(pod.pod)
        if not required.matches(node):
            return Status.unresolvable(REASON_POD, plugin=NAME)
        return SUCCESS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        labels = snapshot.labels
        required: RequiredNodeAffinity | None = state.get(_PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity.of(pod.pod)
        rows = required.rows(labels)
        if self._added_terms is not None:
            rows &= masks.any_term_rows(self._added_terms, labels)
        return rows

    def filter_statuses(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                        rows: npt.NDArray[np.int64]) -> list[Status] | None:
        """`filter`'s status for each of `rows` (all of which it rejects): the enforced
        affinity's reason where that fails, the pod's own elsewhere."""
        enforced_ok = (masks.any_term_rows(self._added_terms, snapshot.labels)[rows].tolist()
                       if self._added_terms is not None else [True] * len(rows))
        required: RequiredNodeAffinity | None = state.get(_PRE_FILTER_KEY)
        if required is None:
            required = RequiredNodeAffinity.of(pod.pod)
        own_ok = required.rows(snapshot.labels)[rows].tolist()
        return [Status.unresolvable(REASON_ENFORCED, plugin=NAME) if not enforced
                else Status.unresolvable(REASON_POD, plugin=NAME) if not own else SUCCESS
                for enforced, own in zip(enforced_ok, own_ok, strict=True)]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        preferred = _preferred_terms(pod.pod)
        if not preferred and not self._added_preferred:
            return Status.skip()
        terms, errors = _weighted_terms(
            preferred, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution")
        if errors:
            return Status.error("; ".join(errors), plugin=NAME)
        state.write(_PRE_SCORE_KEY, _Preferred(terms))
        return SUCCESS

    def _preferred(self, state: CycleState, pod: PodInfo) -> _Preferred | Status:
        preferred: _Preferred | None = state.get(_PRE_SCORE_KEY)
        if preferred is None:
            terms, errors = _weighted_terms(_preferred_terms(pod.pod), "")
            if errors:
                return Status.error("; ".join(errors), plugin=NAME)
            preferred = _Preferred(terms)
        return preferred

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        preferred = self._preferred(state, pod)
        if isinstance(preferred, Status):
            return 0, preferred
        labels, name = node.labels, node.name
        total = 0
        for weight, term in (*self._added_preferred, *preferred.terms):
            if node_selector_term_matches(term, labels, name):
                total += weight
        return total, SUCCESS

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None:
        preferred = self._preferred(state, pod)
        if isinstance(preferred, Status):
            return None  # the per-node form reports the error
        return masks.weighted_rows((*self._added_preferred, *preferred.terms), snapshot.labels)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        default_normalize_score(scores, reverse=False)
        return SUCCESS

    def normalize_vector(self, state: CycleState, pod: PodInfo,
                         scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        highest = int(scores.max()) if scores.size else 0
        if highest == 0:
            return scores.copy()
        # Go's division truncates toward zero: the figures go_div gives node by node,
        # even for negative sums (addedAffinity's weights are not checked to be positive).
        scaled = MAX_NODE_SCORE * scores
        truncated: npt.NDArray[np.int64] = (
            np.sign(scaled) * np.sign(highest) * (np.abs(scaled) // abs(highest)))
        return truncated


def new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args if args is not None else NodeAffinityArgs(),
                        deferred_resize=handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, NodeAffinity, new, NodeAffinityArgs)
