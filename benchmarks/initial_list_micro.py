"""In-process measurement of the queue moves an informer's initial LIST triggers
(issue 38): pending pods already in the queue, then the nodes, bound pods and
PersistentVolumes of the LIST delivered one by one through the informer handlers, as
kpysched's start-up delivers them, on a scheduler built as the application builds it
over a recording API (tests/unit/scheduler_harness.py).

- plain: the pending pods are plain (in the active queue, as in the affinity workloads'
  start: nothing unschedulable or gated yet).
- gated: Coscheduling on, the pending pods are members of PodGroups not listed yet, so
  its PreEnqueue holds them all (as a Coscheduling workload's start can be, the pods'
  LIST before the PodGroups'); Coscheduling hears node adds, so each listed node asks
  every held member.
- sorted: Coscheduling on (its QueueSort reads PodGroups), plain pending pods in the
  active queue, and `--groups` PodGroups none of them belongs to listed after the rest.

    python -m benchmarks.initial_list_micro [--scenario plain,gated] [--nodes 1000]
        [--pending 2000] [--bound 2000] [--volumes 200] [--groups 250]

Prints CPU ms of the whole delivery and of the queue moves in it (move_on_event and
move_on_assigned_pod), and where the pending pods ended up (must not change with a cut).
kube-scheduler does not run here: kpysched's own before/after figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api, storage
from kpysched.objects import coscheduling as cs
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import build_harness, node

SCHEDULER = "kpysched"
COSCHEDULING = {"schedulerName": SCHEDULER, "plugins": {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}}}
GROUP_SIZE = 8


def _pod(name: str, *, node_name: str | None = None, group: str | None = None) -> api.Pod:
    builder = make_pod(name).req(cpu="100m")
    if node_name is not None:
        builder.node(node_name)
    if group is not None:
        builder.label(cs.POD_GROUP_LABEL, group)
    pod = builder.obj()
    pod.spec.scheduler_name = SCHEDULER
    return pod


def _volume(index: int) -> storage.PersistentVolume:
    return storage.PersistentVolume(metadata=api.ObjectMeta(name=f"pv-{index}",
                                                            uid=f"uid-pv-{index}"))


def timed_calls(owner: Any, name: str, spent: list[float]) -> None:
    """Wrap owner.name so the CPU time spent in it adds up in spent[0]."""
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - started

    setattr(owner, name, timed)


def _pod_group(index: int) -> cs.PodGroup:
    return cs.PodGroup(metadata=api.ObjectMeta(name=f"listed-{index}", namespace="default",
                                               uid=f"uid-pg-{index}",
                                               creation_timestamp="2026-01-01T00:00:00Z"),
                       spec=cs.PodGroupSpec(min_member=GROUP_SIZE))


async def run(scenario: str, nodes: int, pending: int, bound: int, volumes: int,
        groups: int = 0) -> dict[str, Any]:
    gated = scenario == "gated"
    coscheduling = scenario in ("gated", "sorted")
    listers = Listers(coscheduling=coscheduling)
    harness = build_harness(COSCHEDULING if coscheduling else {"schedulerName": SCHEDULER},
                            Features(), listers)
    queue = harness.scheduler.queue
    for index in range(pending):
        harness.pods.on_add(_pod(f"pending-{index}",
                                 group=f"g{index // GROUP_SIZE}" if gated else None))
    node_objects = [node(f"node-{index}", "32") for index in range(nodes)]
    bound_pods = [_pod(f"bound-{index}", node_name=f"node-{index % nodes}")
                  for index in range(bound)]
    pvs = [_volume(index) for index in range(volumes)]
    pod_groups = [_pod_group(index) for index in range(groups if coscheduling else 0)]
    moves = [0.0]
    timed_calls(queue, "move_on_event", moves)
    timed_calls(queue, "move_on_assigned_pod", moves)
    # Wired after the wrapping, so that the objects' moves are timed too.
    listers.storage.requeue_with(queue.move_on_event)
    if listers.coscheduling is not None:
        listers.coscheduling.requeue_with(queue.move_on_event)
    gc.collect()
    started = time.process_time()
    for node_object in node_objects:
        harness.nodes.on_add(node_object)
    for pod in bound_pods:
        harness.pods.on_add(pod)
    for pv in pvs:
        listers.storage.persistent_volumes.on_add(pv)
    for pod_group in pod_groups:
        assert listers.coscheduling is not None
        listers.coscheduling.pod_groups.on_add(pod_group)
    total = time.process_time() - started
    await harness.scheduler.abort_writes()  # PodGroup status patches, not measured
    return {"total_ms": total * 1e3, "moves_ms": moves[0] * 1e3,
            "events": nodes + bound + volumes + len(pod_groups),
            "queues": queue.pending_counts()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="plain,gated")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--bound", type=int, default=2000)
    parser.add_argument("--volumes", type=int, default=200)
    parser.add_argument("--groups", type=int, default=250,
                        help="PodGroups listed (scenarios gated and sorted only)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for scenario in args.scenario.split(","):
        for _ in range(args.repeat):
            found = asyncio.run(run(scenario, args.nodes, args.pending, args.bound, args.volumes,
                        args.groups))
            print(f"{scenario}: {found['events']} events ({args.nodes} nodes, {args.bound} "
                  f"bound pods, {args.volumes} PVs, PodGroups if Coscheduling) over "
                  f"{args.pending} pending pods: "
                  f"all {found['total_ms']:.1f} ms CPU, queue moves {found['moves_ms']:.1f} ms "
                  f"({found['moves_ms'] * 1e3 / found['events']:.1f} us an event); "
                  f"queues {found['queues']}", flush=True)


if __name__ == "__main__":
    main()
