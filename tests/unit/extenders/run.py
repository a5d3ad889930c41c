"""A scheduler built as the application builds it (over a recording API) with
`extenders:` in its configuration: feed it pods, run the queue dry, read the writes."""

from __future__ import annotations

from typing import Any, cast

from kpysched.api.client import RawApi
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.scheduling.event_handlers import PodEventHandler
from kpysched.scheduling.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node


def build(extenders: list[dict[str, Any]], *pods: api.Pod, node_cpu: str = "4",
          decision_records: int = 0, nodes: int = 1,
          node_cpus: dict[str, str] | None = None) -> tuple[Scheduler, RecordingApi]:
    """Nodes n1, n2... with `node_cpu` CPUs each (or `node_cpus`: name -> CPUs), and the
    pods (those with a nodeName placed there)."""
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, "extenders": extenders})
    recording = RecordingApi()
    # The extender tables are kube-scheduler v1.36.4's (its FailedScheduling texts).
    features = Features(release=36)
    scheduler = build_scheduler(config, build_profiles(config, IN_TREE, features), IN_TREE,
                                cast(RawApi, recording), Listers(),
                                decision_records=decision_records, features=features)
    cpus = node_cpus or {f"n{number}": node_cpu for number in range(1, nodes + 1)}
    for name, cpu in cpus.items():
        scheduler.cache.add_or_update_node(
            make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj())
    handler = PodEventHandler(scheduler, scheduler.context.writes.events)
    for pod in pods:
        pod.spec.scheduler_name = "kpysched"
        handler.on_add(pod)
    return scheduler, recording


async def schedule_with(extenders: list[dict[str, Any]], *pods: api.Pod,
                        node_cpu: str = "4", decisions: list[Any] | None = None,
                        nodes: int = 1, node_cpus: dict[str, str] | None = None,
                        ) -> RecordingApi:
    """Run the queue dry, a cycle at a time, and let the writes finish; `decisions`
    gets the decision records (as JSON) of every pod."""
    scheduler, recording = build(extenders, *pods, node_cpu=node_cpu, nodes=nodes,
                                 decision_records=0 if decisions is None else 100,
                                 node_cpus=node_cpus)
    try:
        queue = scheduler.queue
        while queue.pending_counts()["active"]:
            queued = await queue.pop()
            assert queued is not None
            scheduler.schedule_one(queued)
        await scheduler.drain_writes(timeout=5)
        store = scheduler.context.decisions
        if decisions is not None and store is not None:
            for pod in pods:
                decisions.extend(store.for_pod(pod.metadata.namespace, pod.metadata.name))
    finally:
        in_use = scheduler.context.algorithm.extenders
        if in_use is not None:
            await in_use.close()
    return recording


def failed_scheduling(recording: RecordingApi) -> list[str]:
    return [body["note"] for body in recording.sent("POST", "/events")
            if body["reason"] == "FailedScheduling"]
