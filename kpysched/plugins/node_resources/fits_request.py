"""Whether a pod's requests fit a node: the check Filter and the queueing hints share."""

from __future__ import annotations

from dataclasses import dataclass, field

from kpysched.cache.node_info import NodeInfo
from kpysched.objects.resource_vectors import CPU, EPHEMERAL_STORAGE, MEMORY, Resource

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"
REASON_INSUFFICIENT_PREFIX = "Insufficient "


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # Larger than the node's whole allocatable: preemption cannot make room.
    unresolvable: bool = False


@dataclass(frozen=True, slots=True)
class PodRequest:
    milli_cpu: int
    memory: int
    ephemeral_storage: int
    # Scalar requests that are checked (Filter leaves out zeros and ignored resources).
    scalars: tuple[tuple[str, int], ...]
    # Those of `scalars` a DeviceClass maps (DRAExtendedResource): a node that does not
    # advertise one leaves it to DynamicResources (upstream's shouldDelegateResourceToDRA).
    dra_backed: frozenset[str] = field(default_factory=frozenset)


def fits_request(request: PodRequest, node: NodeInfo) -> list[InsufficientResource]:
    """Every resource the node is short of for the pod, in upstream's order."""
    return fits_usage(request, node.allocatable, node.requested, len(node.pods))


def fits_usage(request: PodRequest, allocatable: Resource, used: Resource,
               pod_count: int) -> list[InsufficientResource]:
    """fits_request for a node with this allocatable, requested total and pod count."""
    insufficient: list[InsufficientResource] = []
    if pod_count + 1 > allocatable.allowed_pod_number:
        insufficient.append(InsufficientResource(
            "pods", REASON_TOO_MANY_PODS, 1, pod_count, allocatable.allowed_pod_number))
    want = request.milli_cpu
    if want > 0 and want > allocatable.milli_cpu - used.milli_cpu:
        insufficient.append(InsufficientResource(
            CPU, REASON_INSUFFICIENT_CPU, want, used.milli_cpu, allocatable.milli_cpu,
            want > allocatable.milli_cpu))
    want = request.memory
    if want > 0 and want > allocatable.memory - used.memory:
        insufficient.append(InsufficientResource(
            MEMORY, REASON_INSUFFICIENT_MEMORY, want, used.memory, allocatable.memory,
            want > allocatable.memory))
    want = request.ephemeral_storage
    if want > 0 and want > allocatable.ephemeral_storage - used.ephemeral_storage:
        insufficient.append(InsufficientResource(
            EPHEMERAL_STORAGE, REASON_INSUFFICIENT_EPHEMERAL_STORAGE, want,
            used.ephemeral_storage, allocatable.ephemeral_storage,
            want > allocatable.ephemeral_storage))
    for name, want in request.scalars:
        capacity = allocatable.scalar.get(name, 0)
        if capacity <= 0 and name in request.dra_backed:
            continue
        in_use = used.scalar.get(name, 0)
        if want > capacity - in_use:
            insufficient.append(InsufficientResource(
                name, REASON_INSUFFICIENT_PREFIX + name, want, in_use, capacity, want > capacity))
    return insufficient
