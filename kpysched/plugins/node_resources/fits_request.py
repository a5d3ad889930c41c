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


def fits_request(request: PodRequest, node: NodeInfo,
                 held: Resource | None = None) -> list[InsufficientResource]:
    """Every resource the node is short of for the pod, in upstream's order."""
    return fits_usage(request, node.allocatable, node.requested, len(node.pods), held)


def fits_usage(request: PodRequest, allocatable: Resource, used: Resource,
               pod_count: int, held: Resource | None = None) -> list[InsufficientResource]:
    """fits_request for a node with this allocatable, requested total and pod count.

    `held`: what the node already counts for this very pod, a deferred resize on its
    own node (upstream's adjustDeltasToAccomodateCacheDiscrepancy): only the growth
    beyond it must fit, never less than nothing, so an overcommitted node is still
    short of cpu, memory and ephemeral storage. A scalar resource that does not grow
    is not checked at all, as upstream skips a zero delta. The reasons, the amounts
    reported and unresolvability still use the whole request."""
    insufficient: list[InsufficientResource] = []
    if pod_count + 1 > allocatable.allowed_pod_number:
        insufficient.append(InsufficientResource(
            "pods", REASON_TOO_MANY_PODS, 1, pod_count, allocatable.allowed_pod_number))
    if held is None:
        grow_cpu, grow_memory, grow_ephemeral = (
            request.milli_cpu, request.memory, request.ephemeral_storage)
    else:
        grow_cpu = max(0, request.milli_cpu - held.milli_cpu)
        grow_memory = max(0, request.memory - held.memory)
        grow_ephemeral = max(0, request.ephemeral_storage - held.ephemeral_storage)
    want = request.milli_cpu
    if want > 0 and grow_cpu > allocatable.milli_cpu - used.milli_cpu:
        insufficient.append(InsufficientResource(
            CPU, REASON_INSUFFICIENT_CPU, want, used.milli_cpu, allocatable.milli_cpu,
            want > allocatable.milli_cpu))
    want = request.memory
    if want > 0 and grow_memory > allocatable.memory - used.memory:
        insufficient.append(InsufficientResource(
            MEMORY, REASON_INSUFFICIENT_MEMORY, want, used.memory, allocatable.memory,
            want > allocatable.memory))
    want = request.ephemeral_storage
    if want > 0 and grow_ephemeral > allocatable.ephemeral_storage - used.ephemeral_storage:
        insufficient.append(InsufficientResource(
            EPHEMERAL_STORAGE, REASON_INSUFFICIENT_EPHEMERAL_STORAGE, want,
            used.ephemeral_storage, allocatable.ephemeral_storage,
            want > allocatable.ephemeral_storage))
    for name, want in request.scalars:
        grow = want if held is None else max(0, want - held.scalar.get(name, 0))
        if grow == 0:
            continue
        capacity = allocatable.scalar.get(name, 0)
        if capacity <= 0 and name in request.dra_backed:
            continue
        in_use = used.scalar.get(name, 0)
        if grow > capacity - in_use:
            insufficient.append(InsufficientResource(
                name, REASON_INSUFFICIENT_PREFIX + name, want, in_use, capacity, want > capacity))
    return insufficient
