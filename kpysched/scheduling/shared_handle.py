"""SchedulerHandle: what every profile's plugins share through their Handle.

The snapshot of the current cycle, binding, waiting pods, the secondary listers
(namespaces, PDBs, spreading owners), nominations and preemption's actuation.
Built once by the application before the frameworks (each is built with it), and
connected to the cycle context once that exists (the context holds the frameworks
and the queue, which are built with the handle's help).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kpysched.api.response import ApiRequester
from kpysched.cache.pod_groups import PodGroupState
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.features import Features
from kpysched.extenders.preemption import PreemptionExtender
from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.pod_group_tree import EntityKind, GroupTree, key_of
from kpysched.framework.status import Status
from kpysched.informers.listers import Listers, ResourceListers, StorageListers
from kpysched.objects import api, coscheduling
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins.pod_topology_spread import default_selector
from kpysched.queue.workload_forest import WorkloadForest, forest_changed
from kpysched.writes.binding import Binder

if TYPE_CHECKING:
    from kpysched.cache.snapshot import Snapshot
    from kpysched.metrics import SchedulerMetrics
    from kpysched.scheduling.context import CycleContext


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

    def __init__(self, binder: Binder, listers: Listers, raw: ApiRequester,
                 features: Features = DEFAULT_FEATURES) -> None:
        self._binder = binder
        self._features = features
        self._listers = listers
        self._raw = raw
        self._served: CycleContext | None = None
        self._preemption_extenders: tuple[PreemptionExtender, ...] | None = None
        # The trees of PodGroups under CompositePodGroups, kept from their informers
        # (only with that gate on; else each PodGroup is a root of its own).
        workloads = listers.workloads
        composites = workloads.composite_pod_groups if workloads is not None else None
        self._forest: WorkloadForest | None = None
        if workloads is not None and composites is not None:
            forest = self._forest = WorkloadForest(composite_pod_groups=True)
            workloads.pod_groups.observers.append(
                lambda _, old, new: forest_changed(forest, old, new))
            composites.observers.append(lambda _, old, new: forest_changed(forest, old, new))

    def serve(self, context: CycleContext) -> None:
        """Connect the handle to the cycles it serves (see the module docstring)."""
        self._served = context

    def _context(self) -> CycleContext:
        assert self._served is not None, "handle used before the scheduler was built"
        return self._served

    @property
    def snapshot(self) -> Snapshot:
        return self._context().snapshot

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        return await self._binder.bind(pod, node_name)

    @property
    def client(self) -> ApiRequester:
        return self._raw

    @property
    def storage(self) -> StorageListers:
        return self._listers.storage

    @property
    def resources(self) -> ResourceListers:
        return self._listers.resources

    @property
    def features(self) -> Features:
        return self._features

    @property
    def pod_lister(self) -> _InformerPods | None:
        pods = self._context().pods
        return _InformerPods(pods) if pods is not None else None

    @property
    def metrics(self) -> SchedulerMetrics | None:
        return self._context().metrics

    def record_event(self, pod: api.Pod, controller: str, type_: str, reason: str,
                     action: str, note: str) -> None:
        self._context().writes.events.event(pod, controller, type_, reason, action, note)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        for framework in self._context().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.allow(plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        for framework in self._context().frameworks.values():
            if (waiting := framework.waiting_pods.get(uid)) is not None:
                waiting.reject(plugin, reason)

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        workloads = self._listers.workloads
        return None if workloads is None else workloads.pod_groups.get(f"{namespace}/{name}")

    def composite_pod_group(self, namespace: str, name: str) -> CompositePodGroup | None:
        workloads = self._listers.workloads
        composites = workloads.composite_pod_groups if workloads is not None else None
        return None if composites is None else composites.get(f"{namespace}/{name}")

    def pod_group_tree(self, namespace: str, name: str) -> GroupTree | None:
        forest = self._forest
        if forest is None:
            group = self.pod_group(namespace, name)
            return None if group is None else GroupTree(key_of(group), pod_group=group)
        root = forest.root_of_pod_group(namespace, name)
        return None if root is None else forest.tree(root)

    def composite_root(self, namespace: str, name: str) -> str | None:
        """The name of the root CompositePodGroup of the PodGroup's tree, as far as the
        forest has seen it; None for a PodGroup that is a root of its own, one whose
        root is not seen yet, and with CompositePodGroup off (the queue's entity key)."""
        forest = self._forest
        root = forest.root_of_pod_group(namespace, name) if forest is not None else None
        if root is None or root.kind is not EntityKind.COMPOSITE_POD_GROUP:
            return None
        return root.name

    def coscheduling_pod_group(self, namespace: str,
                               name: str) -> coscheduling.PodGroup | None:
        groups = self._listers.coscheduling
        return None if groups is None else groups.pod_groups.get(f"{namespace}/{name}")

    def pod_group_state(self, state: CycleState | None, namespace: str,
                        name: str) -> PodGroupState:
        if state is not None and state.pod_group is not None:
            return state.pod_group
        groups = self._context().cache.pod_groups
        return groups.get(namespace, name) if groups is not None else PodGroupState()

    def activate(self, pods: Sequence[PodInfo]) -> None:
        self._context().queue.activate([pod.uid for pod in pods])

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        found = self._listers.namespaces.get(namespace)
        return found.metadata.labels if found is not None else None

    def namespace_labels_version(self) -> int:
        return self._listers.namespaces.generation

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
        return self._context().queue.nominator.pods_for_node(node_name)

    def has_nominated_pods(self) -> bool:
        return self._context().queue.nominator.has_any()

    def nominated_node_names(self) -> Collection[str]:
        return self._context().queue.nominator.nodes()

    def is_pod_running_preemption(self, uid: str) -> bool:
        return self._context().writes.preemption.is_running(uid)

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        # At once, or held while a Coscheduling group is tried (preemption_sink.py).
        self._context().preemptions.preempt(preemptor, node_name, victims, plugin)

    def extenders(self) -> Sequence[fw.Extender]:
        extenders = self._context().algorithm.extenders
        if extenders is None:
            return ()
        if self._preemption_extenders is None:
            self._preemption_extenders = tuple(
                PreemptionExtender(extender, extenders) for extender in extenders)
        return self._preemption_extenders
