"""A scheduler built as the application builds it, over a recording API, for tests that
drive whole scheduling cycles (pod groups, Coscheduling): feed it pods and nodes
through the informer handlers, run the queue dry, read what it wrote."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from kpysched.api.client import RawApi
from kpysched.app import build_scheduler
from kpysched.config import API_VERSION, KIND, build_profiles, parse_config
from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.scheduling.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.scheduling.scheduler import Scheduler
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_node


@dataclass
class SchedulerHarness:
    scheduler: Scheduler
    api: RecordingApi
    listers: Listers
    pods: PodEventHandler
    nodes: NodeEventHandler

    async def schedule_all(self) -> None:
        """Run cycles while the active queue has pods, then let the writes finish."""
        queue = self.scheduler.queue
        while queue.pending_counts()["active"]:
            queued = await queue.pop()
            assert queued is not None
            self.scheduler.schedule_one(queued)
        await self.scheduler.drain_writes(timeout=5)

    def bound(self) -> dict[str, str]:
        return {body["metadata"]["name"]: body["target"]["name"]
                for body in self.api.sent("POST", "/binding")}

    def notes(self, reason: str, kind: str = "Pod") -> dict[str, str]:
        """The note of the last event of `reason` about each object of `kind`, by name."""
        return {body["regarding"]["name"]: body["note"]
                for body in self.api.sent("POST", "/events")
                if body["reason"] == reason and body["regarding"]["kind"] == kind}


def build_harness(profile: dict[str, Any], features: Features, listers: Listers,
                  *nodes: api.Node, **build: Any) -> SchedulerHarness:
    """One profile, `features`' gates, these nodes in the cache; `build` goes to
    build_scheduler (metrics, decision_records, ...)."""
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile]})
    recording = RecordingApi()
    scheduler = build_scheduler(config, build_profiles(config, IN_TREE, features), IN_TREE,
                                cast(RawApi, recording), listers, features=features, **build)
    for requeueing in (listers.workloads, listers.coscheduling):
        if requeueing is not None:
            requeueing.requeue_with(scheduler.queue.move_on_event)
    for node in nodes:
        scheduler.cache.add_or_update_node(node)
    return SchedulerHarness(scheduler, recording, listers,
                            PodEventHandler(scheduler, scheduler.context.writes.events,
                                            gang_scheduling=True),
                            NodeEventHandler(scheduler))


def node(name: str, cpu: str) -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()
