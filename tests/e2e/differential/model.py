"""Scenario model for differential tests: nodes, existing pods, one incoming pod,
and the storage objects around them.

Node and pod names are roles ("n0", "victim"); each run gives cluster-scoped
objects (Nodes, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers) unique
real names, so the same scenario can run once per scheduler and the outcomes
compare by role. Namespaced objects (pods, claims, CSIStorageCapacities) keep
their roles as names, each run having a namespace of its own.

A CSI driver or provisioner named by a bare word ("disk") is a role too: it
becomes `disk-<suffix>.provisioner.kpysched.test`, served by the test provisioner
(tests/cluster/provisioner.py). A name with a dot or a slash ("pd.csi.storage.gke.io",
"kubernetes.io/no-provisioner") is used as it is.

Dynamic resource allocation (DRA) objects follow the same rule: DeviceClasses and
ResourceSlices are cluster-scoped and get unique names, and so do resource pools
(a pool is named by a role, by default its node's) and the extended resource names
that DeviceClasses back; ResourceClaims and ResourceClaimTemplates keep their roles.
A device driver's name ("gpu.example.com") is used as it is: nothing serves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeSpec:
    role: str
    cpu: str = "4"
    memory: str = "32Gi"
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    unschedulable: bool = False
    images: tuple[tuple[str, int], ...] = ()
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodSpec:
    role: str
    node: str | None = None  # existing pods: the role of the node they run on
    cpu: str | None = "100m"
    memory: str | None = "100Mi"
    labels: dict[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # merged into pod.spec
    container: dict[str, Any] = field(default_factory=dict)  # merged into the container


@dataclass(frozen=True)
class PdbSpec:
    role: str
    selector: dict[str, str]
    max_unavailable: int = 0


NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"


@dataclass(frozen=True)
class StorageClassSpec:
    role: str
    provisioner: str = NO_PROVISIONER  # a driver role is served by the test provisioner
    binding_mode: str = WAIT_FOR_FIRST_CONSUMER
    # One topology term: {label key: allowed values}.
    allowed_topologies: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class PvSpec:
    role: str
    storage_class: str = ""  # role of a StorageClassSpec; "" for none
    capacity: str = "10Gi"
    access_modes: tuple[str, ...] = ("ReadWriteOnce",)
    node: str | None = None  # required node affinity: this node role's hostname
    # Further required node affinity, {label key: values} (e.g. a zone).
    affinity: dict[str, tuple[str, ...]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # e.g. the zone VolumeZone reads
    claim: str | None = None  # pre-bound: claimRef to this claim role
    # The volume source; None is a hostPath. {"csi": {"driver": role, ...}} maps the role.
    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class PvcSpec:
    role: str
    storage_class: str = ""  # role of a StorageClassSpec; "" for none
    request: str = "1Gi"
    access_modes: tuple[str, ...] = ("ReadWriteOnce",)
    volume: str | None = None  # pre-bound: spec.volumeName, this PV role
    selector: dict[str, str] = field(default_factory=dict)  # matchLabels on PV labels
    # Wait for the PV controller to bind it before the incoming pod comes (implied
    # when the claim or its volume is pre-bound and the volume exists).
    bound: bool = False


@dataclass(frozen=True)
class CSINodeSpec:
    node: str  # role of the node; the CSINode's name is that node's name
    drivers: dict[str, int | None]  # driver (role or literal name) -> allocatable.count
    # e.g. storage.alpha.kubernetes.io/migrated-plugins, as kubelet writes it.
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CSIDriverSpec:
    role: str  # a driver role (or literal name)
    storage_capacity: bool = False


@dataclass(frozen=True)
class CapacitySpec:
    """A CSIStorageCapacity: what `storage_class` can still provision where the node
    labels match (a hostname value is a node role)."""

    role: str
    storage_class: str
    node_labels: dict[str, str]
    capacity: str | None = None
    maximum_volume_size: str | None = None


@dataclass(frozen=True)
class DeviceClassSpec:
    role: str
    selectors: tuple[str, ...] = ()  # CEL expressions, each a `cel` device selector
    # A resource name like "example.com/gpu" that pods may request in their
    # containers' resources; a role, made unique per run like the class's name.
    extended_resource_name: str | None = None


@dataclass(frozen=True)
class SliceSpec:
    """A ResourceSlice published for one node (as a driver's kubelet plugin would)."""

    role: str
    node: str  # role of the node: spec.nodeName
    devices: tuple[dict[str, Any], ...]  # API shape (name, attributes, capacity, taints, ...)
    driver: str = "gpu.example.com"
    pool: str | None = None  # a pool role; default the node's role
    shared_counters: tuple[dict[str, Any], ...] = ()  # API shape (name, counters)


@dataclass(frozen=True)
class DeviceResult:
    """One device of an allocation: which request got which device (pool is a role)."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False


@dataclass(frozen=True)
class ResourceClaimSpec:
    """A ResourceClaim (or, with `template`, a ResourceClaimTemplate) named by role."""

    role: str
    # DeviceRequests in API shape; every `deviceClassName` in them is a DeviceClassSpec
    # role (in `exactly` and in each `firstAvailable` entry).
    requests: tuple[dict[str, Any], ...]
    constraints: tuple[dict[str, Any], ...] = ()  # API shape, e.g. {"matchAttribute": ...}
    template: bool = False
    # Pre-allocated: this allocation (available on `allocated_node` only) is written
    # through the status subresource before the incoming pod comes, reserved for
    # these existing pods (roles).
    allocated: tuple[DeviceResult, ...] = ()
    allocated_node: str | None = None
    reserved_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: tuple[NodeSpec, ...]
    incoming: PodSpec
    existing: tuple[PodSpec, ...] = ()
    pdbs: tuple[PdbSpec, ...] = ()
    # "bound": lands on a node; "pending": FailedScheduling; "preempted": victims go;
    # "gated": held before any attempt (a PreEnqueue plugin), no node and no event;
    # "retried": a first attempt fails (FailedScheduling), a later one binds.
    expect: str = "bound"
    storage_classes: tuple[StorageClassSpec, ...] = ()
    pvs: tuple[PvSpec, ...] = ()
    pvcs: tuple[PvcSpec, ...] = ()
    csi_nodes: tuple[CSINodeSpec, ...] = ()
    csi_drivers: tuple[CSIDriverSpec, ...] = ()
    capacities: tuple[CapacitySpec, ...] = ()
    # What upstream must do for the scenario to mean what it says (checked on
    # upstream's outcome only; kpysched must then equal upstream).
    expect_node: str | None = None
    expect_reason: str = ""  # a substring of the FailedScheduling note
    expect_claims: dict[str, str] = field(default_factory=dict)  # claim role -> volume
    device_classes: tuple[DeviceClassSpec, ...] = ()
    slices: tuple[SliceSpec, ...] = ()
    resource_claims: tuple[ResourceClaimSpec, ...] = ()  # claims and templates
    namespace_labels: dict[str, str] = field(default_factory=dict)
    # ResourceClaim role (see AllocationState) -> its allocated devices, "pool/device".
    expect_devices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Pods created right after the incoming one (without waiting for its decision),
    # each expected to bind: the incoming pod's outcome does not hold them up. Where
    # they land is part of the outcome.
    then: tuple[PodSpec, ...] = ()


@dataclass(frozen=True)
class ClaimState:
    role: str
    phase: str
    # PV role, "provisioned@<node role>" for a PV the test provisioner made, or None.
    volume: str | None
    selected_node: str | None  # role named by volume.kubernetes.io/selected-node


@dataclass(frozen=True)
class VolumeState:
    role: str
    phase: str
    claim: str | None  # role of the claim in claimRef


@dataclass(frozen=True)
class AllocationState:
    """A ResourceClaim of the run's namespace after the incoming pod's decision."""

    # The claim's name for a claim the scenario made; "<pod role>/<claim entry name>"
    # for one the resourceclaim controller made from a template (from the pod's
    # status.resourceClaimStatuses); "<pod role>/<extended resources>" for the claim
    # a scheduler made for DRA-backed extended resources.
    claim: str
    node: str | None  # role of the node the allocation's nodeSelector names
    devices: tuple[DeviceResult, ...]  # status.allocation.devices.results, in order
    reserved_for: tuple[str, ...]  # pod roles in status.reservedFor, sorted


@dataclass(frozen=True)
class Outcome:
    node: str | None  # role of the node the incoming pod ended on
    # FailedScheduling note (first one), with unique names and the namespace replaced
    # by roles.
    message: str | None
    victims: frozenset[str] = frozenset()  # roles of existing pods that were deleted
    claims: tuple[ClaimState, ...] = ()  # every claim of the namespace, by role
    volumes: tuple[VolumeState, ...] = ()  # the scenario's PersistentVolumes, by role
    resource_claims: tuple[AllocationState, ...] = ()  # DRA claims, by role
    # (pod role, role of its node or None) for each of the scenario's `then` pods.
    then: tuple[tuple[str, str | None], ...] = ()

    def describe(self) -> str:
        text = f"node={self.node} victims={sorted(self.victims)} message={self.message!r}"
        for pod, node in self.then:
            text += f"\n   then {pod}: node={node}"
        for claim in self.claims:
            text += (f"\n   claim {claim.role}: {claim.phase} volume={claim.volume} "
                     f"selected-node={claim.selected_node}")
        for volume in self.volumes:
            text += f"\n   pv {volume.role}: {volume.phase} claim={volume.claim}"
        for rc in self.resource_claims:
            devices = ", ".join(f"{d.request}->{d.driver}/{d.pool}/{d.device}"
                                + (" (admin)" if d.admin_access else "") for d in rc.devices)
            text += (f"\n   resourceclaim {rc.claim}: node={rc.node} devices=[{devices}] "
                     f"reserved-for={list(rc.reserved_for)}")
        return text
