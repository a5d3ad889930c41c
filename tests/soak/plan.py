"""How big, how long and how hard a soak is."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

# Every fault fault_plan.py knows, in the order a plan injects them.
ALL_FAULTS: Final = (
    "apiserver-restart", "leader-sigterm", "watch-expiry", "node-deleted-while-binding",
    "etcd-restart", "leader-kill", "pdb-changed-mid-preemption", "sigterm-in-slow-prebind",
    "apiserver-pause",
)


@dataclass(frozen=True, slots=True)
class SoakPlan:
    nodes: int
    duration_seconds: float
    # Pods created per second, and how long a bound pod lives before churn deletes it.
    rate: float
    lifetime_seconds: tuple[float, float]
    # Share of pods created for the upstream kube-scheduler ("default-scheduler").
    upstream_share: float = 0.25
    faults: tuple[str, ...] = ALL_FAULTS
    seed: int = 1
    # Pods that can never fit: created until this many exist at once.
    never_fit_cap: int = 20
    # The cap on live pods churn keeps (creation pauses above it): bounds the run.
    live_pod_cap: int = 3000

    def with_(self, **changes: object) -> SoakPlan:
        return replace(self, **changes)  # type: ignore[arg-type]


PLANS: Final = {
    # What CI runs: every fault once, about four minutes of churn on 200 nodes.
    "ci": SoakPlan(nodes=200, duration_seconds=240, rate=8, lifetime_seconds=(10, 40)),
    # The run behind docs/reliability.md.
    "long": SoakPlan(nodes=1000, duration_seconds=1800, rate=15, lifetime_seconds=(20, 120)),
}
