"""Kueue's part of the mixed run: one ClusterQueue with quota, and Jobs in waves.

Every Job carries the LocalQueue's label, so Kueue's webhook suspends it when it is
created and Kueue lifts `suspend` once the ClusterQueue's quota has room for it; only
then does the Job controller create its pods, which name kpysched. A wave asks for
more than the quota, so part of it waits for Jobs before it to finish (the harness's
KWOK finishes a Job's pod right after it starts). The Jobs are drawn from one seeded
generator, apart from churn's, so both repeat.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube, kueue
from tests.soak.churn import IMAGE, KIND_LABEL, KPYSCHED, LOW_PRIORITY, NAMESPACE
from tests.soak.mixed_plan import JobShape, MixedPlan

QUEUE: Final = "soak"  # the ResourceFlavor's, ClusterQueue's and LocalQueue's name
WAVE_LABEL: Final = "soak/wave"
GROUP, VERSION = kueue.API_VERSION.split("/")
ACTIVE_TIMEOUT_SECONDS: Final = 60.0
# A Job that waited this long between creation and admission waited for quota.
WAITED_SECONDS: Final = 5.0
# A Job's submission is retried while a fault keeps the API server (or Kueue's
# webhook) away, as a batch system would: a lost wave would prove nothing.
CREATE_ATTEMPTS: Final = 30
CREATE_RETRY_SECONDS: Final = 2.0


async def create_queue(api: client.ApiClient, plan: MixedPlan) -> None:
    """The ResourceFlavor, the ClusterQueue with the plan's quota (for the soak's
    namespace) and its LocalQueue; returns once Kueue says the ClusterQueue is Active."""
    custom = client.CustomObjectsApi(api)
    await custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", {
        "apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor",
        "metadata": {"name": QUEUE}, "spec": {}})
    await custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": QUEUE},
        "spec": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": NAMESPACE}},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": QUEUE, "resources": [
                         {"name": "cpu", "nominalQuota": plan.quota_cpu},
                         {"name": "memory", "nominalQuota": plan.quota_memory}]}]}]}})
    await custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "localqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": QUEUE}})

    async def active() -> bool:
        queue = await custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", QUEUE)
        return any(c["type"] == "Active" and c["status"] == "True"
                   for c in queue.get("status", {}).get("conditions", []))

    await kube.wait_for(active, ACTIVE_TIMEOUT_SECONDS, f"ClusterQueue {QUEUE} Active")


def job_body(name: str, shape: JobShape, wave: int, *, toleration: dict[str, str],
             pool_selector: dict[str, str]) -> dict[str, Any]:
    """A Job of `shape` in the LocalQueue; its pods tolerate the autoscaled pool's taint
    (so they may use Karpenter's nodes) and pool-only ones select its label."""
    labels = {KIND_LABEL: shape.kind, WAVE_LABEL: str(wave)}
    spec: dict[str, Any] = {
        "schedulerName": KPYSCHED, "priorityClassName": LOW_PRIORITY,
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
        "tolerations": [toleration],
        "containers": [{"name": "c", "image": IMAGE, "resources": {
            "requests": {"cpu": shape.cpu, "memory": shape.memory}}}]}
    if shape.pool_only:
        spec["nodeSelector"] = dict(pool_selector)
    # No `suspend`: Kueue's webhook sets it.
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {kueue.QUEUE_LABEL: QUEUE, WAVE_LABEL: str(wave)}},
            "spec": {"parallelism": shape.parallelism, "completions": shape.completions,
                     # A pod preempted by churn's high-priority pods is not the Job's end.
                     "backoffLimit": 3,
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


@dataclass
class WaveCounts:
    waves: int = 0
    jobs_created: int = 0
    create_retries: int = 0
    create_errors: int = 0  # given up after CREATE_ATTEMPTS
    by_kind: dict[str, int] = field(default_factory=dict)


class Waves:
    """Creates `plan.jobs_per_wave` Jobs every `plan.wave_every_seconds` until stopped."""

    def __init__(self, api: client.ApiClient, plan: MixedPlan, seed: int, *,
                 toleration: dict[str, str], pool_selector: dict[str, str]) -> None:
        self._batch = client.BatchV1Api(api)
        self._plan = plan
        self._rng = random.Random(f"waves-{seed}")
        self._toleration = toleration
        self._pool_selector = pool_selector
        self.counts = WaveCounts()

    async def run(self, stop: asyncio.Event) -> None:
        next_at = time.monotonic()
        while not stop.is_set():
            if time.monotonic() >= next_at:
                await self._wave()
                next_at += self._plan.wave_every_seconds
            await asyncio.sleep(0.5)

    async def _wave(self) -> None:
        self.counts.waves += 1
        wave = self.counts.waves
        weights = [shape.weight for shape in self._plan.shapes]
        for index in range(self._plan.jobs_per_wave):
            shape = self._rng.choices(self._plan.shapes, weights)[0]
            body = job_body(f"w{wave}-{index}-{shape.kind}", shape, wave,
                            toleration=self._toleration, pool_selector=self._pool_selector)
            if await self._create(body):
                self.counts.jobs_created += 1
                self.counts.by_kind[shape.kind] = self.counts.by_kind.get(shape.kind, 0) + 1
            else:
                self.counts.create_errors += 1

    async def _create(self, body: dict[str, Any]) -> bool:
        for attempt in range(CREATE_ATTEMPTS):
            if attempt:
                self.counts.create_retries += 1
                await asyncio.sleep(CREATE_RETRY_SECONDS)
            try:
                await self._batch.create_namespaced_job(NAMESPACE, body, _preload_content=False)
            except ApiException as error:
                if error.status == 409:
                    return True  # an attempt the fault cut off had created it
            except (TimeoutError, OSError, aiohttp.ClientError):
                pass
            else:
                return True
        return False


@dataclass(frozen=True, slots=True)
class JobOutcomes:
    complete: int
    failed: int
    unfinished: list[str]
    admission_waits: list[float]  # seconds from creation to admission, per admitted Job

    def figures(self) -> dict[str, Any]:
        waits = self.admission_waits
        return {"jobsComplete": self.complete, "jobsFailed": self.failed,
                "jobsUnfinished": len(self.unfinished),
                "jobsThatWaitedForQuota": sum(1 for w in waits if w >= WAITED_SECONDS),
                "admissionWaitSeconds": {
                    "median": statistics.median(waits) if waits else None,
                    "max": max(waits, default=None)}}


async def job_outcomes(api: client.ApiClient) -> JobOutcomes:
    """Every wave's Job as it stands: finished (Complete or Failed) or not, and how long
    each admitted one waited (its startTime is set when Kueue lifts `suspend`)."""
    listed = await client.BatchV1Api(api).list_namespaced_job(
        NAMESPACE, label_selector=WAVE_LABEL, _preload_content=False)
    complete = failed = 0
    unfinished: list[str] = []
    waits: list[float] = []
    for job in json.loads(await listed.read())["items"]:
        status = job.get("status", {})
        done = {c["type"] for c in status.get("conditions", ()) if c.get("status") == "True"}
        if "Complete" in done:
            complete += 1
        elif "Failed" in done:
            failed += 1
        else:
            unfinished.append(job["metadata"]["name"])
        if status.get("startTime"):
            waits.append((_moment(status["startTime"]) -
                          _moment(job["metadata"]["creationTimestamp"])).total_seconds())
    return JobOutcomes(complete, failed, unfinished, waits)


def _moment(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp)
