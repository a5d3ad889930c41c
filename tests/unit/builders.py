"""Short builders for pods, nodes, snapshots and a fake framework handle.

    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()        # api.Pod
    info = make_pod().req(cpu="100m").info()                     # PodInfo
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).info(info)  # NodeInfo
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.pod_groups import PodGroupState, PodGroupStates
from kpysched.cache.snapshot import Snapshot
from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.pod_group_tree import GroupTree
from kpysched.framework.status import Status
from kpysched.informers.listers import ResourceListers, StorageListers
from kpysched.objects import api, composite_pod_groups, coscheduling, scheduling
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.queue.workload_forest import WorkloadForest

Quantity = str | int | float


def _quantities(mapping: Mapping[str, Quantity] | None, named: Mapping[str, Quantity]
                ) -> dict[str, Quantity]:
    """Merge a mapping with keyword quantities; keyword names use '_' for '-'."""
    merged: dict[str, Quantity] = dict(mapping or {})
    merged.update({name.replace("_", "-"): amount for name, amount in named.items()})
    return merged


def expr(key: str, operator: str, *values: str) -> api.NodeSelectorRequirement:
    return api.NodeSelectorRequirement(key=key, operator=operator, values=list(values))


def term(*expressions: api.NodeSelectorRequirement,
         fields: Iterable[api.NodeSelectorRequirement] = ()) -> api.NodeSelectorTerm:
    return api.NodeSelectorTerm(match_expressions=list(expressions), match_fields=list(fields))


class PodBuilder:
    def __init__(self, name: str, namespace: str) -> None:
        self._pod = api.Pod(metadata=api.ObjectMeta(name=name, namespace=namespace,
                                                    uid=f"uid-{namespace}-{name}"))

    def uid(self, uid: str) -> PodBuilder:
        self._pod.metadata.uid = uid
        return self

    def node(self, node_name: str) -> PodBuilder:
        self._pod.spec.node_name = node_name
        return self

    def priority(self, value: int) -> PodBuilder:
        self._pod.spec.priority = value
        return self

    def container(self, image: str = "", **requests: Quantity) -> PodBuilder:
        """A container with an image (and optional requests)."""
        self._pod.spec.containers.append(api.Container(
            name=f"c{len(self._pod.spec.containers)}", image=image,
            resources=api.ResourceRequirements(requests=_quantities(None, requests))))
        return self

    def req(self, resources: Mapping[str, Quantity] | None = None, /,
            **named: Quantity) -> PodBuilder:
        """A container requesting the given quantities (cpu, memory, ephemeral_storage, ...)."""
        self._pod.spec.containers.append(api.Container(
            name=f"c{len(self._pod.spec.containers)}",
            resources=api.ResourceRequirements(requests=_quantities(resources, named))))
        return self

    def init_req(self, resources: Mapping[str, Quantity] | None = None, /, *,
                 sidecar: bool = False, image: str = "", **named: Quantity) -> PodBuilder:
        self._pod.spec.init_containers.append(api.Container(
            name=f"i{len(self._pod.spec.init_containers)}", image=image,
            restart_policy="Always" if sidecar else None,
            resources=api.ResourceRequirements(requests=_quantities(resources, named))))
        return self

    def overhead(self, **named: Quantity) -> PodBuilder:
        self._pod.spec.overhead = _quantities(None, named)
        return self

    def pod_requests(self, **named: Quantity) -> PodBuilder:
        """Pod-level resources (spec.resources.requests)."""
        self._pod.spec.resources = api.ResourceRequirements(requests=_quantities(None, named))
        return self

    def node_selector(self, labels: Mapping[str, str] | None = None, /,
                      **named: str) -> PodBuilder:
        self._pod.spec.node_selector = {**(labels or {}), **named}
        return self

    def _node_affinity(self) -> api.NodeAffinity:
        if self._pod.spec.affinity is None:
            self._pod.spec.affinity = api.Affinity()
        if self._pod.spec.affinity.node_affinity is None:
            self._pod.spec.affinity.node_affinity = api.NodeAffinity()
        return self._pod.spec.affinity.node_affinity

    def required(self, *terms: api.NodeSelectorTerm) -> PodBuilder:
        """Required node affinity with these (ORed) terms."""
        self._node_affinity().required_during_scheduling_ignored_during_execution = (
            api.NodeSelector(node_selector_terms=list(terms)))
        return self

    def preferred(self, weight: int, preference: api.NodeSelectorTerm) -> PodBuilder:
        self._node_affinity().preferred_during_scheduling_ignored_during_execution.append(
            api.PreferredSchedulingTerm(weight=weight, preference=preference))
        return self

    def toleration(self, key: str = "", value: str = "", effect: str = "",
                   operator: str = "") -> PodBuilder:
        self._pod.spec.tolerations.append(
            api.Toleration(key=key, operator=operator, value=value, effect=effect))
        return self

    def host_port(self, port: int, protocol: str = "TCP", ip: str = "") -> PodBuilder:
        self._pod.spec.containers.append(api.Container(
            name=f"c{len(self._pod.spec.containers)}",
            ports=[api.ContainerPort(container_port=port, host_port=port, protocol=protocol,
                                     host_ip=ip)]))
        return self

    def label(self, key: str, value: str = "") -> PodBuilder:
        self._pod.metadata.labels = {**self._pod.metadata.labels, key: value}
        return self

    def terminating(self) -> PodBuilder:
        self._pod.metadata.deletion_timestamp = "2024-01-01T00:00:00Z"
        return self

    def owner(self, kind: str, name: str, api_version: str = "apps/v1",
              controller: bool = True) -> PodBuilder:
        self._pod.metadata.owner_references = [
            *self._pod.metadata.owner_references,
            api.OwnerReference(api_version=api_version, kind=kind, name=name,
                               uid=f"uid-{name}", controller=controller)]
        return self

    def spread(self, max_skew: int, topology_key: str, when: str = "DoNotSchedule",
               selector: api.LabelSelector | None = None, *, min_domains: int | None = None,
               affinity_policy: str | None = None, taints_policy: str | None = None,
               match_label_keys: Iterable[str] = ()) -> PodBuilder:
        """A topology spread constraint (upstream's st.MakePod().SpreadConstraint)."""
        self._pod.spec.topology_spread_constraints.append(api.TopologySpreadConstraint(
            max_skew=max_skew, topology_key=topology_key, when_unsatisfiable=when,
            label_selector=selector, min_domains=min_domains,
            node_affinity_policy=affinity_policy, node_taints_policy=taints_policy,
            match_label_keys=list(match_label_keys)))
        return self

    def gates(self, *names: str) -> PodBuilder:
        self._pod.spec.scheduling_gates = [api.SchedulingGate(name=n) for n in names]
        return self

    def group(self, pod_group_name: str) -> PodBuilder:
        """A member of this pod group (spec.schedulingGroup, GenericWorkload)."""
        self._pod.spec.scheduling_group = api.PodSchedulingGroup(pod_group_name=pod_group_name)
        return self

    def obj(self) -> api.Pod:
        return self._pod

    def info(self) -> PodInfo:
        return PodInfo.of(self._pod)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._node = api.Node(metadata=api.ObjectMeta(name=name, uid=f"uid-node-{name}"))

    def capacity(self, resources: Mapping[str, Quantity] | None = None, /,
                 **named: Quantity) -> NodeBuilder:
        """Sets capacity and allocatable alike."""
        quantities = _quantities(resources, named)
        self._node.status.capacity = dict(quantities)
        self._node.status.allocatable = dict(quantities)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._node.metadata.labels = {**self._node.metadata.labels, key: value}
        return self

    def labels(self, labels: Mapping[str, str]) -> NodeBuilder:
        self._node.metadata.labels = {**self._node.metadata.labels, **labels}
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self._node.spec.taints = [*self._node.spec.taints,
                                  api.Taint(key=key, value=value, effect=effect)]
        return self

    def unschedulable(self) -> NodeBuilder:
        self._node.spec.unschedulable = True
        return self

    def image(self, size: int, *names: str) -> NodeBuilder:
        self._node.status.images = [*self._node.status.images,
                                    api.ContainerImage(names=list(names), size_bytes=size)]
        return self

    def obj(self) -> api.Node:
        return self._node

    def info(self, *pods: PodInfo | api.Pod | PodBuilder) -> NodeInfo:
        node_info = NodeInfo(self._node.metadata.name)
        node_info.set_node(self._node)
        for index, pod in enumerate(pods):
            node_info.add_pod(self._pod_info(pod, node_info, index))
        return node_info


    @staticmethod
    def _pod_info(pod: PodInfo | api.Pod | PodBuilder, node_info: NodeInfo,
                  index: int) -> PodInfo:
        if isinstance(pod, PodInfo):
            return pod
        obj = pod.obj() if isinstance(pod, PodBuilder) else pod
        # Pods on a node are keyed by uid: keep same-named test pods apart.
        if not obj.metadata.uid or any(p.uid == obj.metadata.uid for p in node_info.pods.values()):
            obj.metadata.uid = f"{node_info.name}-pod-{index}"
        return PodInfo.of(obj)


def label_selector(match_labels: Mapping[str, str] | None = None, *,
                   exists: Iterable[str] = ()) -> api.LabelSelector:
    """matchLabels plus `Exists` expressions (upstream's st.MakeLabelSelector())."""
    return api.LabelSelector(
        match_labels=dict(match_labels or {}),
        match_expressions=[api.LabelSelectorRequirement(key=key, operator="Exists")
                           for key in exists])


def make_pod(name: str = "pod", namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str = "node") -> NodeBuilder:
    return NodeBuilder(name)


def make_snapshot(*node_infos: NodeInfo) -> Snapshot:
    snapshot = Snapshot(by_name={info.name: info for info in node_infos})
    snapshot.rebuild_order()
    return snapshot


def make_cluster(nodes: Iterable[NodeBuilder], pods: Iterable[PodBuilder] = ()
                 ) -> list[NodeInfo]:
    """NodeInfos with each pod placed on the node its spec.nodeName names."""
    placed: dict[str, list[PodBuilder]] = {}
    for pod in pods:
        placed.setdefault(pod.obj().spec.node_name, []).append(pod)
    return [node.info(*placed.get(node.obj().metadata.name, ())) for node in nodes]


@dataclass
class FakeHandle:
    """A framework Handle for unit tests: a snapshot and a record of bindings."""

    snapshot_value: Snapshot = field(default_factory=Snapshot)
    bind_status: Status = field(default_factory=Status)
    bound: list[tuple[str, str]] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    spread_selectors: dict[str, api.LabelSelector] = field(default_factory=dict)
    preempting: set[str] = field(default_factory=set)
    pdb_list: list[api.PodDisruptionBudget] = field(default_factory=list)
    nominated: dict[str, list[PodInfo]] = field(default_factory=dict)  # node -> pods
    # (preemptor key, node, victim keys, plugin) for every preempt() call, in order.
    preemptions: list[tuple[str, str, list[str], str]] = field(default_factory=list)
    # Fill its indexes with on_add(...) to give volume plugins their PVs, claims, ...
    storage_listers: StorageListers = field(default_factory=StorageListers)
    # ... and DynamicResources its claims, slices and classes.
    resource_listers: ResourceListers = field(default_factory=ResourceListers)
    # Plugins that write (PreBind) get this as their client, e.g. api_double.RecordingApi.
    api_client: Any = None
    # GangScheduling's PodGroups (namespace/name) and the cache's member states.
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    composite_groups: dict[str, CompositePodGroup] = field(default_factory=dict)
    # Coscheduling's PodGroups (scheduling.x-k8s.io), by namespace/name.
    coscheduling_groups: dict[str, coscheduling.PodGroup] = field(default_factory=dict)
    pod_group_states: PodGroupStates = field(default_factory=PodGroupStates)
    activated: list[str] = field(default_factory=list)  # uids, in order
    allowed: list[tuple[str, str]] = field(default_factory=list)  # (uid, plugin)
    # The pod informer's pods (namespace/name); None: no pod lister, as in a simulation.
    informer_pods: dict[str, api.Pod] | None = None
    # Plugins' own metrics, e.g. a kpysched.metrics.SchedulerMetrics.
    plugin_metrics: Any = None
    # Events plugins recorded: (pod key, controller, type, reason, action, note).
    events: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)
    # The release and gates plugins see (handle.features).
    features_value: Features = field(default_factory=Features)
    # namespace_labels_version()'s count and the namespaces it last saw.
    _namespaces_version: int = field(default=0, init=False, repr=False)
    _namespaces_seen: dict[str, dict[str, str]] = field(default_factory=dict, init=False,
                                                        repr=False)

    @property
    def snapshot(self) -> Snapshot:
        return self.snapshot_value

    @property
    def features(self) -> Features:
        return self.features_value

    @property
    def client(self) -> Any:
        return self.api_client

    @property
    def storage(self) -> StorageListers:
        return self.storage_listers

    @property
    def resources(self) -> ResourceListers:
        return self.resource_listers

    @property
    def pod_lister(self) -> FakeHandle | None:
        return self if self.informer_pods is not None else None

    def get(self, namespace: str, name: str, uid: str = "") -> api.Pod | None:
        """The pod lister's answer (this handle is its own lister)."""
        assert self.informer_pods is not None
        return self.informer_pods.get(f"{namespace}/{name}")

    @property
    def metrics(self) -> Any:
        return self.plugin_metrics

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        self.bound.append((f"{pod.metadata.namespace}/{pod.metadata.name}", node_name))
        return self.bind_status

    def record_event(self, pod: api.Pod, controller: str, type_: str, reason: str,
                     action: str, note: str) -> None:
        self.events.append((f"{pod.metadata.namespace}/{pod.metadata.name}", controller,
                            type_, reason, action, note))

    def record_pod_event(self, pod: api.Pod, type_: str, reason: str, action: str,
                         note: str) -> None:
        self.record_event(pod, "kpysched", type_, reason, action, note)

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        self.allowed.append((uid, plugin))

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        return self.pod_groups.get(f"{namespace}/{name}")

    def composite_pod_group(self, namespace: str, name: str) -> CompositePodGroup | None:
        return self.composite_groups.get(f"{namespace}/{name}")

    def pod_group_tree(self, namespace: str, name: str) -> GroupTree | None:
        forest = WorkloadForest(composite_pod_groups=True)
        for group in self.pod_groups.values():
            forest.add_pod_group(group)
        for composite in self.composite_groups.values():
            forest.add_composite(composite)
        root = forest.root_of_pod_group(namespace, name)
        return None if root is None else forest.tree(root)

    def coscheduling_pod_group(self, namespace: str,
                               name: str) -> coscheduling.PodGroup | None:
        return self.coscheduling_groups.get(f"{namespace}/{name}")

    def pod_group_state(self, state: CycleState | None, namespace: str,
                        name: str) -> PodGroupState:
        if state is not None and state.pod_group is not None:
            return state.pod_group
        return self.pod_group_states.get(namespace, name)

    def activate(self, pods: Sequence[PodInfo]) -> None:
        self.activated.extend(pod.uid for pod in pods)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        return None

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.namespaces.get(namespace)

    def namespace_labels_version(self) -> int:
        """Bumped when `namespaces` differs from what the previous call saw: tests relabel
        a namespace by changing that dict, where the informer's Index counts changes."""
        now = {name: dict(labels) for name, labels in self.namespaces.items()}
        if now != self._namespaces_seen:
            self._namespaces_seen = now
            self._namespaces_version += 1
        return self._namespaces_version

    def default_spread_selector(self, pod: api.Pod) -> api.LabelSelector | None:
        return self.spread_selectors.get(f"{pod.metadata.namespace}/{pod.metadata.name}")

    def pdbs(self) -> Sequence[api.PodDisruptionBudget]:
        return self.pdb_list

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.nominated.get(node_name, [])

    def has_nominated_pods(self) -> bool:
        return any(self.nominated.values())

    def nominated_node_names(self) -> Collection[str]:
        return [name for name, pods in self.nominated.items() if pods]

    def is_pod_running_preemption(self, uid: str) -> bool:
        return uid in self.preempting

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        self.preemptions.append((preemptor.key, node_name, [v.key for v in victims], plugin))

    def extenders(self) -> Sequence[Any]:
        return ()


