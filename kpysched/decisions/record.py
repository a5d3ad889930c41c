"""One scheduling attempt as the scheduler decided it.

Filled in while the cycle runs, only when recording is on (CycleState.decision is
None otherwise, and every hook is one `is not None` test): the search for feasible
nodes from the algorithm's FitResult (`record_fit`, below), scores by the framework.
Per-node detail is kept where the cycle computed it anyway:

- `rejected`: nodes judged by the per-node Filter chain, with the first failing
  plugin and its reasons (for a pod that fits nowhere this is every node, as in the
  FailedScheduling event);
- `vector_rejected`: nodes a whole-snapshot (vector) Filter ruled out while other
  nodes fitted; the cycle never asked which plugin, so only their number is kept;
- `scores`: every Score plugin's raw and normalised values and its weight, for the
  feasible nodes in `feasible` order, and the weighted `totals`.

Score vectors are kept as int64 arrays (lists where a caller built them so), not
lists of Python ints: no int object per value beyond the small-int cache, nothing for
the garbage collector to walk in the kept records (at 5000 nodes, peak RSS with 1000
records fell from 325 to 301 MiB). `to_json` turns them into lists, so the JSON is
the same either way.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

SCHEDULED = "Scheduled"
BOUND = "Bound"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"

# A score per feasible node: an int16, int32 or int64 array when the framework
# recorded it (the narrowest that holds it, compact below).
Scores = Sequence[int] | npt.NDArray[np.signedinteger[Any]]


@dataclass(slots=True)
class Rejection:
    plugin: str
    reasons: list[str]
    code: str  # Unschedulable, UnschedulableAndUnresolvable


@dataclass(slots=True)
class RejectionGroup:
    """Nodes the Filter chain rejected with the same plugin, reasons and code: a list of
    (shared) node names costs 8 bytes a node, where a per-node map of 5000 rejected
    nodes would cost a quarter of a megabyte in every record of a pending pod."""

    rejection: Rejection
    nodes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class PluginScores:
    plugin: str
    weight: int
    raw: Scores
    normalized: Scores


@dataclass(slots=True)
class PreemptionCandidate:
    node: str
    victims: list[str]  # namespace/name
    pdb_violations: int


@dataclass(slots=True)
class Preemption:
    candidates: list[PreemptionCandidate] = field(default_factory=list)
    chosen: str | None = None
    # Which of upstream's pickOneNodeForPreemption criteria decided between candidates
    # ("only candidate", "fewest PDB violations", "lowest highest victim priority",
    # "smallest priority sum", "fewest victims", "latest start time", "first").
    criterion: str = ""


@dataclass(slots=True)
class ExtenderAnswer:
    """What one scheduler extender answered in the cycle: the nodes its filter rejected
    (with its reason), or its prioritize scores as they count in the totals (score x
    weight x 10); `error` when the call failed (`skipped`: the cycle went on without it)."""

    extender: str
    verb: str  # filter, prioritize, preempt, bind
    failed: dict[str, str] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)
    error: str = ""
    skipped: bool = False


@dataclass(slots=True, weakref_slot=True)
class Decision:
    pod: str  # namespace/name
    uid: str
    profile: str
    attempt: int  # the pod's scheduling attempt, 1 for the first
    time: str  # RFC 3339, when the cycle started
    total_nodes: int = 0
    pre_filter_message: str = ""  # a PreFilter rejection, shared by every node
    pre_filter_nodes: list[str] | None = None  # PreFilterResult's node set, if any
    # The reason of every node outside that set ("node(s) didn't satisfy plugin(s) [..]"),
    # counted for the nodes not in `rejected`, as the FailedScheduling event counts them.
    absent_reason: str = ""
    nominated_node_tried: str | None = None  # evaluated first (preemption made room)
    evaluated_nodes: int = 0
    rejections: list[RejectionGroup] = field(default_factory=list)
    vector_rejected: int = 0
    # A list, or a RowNames view the vector path made (a list only when read).
    feasible: Sequence[str] = field(default_factory=list)
    scores: list[PluginScores] = field(default_factory=list)
    totals: Scores = field(default_factory=list)
    ties: Sequence[str] = field(default_factory=list)  # the top-scoring nodes chosen among
    node: str | None = None
    outcome: str = ""
    message: str = ""  # the FailedScheduling text, or the error
    preemption: Preemption | None = None
    nominated_node: str | None = None
    extenders: list[ExtenderAnswer] = field(default_factory=list)

    def reject(self, node: str, rejection: Rejection) -> None:
        """Record one node's first failing plugin (grouped with the same verdicts)."""
        for group in self.rejections:
            if group.rejection == rejection:
                group.nodes.append(node)
                return
        self.rejections.append(RejectionGroup(rejection, [node]))

    @property
    def rejected(self) -> dict[str, Rejection]:
        """Every rejected node's verdict, by node name."""
        return {node: group.rejection for group in self.rejections for node in group.nodes}

    def to_json(self) -> dict[str, Any]:
        scores, totals, groups = self.scores, self.totals, self.rejections
        feasible, ties = self.feasible, self.ties
        try:  # asdict would deep-copy the arrays and views: take them out, put lists in
            self.scores, self.totals, self.rejections = [], [], []
            self.feasible, self.ties = [], []
            found = asdict(self)
        finally:
            self.scores, self.totals, self.rejections = scores, totals, groups
            self.feasible, self.ties = feasible, ties
        found["feasible"], found["ties"] = list(feasible), list(ties)
        del found["rejections"]
        found["rejected"] = {node: asdict(group.rejection)
                             for group in groups for node in group.nodes}
        found["scores"] = [{"plugin": s.plugin, "weight": s.weight, "raw": _ints(s.raw),
                            "normalized": _ints(s.normalized)} for s in scores]
        found["totals"] = _ints(totals)
        return found


