"""Wiring: build the API client, frameworks, cache, queue, informers and the loop,
and run them as one supervised task group until a signal asks us to stop."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from kpysched.algorithm import Algorithm
from kpysched.apiclient import RawApi
from kpysched.binding import Binder
from kpysched.cache.cache import Cache
from kpysched.cache.snapshot import Snapshot
from kpysched.config import EffectiveProfile, SchedulerConfiguration
from kpysched.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.events import EventRecorder
from kpysched.framework.events import EVERYTHING, ClusterEvent
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import Status
from kpysched.informers import node_reflector, pod_reflector
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.queue.scheduling_queue import SchedulingQueue
from kpysched.scheduler import Scheduler

log = structlog.get_logger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0


async def make_api_client(kubeconfig: Path | None) -> client.ApiClient:
    """kubeconfig when given (or $KUBECONFIG), in-cluster service account otherwise."""
    configuration = client.Configuration()
    if kubeconfig is not None:
        await kube_config.load_kube_config(config_file=str(kubeconfig),
                                           client_configuration=configuration)
    else:
        try:
            kube_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
        except kube_config.ConfigException:
            # Outside a pod: fall back to $KUBECONFIG / ~/.kube/config like kubectl.
            await kube_config.load_kube_config(client_configuration=configuration)
    return client.ApiClient(configuration)


class SchedulerHandle:
    """The framework Handle: snapshot access, binding, and waiting-pod control."""

    def __init__(self, binder: Binder) -> None:
        self._binder = binder
        self.scheduler: Scheduler | None = None

    @property
    def snapshot(self) -> Snapshot:
        assert self.scheduler is not None, "handle used before the scheduler was built"
        return self.scheduler.snapshot

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        return await self._binder.bind(pod, node_name)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        assert self.scheduler is not None
        for framework in self.scheduler.frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.allow(plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        assert self.scheduler is not None
        for framework in self.scheduler.frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.reject(plugin, reason)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return None  # wired to a Namespace informer with InterPodAffinity

    def default_spread_selector(self, pod: api.Pod) -> api.LabelSelector | None:
        return None  # wired to Service/RC/RS/StatefulSet informers with PodTopologySpread


def build_scheduler(
    config: SchedulerConfiguration,
    profiles: Sequence[EffectiveProfile],
    registry: Mapping[str, PluginSpec],
    raw: RawApi,
) -> Scheduler:
    handle = SchedulerHandle(Binder(raw))
    frameworks = {
        profile.scheduler_name: Framework(
            ProfileSpec(profile.scheduler_name, profile.plugins, profile.score_weights,
                        profile.args, profile.percentage_of_nodes_to_score),
            registry, handle)
        for profile in profiles
    }
    first = next(iter(frameworks.values()))

    def pre_enqueue(pod: PodInfo) -> Status:
        return frameworks[pod.pod.spec.scheduler_name].run_pre_enqueue(pod)

    def registered_events(plugin: str) -> tuple[ClusterEvent, ...]:
        found: tuple[ClusterEvent, ...] = ()
        for framework in frameworks.values():
            found += framework.events_for(plugin)
        return found or (EVERYTHING,)

    # All profiles share one queue, so they must share one QueueSort (checked in config).
    queue = SchedulingQueue(
        first.less, pre_enqueue, registered_events,
        initial_backoff_seconds=config.pod_initial_backoff_seconds,
        max_backoff_seconds=config.pod_max_backoff_seconds,
    )
    algorithm = Algorithm(config.percentage_of_nodes_to_score)
    scheduler = Scheduler(frameworks, queue, Cache(), algorithm, EventRecorder(raw))
    handle.scheduler = scheduler
    return scheduler


async def run(
    config: SchedulerConfiguration,
    profiles: Sequence[EffectiveProfile],
    registry: Mapping[str, PluginSpec],
    kubeconfig: Path | None,
) -> int:
    api_client = await make_api_client(kubeconfig)
    async with api_client:
        connection = config.client_connection
        raw = RawApi(api_client, qps=connection.qps, burst=connection.burst)
        scheduler = build_scheduler(config, profiles, registry, raw)
        pods = pod_reflector(api_client, PodEventHandler(scheduler, scheduler.recorder))
        nodes = node_reflector(api_client, NodeEventHandler(scheduler))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("scheduler.starting", profiles=[p.scheduler_name for p in profiles])
        try:
            async with asyncio.TaskGroup() as group:
                informer_tasks = [group.create_task(nodes.run(), name="informer nodes"),
                                  group.create_task(pods.run(), name="informer pods")]
                await _wait_synced_or_stopped(stop, nodes.synced, pods.synced)
                loop_task = flusher = None
                if not stop.is_set():
                    log.info("scheduler.informers_synced", nodes=len(nodes.store),
                             pods=len(pods.store))
                    loop_task = group.create_task(scheduler.run(), name="scheduling loop")
                    flusher = group.create_task(scheduler.queue.run_flushers(),
                                                name="queue flushers")
                await stop.wait()
                log.info("scheduler.stopping")
                scheduler.stop()
                if loop_task is not None:
                    await loop_task
                await scheduler.drain_bindings(SHUTDOWN_GRACE_SECONDS)
                await scheduler.recorder.drain(SHUTDOWN_GRACE_SECONDS)
                for task in [*informer_tasks, flusher]:
                    if task is not None:
                        task.cancel()
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
    log.info("scheduler.stopped")
    return 0


async def _wait_synced_or_stopped(stop: asyncio.Event, *synced: asyncio.Event) -> None:
    async def all_synced() -> None:
        for event in synced:
            await event.wait()

    waiters = {asyncio.ensure_future(all_synced()), asyncio.ensure_future(stop.wait())}
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
