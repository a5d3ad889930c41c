"""In-process micro-benchmark of upstream's affinity-heavy workloads (issue 38): the
cluster state of a benchmarks.workloads workload (its nodes, namespaces and initial
pods) in a scheduler built as the application builds it over a recording API
(tests/unit/scheduler_harness.py), then its measured pods scheduled one by one through
the real queue, cache, snapshot and plugin chain of the default profile. Each binding
the scheduler sends comes back as the watch would bring it (the pod updated with its
node), so the cache confirms it and the next cycles see a changed NodeInfo, as in a
live run. No API server, no kube-scheduler: kpysched's own before/after figures.

    python -m benchmarks.affinity_micro --workload pod-affinity [--nodes 1000]
        [--init-pods N] [--pods N] [--release 37] [--repeat 1] [--plugins N]
        [--profile FILE] [--points] [--records]

Prints, per workload, the CPU ms per measured pod of the scheduling cycles alone and of
everything (cycles, bindings, their confirmation), and a digest of the decisions (each
pod's node, or its FailedScheduling note; ties broken by a seeded generator), so that
a speed-up that changes any decision shows as a different digest (with `--records`, one
that changes any node's score too). `--plugins N` adds the N (plugin, extension
point) pairs that took the most, as the framework times them (wall time: inflated on a
loaded machine). `--points` times InterPodAffinity's four
points alone in CPU time, the steadiest figure when other work shares the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import hashlib
import itertools
import statistics
import time
import timeit
from dataclasses import dataclass
from typing import Any

import msgspec

from benchmarks.workloads import (
    INIT_NAMESPACE,
    MEASURED_NAMESPACE,
    NAMESPACES,
    WORKLOADS,
    Workload,
    sizes_for,
)
from kpysched import logs
from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from tests.unit.scheduler_harness import SchedulerHarness, build_harness

SCHEDULER = "kpysched"
INTER_POD_AFFINITY = "InterPodAffinity"
AFFINITY_WORKLOADS = ("pod-affinity", "mixed-affinity", "pod-anti-affinity",
                      "anti-affinity-ns-selector", "preferred-pod-affinity",
                      "preferred-pod-anti-affinity")
# How many tie-break draws the seeded generator makes is part of what the digest holds.
TIE_BREAK_SEED = 38


def _decode(body: dict[str, Any], kind: type[Any]) -> Any:
    """As the informers decode what the API server sends: JSON into the slim views."""
    return msgspec.json.decode(msgspec.json.encode(body), type=kind)


def _pod(workload: Workload, shape_index: int, name: str, namespace: str,
         node: str | None) -> api.Pod:
    shape = workload.init_pod_for(shape_index) if node is not None else workload.measured_pod
    body = shape.body(name, SCHEDULER, node)
    body["metadata"].update(namespace=namespace, uid=f"uid-{namespace}-{name}",
                            resourceVersion="1",
                            creationTimestamp="2026-11-28T00:00:00Z")
    if node is not None:
        body["status"] = {"phase": "Running"}
    pod: api.Pod = _decode(body, api.Pod)
    return pod


@dataclass
class Run:
    pods: int
    cycle_seconds: float
    total_seconds: float
    digest: str
    placed: int
    # Seconds (wall, as the framework times them) per (plugin, extension point).
    plugin_seconds: dict[tuple[str, str], float]


def _build(workload: Workload, nodes: int, init_pods: int, release: int,
           records: int = 0) -> SchedulerHarness:
    features = Features(release=release)
    listers = Listers(release=release, device_taint_rules=release >= 37)
    labels = dict(workload.namespace_labels)
    for namespace in NAMESPACES:
        body: dict[str, Any] = {"metadata": {"name": namespace, "uid": f"uid-ns-{namespace}"}}
        if labels and namespace in (INIT_NAMESPACE, MEASURED_NAMESPACE):
            body["metadata"]["labels"] = labels
        listers.namespaces.on_add(_decode(body, api.Namespace))
    node_objects = [_decode(workload.node(index), api.Node) for index in range(nodes)]
    harness = build_harness({"schedulerName": SCHEDULER}, features, listers, *node_objects,
                            tie_break_seed=TIE_BREAK_SEED, decision_records=records)
    for index in range(init_pods):
        node = f"node-{workload.place_init(index, nodes)}"
        harness.pods.on_add(_pod(workload, index, f"init-pod-{index}", INIT_NAMESPACE, node))
    return harness


async def _schedule(harness: SchedulerHarness, measured: dict[str, api.Pod],
                    profile: cProfile.Profile | None) -> Run:
    scheduler, queue = harness.scheduler, harness.scheduler.queue
    cycle_seconds = 0.0
    confirmed = 0
    placements: dict[str, str] = {}
    attempts = scheduler.attempts
    new_attempt = attempts.new

    def timed_attempt(*args: Any, **kwargs: Any) -> Any:
        attempt = new_attempt(*args, **kwargs)
        times.append(attempt.state.plugin_seconds)
        return attempt

    times: list[dict[tuple[str, str], float]] = []
    attempts.new = timed_attempt  # type: ignore[method-assign]
    began = time.process_time()
    while queue.pending_counts()["active"]:
        queued = await queue.pop()
        assert queued is not None
        if profile is not None:
            profile.enable()
        started = time.process_time()
        scheduler.schedule_one(queued)
        cycle_seconds += time.process_time() - started
        if profile is not None:
            profile.disable()
        # The binding tasks run; each binding comes back as the watch would bring it.
        for _ in range(4):
            await asyncio.sleep(0)
        confirmed = _confirm_bindings(harness, measured, placements, confirmed)
    await scheduler.drain_writes(timeout=5)
    total_seconds = time.process_time() - began
    plugin_seconds: dict[tuple[str, str], float] = {}
    for cycle in times:
        for key, seconds in cycle.items():
            plugin_seconds[key] = plugin_seconds.get(key, 0.0) + seconds
    return Run(len(measured), cycle_seconds, total_seconds,
               _digest(harness, measured, placements), len(placements), plugin_seconds)


def _confirm_bindings(harness: SchedulerHarness, measured: dict[str, api.Pod],
                      placements: dict[str, str], confirmed: int) -> int:
    """Each binding sent since request number `confirmed` comes back to the scheduler as
    its pod, updated with the node (noted in `placements`); the requests read so far."""
    requests = harness.api.requests
    while confirmed < len(requests):
        method, path, body = requests[confirmed]
        confirmed += 1
        if method != "POST" or not path.endswith("/binding"):
            continue
        if isinstance(body, bytes):
            body = msgspec.json.decode(body)
        name, node = body["metadata"]["name"], body["target"]["name"]
        placements[name] = node
        old = measured[name]
        new = msgspec.structs.replace(
            old, spec=msgspec.structs.replace(old.spec, node_name=node),
            metadata=msgspec.structs.replace(old.metadata, resource_version="2"))
        measured[name] = new
        harness.pods.on_update(old, new)
    return confirmed


def _digest(harness: SchedulerHarness, measured: dict[str, api.Pod],
            placements: dict[str, str]) -> str:
    """What was decided: each measured pod's node or FailedScheduling note, in pod order,
    and with decision records on, every cycle's record but its wall-clock time (feasible
    nodes, each Score plugin's raw and normalised scores, the ties drawn among)."""
    refused = harness.notes("FailedScheduling")
    digest = hashlib.sha256()
    for name in sorted(measured, key=lambda n: int(n.rsplit("-", 1)[1])):
        digest.update(f"{name} {placements.get(name) or refused.get(name, '?')}\n".encode())
    decisions = harness.scheduler.context.decisions
    if decisions is not None:
        for name in measured:
            for record in decisions.for_pod(MEASURED_NAMESPACE, name):
                record.pop("time", None)
                digest.update(msgspec.json.encode(record, order="sorted"))
    return digest.hexdigest()[:16]


