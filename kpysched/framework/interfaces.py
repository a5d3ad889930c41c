"""Extension-point protocols, one per point, as upstream's framework defines them.

A plugin class subclasses the protocols it implements so mypy checks every
signature. Filter and Score are synchronous and pure over the snapshot; only the
binding-cycle points (Permit's waiting, PreBind, Bind, PostBind) await.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from kpysched.framework.cluster_events import ActionType, Registration
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
    from kpysched.framework.pod_totals import PodTotals, TotalsColumns
    from kpysched.objects import api, coscheduling, dra, storage
    from kpysched.objects.composite_pod_groups import CompositePodGroup
    from kpysched.objects.scheduling import PodGroup

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(slots=True)
class PreFilterResult:
    """Node names the pod may go to at all; None means every node."""

    node_names: set[str] | None = None


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass(slots=True)
class QueuedPodInfo:
    pod_info: PodInfo
    timestamp: float  # when it entered the active queue (for QueueSort ties)
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""


T_co = TypeVar("T_co", covariant=True)


class Lister(Protocol[T_co]):
    """Read access to one informer's objects (upstream's generated listers)."""

    def get(self, key: str) -> T_co | None:
        """By "namespace/name", or "name" for cluster-scoped objects."""
        ...

    def values(self) -> Sequence[T_co]: ...

    def in_namespace(self, namespace: str) -> Sequence[T_co]: ...


class ObservedLister(Lister[T_co], Protocol[T_co]):
    """A lister whose changes a plugin can follow: each observer is called with
    (action, old, new) on every add, update and delete."""

    @property
    def observers(self) -> list[Callable[[ActionType, Any, Any], object]]: ...


class StorageListers(Protocol):
    """The storage objects the volume plugins consult."""

    @property
    def persistent_volumes(self) -> Lister[storage.PersistentVolume]: ...

    @property
    def persistent_volume_claims(self) -> Lister[storage.PersistentVolumeClaim]: ...

    @property
    def storage_classes(self) -> Lister[storage.StorageClass]: ...

    @property
    def csi_nodes(self) -> Lister[storage.CSINode]: ...

    @property
    def csi_drivers(self) -> Lister[storage.CSIDriver]: ...

    @property
    def csi_storage_capacities(self) -> Lister[storage.CSIStorageCapacity]: ...

    @property
    def volume_attachments(self) -> Lister[storage.VolumeAttachment]: ...


class ResourceListers(Protocol):
    """The resource.k8s.io objects DynamicResources consults. Each is an informer index;
    `observers` of the claims index hear every change before the queue does."""

    @property
    def resource_claims(self) -> ObservedLister[dra.ResourceClaim]: ...

    @property
    def resource_claim_templates(self) -> Lister[dra.ResourceClaimTemplate]: ...

    @property
    def resource_slices(self) -> ObservedLister[dra.ResourceSlice]: ...

    @property
    def device_classes(self) -> ObservedLister[dra.DeviceClass]: ...

    @property
    def device_taint_rules(self) -> ObservedLister[dra.DeviceTaintRule] | None:
        """DeviceTaintRules (v1.37: DRADeviceTaintRules GA); None where the release has
        no such API and nothing watches them."""
        ...

    def device_class_for_extended_resource(self, name: str) -> dra.DeviceClass | None:
        """The DeviceClass that backs extended resource `name` through DRA (its
        spec.extendedResourceName, or deviceclass.resource.kubernetes.io/<class>), as
        upstream's DeviceClassResolver.GetDeviceClass answers; None when none does."""
        ...


class PodLister(Protocol):
    """The pod informer's pods (upstream's pod lister)."""

    def get(self, namespace: str, name: str, uid: str = "") -> api.Pod | None:
        """The pod of that name as last seen; `uid`, when known, finds it without a
        search (a pod recreated under the name is still found by name)."""
        ...


class PluginMetrics(Protocol):
    """The metrics plugins report themselves, into the scheduler's registry (upstream's
    plugins write to the process-wide one)."""

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        """scheduler_volume_scheduling_stage_error_total{operation}: predicate, assume
        or bind."""
        ...

    def preemption_evaluation(self, preemptor: str, result: str, seconds: float) -> None:
        """scheduler_preemption_evaluation_duration_seconds{preemptor,result}: finding
        the victims ("pod" or "podgroup"; result a status code, e.g. Success)."""
        ...

    def preemption_disruptions(self, preemptor: str, disruptions: int,
                               pdb_violations: int) -> None:
        """A preemption's victims that disrupt pod groups, and its budget violations
        (scheduler_preemption_workload_disruptions, _pdb_violations_total)."""
        ...


