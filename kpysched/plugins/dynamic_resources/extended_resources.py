"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36).

A pod that requests an extended resource (`example.com/gpu: 2`) which a DeviceClass
maps (its spec.extendedResourceName, or the implicit
`deviceclass.resource.kubernetes.io/<class>`) gets those devices through DRA on a
node that does not advertise the resource in its allocatable: the scheduler
allocates one special ResourceClaim for all such requests of the pod, writes it in
PreBind and records in the pod's status.extendedResourceClaimStatus which container
request maps to which claim request.

Pure functions mirroring upstream's extendeddynamicresources.go; the plugin calls
them at PreFilter (`has_device_class_mapped_extended_resource`,
`find_extended_resource_claim`, `new_special_claim`), Filter
(`filter_extended_resources`) and PreBind (`claim_create_body`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kpysched.objects import api
from kpysched.objects.dra import (
    ALLOCATION_MODE_EXACT_COUNT,
    ClaimMeta,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
)
from kpysched.objects.quantity import QuantityError, parse_quantity
from kpysched.plugins._shared.resource_names import is_dra_extended_resource_name

# The name of the special claim while it exists only in memory; the API server gives
# it a generated name when PreBind creates it. Intentionally not a valid object name.
SPECIAL_CLAIM_IN_MEM_NAME = "<extended-resources>"
# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler made.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# AssumeExtendedResourceTimeoutDefaultSeconds: how long PreBind polls (every second)
# for the created claim to reach the informer before writing its status anyway.
ASSUME_EXTENDED_RESOURCE_TIMEOUT_SECONDS = 120

# Filter's rejections, both UnschedulableAndUnresolvable (statusUnschedulable).
REASON_STALE_CLAIM = "cannot schedule extended resource claim"
REASON_CANNOT_FIT = "cannot fit resource"

# Extended resource name -> the DeviceClass that backs it, or None
# (ResourceListers.device_class_for_extended_resource).
Resolver = Callable[[str], DeviceClass | None]

_INT64_MAX = (1 << 63) - 1


def is_special_claim_name(name: str) -> bool:
    return name == SPECIAL_CLAIM_IN_MEM_NAME


def has_device_class_mapped_extended_resource(requests: Mapping[str, int],
                                              resolver: Resolver) -> bool:
    """Whether the pod requests (non-zero) an extended resource some DeviceClass maps.

    `requests`: the pod's scalar requests (PodInfo.requests.scalar)."""
    return any(amount != 0 and is_dra_extended_resource_name(name)
               and resolver(name) is not None
               for name, amount in requests.items())


def find_extended_resource_claim(pod: api.Pod,
                                 claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The claim a prior cycle made for the pod: annotated as the extended-resource claim
    and controlled by the pod (name and UID). Read-only."""
    meta = pod.metadata
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for owner in claim.metadata.owner_references:
            if owner.name == meta.name and owner.controller and owner.uid == meta.uid:
                return claim
    return None


def special_claim_generate_name(pod: api.Pod) -> str:
    """metadata.generateName of the special claim: "<pod name>-extended-resources-"."""
    return pod.metadata.name + "-extended-resources-"


def new_special_claim(pod: api.Pod, uid: str | None = None) -> ResourceClaim:
    """The in-memory special claim PreFilter makes when no prior one exists: named
    SPECIAL_CLAIM_IN_MEM_NAME with a temporary UID (for the in-flight allocation
    bookkeeping), owned by the pod (controller), annotated, with an empty spec.

    Its generateName (special_claim_generate_name) goes into the create body."""
    return ResourceClaim(metadata=ClaimMeta(
        name=SPECIAL_CLAIM_IN_MEM_NAME,
        namespace=pod.metadata.namespace,
        uid=uid if uid is not None else str(uuid.uuid4()),
        owner_references=[api.OwnerReference(
            api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid,
            controller=True)],
        annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
    ))


def claim_create_body(node_claim: ResourceClaim, pod: api.Pod) -> dict[str, Any]:
    """The body PreBind POSTs to .../namespaces/<ns>/resourceclaims for the node's
    variant of the special claim (createExtendedResourceClaimInAPI): name, UID and
    allocation cleared, generateName set."""
    body: dict[str, Any] = msgspec.to_builtins(node_claim, builtin_types=(msgspec.Raw,))
    metadata = body.setdefault("metadata", {})
    metadata.pop("name", None)
    metadata.pop("uid", None)
    metadata.pop("resourceVersion", None)
    metadata["generateName"] = special_claim_generate_name(pod)
    status = body.get("status")
    if isinstance(status, dict):
        status.pop("allocation", None)
        if not status:
            body.pop("status")
    body["apiVersion"] = "resource.k8s.io/v1"
    body["kind"] = "ResourceClaim"
    return body


def filter_extended_resources(
    pod: api.Pod,
    pod_scalar_requests: Mapping[str, int],
    node_allocatable_scalar: Mapping[str, int],
    resolver: Resolver,
    no_user_claim: bool,
    special_claim: ResourceClaim | None,
) -> tuple[ResourceClaim | None, list[api.ContainerExtendedResourceRequest], str | None]:
    """filterExtendedResources: what of the pod's extended resources this node must
    provide through DRA.

    Returns (node claim, mappings, rejection). The node claim is a copy of
    `special_claim` whose requests ask for those devices, None when there is nothing
    to allocate through DRA here (all satisfied by device plugins) or no special
    claim. A rejection (REASON_STALE_CLAIM, REASON_CANNOT_FIT) is to be returned as
    UnschedulableAndUnresolvable.

    `pod_scalar_requests`: PodInfo.requests.scalar; `node_allocatable_scalar`: the
    node's allocatable scalar resources; `no_user_claim`: the pod has no claims of
    its own (upstream's claims.noUserClaim()).
    """
    if special_claim is None:
        return None, [], None
    # A claim from a prior cycle already has requests: reject, so that PostFilter
    # deletes it and the next attempt starts afresh.
    if special_claim.spec.devices.requests:
        return None, [], REASON_STALE_CLAIM
    extended: dict[str, int] = {}
    for name, amount in pod_scalar_requests.items():
        if not is_dra_extended_resource_name(name) or amount == 0:
            continue
        allocatable = node_allocatable_scalar.get(name)
        if resolver(name) is not None and not allocatable:
            extended[name] = amount  # the node must provide it through DRA
        elif allocatable is None:
            # Neither offered by a device plugin nor backed by DRA.
            return None, [], REASON_CANNOT_FIT
    if no_user_claim and not extended:
        return None, [], None
    if special_claim.status.allocation is not None:
        return None, [], None
    requests, mappings = create_requests_and_mappings(pod, extended, resolver)
    node_claim = msgspec.structs.replace(
        special_claim,
        spec=msgspec.structs.replace(
            special_claim.spec,
            devices=msgspec.structs.replace(special_claim.spec.devices, requests=requests)))
    return node_claim, mappings, None


# ---- request naming ----------------------------------------------------------------


def _as_int64(amount: str | int | float) -> int | None:
    """Quantity.AsInt64: the exact integer, or None (fractions, milli-units, huge)."""
    try:
        quantity = parse_quantity(amount)
    except QuantityError:
        return None
    if quantity.is_dec or quantity.scale < 0:
        return None
    number = quantity.value * 10 ** quantity.scale
    return number if -_INT64_MAX - 1 <= number <= _INT64_MAX else None


def _partition_containers(containers: Sequence[api.Container], init_count: int
                          ) -> tuple[list[int], list[int]]:
    """(long-lived: regular containers and sidecars, short-lived: other init containers)."""
    long_lived: list[int] = []
    short_lived: list[int] = []
    for index, container in enumerate(containers):
        if index < init_count and container.restart_policy != "Always":
            short_lived.append(index)
        else:
            long_lived.append(index)
    return long_lived, short_lived


def _resource_request_and_mappings(
    index: int, container: api.Container, resource_name: str, class_name: str,
    reusable: Sequence[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[api.ContainerExtendedResourceRequest]]:
    """createResourceRequestAndMappings: the container's own request for the resource
    (None when `reusable` requests of later long-lived containers cover it) and its
    mappings."""
    requests = container.resources.requests
    if resource_name not in requests:
        return None, []
    wanted = _as_int64(requests[resource_name])
    if not wanted:
        return None, []
    mappings: list[api.ContainerExtendedResourceRequest] = []
    covered = 0
    for request in reusable:
        if request is None or request.exactly is None:
            continue
        covered += request.exactly.count
        mappings.append(api.ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource_name,
            request_name=request.name))
        if covered >= wanted:
            return None, mappings
    # The resource's position among the container's sorted request names.
    position = sorted(requests).index(resource_name)
    name = f"container-{index}-request-{position}"
    request = DeviceRequest(name=name, exactly=ExactDeviceRequest(
        device_class_name=class_name, allocation_mode=ALLOCATION_MODE_EXACT_COUNT,
        count=wanted - covered))
    mappings.append(api.ContainerExtendedResourceRequest(
        container_name=container.name, resource_name=resource_name, request_name=name))
    return request, mappings


def create_requests_and_mappings(
    pod: api.Pod, extended_resources: Mapping[str, int], resolver: Resolver,
) -> tuple[list[DeviceRequest], list[api.ContainerExtendedResourceRequest]]:
    """createRequestsAndMappings: one device request per container and resource
    ("container-<i>-request-<j>", i counting init containers first, j the resource's
    index among the container's sorted request names), sorted by name.

    Init containers that are not sidecars run one at a time: each first reuses the
    requests of long-lived containers at or after its index, and all of them share the
    largest request they need; their mappings are rewritten to that request's name.
    Resources are handled in sorted order; one no class maps is left out.
    """
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    long_lived, short_lived = _partition_containers(containers, len(pod.spec.init_containers))
    device_requests: list[DeviceRequest] = []
    mappings: list[api.ContainerExtendedResourceRequest] = []
    for resource_name in sorted(extended_resources):
        class_ = resolver(resource_name)
        if class_ is None:
            continue
        class_name = class_.metadata.name
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[api.ContainerExtendedResourceRequest] = []
        for index in long_lived:
            request, found = _resource_request_and_mappings(
                index, containers[index], resource_name, class_name, [])
            long_requests[index] = request
            long_mappings.extend(found)
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[api.ContainerExtendedResourceRequest] = []
        for index in short_lived:
            request, found = _resource_request_and_mappings(
                index, containers[index], resource_name, class_name, long_requests[index:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or _count(largest) < _count(request):
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [
                msgspec.structs.replace(mapping, request_name=largest.name)
                if mapping.request_name in short_names else mapping
                for mapping in short_mappings]
        if largest is not None:
            device_requests.append(largest)
        device_requests.extend(request for request in long_requests if request is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    # sort.Slice is not stable, but request names are unique.
    device_requests.sort(key=lambda request: request.name)
    return device_requests, mappings


def _count(request: DeviceRequest) -> int:
    return request.exactly.count if request.exactly is not None else 0
