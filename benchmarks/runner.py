"""One measured run of one scheduler on a fresh cluster, and a suite of them.

A run: fresh etcd + kube-apiserver (benchmarks.cluster) → namespaces, nodes and
initial pods (already bound) → the scheduler under test, started and ready →
metrics snapshot → measured pods created with high concurrency while a watch
records when each gets a node → snapshot again → everything torn down.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import msgspec

from benchmarks import cluster, gangs, promtext, schedulers, steady, workloads
from benchmarks import extender as bench_extender
from benchmarks.kubeapi import BenchApi, encode
from benchmarks.observer import BindingObserver
from benchmarks.profiling import Profiler
from benchmarks.results import RunResult
from benchmarks.stats import (
    drain_rate,
    per_second,
    percentile,
    sampled_share,
    throughput_samples,
)
from tests.cluster import procfs
from tests.cluster.cluster import ClusterError, log_tail
from tests.progress import Progress

ALGORITHM_HISTOGRAM = "scheduler_scheduling_algorithm_duration_seconds"
ATTEMPTS_COUNTER = "scheduler_schedule_attempts_total"
EVENTS_DROPPED = "kpysched_events_dropped_total"
QUEUE_INCOMING = "scheduler_queue_incoming_pods_total"
PODGROUP_ATTEMPTS = "scheduler_podgroup_schedule_attempts_total"
# A pod-group cycle's algorithm (every member tried) and the whole attempt.
PODGROUP_HISTOGRAMS = {
    "algorithm": "scheduler_podgroup_scheduling_algorithm_duration_seconds",
    "attempt": "scheduler_podgroup_scheduling_attempt_duration_seconds",
}
SETTLE_MAX_SECONDS = 5.0
# Live mode with blocked pods: how long their first pass may take (10,000 pods).
BLOCKED_SETTLE_MAX_SECONDS = 600.0
CreateMode = Literal["live", "before"]
# One-at-a-time workloads: once ready, the scheduler is left alone QUIET_SECONDS (the
# tail of its start-up) and its idle CPU rate is then read over IDLE_SECONDS; each
# pod's cost is read again TRAILING_SECONDS after its binding (events written, garbage
# collected), for the settled figure beside the one to the binding.
QUIET_SECONDS = 3.0
IDLE_SECONDS = 5.0
TRAILING_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class RunSpec:
    workload: workloads.Workload
    sizes: workloads.Sizes
    qps: float | None = None
    burst: int | None = None
    create_mode: CreateMode = "before"
    timeout: float | None = None  # seconds for every measured pod to bind
    concurrency: int = 48
    workdir: Path | None = None
    profile_dir: Path | None = None  # profile kpysched with py-spy into this directory
    logs_dir: Path | None = None  # keep each scheduler's log here
    duration: float | None = None  # steady state: the window's seconds (workload's default)

    def steady_seconds(self) -> float | None:
        """The steady-state window's length; None unless the workload is steady."""
        if self.workload.steady_seconds is None:
            return None
        return self.duration if self.duration is not None else self.workload.steady_seconds

    def bind_timeout(self) -> float:
        # Generous: even 10 pods/s must finish; a stuck scheduler is reported, not hung on.
        return self.timeout if self.timeout is not None else 60.0 + self.sizes.pods / 10


Say = Callable[[str], None]


def run_once(spec: RunSpec, scheduler_name: str, repeat: int,
             progress: Say = print) -> RunResult:
    started = time.monotonic()
    load = os.getloadavg()[0]
    progress(f"[{scheduler_name} #{repeat}] starting a fresh cluster (load average {load:.2f})")
    workload = spec.workload
    bench = cluster.start(spec.workdir, resource_claim_controller=workload.dra is not None,
                          gates=workload.gates,
                          crds=(gangs.COSCHEDULING_CRD,) if workload.coscheduling else ())
    try:
        result = asyncio.run(_run(spec, bench, scheduler_name, repeat, started, progress))
        result.load_average = load
        return result
    finally:
        cluster.stop(bench.directory)