@dataclass(slots=True, frozen=True)
class Victims:
    """The pods to evict on one node and how many PDBs that violates (upstream's
    extenderv1.Victims)."""

    pods: tuple[PodInfo, ...]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """A scheduler extender as preemption sees it (upstream's fwk.Extender, reached
    through Handle.Extenders() in the Evaluator's callExtenders)."""

    @property
    def name(self) -> str: ...

    @property
    def ignorable(self) -> bool: ...

    @property
    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: api.Pod) -> bool: ...

    def process_preemption(self, pod: PodInfo, victims: Mapping[str, Victims],
                           snapshot: Snapshot) -> dict[str, Victims] | Status:
        """The victims the extender keeps, by node (a node it leaves out is no longer
        a candidate); an Error status when the call failed. Waits for the answer."""
        ...


class SharedHandle(Protocol):
    """What the scheduler offers every profile's framework."""

    @property
    def snapshot(self) -> Snapshot: ...

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        """POST the Binding subresource (used by DefaultBinder)."""
        ...

    @property
    def client(self) -> ApiRequester:
        """The API client for the writes a plugin makes itself (PreBind's volume
        bindings); rate-limited with the scheduler's own requests."""
        ...

    @property
    def storage(self) -> StorageListers:
        """PersistentVolumes, claims, StorageClasses and the CSI objects."""
        ...

    @property
    def resources(self) -> ResourceListers:
        """ResourceClaims, their templates, ResourceSlices and DeviceClasses."""
        ...

    @property
    def pod_lister(self) -> PodLister | None:
        """The pod informer's pods; None where the scheduler runs without one (a
        simulation), when whether a pod still exists cannot be told."""
        ...

    @property
    def features(self) -> Features:
        """The kube-scheduler release this scheduler behaves as (`features.release`) and
        its feature gates (`features.enabled(name)`)."""
        ...

    @property
    def metrics(self) -> PluginMetrics | None:
        """Where plugins count what they report; None when metrics are off."""
        ...

    def record_event(self, pod: api.Pod, controller: str, type_: str, reason: str,
                     action: str, note: str) -> None:
        """An events.k8s.io Event about `pod`, reported by `controller` (a profile's
        scheduler name), written in the background."""
        ...

    def allow_waiting_pod(self, uid: str, plugin: str) -> None: ...

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None: ...

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        """A scheduling.k8s.io/v1alpha2 PodGroup from its informer (GenericWorkload);
        None when it does not exist."""
        ...

    def composite_pod_group(self, namespace: str, name: str) -> CompositePodGroup | None:
        """A scheduling.k8s.io/v1alpha3 CompositePodGroup from its informer (v1.37's
        CompositePodGroup gate); None when it does not exist or the gate is off."""
        ...

    def pod_group_tree(self, namespace: str, name: str) -> GroupTree | None:
        """The whole tree the PodGroup belongs to, from its root (v1.37's
        CompositePodGroup: the PodGroup alone when it has no parent or the gate is
        off); None when the PodGroup, or a group above it, is not known yet."""
        ...

    def coscheduling_pod_group(self, namespace: str,
                               name: str) -> coscheduling.PodGroup | None:
        """A scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1) from its informer,
        run when a profile enables Coscheduling; None when it does not exist."""
        ...

    def pod_group_state(self, state: CycleState | None, namespace: str,
                        name: str) -> PodGroupState:
        """Where the group's members stand: in a pod-group scheduling cycle (`state` is
        its CycleState) the cycle's own copy, with the members it has tried assumed;
        otherwise the cache's."""
        ...

    def activate(self, pods: Sequence[PodInfo]) -> None:
        """Move these pods, if they wait among the unschedulable or in backoff, to the
        active queue (upstream's Handle.Activate)."""
        ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """Labels of a Namespace (namespace informer); None when it is unknown."""
        ...

    def namespace_labels_version(self) -> int:
        """A number that changes whenever a Namespace is added, updated or deleted: while
        it stays the same, so does every namespace_labels() answer (lets a plugin keep
        figures that depend on namespace labels across cycles)."""
        ...

    def default_spread_selector(self, pod: api.Pod) -> api.LabelSelector | None:
        """Upstream's DefaultSelector: the selectors of the Services that select the pod
        and of its owning ReplicationController, ReplicaSet or StatefulSet, merged into
        one; None when nothing selects the pod."""
        ...

    def pdbs(self) -> Sequence[api.PodDisruptionBudget]:
        """PodDisruptionBudgets from the policy/v1 informer."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        """Pods nominated to run on `node_name` (status.nominatedNodeName or ours)."""
        ...

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated anywhere (lets Filter skip the two-pass check)."""
        ...

    def nominated_node_names(self) -> Collection[str]:
        """The nodes some pod is nominated to (lets a pass over many nodes ask only these
        for nominated pods)."""
        ...

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether victims for this preemptor are still being removed."""
        ...

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        """Actuate a preemption without waiting: mark each victim with the
        DisruptionTarget condition, delete it, record a Preempted event, and clear the
        nominations of lower-priority pods on the node. Returns at once."""
        ...

    def extenders(self) -> Sequence[Extender]:
        """The configured scheduler extenders, in the order they are called."""
        ...


class Handle(SharedHandle, Protocol):
    """What a plugin sees: the shared handle plus its own profile's runners."""

    @property
    def profile_name(self) -> str: ...

    def record_pod_event(self, pod: api.Pod, type_: str, reason: str, action: str,
                         note: str) -> None:
        """An Event about `pod` in this profile's name (upstream's fh.EventRecorder())."""
        ...

    def run_filter_with_nominated(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                                  node_only_passed: bool = False) -> Status:
        """All Filter plugins of the profile, counting nominated pods of equal or
        higher priority on the node as upstream's two-pass filter does.
        `node_only_passed`: this node already passed every Filter and only its pods
        changed since, so the NodeOnlyFilterPlugins need not be asked again."""
        ...

    def node_simulator(self, state: CycleState, pod: PodInfo) -> NodeSimulator:
        """For this pod's cycle (after PreFilter), simulated nodes that leave `state`
        and the nodes they are given unchanged."""
        ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         added: PodInfo, node: NodeInfo) -> Status: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            removed: PodInfo, node: NodeInfo) -> Status: ...


