"""Bounded churn: pods of mixed shapes created at a set rate, deleted after a lifetime.

The shapes exercise what a real cluster throws at a scheduler: plain pods, zonal
node affinity, required anti-affinity and topology spread, high-priority pods that
may preempt, pods created behind a scheduling gate and released seconds later, and
a few that never fit. A quarter go to kube-scheduler, racing kpysched for the same
nodes. Everything is drawn from one seeded generator, so a run can be repeated.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.soak.plan import SoakPlan

NAMESPACE: Final = "soak"
KPYSCHED: Final = "kpysched"
UPSTREAM: Final = "default-scheduler"
KIND_LABEL: Final = "soak/kind"
GATE: Final = "soak.kpysched.io/hold"
LOW_PRIORITY, HIGH_PRIORITY = "soak-low", "soak-high"
IMAGE: Final = "registry.k8s.io/pause:3.10"
ZONES: Final = 3

# (kind, weight): the mix of shapes.
MIX: Final = (("plain", 40), ("zonal", 10), ("anti-affinity", 10), ("spread", 10),
              ("high-priority", 6), ("gated", 12), ("never-fit", 4), ("big", 8))


def priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value,
             "description": "kpysched reliability soak"}
            for name, value in ((LOW_PRIORITY, 100), (HIGH_PRIORITY, 10000))]


def pod_body(name: str, kind: str, scheduler: str, rng: random.Random) -> dict[str, Any]:
    """One pod of the given shape (the wire form, as kubectl would send it)."""
    cpu = f"{rng.choice((100, 200, 250, 500))}m"
    memory = f"{rng.choice((128, 256, 512))}Mi"
    labels = {KIND_LABEL: kind}
    spec: dict[str, Any] = {"schedulerName": scheduler, "priorityClassName": LOW_PRIORITY,
                            "terminationGracePeriodSeconds": 0}
    if kind == "zonal":
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{
                "key": "topology.kubernetes.io/zone", "operator": "In",
                "values": [f"zone-{rng.randrange(ZONES)}"]}]}]}}}
    elif kind == "anti-affinity":
        labels["app"] = f"anti-{rng.randrange(8)}"
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": labels["app"]}},
             "topologyKey": "kubernetes.io/hostname"}]}}
    elif kind == "spread":
        labels["app"] = f"spread-{rng.randrange(4)}"
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    elif kind == "high-priority":
        spec["priorityClassName"] = HIGH_PRIORITY
        cpu = f"{rng.choice((1000, 1500, 2000))}m"
    elif kind == "big":
        cpu = f"{rng.choice((1500, 2000, 3000))}m"
    elif kind == "gated":
        spec["schedulingGates"] = [{"name": GATE}]
    elif kind == "never-fit":
        cpu = "100"
    spec["containers"] = [{"name": "c", "image": IMAGE,
                           "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels}, "spec": spec}


@dataclass
class ChurnCounts:
    created: int = 0
    deleted: int = 0
    ungated: int = 0
    create_errors: int = 0
    delete_errors: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    # Errors churn did not expect (a bug in the soak itself): the soak fails on any.
    unexpected: list[str] = field(default_factory=list)


class Churn:
    """Creates pods at `plan.rate` until stopped; `bound_at(name)` (the observer's
    view) says when a pod was bound, so it is deleted `lifetime` seconds later."""

    def __init__(self, api: client.ApiClient, plan: SoakPlan,
                 bound_at: Callable[[str], float | None],
                 live_pods: Callable[[], int], pending_never_fit: Callable[[], int]) -> None:
        self._core = client.CoreV1Api(api)
        self._plan = plan
        self._rng = random.Random(plan.seed)
        self._bound_at = bound_at
        self._live_pods = live_pods
        self._pending_never_fit = pending_never_fit
        self.counts = ChurnCounts()
        self._lifetimes: dict[str, float] = {}  # pod name -> seconds to live once bound
        self._created_at: dict[str, float] = {}
        self._ungate_at: dict[str, float] = {}
        self._serial = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def _kind(self) -> str:
        kinds, weights = zip(*MIX, strict=True)
        kind: str = self._rng.choices(kinds, weights)[0]
        if kind == "never-fit" and self._pending_never_fit() >= self._plan.never_fit_cap:
            return "plain"
        return kind

    async def run(self, stop: asyncio.Event) -> None:
        """Create, ungate and delete until `stop`; then release every gate still held."""
        interval = 1.0 / self._plan.rate
        next_at = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_at and self._live_pods() < self._plan.live_pod_cap:
                self._spawn(self._create())
                next_at += interval
            elif now >= next_at:
                next_at = now + interval  # above the cap: skip, do not burst later
            self._ungate_due(now)
            self._delete_due(now)
            await asyncio.sleep(min(0.05, interval))
        self._ungate_due(float("inf"))
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=60)

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.counts.unexpected.append(f"{type(error).__name__}: {error}")

    async def _create(self) -> None:
        self._serial += 1
        kind = self._kind()
        scheduler = UPSTREAM if self._rng.random() < self._plan.upstream_share else KPYSCHED
        name = f"{kind}-{self._serial}"
        body = pod_body(name, kind, scheduler, self._rng)
        low, high = self._plan.lifetime_seconds
        self._lifetimes[name] = self._rng.uniform(low, high)
        self._created_at[name] = time.monotonic()
        if kind == "gated":
            self._ungate_at[name] = time.monotonic() + self._rng.uniform(2, 8)
        try:
            await self._core.create_namespaced_pod(NAMESPACE, body, _preload_content=False)
        except (TimeoutError, ApiException, OSError, aiohttp.ClientError):
            # The API server may be down (a fault): the pod may or may not exist; the
            # observer's watch decides. Nothing is retried, as a client would not.
            self.counts.create_errors += 1
            return
        self.counts.created += 1
        self.counts.by_kind[kind] = self.counts.by_kind.get(kind, 0) + 1

    def _ungate_due(self, now: float) -> None:
        for name, when in list(self._ungate_at.items()):
            if when <= now:
                del self._ungate_at[name]
                self._spawn(self._ungate(name))

    async def _ungate(self, name: str) -> None:
        patch = [{"op": "remove", "path": "/spec/schedulingGates"}]
        for _ in range(20):  # a fault may be on: the gate must come off in the end
            try:
                await self._core.patch_namespaced_pod(name, NAMESPACE, patch,
                                                      _content_type="application/json-patch+json")
            except ApiException as error:
                if error.status in (404, 422):
                    return  # gone, or never created
            except (TimeoutError, OSError, aiohttp.ClientError):
                pass
            else:
                self.counts.ungated += 1
                return
            await asyncio.sleep(2)

    def _delete_due(self, now: float) -> None:
        for name, lifetime in list(self._lifetimes.items()):
            bound = self._bound_at(name)
            start = bound if bound is not None else (
                self._created_at[name] if name.startswith("never-fit") else None)
            if start is not None and now - start >= lifetime:
                del self._lifetimes[name]
                self._spawn(self._delete(name))

    async def _delete(self, name: str) -> None:
        try:
            await self._core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0,
                                                   _preload_content=False)
        except ApiException as error:
            if error.status != 404:
                self.counts.delete_errors += 1
            return
        except (TimeoutError, OSError, aiohttp.ClientError):
            self.counts.delete_errors += 1
            return
        self.counts.deleted += 1
