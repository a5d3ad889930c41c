"""Resource vectors (cpu in millicores, the rest in units) and pod request math."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kpysched.objects import api
from kpysched.objects.quantity import Quantity, milli_value, parse_quantity, value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Upstream's defaults for containers that request nothing, used only for scoring
# so that such pods still spread (DefaultMilliCPURequest, DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(slots=True)
class Resource:
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, quantities: Mapping[str, str | int | float | Quantity]
                     ) -> Resource:
        resource = cls()
        for name, quantity in quantities.items():
            resource.set(name, quantity)
        return resource

    def set(self, name: str, quantity: str | int | float | Quantity) -> None:
        if name == CPU:
            self.milli_cpu = milli_value(quantity)
        elif name == MEMORY:
            self.memory = value(quantity)
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value(quantity)
        elif name == PODS:
            self.allowed_pod_number = value(quantity)
        elif is_scalar_resource(name):
            self.scalar[name] = value(quantity)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def subtract(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for name, amount in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), amount)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage,
                        self.allowed_pod_number, dict(self.scalar))

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage
                    or any(self.scalar.values()))


def is_scalar_resource(name: str) -> bool:
    """Extended and prefixed resources, hugepages-*, attachable-volumes-*: integer counts."""
    # Any domain-prefixed name is scalar: extended (example.com/gpu) or prefixed native.
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


QuantityList = dict[str, Quantity]

# NewMilliQuantity(DefaultMilliCPURequest) and NewQuantity(DefaultMemoryRequest), as
# getNonMissingContainerRequests builds them.
_DEFAULT_CPU = Quantity(DEFAULT_MILLI_CPU_REQUEST, -3)
_DEFAULT_MEMORY = Quantity(DEFAULT_MEMORY_REQUEST, 0)
_ALL_DEFAULTS: QuantityList = {CPU: _DEFAULT_CPU, MEMORY: _DEFAULT_MEMORY}


def is_pod_level_resource(name: str) -> bool:
    """Resources pod-level requests may set (IsSupportedPodLevelResource)."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _pod_level_requests_set(spec: api.PodSpec) -> bool:
    return spec.resources is not None and any(
        is_pod_level_resource(name) for name in spec.resources.requests)


def _quantities(mapping: Mapping[str, str | int | float]) -> QuantityList:
    return {name: parse_quantity(amount) for name, amount in mapping.items()}


def _add_into(total: QuantityList, extra: QuantityList) -> None:
    for name, amount in extra.items():
        current = total.get(name)
        total[name] = amount if current is None else current + amount


def _max_into(total: QuantityList, extra: QuantityList) -> None:
    for name, amount in extra.items():
        current = total.get(name)
        if current is None:
            total[name] = amount
        elif amount.compare(current) > 0:
            # Quantity.Cmp turns its receiver into an inf.Dec when either side is one,
            # and maxResourceList keeps that converted copy.
            total[name] = amount.as_dec() if current.is_dec else amount


def _container_requests(container: api.Container, defaults: QuantityList) -> QuantityList:
    requests = _quantities(container.resources.requests)
    for name, amount in defaults.items():
        requests.setdefault(name, amount)
    return requests


def _request_list(spec: api.PodSpec, defaults: QuantityList) -> QuantityList:
    """PodRequests: what the pod asks for, per resource, summed as quantities.

    Regular containers and restartable init containers (sidecars) run together and
    add up; each ordinary init container runs alone beside the sidecars started
    before it, so the pod needs the larger of the two phases. Pod-level requests then
    replace what they name, and pod overhead comes on top. `defaults` stand in for
    requests a container leaves out (NonMissingContainerRequests).
    """
    total: QuantityList = {}
    for container in spec.containers:
        _add_into(total, _container_requests(container, defaults))
    sidecars: QuantityList = {}
    init_peak: QuantityList = {}
    for container in spec.init_containers:
        requests = _container_requests(container, defaults)
        if container.restart_policy == "Always":
            _add_into(total, requests)
            _add_into(sidecars, requests)
            phase = sidecars
        else:
            phase = dict(requests)
            _add_into(phase, sidecars)
        _max_into(init_peak, phase)
    _max_into(total, init_peak)
    if spec.resources is not None and _pod_level_requests_set(spec):
        for name, amount in spec.resources.requests.items():
            if is_pod_level_resource(name):
                total[name] = parse_quantity(amount)
    if spec.overhead:
        _add_into(total, _quantities(spec.overhead))
    return total


def _non_zero_list(spec: api.PodSpec, requests: QuantityList) -> QuantityList:
    """The non-zero request list, given the plain one (`_request_list(spec, {})`).

    Containers without a cpu/memory request count upstream's defaults, but when
    pod-level requests are set, only for a resource that neither the pod level, any
    container nor the overhead names. When every container (init ones included)
    already requests each defaulted resource, the defaults change nothing and the
    plain list is the answer: summing the containers again is the cost of every
    pod's PodInfo, start-up's LIST included.
    """
    if _pod_level_requests_set(spec):
        defaults = {name: amount for name, amount in _ALL_DEFAULTS.items()
                    if name not in requests}
    else:
        defaults = _ALL_DEFAULTS
    if not defaults or all(
            name in container.resources.requests
            for containers in (spec.containers, spec.init_containers)
            for container in containers for name in defaults):
        return requests
    return _request_list(spec, defaults)


def pod_requests(spec: api.PodSpec, *, non_zero: bool = False) -> Resource:
    """What a pod occupies on its node, computed as upstream's resource helper does.

    With `non_zero`, the requests NodeInfo counts for scoring (PodInfo.CalculateResource's
    Non0CPU/Non0Mem; see `_non_zero_list`).
    """
    requests = _request_list(spec, {})
    return Resource.from_mapping(_non_zero_list(spec, requests) if non_zero else requests)


def pod_requests_and_non_zero(spec: api.PodSpec) -> tuple[Resource, Resource]:
    """`pod_requests(spec)` and `pod_requests(spec, non_zero=True)`, with the containers
    summed once when the defaults change nothing (two separate objects either way)."""
    requests = _request_list(spec, {})
    non_zero = _non_zero_list(spec, requests)
    plain = Resource.from_mapping(requests)
    return plain, plain.clone() if non_zero is requests else Resource.from_mapping(non_zero)


def scoring_requests(spec: api.PodSpec) -> Resource:
    """The incoming pod's requests as the resource scorers count them when they do not
    score requested resources only (resourceAllocationScorer.calculatePodResourceRequest):
    every container lacking a cpu/memory request counts the default, whether or not
    pod-level requests are set; pod-level requests still replace what they name.
    """
    return Resource.from_mapping(_request_list(spec, _ALL_DEFAULTS))