def run(name: str, nodes: int, init_pods: int | None, pods: int | None, release: int,
        profile: cProfile.Profile | None = None, records: bool = False) -> Run:
    workload = WORKLOADS[name]
    sizes = sizes_for(workload, nodes, init_pods, pods)
    harness = _build(workload, sizes.nodes, sizes.init_pods, release,
                     sizes.pods + 1 if records else 0)
    measured = {f"pod-{index}": _pod(workload, index, f"pod-{index}", MEASURED_NAMESPACE, None)
                for index in range(sizes.pods)}
    for pod in measured.values():
        harness.pods.on_add(pod)
    # As kpysched does once its cache is synced (gc_policy): the cluster lives on.
    gc.collect()
    gc.freeze()
    try:
        return asyncio.run(_schedule(harness, measured, profile))
    finally:
        gc.unfreeze()


def points(name: str, nodes: int, release: int, cycles: int = 300) -> dict[str, float]:
    """InterPodAffinity alone, in microseconds of CPU per cycle (least of 5 rounds of
    `cycles`): the workload's state with half of its measured pods placed, then for an
    incoming measured pod its PreFilter, vector Filter, PreScore and vector Score, each
    cycle after one row's NodeInfo was replaced (as the previous pod's placement does),
    and the same four points with nothing changed. Steadier than whole cycles on a
    loaded machine: no queue, no binding, no other plugin."""
    workload = WORKLOADS[name]
    sizes = sizes_for(workload, nodes, None, None)
    harness = _build(workload, sizes.nodes, sizes.init_pods, release)
    placed = {f"pod-{index}": _pod(workload, index, f"pod-{index}", MEASURED_NAMESPACE, None)
              for index in range(sizes.pods // 2)}
    for pod in placed.values():
        harness.pods.on_add(pod)
    asyncio.run(_schedule(harness, placed, None))
    scheduler = harness.scheduler
    plugin = scheduler.frameworks[SCHEDULER].plugin(INTER_POD_AFFINITY)
    snapshot = scheduler.context.snapshot
    scheduler.cache.update_snapshot(snapshot)
    incoming = PodInfo.of(_pod(workload, 0, "incoming", MEASURED_NAMESPACE, None))
    rows = itertools.cycle(range(0, len(snapshot.node_infos), 7))

    def four_points() -> None:
        state = CycleState()
        plugin.pre_filter(state, incoming, snapshot.node_infos)
        plugin.filter_vector(state, incoming, snapshot)
        scoring = CycleState()
        plugin.pre_score(scoring, incoming, snapshot.node_infos)
        plugin.score_vector(scoring, incoming, snapshot)

    def one_row_changed() -> None:
        row = next(rows)
        snapshot.replace(snapshot.node_infos[row].clone())

    def changed_then_four_points() -> None:
        one_row_changed()
        four_points()

    figures = {}
    for label, call in (("one row changed", changed_then_four_points),
                        ("nothing changed", four_points), ("the row change alone",
                                                           one_row_changed)):
        call()
        best = min(timeit.Timer(call, timer=time.process_time).repeat(5, cycles))
        figures[label] = best * 1e6 / cycles
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="pod-affinity",
                        help=f"comma-separated, or 'all' ({', '.join(AFFINITY_WORKLOADS)})")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--init-pods", type=int, default=None)
    parser.add_argument("--pods", type=int, default=None)
    parser.add_argument("--release", type=int, default=37)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--plugins", type=int, default=0,
                        help="also print the N (plugin, extension point) pairs that took "
                             "the most time per pod (wall, as the framework times them)")
    parser.add_argument("--records", action="store_true",
                        help="decision records on, in the digest: every cycle's feasible "
                             "nodes and every Score plugin's scores (slower; not a timing)")
    parser.add_argument("--points", action="store_true",
                        help="time InterPodAffinity's four points alone (see points())")
    parser.add_argument("--profile", default=None,
                        help="write cProfile stats of the scheduling cycles here")
    args = parser.parse_args()
    logs.configure("info")  # as kpysched runs: no per-pod debug lines
    names = AFFINITY_WORKLOADS if args.workload == "all" else tuple(args.workload.split(","))
    if args.points:
        for name in names:
            figures = points(name, args.nodes, args.release)
            print(f"{name}: InterPodAffinity per cycle, us of CPU: " + ", ".join(
                f"{label} {value:.1f}" for label, value in figures.items()), flush=True)
        return
    for name in names:
        cycles: list[float] = []
        totals: list[float] = []
        digests: set[str] = set()
        for _ in range(args.repeat):
            profile = cProfile.Profile() if args.profile else None
            result = run(name, args.nodes, args.init_pods, args.pods, args.release, profile,
                         args.records)
            if profile is not None:
                profile.dump_stats(args.profile if len(names) == 1
                                   else f"{args.profile}.{name}")
            print(f"{name}: {result.pods} pods ({result.placed} placed), {args.nodes} nodes: "
                  f"cycle {result.cycle_seconds * 1000 / result.pods:.3f} ms/pod, "
                  f"all {result.total_seconds * 1000 / result.pods:.3f} ms/pod, "
                  f"digest {result.digest}", flush=True)
            slowest = sorted(result.plugin_seconds.items(), key=lambda kv: -kv[1])
            for (plugin, point), seconds in slowest[:args.plugins]:
                print(f"    {plugin} {point}: {seconds * 1000 / result.pods:.3f} ms/pod")
            cycles.append(result.cycle_seconds * 1000 / result.pods)
            totals.append(result.total_seconds * 1000 / result.pods)
            digests.add(result.digest)
        if args.repeat > 1:
            # The least is the figure least disturbed by whatever else the machine runs.
            print(f"{name}: min of {args.repeat}: cycle {min(cycles):.3f} ms/pod, "
                  f"all {min(totals):.3f} ms/pod; median cycle "
                  f"{statistics.median(cycles):.3f}, all {statistics.median(totals):.3f}; "
                  f"digest {', '.join(sorted(digests))}",
                  flush=True)


if __name__ == "__main__":
    main()
