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

    python -m benchmarks.initial_list_micro [--scenario plain,gated] [--nodes 1000]
        [--pending 2000] [--bound 2000] [--volumes 200]

Prints CPU ms of the whole delivery and of the queue moves in it (move_on_event and
move_on_assigned_pod), and where the pending pods ended up (must not change with a cut).
kube-scheduler does not run here: kpysched's own before/after figures.
"""

from __future__ import annotations

import argparse
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


def _timed(owner: Any, name: str, spent: list[float]) -> None:
    """Wrap owner.name so the CPU time spent in it adds up in spent[0]."""
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - started

    setattr(owner, name, timed)


def run(scenario: str, nodes: int, pending: int, bound: int,
        volumes: int) -> dict[str, Any]:
    gated = scenario == "gated"
    listers = Listers(coscheduling=gated)
    harness = build_harness(COSCHEDULING if gated else {"schedulerName": SCHEDULER},
                            Features(), listers)
    queue = harness.scheduler.queue
    listers.storage.requeue_with(queue.move_on_event)
    for index in range(pending):
        harness.pods.on_add(_pod(f"pending-{index}",
                                 group=f"g{index // GROUP_SIZE}" if gated else None))
    node_objects = [node(f"node-{index}", "32") for index in range(nodes)]
    bound_pods = [_pod(f"bound-{index}", node_name=f"node-{index % nodes}")
                  for index in range(bound)]
    pvs = [_volume(index) for index in range(volumes)]
    moves = [0.0]
    _timed(queue, "move_on_event", moves)
    _timed(queue, "move_on_assigned_pod", moves)
    gc.collect()
    started = time.process_time()
    for node_object in node_objects:
        harness.nodes.on_add(node_object)
    for pod in bound_pods:
        harness.pods.on_add(pod)
    for pv in pvs:
        listers.storage.persistent_volumes.on_add(pv)
    total = time.process_time() - started
    return {"total_ms": total * 1e3, "moves_ms": moves[0] * 1e3,
            "events": nodes + bound + volumes, "queues": queue.pending_counts()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="plain,gated")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--bound", type=int, default=2000)
    parser.add_argument("--volumes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for scenario in args.scenario.split(","):
        for _ in range(args.repeat):
            found = run(scenario, args.nodes, args.pending, args.bound, args.volumes)
            print(f"{scenario}: {found['events']} events ({args.nodes} nodes, {args.bound} "
                  f"bound pods, {args.volumes} PVs) over {args.pending} pending pods: "
                  f"all {found['total_ms']:.1f} ms CPU, queue moves {found['moves_ms']:.1f} ms "
                  f"({found['moves_ms'] * 1e3 / found['events']:.1f} us an event); "
                  f"queues {found['queues']}", flush=True)


if __name__ == "__main__":
    main()
