"""What the mixed run adds to a soak plan: Kueue's Jobs in waves and Karpenter's pool.

The mixed run (issue 37) is the soak with the tools users run around a scheduler:
Kueue admits Jobs within a ClusterQueue's quota, Karpenter (KWOK provider) adds nodes
for the pods that fit none and removes them once empty, while kpysched's two replicas
place every Job pod under the soak's faults. cluster-autoscaler is not part of it: its
module cannot be fetched here (docs/integrations.md), so Karpenter is the autoscaler.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobShape:
    """One kind of Job a wave may create. `pool_only` pods select the autoscaled pool's
    label, so only a node Karpenter made can take them; pods bigger than a static node
    (4 CPUs) also need one."""

    kind: str
    cpu: str
    memory: str
    parallelism: int
    completions: int
    pool_only: bool = False
    weight: int = 1


@dataclass(frozen=True, slots=True)
class MixedPlan:
    # A wave of Jobs every `wave_every_seconds`; the waves ask for more than the quota,
    # so some Jobs wait for others to finish.
    wave_every_seconds: float
    jobs_per_wave: int
    shapes: tuple[JobShape, ...]
    quota_cpu: str
    quota_memory: str
    # Karpenter's NodePool: the most CPU it may hold, and how long a node stays empty
    # before it is removed (consolidationPolicy WhenEmpty).
    pool_cpu_limit: str = "128"
    consolidate_after: str = "10s"
    # After the churn stops: how long the Jobs may take to finish and Karpenter to
    # remove its nodes before what is left counts against the run.
    drain_seconds: float = 300.0


# Small Jobs fit the static nodes; big ones (6 CPUs) fit none of them and pool-only
# ones select a label only Karpenter's nodes carry: both wait for Karpenter.
SHAPES = (
    JobShape("job-small", cpu="500m", memory="256Mi", parallelism=4, completions=8, weight=3),
    JobShape("job-big", cpu="6", memory="1Gi", parallelism=2, completions=2, weight=2),
    JobShape("job-pool", cpu="1", memory="512Mi", parallelism=3, completions=3,
             pool_only=True, weight=2),
)
