"""Wire shapes of the dynamic resource allocation objects at `resource.k8s.io/v1`:
ResourceClaims, ResourceClaimTemplates, ResourceSlices and DeviceClasses (decoded
with msgspec like objects/api.py).

Unlike the other object modules, these keep nearly every field of the API: the
allocator reads most of them, and PreBind writes an allocation result that must
round-trip through the API server unchanged. A claim keeps every field of the v1.36
API except managedFields (which kube-scheduler's informers drop too): PreBind sends
it back whole, as upstream's Update does, and the API server compares the spec it
gets with the stored one. Opaque driver configuration and device data stay the raw
JSON the API server sent (`msgspec.Raw`, as Go's RawExtension keeps its bytes): only
drivers read them, and re-encoding them would change the bytes the API server
compares ("field is immutable").
"""

from __future__ import annotations

from typing import Any

import msgspec

from kpysched.objects.api import ListMeta, NodeSelector, ObjectMeta

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
# A claim may be reserved for at most this many consumers (ResourceClaimReservedForMaxSize).
RESERVED_FOR_MAX_SIZE = 256
# The annotation the resourceclaim controller puts on the claims it makes from a
# template, naming the pod's claim entry they are for.
ANNOTATION_POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
# The DeviceClass a pod's DRA-backed extended resources get when no class names one
# (DRAExtendedResource): "deviceclass.resource.kubernetes.io/<class name>".
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"

TAINT_NO_SCHEDULE = "NoSchedule"
TAINT_NO_EXECUTE = "NoExecute"
TAINT_NONE = "None"


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Same base as objects/api.py's, declared here so linters see a msgspec Struct."""


# ---- devices, as a ResourceSlice publishes them -----------------------------------

class DeviceAttribute(_Wire):
    """Exactly one of the four is set. `int`/`bool` are Python builtins, hence the
    renamed fields."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string: str | None = None
    version: str | None = None

    def value(self) -> int | bool | str | None:
        """The one value set (a version as its text); None when none is."""
        for value in (self.int_value, self.bool_value, self.string, self.version):
            if value is not None:
                return value
        return None


class CapacityRequestPolicyRange(_Wire):
    min: str | None = None
    max: str | None = None
    step: str | None = None


class CapacityRequestPolicy(_Wire):
    default: str | None = None
    valid_values: list[str] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_Wire):
    value: str = "0"
    request_policy: CapacityRequestPolicy | None = None


class Counter(_Wire):
    value: str = "0"


class CounterSet(_Wire):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(_Wire):
    counter_set: str = ""
    counters: dict[str, Counter] = {}


class DeviceTaint(_Wire):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


class Device(_Wire):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    # Per-device node selection (spec.perDeviceNodeSelection): one of the three.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourcePool(_Wire):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(_Wire):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []


class ResourceSlice(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class ResourceSliceList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceSlice] = []


# ---- device taint rules (resource.k8s.io/v1 from v1.37, DRADeviceTaintRules GA) -----

class DeviceTaintSelector(_Wire):
    """Which devices a rule taints: those of this driver, pool and device name (an
    unset field matches any)."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(_Wire):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint = msgspec.field(default_factory=DeviceTaint)


class DeviceTaintRule(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = msgspec.field(default_factory=DeviceTaintRuleSpec)


class DeviceTaintRuleList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[DeviceTaintRule] = []


# ---- device classes ----------------------------------------------------------------

class CELDeviceSelector(_Wire):
    expression: str = ""


class DeviceSelector(_Wire):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(_Wire):
    driver: str = ""
    parameters: msgspec.Raw = msgspec.Raw()


class DeviceClassConfiguration(_Wire):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(_Wire):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


class DeviceClassList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[DeviceClass] = []


# ---- claims: what a pod asks for ---------------------------------------------------

class DeviceToleration(_Wire):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(_Wire):
    requests: dict[str, str] = {}


class ExactDeviceRequest(_Wire):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_Wire):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(_Wire):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(_Wire):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(_Wire):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(_Wire):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(_Wire):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


# ---- claims: what the scheduler allocated ------------------------------------------

class DeviceRequestAllocationResult(_Wire):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, str] = {}


class DeviceAllocationConfiguration(_Wire):
    source: str = ""  # "FromClass" or "FromClaim"
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(_Wire):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(_Wire):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(_Wire):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class NetworkDeviceData(_Wire):
    interface_name: str = ""
    ips: list[str] = []
    hardware_address: str = ""


class AllocatedDeviceStatus(_Wire):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[dict[str, Any]] = []
    data: msgspec.Raw = msgspec.Raw()
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(_Wire):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ClaimMeta(ObjectMeta):
    """A claim's metadata as the API has it (but managedFields): an update sends all of
    it back, and a field left out would be cleared."""

    generate_name: str = ""
    generation: int = 0
    deletion_grace_period_seconds: int | None = None
    self_link: str = ""


class ResourceClaim(_Wire):
    metadata: ClaimMeta = msgspec.field(default_factory=ClaimMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceClaim] = []


class ResourceClaimTemplateSpec(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


class ResourceClaimTemplateList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ResourceClaimTemplate] = []
