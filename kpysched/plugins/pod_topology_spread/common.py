"""Parsed spread constraints, label selectors and the pod counting both halves share.

Selectors follow apimachinery's labels.Selector: a nil LabelSelector selects
nothing, an empty one everything; matchLabels become `key = value`
requirements, and the pod's values for `matchLabelKeys` are ANDed in. Pod
counts skip terminating pods and other namespaces, and an empty selector counts
nothing at all (while it still matches the incoming pod itself), as upstream's
countPodsMatchSelector does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from kpysched.cache.node_info import NodeInfo
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.taints import find_untolerated_taint
from kpysched.plugins._shared.args import label_value_errors, qualified_name_errors
from kpysched.plugins._shared.row_counts import RowCounts, RowCountsCache
from kpysched.plugins.node_affinity import RequiredNodeAffinity

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


class SelectorError(ValueError):
    """A label selector apimachinery would refuse to convert."""


class Op(IntEnum):
    IN = 0  # also `key = value` (one value)
    NOT_IN = 1
    EXISTS = 2
    DOES_NOT_EXIST = 3


_OPERATORS = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS,
              "DoesNotExist": Op.DOES_NOT_EXIST}

Requirement = tuple[str, Op, frozenset[str]]


@dataclass(frozen=True, slots=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()
    # labels.Nothing(): matches no labels and takes no further requirements.
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirements (matches everything); Nothing is not empty."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, op, values in self.requirements:
            if op is Op.IN:
                value = labels.get(key)
                if value is None or value not in values:
                    return False
            elif op is Op.NOT_IN:
                value = labels.get(key)
                if value is not None and value in values:
                    return False
            elif op is Op.EXISTS:
                if key not in labels:
                    return False
            elif key in labels:
                return False
        return True

    def with_labels(self, labels: Mapping[str, str]) -> Selector:
        """The selector ANDed with `key = value` for each label (Nothing stays Nothing)."""
        if self.nothing or not labels:
            return self
        added = tuple((key, Op.IN, frozenset((value,))) for key, value in labels.items())
        return Selector(added + self.requirements)


NOTHING = Selector(nothing=True)


def _requirement(key: str, operator: str, values: Sequence[str]) -> Requirement:
    op = _OPERATORS.get(operator)
    if op is None:
        raise SelectorError(f"{operator!r} is not a valid label selector operator")
    errors = [f"key: Invalid value: {e}" for e in qualified_name_errors(key)]
    if op in (Op.IN, Op.NOT_IN) and not values:
        errors.append("values: Invalid value: []: for 'in', 'notin' operators, values set "
                      "can't be empty")
    elif op in (Op.EXISTS, Op.DOES_NOT_EXIST) and values:
        errors.append(f"values: Invalid value: {list(values)!r}: values set must be empty "
                      "for exists and does not exist")
    for index, value in enumerate(values):
        errors += [f"values[{index}]: Invalid value: {e}" for e in label_value_errors(value)]
    if errors:
        raise SelectorError("; ".join(errors))
    return key, op, frozenset(values)


def requirements_of(selector: api.LabelSelector) -> tuple[Requirement, ...]:
    """metav1.LabelSelectorAsSelector's requirements; SelectorError when it would fail."""
    found = [_requirement(key, "In", (value,)) for key, value in selector.match_labels.items()]
    found += [_requirement(e.key, e.operator, e.values) for e in selector.match_expressions]
    return tuple(found)


def parse_selector(selector: api.LabelSelector | None) -> Selector:
    if selector is None:
        return NOTHING
    return Selector(requirements_of(selector))


@dataclass(frozen=True, slots=True)
class Constraint:
    """One topology spread constraint, defaulted and with its selector parsed."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def includes(self, pod: api.Pod, node: NodeInfo, required: RequiredNodeAffinity) -> bool:
        """Whether the node's pods count, under nodeAffinityPolicy and nodeTaintsPolicy."""
        if self.node_affinity_policy == HONOR and not required.matches(node):
            return False
        if self.node_taints_policy != HONOR or node.node is None:
            return True
        return find_untolerated_taint(node.node.spec.taints, pod.spec.tolerations) is None


def parse_constraints(
    constraints: Iterable[api.TopologySpreadConstraint], pod_labels: Mapping[str, str],
    action: str,
) -> tuple[Constraint, ...]:
    """The constraints with `whenUnsatisfiable == action`; SelectorError on a bad selector."""
    parsed = []
    for constraint in constraints:
        if constraint.when_unsatisfiable != action:
            continue
        selector = parse_selector(constraint.label_selector)
        if constraint.match_label_keys:
            selector = selector.with_labels({key: pod_labels[key]
                                             for key in constraint.match_label_keys
                                             if key in pod_labels})
        parsed.append(Constraint(
            max_skew=constraint.max_skew,
            topology_key=constraint.topology_key,
            selector=selector,
            min_domains=1 if constraint.min_domains is None else constraint.min_domains,
            node_affinity_policy=(HONOR if constraint.node_affinity_policy is None
                                  else constraint.node_affinity_policy),
            node_taints_policy=(IGNORE if constraint.node_taints_policy is None
                                else constraint.node_taints_policy),
        ))
    return tuple(parsed)


def has_all_topology_keys(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def count_matching(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """Matching pods in the namespace, terminating ones left out (see kubernetes#87621)."""
    if selector.empty or selector.nothing:
        return 0
    matches = selector.matches
    count = 0
    for info in pods:
        meta = info.pod.metadata
        if meta.namespace == namespace and meta.deletion_timestamp is None \
                and matches(meta.labels):
            count += 1
    return count


class NodeCounts:
    """count_matching per node for one (selector, namespace), remembered per NodeInfo."""

    __slots__ = ("_by_node", "namespace", "selector")

    def __init__(self, selector: Selector, namespace: str) -> None:
        self.selector = selector
        self.namespace = namespace
        # node name -> (the NodeInfo counted, its pod count then, matching pods)
        self._by_node: dict[str, tuple[NodeInfo, int, int]] = {}

    def count(self, node: NodeInfo) -> int:
        pods = node.pods
        seen = self._by_node.get(node.name)
        if seen is not None and seen[0] is node and seen[1] == len(pods):
            return seen[2]
        count = count_matching(pods.values(), self.selector, self.namespace)
        self._by_node[node.name] = (node, len(pods), count)
        return count


class MatchCounter:
    """Matching-pod counts reused across scheduling cycles while nodes are unchanged.

    The cache replaces a snapshot's NodeInfo with a fresh copy whenever its node
    or pods change, so a count taken from the very same NodeInfo object still
    holds (the pod count guards against in-place edits of a copy). Pods of one
    workload share a selector, so after the first of them nearly every count is
    a lookup instead of a pass over the node's pods.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._tables: OrderedDict[tuple[Selector, str], NodeCounts] = OrderedDict()
        self._rows = RowCountsCache(capacity)

    def rows(self, selector: Selector, namespace: str) -> RowCounts:
        """count_matching for every snapshot row, as an array (see _shared/row_counts.py)."""
        return self._rows.get((selector, namespace), lambda node: count_matching(
            node.pods.values(), selector, namespace))

    def table(self, selector: Selector, namespace: str) -> NodeCounts:
        key = (selector, namespace)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = NodeCounts(selector, namespace)
            if len(self._tables) > self._capacity:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(key)
        return table