async def _populate(api: BenchApi, spec: RunSpec, scheduler_name: str) -> None:
    workload, sizes = spec.workload, spec.sizes
    labels = dict(workload.namespace_labels)
    for namespace in workloads.NAMESPACES:
        await api.must("POST", "/api/v1/namespaces",
                       {"metadata": {"name": namespace, "labels": labels}})
    await api.create_all(("/api/v1/nodes", encode(workload.node(i)))
                         for i in range(sizes.nodes))
    if workload.csi_volumes_per_node is not None:
        await api.create_all(("/apis/storage.k8s.io/v1/csinodes", encode(workload.csi_node(i)))
                             for i in range(sizes.nodes))
    if workload.dra is not None:
        await _create_dra_objects(api, workload.dra, sizes.nodes)
    await _create_claims(api, workloads.INIT_NAMESPACE, workload.init_pod,
                         [f"init-{i}" for i in range(sizes.init_pods)])
    await _create_claims(api, workloads.MEASURED_NAMESPACE, workload.measured_pod,
                         [f"{workload.measured_pod.prefix}-{i}" for i in range(sizes.pods)])
    init_path = f"/api/v1/namespaces/{workloads.INIT_NAMESPACE}/pods"
    await api.create_all(
        (init_path, encode(workload.init_pod_for(i).body(
            f"init-{i}", scheduler_name, f"node-{workload.place_init(i, sizes.nodes)}")))
        for i in range(sizes.init_pods))
    if workload.dra is not None and workload.init_pod.resource_claim:
        await _allocate_init_claims(api, spec)
    if workload.gangs is not None:
        await _create_pod_groups(api, workloads.MEASURED_NAMESPACE, workload.gangs,
                                 sizes.pods)


async def _create_pod_groups(api: BenchApi, namespace: str, groups: gangs.Gangs,
                             pods: int) -> None:
    """The PodGroup of every gang that `pods` members fill, before any member."""
    await api.create_all((groups.path(namespace), encode(groups.pod_group(group)))
                         for group in range(groups.count(pods)))


DRA_PATH = "/apis/resource.k8s.io/v1"
CLAIMS_READY_TIMEOUT_SECONDS = 300.0


async def _create_dra_objects(api: BenchApi, dra: workloads.DraSetup, nodes: int) -> None:
    """The driver's ResourceSlices (one per node), the DeviceClass and the claim
    template in both namespaces, as scheduler_perf's createResourceDriver and
    createAny ops make them."""
    await api.must("POST", f"{DRA_PATH}/deviceclasses", dra.device_class())
    for namespace in (workloads.INIT_NAMESPACE, workloads.MEASURED_NAMESPACE):
        await api.must("POST", f"{DRA_PATH}/namespaces/{namespace}/resourceclaimtemplates",
                       dra.claim_template(namespace))
    await api.create_all((f"{DRA_PATH}/resourceslices", encode(dra.resource_slice(f"node-{i}")))
                         for i in range(nodes))