# The narrowest kept type that holds every value; int64 past int32. Their limits as
# Python ints, read once (np.iinfo builds an object per call).
_KEPT_TYPES = (np.int16, np.int32)
_KEPT_LIMITS = tuple((kept, int(np.iinfo(kept).min), int(np.iinfo(kept).max))
                     for kept in _KEPT_TYPES)
_INT16_MIN, _INT16_MAX = _KEPT_LIMITS[0][1], _KEPT_LIMITS[0][2]


def compact(values: npt.NDArray[np.int64]) -> npt.NDArray[np.signedinteger[Any]]:
    """A copy of `values` to keep in a record: int16 when every value fits (normalised
    scores run 0..100, so nearly always), else int32, else int64. 1000 kept records
    hold ~16 vectors of the 500 scored nodes each at 5000 nodes: 64 MB as int64."""
    if not values.size:
        return values.astype(np.int16)
    low, high = int(values.min()), int(values.max())
    for kept, least, most in _KEPT_LIMITS:
        if least <= low and high <= most:
            return values.astype(kept)
    return values.copy()


def compact_within(values: npt.NDArray[np.int64], low: int,
                   high: int) -> npt.NDArray[np.signedinteger[Any]]:
    """compact for values the caller knows lie in [low, high] (normalised scores it
    checked, totals of those times known weights): when int16 holds that range it is
    the type compact would pick, so the copy is made without scanning for the least
    and greatest value (two passes of the vector, each cycle, per Score plugin)."""
    if low >= _INT16_MIN and high <= _INT16_MAX:
        return values.astype(np.int16)
    return compact(values)


def _ints(values: Scores) -> list[int]:
    if isinstance(values, np.ndarray):
        return list(values.tolist())
    return [int(v) for v in values]


# --- what the algorithm found, into the record -------------------------------------
# (Read through protocols: the decision record sits below the framework and the
# scheduling core, and names neither's types.)


class _Code(Protocol):
    @property
    def label(self) -> str: ...


class Verdict(Protocol):
    """A Filter Status as the record reads it."""

    @property
    def code(self) -> _Code: ...

    @property
    def reasons(self) -> Sequence[str]: ...

    @property
    def plugin(self) -> str: ...


class Verdicts(Protocol):
    """Why nodes failed (a Diagnosis), as the record reads it."""

    @property
    def node_to_status(self) -> Mapping[str, Verdict]: ...


class Fit(Verdicts, Protocol):
    """What PreFilter and Filter found for one pod (the algorithm's FitResult)."""

    @property
    def total_nodes(self) -> int: ...

    @property
    def pre_filter_nodes(self) -> AbstractSet[str] | None: ...

    @property
    def pre_filter_message(self) -> str: ...

    @property
    def nominated_node_tried(self) -> str | None: ...

    @property
    def absent_reason(self) -> str: ...

    @property
    def vector_rejected(self) -> int: ...

    @property
    def searched(self) -> bool: ...


def record_fit(decision: Decision, fit: Fit) -> None:
    """The search for feasible nodes, as the algorithm found it."""
    decision.total_nodes = fit.total_nodes
    decision.pre_filter_nodes = (sorted(fit.pre_filter_nodes)
                                 if fit.pre_filter_nodes is not None else None)
    decision.pre_filter_message = fit.pre_filter_message
    decision.nominated_node_tried = fit.nominated_node_tried
    decision.absent_reason = fit.absent_reason
    decision.vector_rejected = fit.vector_rejected
    if fit.searched:
        record_rejections(decision, fit)


def record_rejections(decision: Decision, diagnosis: Verdicts) -> None:
    """The per-node verdicts of the Filter chain, first failing plugin first."""
    node_to_status = diagnosis.node_to_status
    statuses = list(node_to_status.values())
    distinct = dict(zip(map(id, statuses), statuses, strict=True))
    # Statuses with the same plugin, reasons and code are one group, in order of first
    # appearance; each group's nodes keep the diagnosis order.
    ids_by_key: dict[tuple[str, tuple[str, ...], str], set[int]] = {}
    for ident, status in distinct.items():
        key = (status.plugin, tuple(status.reasons), status.code.label)
        ids_by_key.setdefault(key, set()).add(ident)
    names = list(node_to_status)
    groups: dict[tuple[str, tuple[str, ...], str], list[str]]
    if len(ids_by_key) <= _FEW_GROUPS:
        # Many nodes share few Status objects (vector reasons): pick each group's names
        # with one C-level pass per group.
        ids = list(map(id, statuses))
        groups = {key: (names if len(ids_by_key) == 1 else
                        list(itertools.compress(names, map(members.__contains__, ids))))
                  for key, members in ids_by_key.items()}
    else:
        key_of = {ident: key for key, members in ids_by_key.items() for ident in members}
        groups = {key: [] for key in ids_by_key}
        for name, status in zip(names, statuses, strict=True):
            groups[key_of[id(status)]].append(name)
    decision.rejections = [RejectionGroup(Rejection(plugin, list(reasons), code), nodes)
                           for (plugin, reasons, code), nodes in groups.items()]


# Up to this many rejection groups, record_rejections picks names group by group.
_FEW_GROUPS = 8
