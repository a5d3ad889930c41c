"""The mixed run (issue 37): the soak with Kueue and Karpenter beside kpysched.

`installed(plan, state, logs)` starts Kueue's controller manager (tests/cluster/
kueue.py) and Karpenter with its KWOK provider (tests/cluster/karpenter.py) on the
soak's cluster when the plan has a `mixed` part, and yields a `MixedRun` that run.py
calls at each stage: its observer replaces the soak's, its waves run beside churn,
its drain comes after churn, and its figures and problems join the report.

Karpenter's NodePool makes nodes that carry a label and a NoSchedule taint of their
own. Only the Jobs' pods tolerate the taint, so Karpenter provisions only for them
(it ignores a pod no NodePool could take) and churn's pods never land on its nodes:
what Karpenter adds and removes follows Kueue's waves alone, and its nodes are all
gone once the Jobs are done, which the drain waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

from kubernetes_asyncio import client

from kpysched.objects.quantity import milli_value, value
from tests.cluster import karpenter, kueue, processes
from tests.cluster.state import ClusterState, Component
from tests.soak import waves
from tests.soak.mixed_checks import Capacity
from tests.soak.mixed_observer import MixedObserver
from tests.soak.mixed_plan import MixedPlan
from tests.soak.plan import SoakPlan

POOL: Final = "soak-burst"  # the NodePool's and KWOKNodeClass's name
BURST_LABEL: Final = "soak.kpysched.io/burst"
BURST_TAINT: Final = {"key": BURST_LABEL, "value": "true", "effect": "NoSchedule"}
TOLERATION: Final = {"key": BURST_LABEL, "operator": "Exists", "effect": "NoSchedule"}
POOL_SELECTOR: Final = {BURST_LABEL: "true"}


class MixedRun:
    """Kueue's and Karpenter's part of one soak: its observer, its waves, its drain, and
    its figures and problems for the report (report.ReportPart)."""

    def __init__(self, plan: MixedPlan, seed: int, components: list[Component]) -> None:
        self.plan = plan
        self.seed = seed
        self.components = components
        self.observer = MixedObserver(
            frozenset(shape.kind for shape in plan.shapes),
            Capacity(milli_value(plan.quota_cpu), value(plan.quota_memory)),
            karpenter.NODEPOOL_LABEL)
        self.waves: waves.Waves | None = None
        self.outcomes: waves.JobOutcomes | None = None
        self.drain_seconds = 0.0
        self.lost: list[str] = []
        self.exited: list[str] = []

    async def prepare(self, api: client.ApiClient) -> None:
        """The ClusterQueue and the NodePool, before any scheduler starts."""
        await waves.create_queue(api, self.plan)
        custom = client.CustomObjectsApi(api)
        pool = karpenter.node_pool(
            POOL, labels=POOL_SELECTOR, taints=[BURST_TAINT], cpu_limit=self.plan.pool_cpu_limit,
            consolidate_after=self.plan.consolidate_after,
            # All at once: the default budget would let one in ten empty nodes go at a time.
            budget="100%")
        for group, version, plural, body in pool:
            await custom.create_cluster_custom_object(group, version, plural, body)

    async def run(self, api: client.ApiClient, stop: asyncio.Event) -> None:
        """Kueue's waves, beside churn, until `stop`."""
        self.waves = waves.Waves(api, self.plan, self.seed, toleration=dict(TOLERATION),
                                 pool_selector=dict(POOL_SELECTOR))
        await self.waves.run(stop)

    async def drain(self, api: client.ApiClient) -> None:
        """After churn: until every Job has finished, no Job pod is pending and Karpenter
        has removed every node it added (or `drain_seconds` pass); what is left then is
        judged by `problems`."""
        began = time.monotonic()
        deadline = began + self.plan.drain_seconds
        while True:
            outcomes = await waves.job_outcomes(api)
            pending = [r for r in self.observer.job_pods()
                       if not r.deleted and not r.finished and not r.node]
            done = not outcomes.unfinished and not pending and \
                self.observer.autoscaled_now() == 0
            if done or time.monotonic() > deadline:
                break
            await asyncio.sleep(2)
        self.outcomes = outcomes
        self.drain_seconds = round(time.monotonic() - began, 1)
        self.lost = sorted(r.name for r in pending)
        self.exited = [c.name for c in self.components if not processes.alive(c.pid)]

    def progress(self) -> dict[str, object]:
        """For the soak's progress line."""
        seen = self.observer
        return {"jobs": self.waves.counts.jobs_created if self.waves is not None else 0,
                "job_pods_pending": sum(1 for r in seen.pending() if r.kind in seen.job_kinds),
                "karpenter_nodes": seen.autoscaled_now(),
                "room_violations": len(seen.room.violations),
                "quota_violations": len(seen.quota.violations)}

    # --- the report's part -------------------------------------------------------------

    def figures(self) -> dict[str, Any]:
        seen = self.observer
        pods = seen.job_pods()
        scale_up = seen.scale_up_seconds()
        counts = self.waves.counts if self.waves is not None else waves.WaveCounts()
        return {
            "jobWaves": counts.waves, "jobsCreated": counts.jobs_created,
            "jobsByKind": counts.by_kind, "jobCreateRetries": counts.create_retries,
            "jobCreateErrors": counts.create_errors,
            **(self.outcomes.figures() if self.outcomes is not None else {}),
            "jobPodsCreated": len(pods),
            "jobPodsPlaced": sum(1 for r in pods if r.node),
            "quotaCpuMilli": seen.quota.quota.cpu_milli,
            "peakQueueCpuMilli": seen.quota.peak.cpu_milli,
            "peakQueuePods": seen.quota.peak.pods,
            "quotaExceeded": len(seen.quota.violations),
            "karpenterNodesAdded": len(seen.autoscaled),
            "karpenterNodesRemoved": sum(1 for n in seen.autoscaled.values()
                                         if n.removed_at is not None),
            "karpenterNodesPeak": seen.peak_autoscaled,
            "karpenterNodesLeft": seen.autoscaled_now(),
            "podsOnAddedNodes": len(scale_up),
            "scaleUpSeconds": {"median": statistics.median(scale_up) if scale_up else None,
                               "max": max(scale_up, default=None)},
            "pendingWithRoom": len(seen.room.violations),
            "longestPendingWithRoomSeconds": round(seen.room.longest_seconds, 1),
            "longestPendingWithRoomPod": seen.room.longest_pod,
            "lostJobPods": len(self.lost),
            "drainSeconds": self.drain_seconds,
        }

    def problems(self) -> list[str]:
        seen = self.observer
        found = [f"pending with room: {detail}" for detail in seen.room.violations.values()]
        found += [f"quota: {detail}" for detail in seen.quota.violations]
        found += [f"lost: {name} admitted by Kueue, never placed, never deleted"
                  for name in self.lost]
        if self.outcomes is not None:
            found += [f"job {name} unfinished after the drain" for name in
                      self.outcomes.unfinished[:20]]
            if self.outcomes.failed:
                found.append(f"{self.outcomes.failed} Job(s) failed")
        if not seen.autoscaled:
            found.append("Karpenter added no node: the run did not exercise the autoscaler")
        if seen.autoscaled_now():
            found.append(f"{seen.autoscaled_now()} node(s) Karpenter added were still there "
                         f"{self.drain_seconds:.0f}s after the Jobs: not removed when empty")
        found += [f"{name} exited during the run" for name in self.exited]
        if self.waves is not None and self.waves.counts.create_errors:
            found.append(f"{self.waves.counts.create_errors} Job(s) could not be created "
                         "within their retries")
        return found