async def _allocate_init_claims(api: BenchApi, spec: RunSpec) -> None:
    """Initial pods are bound from the start; their claims must hold devices as if a
    scheduler had allocated them: claim `init-i` gets device instance-(i // nodes) of
    the node pod `init-i` is bound to, reserved for that pod (uid from a list)."""
    dra, sizes = spec.workload.dra, spec.sizes
    assert dra is not None
    namespace = workloads.INIT_NAMESPACE
    claims_path = f"{DRA_PATH}/namespaces/{namespace}/resourceclaims"
    names = [f"init-{i}" for i in range(sizes.init_pods)]
    await api.create_all((claims_path, encode(dra.allocated_claim(namespace, name)))
                         for name in names)
    listing = msgspec.json.decode(await api.must(
        "GET", f"/api/v1/namespaces/{namespace}/pods"))
    uids = {item["metadata"]["name"]: item["metadata"]["uid"] for item in listing["items"]}
    patches = []
    for i, name in enumerate(names):
        node = f"node-{spec.workload.place_init(i, sizes.nodes)}"
        patches.append((f"{claims_path}/{name}/status", encode(
            dra.allocation_status(node, i // sizes.nodes, name, uids[name]))))
    await api.create_all(patches, method="PATCH",
                         content_type="application/merge-patch+json")


async def _wait_for_template_claims(api: BenchApi, spec: RunSpec, progress: Say
                                    ) -> float:
    """Until the resourceclaim controller has made every measured pod's claim
    (pod.status.resourceClaimStatuses set): before that no scheduler may place the
    pod. Returns the seconds waited."""
    started = time.monotonic()
    path = f"/api/v1/namespaces/{workloads.MEASURED_NAMESPACE}/pods"
    while True:
        listing = msgspec.json.decode(await api.must("GET", path))
        ready = sum(1 for item in listing["items"]
                    if (item.get("status") or {}).get("resourceClaimStatuses"))
        if ready >= spec.sizes.pods:
            waited = time.monotonic() - started
            progress(f"the resourceclaim controller made {ready} claims ({waited:.1f}s)")
            return waited
        if time.monotonic() - started > CLAIMS_READY_TIMEOUT_SECONDS:
            raise ClusterError(
                f"only {ready}/{spec.sizes.pods} measured pods got their ResourceClaim "
                f"within {CLAIMS_READY_TIMEOUT_SECONDS:.0f}s")
        await asyncio.sleep(1.0)


async def _create_claims(api: BenchApi, namespace: str, shape: workloads.PodShape,
                         pod_names: list[str]) -> None:
    """Each pod's bound claim and volume, before any pod exists (also the measured
    ones: creating them is setup, not scheduling). Status is a subresource, so the
    Bound phases are written after the objects, as scheduler_perf does."""
    if not shape.claim:
        return
    pairs = [workloads.volume_bodies(namespace, name, shape.csi_volume) for name in pod_names]
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    await api.create_all((claims_path, encode(claim)) for claim, _ in pairs)
    await api.create_all(("/api/v1/persistentvolumes", encode(volume)) for _, volume in pairs)
    bound = encode({"status": {"phase": "Bound"}})
    merge = "application/merge-patch+json"
    await api.create_all(((f"{claims_path}/{claim['metadata']['name']}/status", bound)
                          for claim, _ in pairs), method="PATCH", content_type=merge)
    await api.create_all(((f"/api/v1/persistentvolumes/{volume['metadata']['name']}/status",
                           bound) for _, volume in pairs), method="PATCH", content_type=merge)


def _pod_bodies(shape: workloads.PodShape, namespace: str, count: int,
                scheduler_name: str, groups: gangs.Gangs | None
                ) -> list[tuple[str, bytes]]:
    """Pods `<prefix>-0..count-1` of `shape`, each in its gang when there are gangs."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    bodies = []
    for i in range(count):
        body = shape.body(f"{shape.prefix}-{i}", scheduler_name)
        bodies.append((path, encode(body if groups is None else groups.join(body, i))))
    return bodies


def _measured_bodies(spec: RunSpec, scheduler_name: str) -> list[tuple[str, bytes]]:
    return _pod_bodies(spec.workload.measured_pod, workloads.MEASURED_NAMESPACE,
                       spec.sizes.pods, scheduler_name, spec.workload.gangs)


async def _churn(api: BenchApi, spec: RunSpec, scheduler_name: str,
                 stop: asyncio.Event) -> int:
    """Create never-fitting pods at the workload's rate until told to stop."""
    shape = spec.workload.churn_pod
    assert shape is not None
    path = f"/api/v1/namespaces/{workloads.CHURN_NAMESPACE}/pods"
    created = 0
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    while not stop.is_set():
        await api.must("POST", path, encode(shape.body(f"{shape.prefix}-{created}",
                                                       scheduler_name)))
        created += 1
        next_at += spec.workload.churn_interval_seconds
        try:
            await asyncio.wait_for(stop.wait(), max(0.0, next_at - loop.time()))
        except TimeoutError:
            continue
    return created


async def _create_blocked(api: BenchApi, spec: RunSpec, scheduler_name: str) -> int:
    """The workload's fixed never-fitting pods (Workload.blocked_pods), all at once
    (after their PodGroups, when they are gangs)."""
    workload = spec.workload
    if workload.blocked_pods is None:
        return 0
    shape = workload.churn_pod
    assert shape is not None
    count = workload.blocked_pods(spec.sizes.nodes)
    if workload.blocked_gangs is not None:
        await _create_pod_groups(api, workloads.CHURN_NAMESPACE, workload.blocked_gangs,
                                 count)
    await api.create_all(_pod_bodies(shape, workloads.CHURN_NAMESPACE, count,
                                     scheduler_name, workload.blocked_gangs))
    return count


async def _sample_scheduled(scheduler: schedulers.SchedulerUnderTest,
                            timeline: list[float],
                            unschedulable: list[tuple[float, float]]) -> None:
    """Once a second, the scheduler's own count of scheduled pods (bind done), to
    tell a scheduler that stalls from a watch that delivers late, and (when read, count)
    of its unschedulable attempts, to tell those made while measured pods were
    pending from those after."""
    while True:
        await _sample_unschedulable(scheduler, unschedulable, timeline)
        await asyncio.sleep(1.0)


async def _sample_unschedulable(scheduler: schedulers.SchedulerUnderTest,
                                unschedulable: list[tuple[float, float]],
                                scheduled: list[float] | None = None) -> None:
    samples = promtext.parse(await asyncio.to_thread(scheduler.metrics_text))
    at = time.monotonic()
    if scheduled is not None:
        scheduled.append(promtext.total(samples, ATTEMPTS_COUNTER, result="scheduled"))
    unschedulable.append((at, promtext.total(samples, ATTEMPTS_COUNTER,
                                             result="unschedulable")))


async def _wait_blocked_settled(scheduler: schedulers.SchedulerUnderTest, blocked: int,
                                tag: str, progress: Say) -> None:
    """Live mode: until the scheduler holds every blocked pod among the unschedulable or
    gated ones (its first attempts done), so the measured pods' cost is what the waiting
    pods add to each event, not that first pass."""
    deadline = time.monotonic() + BLOCKED_SETTLE_MAX_SECONDS
    waiting = 0.0
    while time.monotonic() < deadline:
        samples = promtext.parse(await asyncio.to_thread(scheduler.metrics_text))
        waiting = sum(promtext.total(samples, "scheduler_pending_pods", queue=queue)
                      for queue in ("unschedulable", "gated"))
        if waiting >= blocked:
            progress(f"{tag} all {blocked} blocked pods wait in the queue")
            return
        await asyncio.sleep(1.0)
    raise RuntimeError(f"{tag} only {waiting:.0f} of {blocked} blocked pods reached the "
                       f"unschedulable or gated pods within {BLOCKED_SETTLE_MAX_SECONDS:.0f}s")


def _unschedulable_by(moment: float, samples: list[tuple[float, float]],
                      before: float) -> float:
    """Unschedulable attempts from the start to the first sample at or after
    `moment` (so up to a second past it); NaN without such a sample."""
    return next((count - before for at, count in samples if at >= moment), math.nan)


async def _settle(api: BenchApi) -> promtext.Samples:
    """Wait (bounded) until the scheduler's trailing writes (events) are done."""
    last = promtext.parse(await api.get_text("/metrics"))
    deadline = time.monotonic() + SETTLE_MAX_SECONDS
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        current = promtext.parse(await api.get_text("/metrics"))
        if cluster.scheduler_requests(current) == cluster.scheduler_requests(last):
            return current
        last = current
    return last


async def _steady_end(api: BenchApi, scheduler: schedulers.SchedulerUnderTest,
                      bench: cluster.BenchCluster
                      ) -> tuple[promtext.Samples, schedulers.ProcStats, float,
                                 promtext.Samples]:
    """At a steady-state window's end: the API server's metrics, the scheduler's CPU,
    the API server's CPU and the scheduler's metrics, in the order _settle's caller
    reads them."""
    server = promtext.parse(await api.get_text("/metrics"))
    cpu = schedulers.proc_stats(scheduler.pid)
    apiserver_cpu = schedulers.proc_stats(bench.state.apiserver_pid).cpu_seconds
    metrics = promtext.parse(await asyncio.to_thread(scheduler.metrics_text))
    return server, cpu, apiserver_cpu, metrics


def _writes_by_kind(before: promtext.Samples, after: promtext.Samples,
                    steady_state: bool = False) -> dict[str, float]:
    """Write requests the API server served during the run, by verb and resource,
    less the benchmark's own pod creates and the server's lease renewals (leader
    election is off, so everything else is the scheduler's, or with DRA the
    resourceclaim controller's). In steady state the pod deletes are the benchmark's
    too (its replacements)."""
    found = promtext.delta_by(before, after, "apiserver_request_total", _write_kind)
    if steady_state:
        found = {kind: count for kind, count in found.items()
                 if not kind.startswith("DELETE pods")}
    return found


def _write_kind(labels: dict[str, str]) -> str | None:
    verb = labels.get("verb", "")
    resource = labels.get("resource", "")
    sub = labels.get("subresource", "")
    if verb not in {"POST", "PATCH", "PUT", "DELETE", "APPLY"} or not resource:
        return None
    if (verb == "POST" and resource == "pods" and not sub) or resource == "leases":
        return None  # the benchmark's creates; the API server's own identity lease
    key = promtext.request_kind(labels)
    code = labels.get("code", "")
    if not code.startswith("2"):
        key += f" ({code})"
    return key


def _attempts(before: promtext.Samples, after: promtext.Samples) -> dict[str, float]:
    """Scheduling attempts during the run by result (scheduled, unschedulable, error)."""
    start = promtext.by_label(before, ATTEMPTS_COUNTER, "result")
    return {result: count - start.get(result, 0.0)
            for result, count in promtext.by_label(after, ATTEMPTS_COUNTER, "result").items()}


def _podgroup_latency_ms(before: promtext.Samples, after: promtext.Samples
                         ) -> dict[str, float]:
    """p50/p99 (ms) of the pod-group cycle histograms over the run; {} without cycles."""
    found: dict[str, float] = {}
    for label, histogram in PODGROUP_HISTOGRAMS.items():
        delta = promtext.bucket_delta(before, after, histogram)
        for q in (0.5, 0.99):
            value = promtext.quantile(q, delta)
            if value is not None:
                found[f"{label} p{round(q * 100)}"] = value * 1000
    return found


@dataclass(frozen=True, slots=True)
class PodCost:
    """One pod measured alone: the scheduler process's CPU (user + system, every
    thread, from /proc) from just before the pod's create request to the moment the
    watch saw it bound, less what the idle process spends in as long; and the same to
    TRAILING_SECONDS after the binding."""

    pod: str
    seconds_to_bind: float
    cpu_ms_to_bind: float
    cpu_ms_settled: float


async def _idle_cpu_rate(pid: int) -> float:
    """CPU seconds per second the ready scheduler spends with nothing to schedule."""
    await asyncio.sleep(QUIET_SECONDS)
    cpu, start = schedulers.proc_stats(pid).cpu_seconds, time.monotonic()
    await asyncio.sleep(IDLE_SECONDS)
    return (schedulers.proc_stats(pid).cpu_seconds - cpu) / (time.monotonic() - start)


async def _create_one_at_a_time(api: BenchApi, spec: RunSpec, bodies: list[tuple[str, bytes]],
                                observer: BindingObserver, pid: int, idle_rate: float,
                                on_created: Callable[[int, float], None],
                                costs: list[PodCost]) -> None:
    """Create the measured pods one by one, each once the previous one is bound (or
    its share of the timeout is spent: the rest are not created), measuring each."""
    timeout = spec.bind_timeout() / len(bodies)
    for index, (path, body) in enumerate(bodies):
        name = f"{spec.workload.measured_pod.prefix}-{index}"
        cpu, start = schedulers.proc_stats(pid).cpu_seconds, time.monotonic()
        await api.must("POST", path, body)
        on_created(index, time.monotonic())
        bound_at = await observer.wait_pod(name, timeout)
        if bound_at is None:
            return
        to_bind = schedulers.proc_stats(pid).cpu_seconds - cpu
        to_bind_idle = idle_rate * (time.monotonic() - start)
        await asyncio.sleep(TRAILING_SECONDS)
        settled = schedulers.proc_stats(pid).cpu_seconds - cpu
        settled_idle = idle_rate * (time.monotonic() - start)
        costs.append(PodCost(name, bound_at - start, (to_bind - to_bind_idle) * 1000,
                             (settled - settled_idle) * 1000))


async def _show_binds(observer: BindingObserver, description: str, total: int) -> None:
    """Pods bound of the total and the rate, twice a second, until cancelled: read
    from the benchmark's own watch, so the scheduler does no extra work for it."""
    with Progress(description, total, "pods") as shown:
        try:
            while True:
                shown.update_to(len(observer.bound_at))
                await asyncio.sleep(0.5)
        finally:
            shown.update_to(len(observer.bound_at))


def _rate(count: int, seconds: float) -> float:
    return count / seconds if count and seconds > 0 else math.nan


def _per_pod(total: float, pods: int) -> float:
    # A steady-state window in which nothing got scheduled has no pods to divide by.
    return total / pods if pods else math.nan


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else math.nan


def _figures(pods: int, prefix: str, bound_at: dict[str, float], acked: list[float],
             t0: float, scheduler_before: promtext.Samples,
             scheduler_after: promtext.Samples, server_before: promtext.Samples,
             server_after: promtext.Samples, cpu_after: schedulers.ProcStats,
             cpu_before: float, apiserver_cpu: float, startup: float,
             ready_at: float, startup_cpu: float) -> dict[str, float]:
    """Every figure of results.FIGURES for one run; `pods` is what per-pod figures
    divide by (the measured pods; in steady state those bound in the window), `acked`
    each created pod's create reply by its number."""
    bound_times = list(bound_at.values())
    latencies = []
    for index in range(len(acked)):
        moment = bound_at.get(f"{prefix}-{index}")
        if moment is not None and not math.isnan(acked[index]):
            latencies.append(max(0.0, moment - max(acked[index], t0)))
    samples = throughput_samples(t0, bound_times)
    makespan = (max(bound_times) - t0) if bound_times else math.nan
    algorithm = promtext.bucket_delta(scheduler_before, scheduler_after, ALGORITHM_HISTOGRAM)
    attempts = sum(_attempts(scheduler_before, scheduler_after).values())
    requests = (cluster.scheduler_requests(server_after)
                - cluster.scheduler_requests(server_before))
    cpu_seconds = cpu_after.cpu_seconds - cpu_before
    bound = len(bound_times)
    # From the moment the scheduler could work (ready, or the first create when pods
    # are created live) to the last binding.
    active = max(bound_times, default=math.nan) - max(t0, ready_at)

    def ms(seconds: float | None) -> float:
        return math.nan if seconds is None else seconds * 1000

    return {
        "throughput_avg": sum(samples) / len(samples) if samples else math.nan,
        "throughput_p50": percentile(samples, 50),
        "throughput_p90": percentile(samples, 90),
        "throughput_p99": percentile(samples, 99),
        "throughput_max": max(samples) if samples else math.nan,
        "sampled_share": sampled_share(samples, bound, active),
        "throughput_drain": drain_rate(bound_times),
        "throughput_ready": _rate(bound, active),
        "throughput_overall": _rate(bound, makespan),
        "makespan_s": makespan,
        "startup_s": startup,
        "startup_cpu_s": startup_cpu,
        "latency_p50_ms": ms(percentile(latencies, 50)),
        "latency_p90_ms": ms(percentile(latencies, 90)),
        "latency_p99_ms": ms(percentile(latencies, 99)),
        "algorithm_p50_ms": ms(promtext.quantile(0.5, algorithm)),
        "algorithm_p99_ms": ms(promtext.quantile(0.99, algorithm)),
        "attempts_per_pod": _per_pod(attempts, pods),
        "attempts_unschedulable": _attempts(scheduler_before, scheduler_after).get(
            "unschedulable", 0.0),
        "cpu_seconds": cpu_seconds,
        "cpu_ms_per_pod": _per_pod(cpu_seconds * 1000, pods),
        "pods_per_cpu_second": pods / cpu_seconds if cpu_seconds > 0 else math.nan,
        "peak_rss_mib": cpu_after.peak_rss_mib,
        "api_requests_per_pod": _per_pod(requests, pods),
        "apiserver_cpu_seconds": apiserver_cpu,
    }


async def _run(spec: RunSpec, bench: cluster.BenchCluster, scheduler_name: str,
               repeat: int, started: float, progress: Say) -> RunResult:
    sizes = spec.sizes
    tag = f"[{scheduler_name} #{repeat}]"
    live = spec.create_mode == "live"
    async with BenchApi(bench.state, concurrency=spec.concurrency) as api:
        progress(f"{tag} creating {sizes.nodes} nodes and {sizes.init_pods} initial pods")
        await _populate(api, spec, scheduler_name)
        blocked = await _create_blocked(api, spec, scheduler_name)
        if blocked:
            progress(f"{tag} created {blocked} never-fitting pods before the scheduler")
        seconds = spec.steady_seconds()
        driver = (steady.SteadyDriver(api, workloads.MEASURED_NAMESPACE,
                                      spec.workload.measured_pod, scheduler_name,
                                      sizes.pods, seconds, spec.concurrency)
                  if seconds is not None else None)
        # Steady state creates its pods as it goes (SteadyDriver).
        bodies = _measured_bodies(spec, scheduler_name) if driver is None else []
        acked = [math.nan] * len(bodies)

        def on_created(index: int, moment: float) -> None:
            acked[index] = moment

        creating_seconds = math.nan
        if not live:
            progress(f"{tag} creating the {sizes.pods} measured pods before the scheduler")
            creating_started = time.monotonic()
            await api.create_all(bodies, on_created)
            creating_seconds = time.monotonic() - creating_started
            if spec.workload.measured_pod.claim_template is not None:
                await _wait_for_template_claims(api, spec, progress)

        extender = (bench_extender.start(bench.state, spec.workload.extender_delay_ms)
                    if spec.workload.extender_delay_ms is not None else None)
        scheduler = schedulers.make(
            scheduler_name, bench.scheduler_state, spec.qps, spec.burst,
            feature_gates=spec.workload.gates.feature_gates,
            plugins=gangs.COSCHEDULING_PLUGINS if spec.workload.coscheduling else None,
            extenders=extender.config() if extender is not None else None)
        observer = (BindingObserver(api, workloads.MEASURED_NAMESPACE, sizes.pods)
                    if driver is None else
                    BindingObserver(api, workloads.MEASURED_NAMESPACE,
                                    driver.keeper.max_pods + 1, on_bound=driver.bound))
        await observer.start()
        profiler = None
        scheduler_before: promtext.Samples = {}  # a fresh process: its counters start at 0
        cpu_before = 0.0
        server_before = promtext.parse(await api.get_text("/metrics"))
        apiserver_cpu_before = schedulers.proc_stats(bench.state.apiserver_pid).cpu_seconds
        try:
            spawned_at = time.monotonic()
            await asyncio.to_thread(scheduler.start)
            await asyncio.to_thread(schedulers.wait_ready, scheduler)
            ready_at = time.monotonic()
            startup_cpu = schedulers.proc_stats(scheduler.pid).cpu_seconds
            machine_at_ready = procfs.machine_cpu_ticks()
            setup_seconds = ready_at - started
            idle_rate = math.nan
            if spec.workload.one_at_a_time:
                idle_rate = await _idle_cpu_rate(scheduler.pid)
                progress(f"{tag} idle scheduler CPU {idle_rate * 1000:.1f} ms/s")
            if live and blocked:
                await _wait_blocked_settled(scheduler, blocked, tag, progress)
            if live:
                # The scheduler is up and idle: measure only what the measured pods cost.
                scheduler_before = promtext.parse(
                    await asyncio.to_thread(scheduler.metrics_text))
                server_before = promtext.parse(await api.get_text("/metrics"))
                apiserver_cpu_before = schedulers.proc_stats(
                    bench.state.apiserver_pid).cpu_seconds
                cpu_before = schedulers.proc_stats(scheduler.pid).cpu_seconds
            if spec.profile_dir is not None and scheduler_name == schedulers.KPYSCHED:
                profiler = Profiler(scheduler.pid, spec.profile_dir)
                await profiler.start()
                profile_started = (time.monotonic(),
                                   schedulers.proc_stats(scheduler.pid).cpu_seconds)

            progress(f"{tag} measuring {sizes.pods} pods "
                     f"({spec.workload.upstream}, create mode {spec.create_mode}"
                     + (f", kept pending for {seconds:g}s)" if seconds is not None else ")"))
            # Live: from the first create. Before: from the scheduler's spawn (it may
            # bind its first pods before /readyz is seen to say ok).
            t0 = time.monotonic() if live else spawned_at
            creator: asyncio.Task[object] | None = None
            pod_costs: list[PodCost] = []
            if live and spec.workload.one_at_a_time:
                creator = asyncio.create_task(_create_one_at_a_time(
                    api, spec, bodies, observer, scheduler.pid, idle_rate, on_created,
                    pod_costs))
            elif live and driver is None:
                creator = asyncio.create_task(api.create_all(bodies, on_created))
            stop_churn = asyncio.Event()
            churn = (asyncio.create_task(_churn(api, spec, scheduler_name, stop_churn))
                     if spec.workload.churn_pod is not None and not blocked else None)
            scheduled_timeline: list[float] = []
            unschedulable_timeline: list[tuple[float, float]] = []
            # Not while pods are measured one at a time: serving /metrics would be
            # counted in their cost (and is not in the idle rate).
            sampler = None if spec.workload.one_at_a_time else asyncio.create_task(
                _sample_scheduled(scheduler, scheduled_timeline, unschedulable_timeline))
            shown = asyncio.create_task(_show_binds(
                observer, f"{tag} bound", sizes.pods if driver is None
                else driver.keeper.max_pods))
            window: steady.Window | None = None
            try:
                if driver is None:
                    complete = await observer.wait(spec.bind_timeout())
                else:
                    window = await driver.run()
                    t0 = window.started
            finally:
                shown.cancel()
            # The measured phase's end, as the watch saw it (events still trail).
            cpu_at_end = schedulers.proc_stats(scheduler.pid).cpu_seconds
            machine_at_end, ended_at = procfs.machine_cpu_ticks(), time.monotonic()
            if window is not None:
                # Everything is read at the window's end: the pods still pending then
                # are not measured, nor what the scheduler does for them afterwards.
                assert driver is not None
                steady_end = await _steady_end(api, scheduler, bench)
                await driver.drain()
            if sampler is not None:
                sampler.cancel()
            if spec.workload.one_at_a_time and creator is not None:
                await creator  # the last pod's trailing CPU read precedes any /metrics read
            # One more sample right after the last bind the watch saw.
            await _sample_unschedulable(scheduler, unschedulable_timeline)
            stop_churn.set()
            churn_pods = await churn if churn is not None else blocked
            if creator is not None:
                await creator
                creating_seconds = max(a for a in acked if not math.isnan(a)) - t0
            if window is None:
                server_after = await _settle(api)
                cpu_after = schedulers.proc_stats(scheduler.pid)
                apiserver_cpu_after = schedulers.proc_stats(
                    bench.state.apiserver_pid).cpu_seconds
                scheduler_after = promtext.parse(
                    await asyncio.to_thread(scheduler.metrics_text))
            else:
                server_after, cpu_after, apiserver_cpu_after, scheduler_after = steady_end
            profile = await profiler.stop() if profiler is not None else None
        finally:
            await observer.stop()
            await asyncio.to_thread(scheduler.stop)
            if extender is not None:
                extender.stop()
            if spec.logs_dir is not None:
                spec.logs_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(scheduler.log_path, spec.logs_dir / (
                    f"{spec.workload.name}-{sizes.nodes}-{scheduler_name}-{repeat}.log"))
        bound_at = observer.bound_at
        measured = sizes.pods
        if window is not None:
            bound_at = steady.binds_in_window(observer.bound_at, window)
            measured = len(bound_at)
            acked = steady.acked_in_order(window, spec.workload.measured_pod.prefix)
            # Upstream fails a steady-state run in which nothing got scheduled.
            complete = measured > 0
        scheduler_log = "" if complete else log_tail(scheduler.log_path, 40)

    figures = _figures(
        measured, spec.workload.measured_pod.prefix, bound_at, acked, t0,
        scheduler_before, scheduler_after, server_before, server_after,
        cpu_after, cpu_before, apiserver_cpu_after - apiserver_cpu_before,
        ready_at - spawned_at, ready_at, startup_cpu)
    bound_times = list(bound_at.values())
    samples = throughput_samples(t0, bound_times)
    bound = len(bound_times)
    makespan = figures["makespan_s"]
    if profile is not None:
        # Only what happened while py-spy was attached.
        profile["cpu_seconds"] = cpu_after.cpu_seconds - profile_started[1]
        profile["pods"] = sum(1 for moment in bound_times if moment >= profile_started[0])
    if window is not None:
        progress(f"{tag} {bound} pods scheduled in the {window.seconds:.1f}s window "
                 f"({window.created} created, {sizes.pods} kept pending"
                 + (", stopped at the pod limit" if window.exhausted else "")
                 + f"), avg {figures['throughput_avg']:.1f} pods/s")
    else:
        progress(f"{tag} {bound}/{sizes.pods} bound in {makespan:.1f}s, "
                 f"avg {figures['throughput_avg']:.1f} pods/s")
    for cost in pod_costs:
        progress(f"{tag} {cost.pod}: bound {cost.seconds_to_bind:.2f}s after its create, "
                 f"CPU {cost.cpu_ms_to_bind:.0f} ms to the binding, "
                 f"{cost.cpu_ms_settled:.0f} ms to {TRAILING_SECONDS:g}s after (idle less)")
    return RunResult(
        scheduler=scheduler_name, repeat=repeat, pods=measured, bound=bound,
        complete=complete, figures=figures, throughput_samples=samples,
        bound_per_second=per_second(t0, bound_times),
        scheduled_per_second=[b - a for a, b in
                              itertools.pairwise(scheduled_timeline)],
        attempts_by_result=_attempts(scheduler_before, scheduler_after),
        api_writes_by_kind=_writes_by_kind(server_before, server_after,
                                           steady_state=window is not None),
        created_per_second=(window.created / window.seconds if window is not None
                            else _rate(sizes.pods, creating_seconds)),
        setup_seconds=setup_seconds, churn_pods=churn_pods, scheduler_log=scheduler_log,
        profile=profile,
        events_dropped=promtext.delta_by(scheduler_before, scheduler_after, EVENTS_DROPPED,
                                 lambda labels: labels.get("reason", "")),
        queue_incoming=promtext.delta_by(scheduler_before, scheduler_after, QUEUE_INCOMING,
                                 lambda labels: f"{labels.get('event', '')} -> "
                                                f"{labels.get('queue', '')}"),
        podgroup_attempts=promtext.delta_by(scheduler_before, scheduler_after, PODGROUP_ATTEMPTS,
                                    lambda labels: labels.get("result", "")),
        podgroup_latency_ms=_podgroup_latency_ms(scheduler_before, scheduler_after),
        pod_costs=[asdict(cost) for cost in pod_costs],
        idle_cpu_ms_per_second=idle_rate * 1000,
        scheduler_busy_share=_share(cpu_at_end - startup_cpu, ended_at - ready_at),
        machine_idle_share=_share(machine_at_end[0] - machine_at_ready[0],
                                  machine_at_end[1] - machine_at_ready[1]),
        unschedulable_by_last_bind=_unschedulable_by(
            max(bound_times, default=math.inf), unschedulable_timeline,
            promtext.total(scheduler_before, ATTEMPTS_COUNTER, result="unschedulable")))
