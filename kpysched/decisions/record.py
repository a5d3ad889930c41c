"""One scheduling attempt as the scheduler decided it.

Filled in by the algorithm and the framework while the cycle runs, only when
recording is on (CycleState.decision is None otherwise, and every hook is one
`is not None` test). Per-node detail is kept where the cycle computed it anyway:

- `rejected`: nodes judged by the per-node Filter chain, with the first failing
  plugin and its reasons (for a pod that fits nowhere this is every node, as in the
  FailedScheduling event);
- `vector_rejected`: nodes a whole-snapshot (vector) Filter ruled out while other
  nodes fitted; the cycle never asked which plugin, so only their number is kept;
- `scores`: every Score plugin's raw and normalised values and its weight, for the
  feasible nodes in `feasible` order, and the weighted `totals`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEDULED = "Scheduled"
BOUND = "Bound"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"


@dataclass(slots=True)
class Rejection:
    plugin: str
    reasons: list[str]
    code: str  # Unschedulable, UnschedulableAndUnresolvable


@dataclass(slots=True)
class PluginScores:
    plugin: str
    weight: int
    raw: list[int]
    normalized: list[int]


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
    rejected: dict[str, Rejection] = field(default_factory=dict)
    vector_rejected: int = 0
    feasible: list[str] = field(default_factory=list)
    scores: list[PluginScores] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    ties: list[str] = field(default_factory=list)  # the top-scoring nodes chosen among
    node: str | None = None
    outcome: str = ""
    message: str = ""  # the FailedScheduling text, or the error
    preemption: Preemption | None = None
    nominated_node: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