class Plugin(Protocol):
    NAME: ClassVar[str]

    def events_to_register(self) -> Sequence[Registration]:
        """Cluster events that may make a pod this plugin rejected schedulable.

        Each is a bare ClusterEvent (always Queue) or a ClusterEventWithHint whose hint
        answers, for one rejected pod, whether this very event may help it (QUEUE) or not
        (QUEUE_SKIP): upstream's EventsToRegister with QueueingHintFns. Only plugins at
        PreEnqueue, PreFilter, Filter, Reserve or Permit can reject, so only theirs count.
        A hint must be cheap and pure: it runs for every rejected pod on every matching
        event, on the scheduling loop. What `hint(pod, old, new)` receives:

        - Pod (AssignedPod, UnschedulablePod): PodInfo. Add: (None, new); Delete:
          (old, None), where a pod that turned Succeeded/Failed arrives as deleted;
          updates: (old, new), the rejected pod's own updates included.
        - Node: api.Node, (None, new) / (old, new) / (old, None).
        - Namespace: api.Namespace.
        - Storage resources (PersistentVolume, PersistentVolumeClaim, StorageClass,
          CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment): their structs from
          objects/storage.py, as the informer delivered them.
        - Wildcard events (UnschedulableTimeout, ForceActivate) call no hint.

        Use cluster_events.objects_as to narrow the objects; raising (a wrong type, a
        parse error) counts as QUEUE, as upstream counts a hint's error.
        """
        ...


class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status: ...


class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...


class PreFilterExtensions(Protocol):
    """Lets preemption and nominated-pod checks update a PreFilter's state incrementally."""

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo,
                node: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo,
                   node: NodeInfo) -> Status: ...


class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status: ...


class NodeOnlyFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin whose verdict depends on the Node object alone (its name, labels,
    taints, spec, status), never on the pods on it or nominated to it.

    Adding or removing pods cannot change such a verdict, so preemption's dry run,
    once a node passed the whole chain with every victim removed, does not ask these
    again after each victim it gives back."""


class PodTotalsFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin whose verdict depends on the node's pods only through their count
    and summed requests (framework/pod_totals.py's PodTotals).

    `filter_with_pod_totals(state, pod, node, totals)` must equal `filter` on a clone
    of `node` whose pods add up to `totals`. Preemption's dry run then needs no clone
    of each node it tries, when every other Filter still running is node-only."""

    def filter_with_pod_totals(self, state: CycleState, pod: PodInfo, node: NodeInfo,
                               totals: PodTotals) -> Status: ...


class PodTotalsVectorFilterPlugin(PodTotalsFilterPlugin, Protocol):
    """A PodTotalsFilterPlugin that can also judge many snapshot rows at once, each
    with its own pod totals (framework/pod_totals.py's TotalsColumns)."""

    def filter_with_pod_totals_vector(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, totals: TotalsColumns,
    ) -> npt.NDArray[np.bool_] | None:
        """Whether each of `totals.rows` passes `filter` with its pods adding up to the
        totals; None when this cannot be exact for the pod."""
        ...


