"""Wire shapes of the Kubernetes objects kpysched reads, decoded with msgspec.

Only the fields scheduling needs are declared; msgspec skips the rest of the JSON
without building it, which is what makes decoding a watch event cheap. Field
names are snake_case here and camelCase on the wire.
"""

from __future__ import annotations

from typing import Any

import msgspec


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """gc=False: the cyclic collector never tracks these. A decoded object is a tree
    (fields hold only strings, numbers, lists, dicts and other wire structs), so it can
    never be part of a cycle, and the informers' cache holds tens of thousands of them
    that every full collection would otherwise walk (kpysched/gc_policy.py)."""


class OwnerReference(_Wire):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    # Kept so that an object sent back whole (a ResourceClaim's update) keeps it.
    block_owner_deletion: bool | None = None


class ObjectMeta(_Wire):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []


class ListMeta(_Wire):
    resource_version: str = ""
    continue_: str | None = msgspec.field(default=None, name="continue")


class ContainerPort(_Wire):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class ResourceRequirements(_Wire):
    requests: dict[str, str | int | float] = {}
    limits: dict[str, str | int | float] = {}


class ContainerRestartRule(_Wire):
    # Only the action matters to scheduling (NodeDeclaredFeatures), not the exit codes.
    action: str = ""


class VolumeMount(_Wire):
    """Only what scheduling reads: bind mount options (VolumeBindMountOptions, alpha in
    v1.37) make a pod need nodes that declare that feature."""

    bind_mount_options: list[str] = []


class Container(_Wire):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = []
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []
    volume_mounts: list[VolumeMount] = []


class Toleration(_Wire):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class Taint(_Wire):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSelectorRequirement(_Wire):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(_Wire):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Wire):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Wire):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(_Wire):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class LabelSelectorRequirement(_Wire):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_Wire):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class PodAffinityTerm(_Wire):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Wire):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Wire):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Wire):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(_Wire):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class SchedulingGate(_Wire):
    name: str


class PodResourceClaim(_Wire):
    name: str = ""
    # One of the two: a claim by name, or a template the resourceclaim controller makes
    # a claim of (named in status.resourceClaimStatuses).
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(_Wire):
    name: str = ""
    resource_claim_name: str | None = None  # None: no claim was needed


class ContainerExtendedResourceRequest(_Wire):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(_Wire):
    """The claim the scheduler made for a pod's DRA-backed extended resources."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


# A pod's volumes. Sources that only identify a disk (GCE PD, AWS EBS, RBD, iSCSI and
# the other in-tree drivers CSI migration translates) stay plain dicts: the volume
# plugins read one or two keys of each.
class PersistentVolumeClaimVolumeSource(_Wire):
    claim_name: str = ""
    read_only: bool = False


class EphemeralVolumeSource(_Wire):
    # Present means the pod owns a generic ephemeral claim named <pod>-<volume>.
    volume_claim_template: dict[str, Any] | None = None


class CSIVolumeSource(_Wire):
    driver: str = ""
    volume_attributes: dict[str, str] = {}


class ImageVolumeSource(_Wire):
    """An OCI image mounted as a volume (ImageVolume): ImageLocality counts it."""

    reference: str = ""


class Volume(_Wire):
    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    azure_file: dict[str, Any] | None = None
    cinder: dict[str, Any] | None = None
    vsphere_volume: dict[str, Any] | None = None
    portworx_volume: dict[str, Any] | None = None
    image: ImageVolumeSource | None = None


class PodSchedulingGroup(_Wire):
    """spec.schedulingGroup (GenericWorkload, alpha in v1.36): the runtime PodGroup the
    pod belongs to. Immutable once set."""

    pod_group_name: str | None = None


class PodSpec(_Wire):
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, str | int | float] = {}
    resources: ResourceRequirements | None = None
    scheduling_gates: list[SchedulingGate] = []
    resource_claims: list[PodResourceClaim] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    termination_grace_period_seconds: int | None = None
    volumes: list[Volume] = []
    host_network: bool = False
    host_users: bool | None = None
    scheduling_group: PodSchedulingGroup | None = None


class PodCondition(_Wire):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodStatus(_Wire):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = []
    start_time: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class ContainerImage(_Wire):
    names: list[str] = []
    size_bytes: int = 0


class NodePodPreemptionPolicy(_Wire):
    """spec.podPreemptionPolicy (InPlacePodVerticalScalingSchedulerPreemption, alpha):
    whoever lists itself in disableResizePreemption turns resize preemption off here."""

    disable_resize_preemption: list[str] = []


class NodeSpec(_Wire):
    unschedulable: bool = False
    taints: list[Taint] = []
    pod_preemption_policy: NodePodPreemptionPolicy | None = None


class NodeCondition(_Wire):
    type: str
    status: str = ""


class NodeStatus(_Wire):
    allocatable: dict[str, str | int | float] = {}
    capacity: dict[str, str | int | float] = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []
    # Sorted and unique: the API server's validation insists on it.
    declared_features: list[str] = []


class Node(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class PodList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Pod] = []


class NodeList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Node] = []


class WatchEvent(_Wire):
    type: str
    object: msgspec.Raw


class Status(_Wire):
    """The API's error body (kind: Status), e.g. in a watch ERROR event."""

    code: int = 0
    reason: str = ""
    message: str = ""


def decoder(kind: type[Any]) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(kind)


class PodDisruptionBudgetSpec(_Wire):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(_Wire):
    disruptions_allowed: int = 0
    # Pods already being evicted/deleted under this budget (name -> time).
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class PodDisruptionBudgetList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodDisruptionBudget] = []


class Namespace(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class NamespaceList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Namespace] = []


class ServiceSpec(_Wire):
    selector: dict[str, str] = {}


class Service(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ServiceList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Service] = []


class ReplicationControllerSpec(_Wire):
    selector: dict[str, str] = {}


class ReplicationController(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


class ReplicationControllerList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ReplicationController] = []


class SelectorSpec(_Wire):
    """spec of a ReplicaSet or StatefulSet: only the selector matters to scheduling."""

    selector: LabelSelector | None = None


class ReplicaSet(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: SelectorSpec = msgspec.field(default_factory=SelectorSpec)


class ReplicaSetList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ReplicaSet] = []


class StatefulSet(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: SelectorSpec = msgspec.field(default_factory=SelectorSpec)


class StatefulSetList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[StatefulSet] = []