@contextlib.asynccontextmanager
async def installed(plan: SoakPlan, state: ClusterState,
                    logs: Path) -> AsyncIterator[MixedRun | None]:
    """Karpenter and Kueue on the cluster while the block runs, when `plan` is a mixed
    one (else None); their logs are kept in `logs`."""
    if plan.mixed is None:
        yield None
        return
    with contextlib.ExitStack() as stack:
        try:
            components = [
                await asyncio.to_thread(stack.enter_context, karpenter.running(state)),
                await asyncio.to_thread(stack.enter_context, kueue.running(state))]
            yield MixedRun(plan.mixed, plan.seed, components)
        finally:
            logs.mkdir(parents=True, exist_ok=True)
            for name in (karpenter.NAME, kueue.NAME):
                log = Path(state.dir) / name / f"{name}.log"
                if log.is_file():
                    shutil.copy(log, logs / log.name)
            await asyncio.to_thread(_close_keeping_state, stack, Path(state.dir))


def _close_keeping_state(stack: contextlib.ExitStack, directory: Path) -> None:
    """Stop Karpenter and Kueue, keeping the cluster's state.json current.

    The faults restart kube-apiserver and etcd and save their new pids (and any addon
    restart_apiserver had to start again) to state.json; Kueue's and Karpenter's
    `running` save their own copy of the state on the way out, from before the faults,
    and cluster.down would then stop the old processes and leave the new ones running
    (three kube-apiservers outlived the first mixed runs). So the current state is read
    first and saved again afterwards, without the two addons, whose processes (the pids
    in it, which a restart may have changed) are stopped too."""
    current = ClusterState.load(directory)
    stack.close()
    addons = (karpenter.NAME, kueue.NAME)
    for component in current.components:
        if component.name in addons:
            processes.stop(component.pid)
    current.components = [c for c in current.components if c.name not in addons]
    current.save()
