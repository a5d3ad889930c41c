"""The backlog test: a mass of pods that fit nowhere, then room for all of them.

`python -m tests.soak.backlog [--pods 50000] [--schedulers kpysched,kube-scheduler]`

For each scheduler, on a fresh benchmark cluster (tests' harness, benchmark flags, the
scheduler as its own user so the API server counts its requests apart):
1. the pods are created in five equal steps while the only node is tainted (so a
   plugin, TaintToleration, rejects them and they wait in the unschedulable pool for
   an event, as pods that do not fit do; with no node at all, both schedulers would
   retry every pod after its backoff instead); after each step, once the scheduler
   has found every pod unschedulable, its RSS is sampled, which gives the memory per
   pending pod (the slope) and shows whether it is linear;
2. for an idle minute with the backlog in place the scheduler's requests per second
   are counted: retrying a backlog must not turn into a request storm;
3. nodes with room for every pod are added, and the time until all are bound (and the
   requests it took per pod) is measured.
Figures go to stdout as JSON and into docs/reliability.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import signal
import sys
import time
from pathlib import Path
from typing import Any, Final

from benchmarks import cluster, promtext, schedulers
from benchmarks.kubeapi import BenchApi, encode
from tests.cluster.kube import node_body
from tests.soak.replicas import rss_bytes

NAMESPACE: Final = "backlog"
CLOSED: Final = {"key": "backlog.kpysched.io/closed", "value": "true", "effect": "NoSchedule"}
STEPS: Final = 5
PODS_PER_NODE: Final = 100
IDLE_SECONDS: Final = 60.0
SETTLE_TIMEOUT_SECONDS: Final = 1800.0
# Enough for the backlog's events and status patches to be written in minutes; the
# same for both schedulers.
QPS, BURST = 500.0, 1000


def _pod(name: str, scheduler_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": scheduler_name, "containers": [{
                "name": "c", "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def _metric(scheduler: schedulers.SchedulerUnderTest, name: str, **labels: str) -> float:
    return promtext.total(promtext.parse(scheduler.metrics_text()), name, **labels)


async def _until(what: str, check: Any, timeout: float = SETTLE_TIMEOUT_SECONDS) -> float:
    """Poll `check` (blocking, run in a thread) until true; seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if await asyncio.to_thread(check):
            return time.monotonic() - started
        await asyncio.sleep(1)
    raise AssertionError(f"{what}: not within {timeout:.0f}s")


async def _scheduler_requests(api: BenchApi) -> float:
    return cluster.scheduler_requests(promtext.parse(await api.get_text("/metrics")))


