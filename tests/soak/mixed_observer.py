"""The mixed run's observer: the soak's (observer.py), which keeps every check it
has, plus what Kueue's and Karpenter's part of the run needs from the same watches:

- each node's labels, blocking taints, readiness and cordon, for the room check;
- each Job pod's nodeSelector and tolerations, and the pending-with-room clock
  (mixed_checks.RoomClock) on every check;
- the ClusterQueue's ledger of non-terminal pods against its quota, judged on every
  pod event (and after a fresh list, never on a half-applied one);
- the nodes Karpenter added (its NodePool label) and when each went; for every Job
  pod bound to one of them, how long it waited from creation (the scale-up time).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.soak.mixed_checks import (
    Capacity,
    NodeFacts,
    PodNeeds,
    QuotaLedger,
    RoomClock,
    Waiting,
    node_facts,
)
from tests.soak.observer import Observer, PodRecord


@dataclass
class AutoscaledNode:
    added_at: float
    removed_at: float | None = None


class MixedObserver(Observer):
    def __init__(self, job_kinds: frozenset[str], quota: Capacity, pool_label: str) -> None:
        super().__init__()
        self.job_kinds = job_kinds
        self.pool_label = pool_label
        self.facts: dict[str, NodeFacts] = {}
        self.needs: dict[str, PodNeeds] = {}  # Job pod uid -> what a node must offer it
        self.room = RoomClock()
        self.quota = QuotaLedger(quota)
        self.autoscaled: dict[str, AutoscaledNode] = {}
        self.peak_autoscaled = 0
        self._terminating: set[str] = set()  # Job pods being deleted (finalizer held)
        self._listing_pods = False

    # --- what the figures ask ------------------------------------------------------------

    def job_pods(self) -> list[PodRecord]:
        return [r for r in self.pods.values() if r.kind in self.job_kinds]

    def autoscaled_now(self) -> int:
        return sum(1 for node in self.autoscaled.values() if node.removed_at is None)

    def scale_up_seconds(self) -> list[float]:
        """From creation to binding, for each Job pod placed on a node Karpenter added."""
        return [round(r.bound_at - r.seen_at, 2) for r in self.job_pods()
                if r.node in self.autoscaled and r.bound_at is not None]

    def usage(self) -> dict[str, Capacity]:
        """What the non-terminal bound pods ask of each node."""
        used: dict[str, Capacity] = {}
        for record in self.pods.values():
            if record.node and not record.deleted and not record.finished:
                before = used.get(record.node, Capacity())
                used[record.node] = Capacity(before.cpu_milli + record.cpu_milli,
                                             before.memory + record.memory, before.pods + 1)
        return used

    # --- the watches' events, after the soak's own handling ------------------------------------

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        super()._on_pod(kind, pod)
        record = self.pods[pod["metadata"]["uid"]]
        if record.kind not in self.job_kinds:
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._terminating.add(record.uid)
        if record.uid not in self.needs:
            spec = pod["spec"]
            self.needs[record.uid] = PodNeeds(record.cpu_milli, record.memory,
                                              dict(spec.get("nodeSelector") or {}),
                                              tuple(spec.get("tolerations") or ()))
        self._update_quota(record)
        if not self._listing_pods:
            self.quota.check()

    def _on_node(self, kind: str, node: dict[str, Any]) -> None:
        super()._on_node(kind, node)
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self.facts.pop(name, None)
            self._removed(name)
            return
        self.facts[name] = node_facts(node)
        if self.pool_label in self.facts[name].labels and name not in self.autoscaled:
            self.autoscaled[name] = AutoscaledNode(time.monotonic())
            self.peak_autoscaled = max(self.peak_autoscaled, self.autoscaled_now())

    def _forget_missing(self, what: str, listed: set[str]) -> None:
        super()._forget_missing(what, listed)
        if what == "pods":
            self._listing_pods = True  # the ledger is judged once the list is applied
        elif what == "nodes":
            self.facts.clear()

    def _listed(self, what: str) -> None:
        if what == "pods":
            self._listing_pods = False
            for record in self.job_pods():  # the list marked the vanished ones deleted
                self._update_quota(record)
            self.quota.check()
        elif what == "nodes":
            for name in list(self.autoscaled):
                if name not in self.nodes:
                    self._removed(name)

    def _removed(self, name: str) -> None:
        node = self.autoscaled.get(name)
        if node is not None and node.removed_at is None:
            node.removed_at = time.monotonic()

    def _update_quota(self, record: PodRecord) -> None:
        # As Kueue counts: a pod being deleted (e.g. preempted, its Job's finalizer still
        # on it) is already replaced by the Job controller and holds no quota.
        active = not (record.deleted or record.finished or record.uid in self._terminating)
        self.quota.update(record.uid, Capacity(record.cpu_milli, record.memory, 1), active)

    # --- the periodic check ---------------------------------------------------------------

    def check_pending(self) -> None:
        super().check_pending()
        waiting = [Waiting(r.uid, r.name, self.needs[r.uid]) for r in self.pending()
                   if r.uid in self.needs and r.released_at is not None]
        nodes: Mapping[str, tuple[NodeFacts, Capacity]] = {
            name: (self.facts[name], Capacity(record.cpu_milli, record.memory, record.pods))
            for name, record in self.nodes.items() if name in self.facts}
        self.room.observe(time.monotonic(), waiting, nodes, self.usage(), self.quiet_since)
