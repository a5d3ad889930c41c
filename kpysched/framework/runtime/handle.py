"""ProfileHandle: the Handle each plugin receives from its profile's framework.

It knows the framework only as its scheduling points (the runners it forwards to),
so framework.py, which builds it, is not imported back."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo

if TYPE_CHECKING:
    from kpysched.api.response import ApiRequester
    from kpysched.cache.node_info import NodeInfo
    from kpysched.cache.pod_groups import PodGroupState
    from kpysched.cache.snapshot import Snapshot
    from kpysched.config.features import Features
    from kpysched.framework.pod_group_tree import GroupTree
    from kpysched.framework.runtime.scheduling_points import SchedulingPoints
    from kpysched.objects import api, coscheduling
    from kpysched.objects.composite_pod_groups import CompositePodGroup
    from kpysched.objects.scheduling import PodGroup


class ProfileHandle:
    """The Handle a plugin receives: the shared one plus its own framework's runners."""

    def __init__(self, shared: fw.SharedHandle, framework: SchedulingPoints) -> None:
        self._shared = shared
        self._framework = framework

    @property
    def snapshot(self) -> Snapshot:
        return self._shared.snapshot

    @property
    def profile_name(self) -> str:
        return self._framework.profile_name

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        return await self._shared.bind(pod, node_name)

    @property
    def client(self) -> ApiRequester:
        return self._shared.client

    @property
    def storage(self) -> fw.StorageListers:
        return self._shared.storage

    @property
    def resources(self) -> fw.ResourceListers:
        return self._shared.resources

    @property
    def pod_lister(self) -> fw.PodLister | None:
        return self._shared.pod_lister

    @property
    def features(self) -> Features:
        return self._shared.features

    @property
    def metrics(self) -> fw.PluginMetrics | None:
        return self._shared.metrics

    def record_event(self, pod: api.Pod, controller: str, type_: str, reason: str,
                     action: str, note: str) -> None:
        self._shared.record_event(pod, controller, type_, reason, action, note)

    def record_pod_event(self, pod: api.Pod, type_: str, reason: str, action: str,
                         note: str) -> None:
        self._shared.record_event(pod, self.profile_name, type_, reason, action, note)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        self._shared.allow_waiting_pod(uid, plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        self._shared.reject_waiting_pod(uid, plugin, reason)

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self._shared.pod_group(namespace, name)

    def composite_pod_group(self, namespace: str, name: str) -> CompositePodGroup | None:
        return self._shared.composite_pod_group(namespace, name)

    def pod_group_tree(self, namespace: str, name: str) -> GroupTree | None:
        return self._shared.pod_group_tree(namespace, name)

    def coscheduling_pod_group(self, namespace: str,
                               name: str) -> coscheduling.PodGroup | None:
        return self._shared.coscheduling_pod_group(namespace, name)

    def pod_group_state(self, state: CycleState | None, namespace: str,
                        name: str) -> PodGroupState:
        return self._shared.pod_group_state(state, namespace, name)

    def activate(self, pods: Sequence[PodInfo]) -> None:
        self._shared.activate(pods)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._shared.namespace_labels(namespace)

    def namespace_labels_version(self) -> int:
        return self._shared.namespace_labels_version()

    def default_spread_selector(self, pod: api.Pod) -> api.LabelSelector | None:
        return self._shared.default_spread_selector(pod)

    def pdbs(self) -> Sequence[api.PodDisruptionBudget]:
        return self._shared.pdbs()

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self._shared.nominated_pods_for_node(node_name)

    def has_nominated_pods(self) -> bool:
        return self._shared.has_nominated_pods()

    def nominated_node_names(self) -> Collection[str]:
        return self._shared.nominated_node_names()

    def is_pod_running_preemption(self, uid: str) -> bool:
        return self._shared.is_pod_running_preemption(uid)

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        self._shared.preempt(preemptor, node_name, victims, plugin)

    def extenders(self) -> Sequence[fw.Extender]:
        return self._shared.extenders()

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                                  node_only_passed: bool = False) -> Status:
        framework = self._framework
        return framework.run_filter_with_nominated(
            state, pod, node,
            framework.node_only_filter_names if node_only_passed else frozenset())

    def node_simulator(self, state: CycleState, pod: PodInfo) -> fw.NodeSimulator:
        return self._framework.node_simulator(state, pod)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         added: PodInfo, node: NodeInfo) -> Status:
        return self._framework.run_pre_filter_extension_add_pod(state, pod, added, node)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            removed: PodInfo, node: NodeInfo) -> Status:
        return self._framework.run_pre_filter_extension_remove_pod(state, pod, removed, node)
