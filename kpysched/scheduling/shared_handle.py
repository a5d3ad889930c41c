"""SchedulerHandle: what every profile's plugins share through their Handle.

The snapshot of the current cycle, binding, waiting pods, the secondary listers
(namespaces, PDBs, spreading owners), nominations and preemption's actuation.
Built once by the application and attached to the scheduler it serves.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kpysched.api.client import RawApi
from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Status
from kpysched.informers.listers import Listers, ResourceListers, StorageListers
from kpysched.objects import api, coscheduling
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins.pod_topology_spread import default_selector
from kpysched.scheduling.group_preemption import DeferredPreemption
from kpysched.writes.binding import Binder
from kpysched.writes.preemption import PreemptionExecutor

if TYPE_CHECKING:
    from kpysched.cache.snapshot import Snapshot
    from kpysched.metrics import SchedulerMetrics
    from kpysched.scheduling.scheduler import Scheduler


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


class _InformerPods:
    """The pod informer's store (by uid) read by namespace and name."""

    def __init__(self, store: Callable[[], Mapping[str, api.Pod]]) -> None:
        self._store = store

    def get(self, namespace: str, name: str, uid: str = "") -> api.Pod | None:
        pods = self._store()
        if uid:
            found = pods.get(uid)
            if found is not None:
                return found
        # Only when that pod is gone: a search for one recreated under its name.
        return next((pod for pod in pods.values() if pod.metadata.name == name
                     and pod.metadata.namespace == namespace), None)


class SchedulerHandle:
    """The shared framework Handle: snapshot, binding, waiting pods, listers,
    nominations and preemption actuation."""

    def __init__(self, binder: Binder, listers: Listers, raw: RawApi) -> None:
        self._binder = binder
        self._listers = listers
        self._raw = raw
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

    @property
    def client(self) -> RawApi:
        return self._raw

    @property
    def storage(self) -> StorageListers:
        return self._listers.storage

    @property
    def resources(self) -> ResourceListers:
        return self._listers.resources

    @property
    def pod_lister(self) -> _InformerPods | None:
        pods = self._scheduler().pods
        return _InformerPods(pods) if pods is not None else None

    @property
    def metrics(self) -> SchedulerMetrics | None:
        return self._scheduler().metrics

    def record_event(self, pod: api.Pod, controller: str, type_: str, reason: str,
                     action: str, note: str) -> None:
        self._scheduler().recorder.event(pod, controller, type_, reason, action, note)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        for framework in self._scheduler().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.allow(plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        for framework in self._scheduler().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.reject(plugin, reason)

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        workloads = self._listers.workloads
        return None if workloads is None else workloads.pod_groups.get(f"{namespace}/{name}")

    def coscheduling_pod_group(self, namespace: str,
                               name: str) -> coscheduling.PodGroup | None:
        groups = self._listers.coscheduling
        return None if groups is None else groups.pod_groups.get(f"{namespace}/{name}")

    def pod_group_state(self, state: CycleState | None, namespace: str,
                        name: str) -> PodGroupState:
        if state is not None and state.pod_group is not None:
            return state.pod_group
        groups = self._scheduler().cache.pod_groups
        return groups.get(namespace, name) if groups is not None else PodGroupState()

    def activate(self, pods: Sequence[PodInfo]) -> None:
        self._scheduler().queue.activate([pod.uid for pod in pods])

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

    def has_nominated_pods(self) -> bool:
        return self._scheduler().queue.nominator.has_any()

    def nominated_node_names(self) -> Collection[str]:
        return self._scheduler().queue.nominator.nodes()

    def is_pod_running_preemption(self, uid: str) -> bool:
        return self.executor is not None and self.executor.is_running(uid)

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        assert self.executor is not None
        deferred = self._scheduler().deferred_preemptions
        if deferred is not None:
            # A Coscheduling group's cycle: carried out only if the group goes ahead.
            deferred.append(DeferredPreemption(preemptor, node_name, list(victims), plugin))
            return
        metrics = self._scheduler().metrics
        if metrics is not None:
            metrics.preemption_victims(len(victims))
        # A victim still waiting at Permit or still in PreBind was never bound: it
        # leaves its binding cycle with an error and goes to backoff, never deleted
        # (upstream's waitingPod.Preempt and podInPreBind.CancelPod).
        in_memory: list[PodInfo] = []
        to_delete: list[PodInfo] = []
        frameworks = self._scheduler().frameworks.values()
        for victim in victims:
            uid = victim.uid
            preempted = any(
                waiting.preempt(plugin, "preempted") for framework in frameworks
                if (waiting := framework.waiting_pods.get(uid)) is not None)
            if not preempted:
                preempted = any(
                    binding.cancel_pod(f"preempted by {plugin}") for framework in frameworks
                    if (binding := framework.pods_in_pre_bind.get(uid)) is not None)
            (in_memory if preempted else to_delete).append(victim)
        self.executor.preempt(preemptor, node_name, to_delete, plugin, in_memory=in_memory,
                              on_failed=lambda: self.activate([preemptor]))
