"""In-process measurement of the Coscheduling workload's scheduler-side CPU (issue 38):
the benchmark's `coscheduling` run (gangs of 8, minMember 8, every pod created before
the scheduler starts) against its plain-pod baseline with the same profile, on a
scheduler built as the application builds it over a recording API
(tests/unit/scheduler_harness.py).

The PodGroups are listed first, then the pods in the API server's LIST order (by name:
`pod-0, pod-1, pod-10, pod-100, ...`, so a gang's members arrive far apart and most
gangs stay short, their members held, until late in the LIST), a page of nodes after
each page of pods (the informers' pages interleave); then the scheduling loop runs
until every pod is bound, binding tasks included.

    python -m benchmarks.coscheduling_micro [--gangs 300] [--nodes 1000] [--repeat 1]
        [--kind coscheduling,plain] [--list-only]

Prints CPU ms for the LIST delivery (and the queue moves in it: the held members asked
again) and for scheduling (per pod), the API writes, and the queue's incoming counts.
The recording API answers at once and feeds nothing back (no watch events for the
bindings or status patches, no HTTP), so this is the scheduler's own CPU without its
API traffic. kube-scheduler does not run here.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections import Counter
from typing import Any

from benchmarks.initial_list_micro import timed_calls
from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import build_harness, node

SCHEDULER = "kpysched"
COSCHEDULING = {"schedulerName": SCHEDULER, "plugins": {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}
GANG = 8
PAGE = 500  # the informers' LIST page


def _pod(index: int, gang: bool) -> api.Pod:
    builder = make_pod(f"pod-{index}").req(cpu="100m", memory="100Mi")
    if gang:
        builder.label(cs.POD_GROUP_LABEL, f"gang-{index // GANG}")
    pod = builder.obj()
    pod.spec.scheduler_name = SCHEDULER
    return pod


def _pod_group(index: int) -> cs.PodGroup:
    return cs.PodGroup(
        metadata=api.ObjectMeta(name=f"gang-{index}", namespace="default",
                                uid=f"uid-pg-{index}",
                                creation_timestamp="2026-01-01T00:00:00Z"),
        spec=cs.PodGroupSpec(min_member=GANG))


def _kind(path: str) -> str:
    """pods/binding, pods/status, podgroups/status, events."""
    parts = path.strip("/").split("/")
    return "/".join(parts[-3:][::2]) if parts[-1] in ("binding", "status") else parts[-1]


async def run(kind: str, gangs: int, nodes: int, *, list_only: bool = False) -> dict[str, Any]:
    gang = kind == "coscheduling"
    listers = Listers(coscheduling=True)
    harness = build_harness(COSCHEDULING, Features(), listers)
    scheduler, queue = harness.scheduler, harness.scheduler.queue
    count = gangs * GANG
    pods = sorted((_pod(index, gang) for index in range(count)),
                  key=lambda pod: pod.metadata.name)
    node_objects = [node(f"node-{index}", "32") for index in range(nodes)]
    groups = [_pod_group(index) for index in range(gangs if gang else 0)]
    assert listers.coscheduling is not None
    moves = [0.0]
    for name in ("move_on_event", "move_on_assigned_pod", "move_members_on_event"):
        timed_calls(queue, name, moves)
    listers.coscheduling.requeue_with(queue.move_on_event)
    gc.collect()
    started = time.process_time()
    for group in groups:
        listers.coscheduling.pod_groups.on_add(group)
    for page in range(0, max(count, nodes), PAGE):
        for pod in pods[page:page + PAGE]:
            harness.pods.on_add(pod)
        for node_object in node_objects[page:page + PAGE]:
            harness.nodes.on_add(node_object)
    listed = time.process_time() - started
    held_after_list = queue.pending_counts()["gated"]
    if list_only:
        await scheduler.abort_writes()
        return {"list_ms": listed * 1e3, "moves_ms": moves[0] * 1e3, "bound": 0,
                "schedule_ms": 0.0, "schedule_ms_per_pod": 0.0,
                "held_after_list": held_after_list, "writes": {},
                "incoming": dict(queue.incoming)}
    started = time.process_time()
    loop = asyncio.create_task(scheduler.run())
    while len(harness.api.sent("POST", "/binding")) < count:
        await asyncio.sleep(0.01)
        if loop.done():
            break
    scheduled = time.process_time() - started
    scheduler.stop()
    await asyncio.gather(loop, return_exceptions=True)
    bound = len(harness.api.sent("POST", "/binding"))
    writes = Counter(f"{method} {_kind(path)}" for method, path, _ in harness.api.requests)
    await scheduler.abort_writes()
    return {"list_ms": listed * 1e3, "moves_ms": moves[0] * 1e3, "schedule_ms": scheduled * 1e3,
            "schedule_ms_per_pod": scheduled * 1e3 / max(bound, 1), "bound": bound,
            "held_after_list": held_after_list, "writes": dict(writes),
            "incoming": dict(queue.incoming)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", default="coscheduling,plain")
    parser.add_argument("--gangs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--list-only", action="store_true",
                        help="deliver the LIST and stop (no scheduling)")
    args = parser.parse_args()
    import structlog
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    for _ in range(args.repeat):
        for kind in args.kind.split(","):
            found = asyncio.run(run(kind, args.gangs, args.nodes, list_only=args.list_only))
            print(f"{kind}: {found['bound']} bound; LIST {found['list_ms']:.0f} ms CPU, "
                  f"queue moves in it {found['moves_ms']:.0f} ms "
                  f"(held after it {found['held_after_list']}); scheduling "
                  f"{found['schedule_ms']:.0f} ms CPU, {found['schedule_ms_per_pod']:.3f} ms "
                  f"a pod; writes {found['writes']}; incoming {found['incoming']}", flush=True)


if __name__ == "__main__":
    main()
