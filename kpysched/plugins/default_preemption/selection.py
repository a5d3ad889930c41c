"""The pure parts of preemption: ordering victims, PDB accounting, picking a node.

Everything here reads pods and budgets only (no snapshot, no handle), so the
rules can be tested and reused on their own. A pod without status.startTime is
taken to have started "now" (upstream's GetPodStartTime); callers pass one `now`
per preemption attempt so that every comparison in it sees the same instant.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kpysched.objects import api
from kpysched.objects.labels import SelectorError, label_selector_matches
from kpysched.objects.pod import PodInfo

# Priorities are int32; adding 2^31 makes every one non-negative before summing, so a
# node with a few negative-priority victims does not beat one with fewer of them.
_PRIORITY_OFFSET = 2**31

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))")

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node and the pods that must go for the preemptor to fit there, most
    important first (upstream's candidate with its extender Victims)."""

    name: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int = 0


@functools.lru_cache(maxsize=16384)
def rfc3339_nanos(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time; None when it does not parse.
    Cached: a preemption attempt compares the same victims' start times many times
    (sorting each node's victims, then ranking hundreds of candidates)."""
    found = _RFC3339.fullmatch(text)
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in found.group(1, 2, 3, 4,
                                                                                5, 6))
    try:
        seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if found.group(9):
        offset = int(found.group(10)) * 3600 + int(found.group(11)) * 60
        seconds -= offset if found.group(9) == "+" else -offset
    fraction = found.group(7) or ""
    return seconds * 1_000_000_000 + int(fraction.ljust(9, "0"))


def pod_start_nanos(pod: PodInfo, now: int) -> int:
    """When the pod started; `now` for pods that have not (assumed or just bound)."""
    text = pod.pod.status.start_time
    started = rfc3339_nanos(text) if text else None
    return now if started is None else started


def more_important_pod(first: PodInfo, second: PodInfo, now: int) -> bool:
    """Higher priority wins; at equal priority the pod that started earlier does."""
    if first.priority != second.priority:
        return first.priority > second.priority
    return pod_start_nanos(first, now) < pod_start_nanos(second, now)


def sort_by_importance(pods: Sequence[PodInfo],
                       more_important: Callable[[PodInfo, PodInfo], bool]) -> list[PodInfo]:
    """Most important first; pods neither ranks above the other keep their order."""
    def key(pod: PodInfo) -> _Ranked:
        return _Ranked(pod, more_important)
    return sorted(pods, key=key)


def sort_by_default_importance(pods: Sequence[PodInfo], now: int) -> list[PodInfo]:
    """sort_by_importance with more_important_pod, by key instead of by comparisons."""
    return sorted(pods, key=lambda pod: (-pod.priority, pod_start_nanos(pod, now)))


@dataclass(frozen=True, slots=True)
class _Ranked:
    pod: PodInfo
    more_important: Callable[[PodInfo, PodInfo], bool]

    def __lt__(self, other: _Ranked) -> bool:
        return self.more_important(self.pod, other.pod)


def earliest_start_of_top_priority(victims: Sequence[PodInfo], now: int) -> int:
    """The earliest start time among the victims that share the highest priority."""
    top = max(victim.priority for victim in victims)
    return min(pod_start_nanos(victim, now) for victim in victims if victim.priority == top)


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Being deleted because a scheduler preempted it (the DisruptionTarget condition
    says so); only the first DisruptionTarget condition counts, as upstream reads it."""
    if pod.pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


def _pdb_selects(pdb: api.PodDisruptionBudget, labels: dict[str, str]) -> bool:
    selector = pdb.spec.selector
    # A nil or empty selector selects nothing here, unlike in most APIs.
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return False
    try:
        return label_selector_matches(selector, labels)
    except SelectorError:
        return False  # an invalid selector matches no pod


def split_by_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[api.PodDisruptionBudget], *,
    first_violation_ends: bool = False,
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), each in input order: a pod violates when removing it,
    after the pods before it, takes some matching budget below zero disruptions allowed.
    Pods a budget already lists in disruptedPods do not spend it.

    v1.36's DefaultPreemption spends every budget a pod matches; v1.37's shared
    FilterVictimsWithPDBViolation stops at the first budget the pod takes below zero
    (`first_violation_ends`), so the budgets listed after it keep that disruption for
    the pods that follow."""
    if not pdbs:
        return [], list(pods)
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        labels = pod.pod.metadata.labels
        violated = False
        if labels:  # a pod without labels matches no budget
            for index, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pod.namespace or not _pdb_selects(pdb, labels):
                    continue
                if pod.name in pdb.status.disrupted_pods:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violated = True
                    if first_violation_ends:
                        break
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def pick_one_node(candidates: Sequence[Candidate], now: int) -> Candidate:
    """Upstream's pickOneNodeForPreemption (see pick_one_node_and_criterion)."""
    return pick_one_node_and_criterion(candidates, now)[0]


# What decided between candidates, as decision records name it.
ONLY_CANDIDATE = "only candidate"
FIRST_REMAINING = "first of the remaining candidates"


def pick_one_node_and_criterion(candidates: Sequence[Candidate],
                                now: int) -> tuple[Candidate, str]:
    """Upstream's pickOneNodeForPreemption, criteria in order until one node is left:
    fewest PDB violations, lowest highest-victim priority, smallest sum of (offset)
    victim priorities, fewest victims, latest earliest start among the top-priority
    victims; then the first remaining candidate. Also says which criterion decided."""
    def fewest_violations(c: Candidate) -> int:
        return -c.num_pdb_violations

    def lowest_top_priority(c: Candidate) -> int:
        return -c.victims[0].priority

    def smallest_priority_sum(c: Candidate) -> int:
        return -sum(victim.priority + _PRIORITY_OFFSET for victim in c.victims)

    def fewest_victims(c: Candidate) -> int:
        return -len(c.victims)

    def latest_start(c: Candidate) -> int:
        return earliest_start_of_top_priority(c.victims, now)

    remaining = list(candidates)
    if len(remaining) == 1:
        return remaining[0], ONLY_CANDIDATE
    criteria = (("fewest PDB violations", fewest_violations),
                ("lowest highest victim priority", lowest_top_priority),
                ("smallest victim priority sum", smallest_priority_sum),
                ("fewest victims", fewest_victims),
                ("latest start of the top-priority victims", latest_start))
    for criterion, score in criteria:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, value in zip(remaining, scores, strict=True) if value == best]
        if len(remaining) == 1:
            return remaining[0], criterion
    return remaining[0], FIRST_REMAINING


def aggregate_errors(messages: Sequence[str]) -> str:
    """How Go's utilerrors aggregate prints: one message alone, else the distinct
    messages in order, bracketed."""
    if len(messages) == 1:
        return messages[0]
    distinct = list(dict.fromkeys(messages))
    if len(distinct) == 1:
        return distinct[0]
    return "[" + ", ".join(distinct) + "]"
