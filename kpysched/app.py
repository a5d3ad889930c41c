"""Wiring: build the API client, frameworks, cache, queue, informers and the loop,
and run them as one supervised task group until a signal asks us to stop."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from kpysched.framework.events import EVERYTHING, ActionType, ClusterEvent
from kpysched.framework.events import Resource as EventResource
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import Status
from kpysched.informers import Reflector, node_reflector, pod_reflector
from kpysched.listers import Index
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.pod_topology_spread import default_selector
from kpysched.preemption import PreemptionExecutor
from kpysched.queue.scheduling_queue import SchedulingQueue
from kpysched.scheduler import Scheduler

log = structlog.get_logger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0
NAMESPACE_CHANGE = ClusterEvent(EventResource.NAMESPACE, ActionType.ADD | ActionType.UPDATE,
                                "NamespaceChange")


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


class Listers:
    """Indexes of the secondary resources, each fed by its own informer."""

    def __init__(self) -> None:
        self.namespaces: Index[api.Namespace] = Index()
        self.pdbs: Index[api.PodDisruptionBudget] = Index()
        self.services: Index[api.Service] = Index()
        self.replication_controllers: Index[api.ReplicationController] = Index()
        self.replica_sets: Index[api.ReplicaSet] = Index()
        self.stateful_sets: Index[api.StatefulSet] = Index()

    def reflectors(self, api_client: client.ApiClient) -> list[Reflector[Any]]:
        specs: list[tuple[str, type[Any], type[Any], Index[Any], str]] = [
            ("/api/v1/namespaces", api.Namespace, api.NamespaceList, self.namespaces,
             "namespaces"),
            ("/apis/policy/v1/poddisruptionbudgets", api.PodDisruptionBudget,
             api.PodDisruptionBudgetList, self.pdbs, "poddisruptionbudgets"),
            ("/api/v1/services", api.Service, api.ServiceList, self.services, "services"),
            ("/api/v1/replicationcontrollers", api.ReplicationController,
             api.ReplicationControllerList, self.replication_controllers,
             "replicationcontrollers"),
            ("/apis/apps/v1/replicasets", api.ReplicaSet, api.ReplicaSetList,
             self.replica_sets, "replicasets"),
            ("/apis/apps/v1/statefulsets", api.StatefulSet, api.StatefulSetList,
             self.stateful_sets, "statefulsets"),
        ]
        return [Reflector(api_client, path, kind, list_kind, index, resource=resource)
                for path, kind, list_kind, index, resource in specs]


@dataclass(frozen=True, slots=True)
class _MapOwner:
    namespace: str
    name: str
    selector: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class _LabelOwner:
    namespace: str
    name: str
    selector: api.LabelSelector | None


class SchedulerHandle:
    """The shared framework Handle: snapshot, binding, waiting pods, listers,
    nominations and preemption actuation."""

    def __init__(self, binder: Binder, listers: Listers) -> None:
        self._binder = binder
        self._listers = listers
        self.scheduler: Scheduler | None = None
        self.executor: PreemptionExecutor | None = None

    def _scheduler(self) -> Scheduler:
        assert self.scheduler is not None, "handle used before the scheduler was built"
        return self.scheduler

    @property
    def snapshot(self) -> Snapshot:
        return self._scheduler().snapshot

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        return await self._binder.bind(pod, node_name)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        for framework in self._scheduler().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.allow(plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        for framework in self._scheduler().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.reject(plugin, reason)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        found = self._listers.namespaces.get(namespace)
        return found.metadata.labels if found is not None else None

    def default_spread_selector(self, pod: api.Pod) -> api.LabelSelector | None:
        listers = self._listers
        namespace = pod.metadata.namespace
        return default_selector(
            pod,
            [(namespace, service.spec.selector or None)
             for service in listers.services.in_namespace(namespace)],
            [_MapOwner(namespace, rc.metadata.name, rc.spec.selector or None)
             for rc in listers.replication_controllers.in_namespace(namespace)],
            [_LabelOwner(namespace, rs.metadata.name, rs.spec.selector)
             for rs in listers.replica_sets.in_namespace(namespace)],
            [_LabelOwner(namespace, ss.metadata.name, ss.spec.selector)
             for ss in listers.stateful_sets.in_namespace(namespace)],
        )

    def pdbs(self) -> Sequence[api.PodDisruptionBudget]:
        return self._listers.pdbs.values()

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._scheduler().queue.nominator.pods_for_node(node_name)

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        assert self.executor is not None
        for victim in victims:
            self.reject_waiting_pod(victim.uid, plugin, "preempted")
        self.executor.preempt(preemptor, node_name, victims, plugin)


def build_scheduler(
    config: SchedulerConfiguration,
    profiles: Sequence[EffectiveProfile],
    registry: Mapping[str, PluginSpec],
    raw: RawApi,
    listers: Listers | None = None,
) -> Scheduler:
    handle = SchedulerHandle(Binder(raw), listers or Listers())
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
    recorder = EventRecorder(raw)
    scheduler = Scheduler(frameworks, queue, Cache(), algorithm, recorder)
    handle.scheduler = scheduler
    handle.executor = PreemptionExecutor(raw, recorder, queue.nominator)
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
        listers = Listers()
        scheduler = build_scheduler(config, profiles, registry, raw, listers)
        # A namespace's labels decide namespaceSelector matches (InterPodAffinity).
        listers.namespaces = Index(lambda: scheduler.queue.move_on_event(NAMESPACE_CHANGE))
        pods = pod_reflector(api_client, PodEventHandler(scheduler, scheduler.recorder))
        nodes = node_reflector(api_client, NodeEventHandler(scheduler))
        secondary = listers.reflectors(api_client)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("scheduler.starting", profiles=[p.scheduler_name for p in profiles])
        try:
            async with asyncio.TaskGroup() as group:
                informer_tasks = [group.create_task(nodes.run(), name="informer nodes"),
                                  group.create_task(pods.run(), name="informer pods")]
                informer_tasks += [group.create_task(r.run(), name=f"informer {r.resource}")
                                   for r in secondary]
                await _wait_synced_or_stopped(
                    stop, nodes.synced, pods.synced, *(r.synced for r in secondary))
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