async def measure(name: str, pods: int, progress: Any) -> dict[str, Any]:
    bench = await asyncio.to_thread(cluster.start)
    try:
        async with BenchApi(bench.state, concurrency=32) as api:
            await api.must("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            await api.must("POST", "/api/v1/nodes", node_body("closed", taints=[CLOSED]))
            scheduler = schedulers.make(name, bench.scheduler_state, QPS, BURST)
            await asyncio.to_thread(scheduler.start)
            try:
                await asyncio.to_thread(schedulers.wait_ready, scheduler)
                return await _measure(api, scheduler, name, pods, progress)
            finally:
                await asyncio.to_thread(scheduler.stop)
    finally:
        await asyncio.to_thread(cluster.stop, bench.directory)


async def _measure(api: BenchApi, scheduler: schedulers.SchedulerUnderTest, name: str,
                   pods: int, progress: Any) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    samples = [(0, rss_bytes(scheduler.pid))]
    step = pods // STEPS
    for index in range(STEPS):
        first = index * step
        await api.create_all((path, encode(_pod(f"p-{i}", name)))
                             for i in range(first, first + step))
        created = first + step
        await _until(f"{created} pods found unschedulable", lambda created=created: _metric(
            scheduler, "scheduler_pending_pods", queue="unschedulable") >= created)
        samples.append((created, rss_bytes(scheduler.pid)))
        progress(f"[{name}] {created} pending, RSS {samples[-1][1] / 2**20:.0f} MiB")
    # The backlog's own writes (a FailedScheduling event and a PodScheduled condition
    # per pod, at the client's QPS) trail the attempts: wait for them to end, then
    # count what an idle scheduler with a backlog sends.
    tail_started = time.monotonic()
    last = await _scheduler_requests(api)
    while time.monotonic() - tail_started < SETTLE_TIMEOUT_SECONDS:
        await asyncio.sleep(5)
        now = await _scheduler_requests(api)
        if now - last < 5:
            break
        last = now
    tail = time.monotonic() - tail_started
    progress(f"[{name}] the backlog's writes ended {tail:.0f}s after the last attempt")
    idle_before = await _scheduler_requests(api)
    writes_before = promtext.parse(await api.get_text("/metrics"))
    await asyncio.sleep(IDLE_SECONDS)
    idle_rate = (await _scheduler_requests(api) - idle_before) / IDLE_SECONDS
    idle_writes = promtext.delta_by(writes_before,
                                    promtext.parse(await api.get_text("/metrics")),
                                    "apiserver_request_total", promtext.request_kind)
    progress(f"[{name}] idle with the backlog: {idle_rate:.2f} requests/s {idle_writes}")
    nodes = math.ceil(step * STEPS / PODS_PER_NODE)
    before_drain = await _scheduler_requests(api)
    started = time.monotonic()
    await api.create_all(("/api/v1/nodes", encode(node_body(f"node-{i}", labels={})))
                         for i in range(nodes))
    await _until("the backlog bound", lambda: _metric(
        scheduler, "scheduler_schedule_attempts_total", result="scheduled") >= step * STEPS)
    drain = time.monotonic() - started
    drain_requests = await _scheduler_requests(api) - before_drain
    peak = schedulers.proc_stats(scheduler.pid).peak_rss_mib
    slope = _slope(samples)
    progress(f"[{name}] drained {step * STEPS} pods onto {nodes} nodes in {drain:.0f}s")
    return {
        "scheduler": name, "pods": step * STEPS, "nodes": nodes,
        "rssMiBByPending": [(count, round(rss / 2**20, 1)) for count, rss in samples],
        "bytesPerPendingPod": round(slope),
        "linearity": round(_r_squared(samples, slope), 4),
        "writesTailSeconds": round(tail, 1),
        "idleRequestsPerSecond": round(idle_rate, 2), "idleRequestsByKind": idle_writes,
        "drainSeconds": round(drain, 1), "drainPodsPerSecond": round(step * STEPS / drain, 1),
        "drainRequestsPerPod": round(drain_requests / (step * STEPS), 2),
        "peakRssMiB": round(peak, 1)}


def _slope(samples: list[tuple[int, int]]) -> float:
    """Least-squares bytes per pending pod."""
    xs, ys = [float(x) for x, _ in samples], [float(y) for _, y in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def _r_squared(samples: list[tuple[int, int]], slope: float) -> float:
    xs, ys = [float(x) for x, _ in samples], [float(y) for _, y in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    total = sum((y - mean_y) ** 2 for y in ys) or 1.0
    residual = sum((y - (mean_y + slope * (x - mean_x))) ** 2
                   for x, y in zip(xs, ys, strict=True))
    return 1.0 - residual / total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak.backlog", description=__doc__)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--schedulers", default=f"{schedulers.KPYSCHED},"
                                                f"{schedulers.KUBE_SCHEDULER}")
    parser.add_argument("--out", type=Path, help="a JSON file, or a directory for backlog.json")
    args = parser.parse_args(argv)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results = [asyncio.run(measure(name, args.pods, progress))
               for name in args.schedulers.split(",")]
    text = json.dumps(results, indent=1)
    # Printed first: a 25-minute run must not lose its figures to a bad --out.
    print(text, flush=True)
    if args.out is not None:
        out = args.out / "backlog.json" if args.out.is_dir() else args.out
        out.write_text(text)
    return 0


def _interrupt(signum: int, _: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    # SIGTERM unwinds like Ctrl-C, so the cluster and the scheduler stop.
    signal.signal(signal.SIGTERM, _interrupt)
    sys.exit(main())