class NodeSimulation(Protocol):
    """One node in preemption's dry run: pods taken off and given back, then the Filter
    chain (with nominated pods, as upstream's two-pass filter) on the result."""

    def remove_pod(self, victim: PodInfo) -> Status:
        """Take the pod off; a failing PreFilter extension's status, else Success."""
        ...

    def add_pod(self, victim: PodInfo) -> Status:
        """Give the pod back; a failing PreFilter extension's status, else Success."""
        ...

    def filter(self, node_only_passed: bool = False) -> Status:
        """`node_only_passed`: the node passed every Filter before and only its pods
        changed since, so the NodeOnlyFilterPlugins need not be asked again."""
        ...


class NodeBatch(Protocol):
    """Many nodes of one dry run at once, each taking its own pods off or back, by
    position in the node list the batch was made for. It answers only whether the pod
    fits, for the nodes it `covers`."""

    def covers(self, position: int) -> bool:
        """Whether `fits` is this node's whole verdict: no nominated pod outranks the
        pod there, and the Filters that look at the Node object alone pass it."""
        ...

    def remove(self, positions: npt.NDArray[np.int64], pods: Sequence[PodInfo]) -> None:
        """Take pods[i] off the node at positions[i] (a position may repeat)."""
        ...

    def add(self, positions: npt.NDArray[np.int64], pods: Sequence[PodInfo]) -> None:
        """Give pods[i] back to the node at positions[i] (a position may repeat)."""
        ...

    def fits(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_] | None:
        """Whether the pod passes the pod-dependent Filters on each of these nodes as
        they are now; None when a plugin could not answer (use the per-node way)."""
        ...


class NodeSimulator(Protocol):
    """Preemption's simulated nodes for one pod's cycle."""

    def node(self, node: NodeInfo) -> NodeSimulation:
        """One node; `state` and `node` stay as they are."""
        ...

    def batch(self, nodes: Sequence[NodeInfo]) -> NodeBatch | None:
        """Many snapshot nodes at once; None when this cycle's Filters cannot be judged
        that way (the caller uses `node` for each)."""
        ...


class VectorFilterPlugin(FilterPlugin, Protocol):
    """A Filter plugin that can also judge every snapshot row at once.

    The mask must equal what `filter` would decide node by node on the snapshot's
    own NodeInfos; return None when it cannot be exact for this pod (the framework
    then runs `filter` per node). Never used on simulated nodes (preemption).
    """

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None: ...


class VectorReasonsPlugin(VectorFilterPlugin, Protocol):
    """A vector Filter plugin that can also state, all at once, why it rejects rows.

    Each status must equal what `filter` returns on that row's NodeInfo; None when it
    cannot be exact for this pod (the framework then asks `filter` row by row)."""

    def filter_statuses(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                        rows: npt.NDArray[np.int64]) -> list[Status] | None: ...


class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: dict[str, Status]
    ) -> tuple[PostFilterResult | None, Status]: ...


class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]: ...


class VectorScorePlugin(ScorePlugin, Protocol):
    """A Score plugin that can score every snapshot row at once (same values as `score`)."""

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None: ...


class RowsScorePlugin(VectorScorePlugin, Protocol):
    """A vector Score plugin that can score just some rows: the cycle scores only the
    feasible ones (a tenth of the nodes at 5000), so computing every row is waste."""

    def score_rows(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                   rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """score_vector(...)[rows], computed for those rows only."""
        ...


class VectorNormalizePlugin(Protocol):
    """NormalizeScore over a numpy vector (same result as normalize_score)."""

    def normalize_vector(self, state: CycleState, pod: PodInfo,
                         scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: list[NodeScore]) -> Status: ...


class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Success, Unschedulable, or Wait with a timeout in seconds."""
        ...


class PreBindPlugin(Plugin, Protocol):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


class PreBindPreFlightPlugin(PreBindPlugin, Protocol):
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Whether PreBind will have work for this pod (upstream's PreBindPreFlight):
        Success, Skip (nothing to do), or Error. When some plugin answers Success the
        binding cycle first writes the node as the pod's nominatedNodeName, so other
        components (the cluster autoscaler) know where the pod is about to go."""
        ...


class BindPlugin(Plugin, Protocol):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind, or return Skip to let the next Bind plugin do it."""
        ...


class PostBindPlugin(Plugin, Protocol):
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


class PluginFactory(Protocol):
    def __call__(self, args: Any, handle: Handle) -> Plugin: ...
