"""In-process measurements of the scheduling queue's event costs (issue 32 items 6-8),
on a scheduler built as the application builds it over a recording API:

- preemption: 10,000 pods held by SchedulingGates (e.g. Kueue's) and one preemption
  carried out; PreEnqueue calls and CPU when the preemption finishes (the executor's
  on_finished).
- add: Coscheduling on, 10,000 pending pods in the unschedulable pool; event-handler
  time per pending pod's add, for plain pods and for members of a group.
- gang: an unschedulable GenericWorkload gang (3 members, room for 2) on an otherwise
  idle scheduler; group attempts per second and CPU over `--seconds`.

    python -m benchmarks.queue_micro [--pending 10000] [--adds 200] [--seconds 10]

kube-scheduler does not run here: these are kpysched's own before/after figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import Any

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from tests.unit.builders import make_pod, make_pod_group
from tests.unit.scheduler_harness import build_harness, node

COSCHEDULING = {"schedulerName": "kpysched", "plugins": {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}


def _pod(name: str, cpu: str, **build: Any) -> api.Pod:
    builder = make_pod(name).req(cpu=cpu)
    if "priority" in build:
        builder.priority(build["priority"])
    if "gates" in build:
        builder.gates(*build["gates"])
    if "label" in build:
        builder.label(*build["label"])
    if "node" in build:
        builder.node(build["node"])
    pod = builder.obj()
    pod.spec.scheduler_name = "kpysched"
    return pod


async def preemption(pending: int) -> dict[str, float]:
    harness = build_harness({"schedulerName": "kpysched"}, Features(), Listers(),
                            node("n1", "1"))
    scheduler, queue = harness.scheduler, harness.scheduler.queue
    harness.pods.on_add(_pod("victim", "1", node="n1"))
    for index in range(pending):
        harness.pods.on_add(_pod(f"held-{index}", "100m", gates=["example.com/hold"]))
    preemptor = _pod("preemptor", "1", priority=1000)
    harness.pods.on_add(preemptor)
    release = asyncio.Event()
    harness.api.hold[("DELETE", "/pods/victim")] = release
    queued = await queue.pop()
    assert queued is not None and queued.pod_info.name == "preemptor"
    scheduler.schedule_one(queued)
    # Asked again while its victim is still going, DefaultPreemption holds it.
    queue.activate([preemptor.metadata.uid])
    assert queue.where(preemptor.metadata.uid) == "gated"
    release.set()
    calls = 0
    inner = queue._pre_enqueue  # counting what the queue asks

    def counting(pod: Any) -> Any:
        nonlocal calls
        calls += 1
        return inner(pod)

    queue._pre_enqueue = counting
    finished = queue.activate_gated
    spent = 0.0

    def timed() -> None:
        nonlocal spent
        started = time.process_time()
        finished()
        spent += time.process_time() - started

    executor = scheduler.context.writes.preemption
    executor._on_finished = timed
    await executor.drain(timeout=10)
    assert harness.api.sent("DELETE", "/pods/victim"), "no preemption happened"
    await scheduler.abort_writes()
    return {"pre_enqueue_calls": calls, "on_finished_cpu_ms": spent * 1e3,
            "preemptor_released": queue.where(preemptor.metadata.uid) != "gated"}


async def adds(pending: int, count: int) -> dict[str, float]:
    harness = build_harness(COSCHEDULING, Features(), Listers(coscheduling=True),
                            node("n1", "1"))
    queue = harness.scheduler.queue
    assert harness.listers.coscheduling is not None
    for index in range(pending):
        harness.pods.on_add(_pod(f"big-{index}", "8"))
    while queue.pending_counts()["active"]:
        queued = await queue.pop()
        assert queued is not None
        harness.scheduler.schedule_one(queued)
    assert queue.pending_counts()["unschedulable"] == pending
    for group in range(count):
        harness.listers.coscheduling.pod_groups.on_add(cs.PodGroup(
            metadata=api.ObjectMeta(name=f"g{group}", namespace="default",
                                    uid=f"uid-pg-{group}",
                                    creation_timestamp="2026-01-01T00:00:00Z"),
            spec=cs.PodGroupSpec(min_member=2)))
    result: dict[str, float] = {}
    for kind in ("plain", "member"):
        pods = [_pod(f"{kind}-{index}", "100m",
                     **({"label": (cs.POD_GROUP_LABEL, f"g{index}")} if kind == "member"
                        else {}))
                for index in range(count)]
        gc.collect()
        started = time.perf_counter()
        for pod in pods:
            harness.pods.on_add(pod)
        result[f"{kind}_add_ms"] = (time.perf_counter() - started) / count * 1e3
    await harness.scheduler.abort_writes()
    return result


async def gang(seconds: float) -> dict[str, float]:
    harness = build_harness({"schedulerName": "kpysched"},
                            Features(generic_workload=True, gang_scheduling=True),
                            Listers(generic_workload=True), node("n1", "2"))
    assert harness.listers.workloads is not None
    harness.listers.workloads.pod_groups.on_add(make_pod_group("g", 3))
    for name in ("a", "b", "c"):
        pod = make_pod(name).group("g").req(cpu="1").obj()
        pod.spec.scheduler_name = "kpysched"
        harness.pods.on_add(pod)
    scheduler, queue = harness.scheduler, harness.scheduler.queue
    loop = asyncio.create_task(scheduler.run())
    flushers = asyncio.create_task(queue.run_flushers())
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    scheduler.stop()
    await asyncio.gather(loop, return_exceptions=True)
    flushers.cancel()
    await asyncio.gather(flushers, return_exceptions=True)
    elapsed = time.monotonic() - wall
    await scheduler.abort_writes()
    attempts = queue.scheduling_cycle / 3
    return {"group_attempts": attempts, "attempts_per_s": attempts / elapsed,
            "cpu_share": (time.process_time() - cpu) / elapsed}


async def main(args: argparse.Namespace) -> None:
    import structlog
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    print("preemption", await preemption(args.pending))
    print("add", await adds(args.pending, args.adds))
    print("gang", await gang(args.seconds))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    asyncio.run(main(parser.parse_args()))
