"""Wire shapes of the storage objects the volume plugins read: PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and
VolumeAttachments (decoded with msgspec like objects/api.py, only the fields used).

A pod's own volume list is in objects/api.py (Volume), as part of its spec. The
volume sources that only identify a disk (GCE PD, AWS EBS, RBD, iSCSI, the
other in-tree drivers CSI migration translates) stay plain dicts: the plugins read
one or two keys of each, and a typed struct per source would be a page of fields
nothing else uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from kpysched.objects.api import LabelSelector, ListMeta, NodeSelector, ObjectMeta


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Same base as objects/api.py's, declared here so linters see a msgspec Struct."""

# Claim and volume fields the plugins compare.
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
VOLUME_MODE_FILESYSTEM = "Filesystem"
BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

# Annotations the PV controller and the scheduler exchange (k8s.io/component-helpers
# storage/volume and pkg/controller/volume/persistentvolume).
ANNOTATION_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANNOTATION_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANNOTATION_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANNOTATION_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANNOTATION_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
# The pre-storageClassName way to name a class; upstream still honours it first.
ANNOTATION_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


# ---- claims ---------------------------------------------------------------------

class VolumeResourceRequirements(_Wire):
    requests: dict[str, str | int | float] = {}
    limits: dict[str, str | int | float] = {}


class PersistentVolumeClaimSpec(_Wire):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(
        default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    # VolumeAttributesClass is GA (locked on) in v1.36: claims only match volumes of the
    # same class.
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(_Wire):
    phase: str = ""
    access_modes: list[str] = []
    capacity: dict[str, str | int | float] = {}


class PersistentVolumeClaim(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(
        default_factory=PersistentVolumeClaimStatus)


class PersistentVolumeClaimList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PersistentVolumeClaim] = []


# ---- volumes --------------------------------------------------------------------

class ObjectReference(_Wire):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class VolumeNodeAffinity(_Wire):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(_Wire):
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False


class PersistentVolumeSpec(_Wire):
    capacity: dict[str, str | int | float] = {}
    access_modes: list[str] = []
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None
    persistent_volume_reclaim_policy: str = ""
    csi: CSIPersistentVolumeSource | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    azure_file: dict[str, Any] | None = None
    cinder: dict[str, Any] | None = None
    vsphere_volume: dict[str, Any] | None = None
    portworx_volume: dict[str, Any] | None = None
    local: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None


class PersistentVolumeStatus(_Wire):
    phase: str = ""


class PersistentVolume(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class PersistentVolumeList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PersistentVolume] = []


# ---- classes and CSI ------------------------------------------------------------

class TopologySelectorLabelRequirement(_Wire):
    key: str = ""
    values: list[str] = []


class TopologySelectorTerm(_Wire):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = {}
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []


class StorageClassList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[StorageClass] = []


class VolumeNodeResources(_Wire):
    count: int | None = None


# CSINodeSpec.drivers and CSINodeDriver.topologyKeys have no omitempty upstream, and an
# empty list comes back from the API server (through etcd's protobuf) as null: a
# kubelet's CSINode without drivers reads {"drivers": null}. Null decodes here as the
# empty list; type checkers see the plain list (the runtime annotation admits None).
class CSINodeDriver(_Wire):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    if TYPE_CHECKING:
        topology_keys: list[str] = []
    else:
        topology_keys: list[str] | None = []
    allocatable: VolumeNodeResources | None = None

    def __post_init__(self) -> None:
        self.topology_keys = self.topology_keys or []


class CSINodeSpec(_Wire):
    if TYPE_CHECKING:
        drivers: list[CSINodeDriver] = []
    else:
        drivers: list[CSINodeDriver] | None = []

    def __post_init__(self) -> None:
        self.drivers = self.drivers or []


class CSINode(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSINodeList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CSINode] = []


class CSIDriverSpec(_Wire):
    attach_required: bool | None = None
    storage_capacity: bool | None = None
    node_allocatable_update_period_seconds: int | None = None
    # VolumeLimitScaling (beta, on from v1.37): the driver asks that no pod using it be
    # placed on a node whose CSINode does not list it.
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIDriverList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CSIDriver] = []


class CSIStorageCapacity(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    storage_class_name: str = ""
    node_topology: LabelSelector | None = None
    capacity: str | int | float | None = None
    maximum_volume_size: str | int | float | None = None


class CSIStorageCapacityList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CSIStorageCapacity] = []


class VolumeAttachmentSource(_Wire):
    persistent_volume_name: str | None = None
    inline_volume_spec: dict[str, Any] | None = None


class VolumeAttachmentSpec(_Wire):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachmentStatus(_Wire):
    attached: bool = False


class VolumeAttachment(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = msgspec.field(default_factory=VolumeAttachmentStatus)


class VolumeAttachmentList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[VolumeAttachment] = []
