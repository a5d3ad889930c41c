"""How big, how long and how hard a soak is."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from tests.soak.mixed_plan import SHAPES, MixedPlan

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
    # Kueue's Jobs in waves and Karpenter's nodes beside the churn (tests/soak/mixed.py).
    mixed: MixedPlan | None = None

    def with_(self, **changes: object) -> SoakPlan:
        return replace(self, **changes)  # type: ignore[arg-type]


PLANS: Final = {
    # What CI runs: every fault once, about four minutes of churn on 200 nodes.
    "ci": SoakPlan(nodes=200, duration_seconds=240, rate=8, lifetime_seconds=(10, 40)),
    # The run behind docs/reliability.md.
    "long": SoakPlan(nodes=1000, duration_seconds=1800, rate=15, lifetime_seconds=(20, 120)),
    # Issue 37's mixed run: Kueue admitting Jobs in waves, Karpenter adding and removing
    # nodes, every fault; lighter churn, as Kueue and Karpenter share the machine.
    "mixed": SoakPlan(nodes=200, duration_seconds=1800, rate=5, lifetime_seconds=(20, 120),
                      mixed=MixedPlan(wave_every_seconds=60, jobs_per_wave=6, shapes=SHAPES,
                                      quota_cpu="16", quota_memory="64Gi")),
    # Its short form, to try it (about ten minutes with setup and drain): five faults.
    "mixed-short": SoakPlan(
        nodes=50, duration_seconds=240, rate=3, lifetime_seconds=(10, 40),
        faults=("apiserver-restart", "leader-kill", "watch-expiry", "etcd-restart",
                "apiserver-pause"),
        mixed=MixedPlan(wave_every_seconds=40, jobs_per_wave=5, shapes=SHAPES,
                        quota_cpu="16", quota_memory="64Gi")),
}