def make_pod_group(name: str, min_count: int | None = None,
                   namespace: str = "default", *, parent: str | None = None,
                   created: str | None = None) -> PodGroup:
    """A scheduling.k8s.io/v1alpha2 PodGroup: a gang of `min_count`, or basic policy;
    `parent` names its CompositePodGroup (v1beta1)."""
    policy = (scheduling.PodGroupSchedulingPolicy(
        gang=scheduling.GangSchedulingPolicy(min_count=min_count)) if min_count is not None
        else scheduling.PodGroupSchedulingPolicy(basic=scheduling.BasicSchedulingPolicy()))
    return PodGroup(metadata=scheduling.PodGroupMeta(name=name, namespace=namespace,
                                                    uid=f"uid-pg-{name}", generation=1,
                                                    creation_timestamp=created),
                    spec=scheduling.PodGroupSpec(scheduling_policy=policy,
                                                 parent_composite_pod_group_name=parent))


def make_composite_pod_group(name: str, min_group_count: int | None = None,
                             namespace: str = "default", *, parent: str | None = None,
                             created: str | None = None) -> CompositePodGroup:
    """A scheduling.k8s.io/v1alpha3 CompositePodGroup: a gang of `min_group_count`
    children, or basic policy; `parent` names its own parent."""
    policy = (composite_pod_groups.CompositePodGroupSchedulingPolicy(
        gang=composite_pod_groups.CompositeGangSchedulingPolicy(
            min_group_count=min_group_count)) if min_group_count is not None
        else composite_pod_groups.CompositePodGroupSchedulingPolicy(
            basic=composite_pod_groups.CompositeBasicSchedulingPolicy()))
    return CompositePodGroup(
        metadata=scheduling.PodGroupMeta(name=name, namespace=namespace,
                                         uid=f"uid-cpg-{name}", generation=1,
                                         creation_timestamp=created),
        spec=composite_pod_groups.CompositePodGroupSpec(
            scheduling_policy=policy, parent_composite_pod_group_name=parent))
