"""The mixed run's two invariants of its own, as pure logic over what the observer saw.

*Pending with room.* A pod Kueue admitted may wait while no node can take it: that is
the autoscaler's time (Karpenter batches the pods, makes a NodeClaim, the node
registers and turns Ready). Once a Ready node has room for it, the wait is the
scheduler's. So the clock of a pending pod runs only while, at every check (every
2 s), some node the observer sees is Ready, schedulable, carries every label of the
pod's nodeSelector, has only taints the pod tolerates (NoSchedule and NoExecute), and
has the pod's CPU, memory and a pod slot free after the non-terminal pods bound to it.
A check without such a node stops the clock; so does a fault (the observer's
`quiet_since`), since kpysched's replicas may be down then. A pod whose clock passes
ROOM_GRACE_SECONDS is a violation: a node could take it and kpysched did not place it.

*Quota held.* The ClusterQueue's quota bounds what its admitted Workloads ask for, and
a Job's pods exist only once Kueue admitted it. So at every moment the CPU and memory
requests of the queue's pods that exist, are not being deleted and have not finished
must stay within the quota (a pod being deleted holds none: the Job controller has
already replaced it, and Kueue does not count it); checked on every pod event the
observer's watch delivers, and after a fresh list once all of it is applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

# kpysched retries a pod at least every podMaxBackoffSeconds (10 s) once an event may
# have made room for it; twice that, plus the observer's own lag under load (its
# checks run every 2 s, behind a watch on a busy 2-core machine).
ROOM_GRACE_SECONDS: Final = 30.0
_BLOCKING_EFFECTS: Final = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What decides whether a node can take a pod, besides its free resources."""

    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...]  # NoSchedule and NoExecute ones only
    ready: bool
    unschedulable: bool


@dataclass(frozen=True, slots=True)
class PodNeeds:
    cpu_milli: int
    memory: int
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Capacity:
    """A node's allocatable, or what its pods use of it."""

    cpu_milli: int = 0
    memory: int = 0
    pods: int = 0


def node_facts(node: Mapping[str, Any]) -> NodeFacts:
    spec, status = node.get("spec", {}), node.get("status", {})
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions", ()))
    taints = tuple(t for t in spec.get("taints", ()) if t.get("effect") in _BLOCKING_EFFECTS)
    return NodeFacts(dict(node["metadata"].get("labels", {})), taints, ready,
                     bool(spec.get("unschedulable")))


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, str]) -> bool:
    """The core API's rule: an empty key with Exists tolerates every taint; otherwise
    the keys match, the values match unless the operator is Exists, and an empty
    effect matches every effect."""
    for toleration in tolerations:
        key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
        if toleration.get("effect") not in (None, "", taint.get("effect")):
            continue
        if not key and operator == "Exists":
            return True
        if key == taint.get("key") and (operator == "Exists" or
                                        toleration.get("value", "") == taint.get("value", "")):
            return True
    return False


def has_room(needs: PodNeeds, facts: NodeFacts, allocatable: Capacity, used: Capacity) -> bool:
    if not facts.ready or facts.unschedulable:
        return False
    if any(facts.labels.get(key) != wanted for key, wanted in needs.node_selector.items()):
        return False
    if not all(tolerates(needs.tolerations, taint) for taint in facts.taints):
        return False
    return (used.cpu_milli + needs.cpu_milli <= allocatable.cpu_milli
            and used.memory + needs.memory <= allocatable.memory
            and used.pods + 1 <= allocatable.pods)


@dataclass(frozen=True, slots=True)
class Waiting:
    """A pending pod the room check looks at."""

    uid: str
    name: str
    needs: PodNeeds


@dataclass
class RoomClock:
    """How long each pending pod has had room without a break; see the module notes."""

    grace_seconds: float = ROOM_GRACE_SECONDS
    since: dict[str, float] = field(default_factory=dict)  # pod uid -> room seen from
    violations: dict[str, str] = field(default_factory=dict)  # pod uid -> what was seen
    longest_seconds: float = 0.0
    longest_pod: str = ""

    def observe(self, now: float, waiting: Iterable[Waiting],
                nodes: Mapping[str, tuple[NodeFacts, Capacity]],
                used: Mapping[str, Capacity], quiet_since: float) -> None:
        """One check at `now`: `nodes` are name -> (facts, allocatable), `used` what the
        non-terminal bound pods ask of each; the clocks of pods no longer waiting go."""
        pending = {pod.uid: pod for pod in waiting}
        for uid in self.since.keys() - pending.keys():
            del self.since[uid]
        if quiet_since > now:  # a fault is on: nobody's clock runs
            self.since.clear()
            return
        for uid, pod in pending.items():
            room = [name for name, (facts, allocatable) in nodes.items()
                    if has_room(pod.needs, facts, allocatable, used.get(name, Capacity()))]
            if not room:
                self.since.pop(uid, None)
                continue
            started = max(self.since.setdefault(uid, now), quiet_since)
            waited = now - started
            if waited > self.longest_seconds:
                self.longest_seconds, self.longest_pod = waited, pod.name
            if waited > self.grace_seconds and uid not in self.violations:
                self.violations[uid] = (
                    f"{pod.name} pending {waited:.0f}s while {len(room)} Ready node(s) had "
                    f"room for it (e.g. {', '.join(sorted(room)[:3])})")


@dataclass
class QuotaLedger:
    """The non-terminal pods of one ClusterQueue against its quota."""

    quota: Capacity
    active: dict[str, Capacity] = field(default_factory=dict)  # pod uid -> its requests
    peak: Capacity = field(default_factory=Capacity)
    violations: list[str] = field(default_factory=list)
    _over: bool = False

    def update(self, uid: str, requests: Capacity, active: bool) -> None:
        if active:
            self.active[uid] = requests
        else:
            self.active.pop(uid, None)

    def check(self) -> None:
        """Compare the sum with the quota; a new violation each time it goes over."""
        cpu = sum(r.cpu_milli for r in self.active.values())
        memory = sum(r.memory for r in self.active.values())
        self.peak = Capacity(max(self.peak.cpu_milli, cpu), max(self.peak.memory, memory),
                             max(self.peak.pods, len(self.active)))
        over = cpu > self.quota.cpu_milli or memory > self.quota.memory
        if over and not self._over:
            self.violations.append(
                f"{len(self.active)} pods of the ClusterQueue ask {cpu}m CPU and "
                f"{memory // 2**20} MiB, over its quota of {self.quota.cpu_milli}m and "
                f"{self.quota.memory // 2**20} MiB")
        self._over = over
