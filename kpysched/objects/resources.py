"""Resource vectors (cpu in millicores, the rest in units) and pod request math."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kpysched.objects import api
from kpysched.objects.quantity import milli_value, value

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
    def from_mapping(cls, quantities: Mapping[str, str | int | float]) -> Resource:
        resource = cls()
        for name, quantity in quantities.items():
            resource.set(name, quantity)
        return resource

    def set(self, name: str, quantity: str | int | float) -> None:
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


def _container_requests(container: api.Container, non_zero: bool) -> Resource:
    requests = container.resources.requests
    resource = Resource.from_mapping(requests)
    if non_zero:
        if CPU not in requests:
            resource.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            resource.memory = DEFAULT_MEMORY_REQUEST
    return resource


def pod_requests(spec: api.PodSpec, *, non_zero: bool = False) -> Resource:
    """What a pod occupies on its node, computed as upstream's resource helper does.

    Regular containers and restartable init containers (sidecars) run together and
    add up; each ordinary init container runs alone beside the sidecars started
    before it, so the pod needs the larger of the two phases, plus pod overhead.
    With `non_zero`, containers without a cpu/memory request count upstream's
    defaults (used by scoring only).
    """
    total = Resource()
    for container in spec.containers:
        total.add(_container_requests(container, non_zero))
    sidecars = Resource()
    init_peak = Resource()
    for container in spec.init_containers:
        requests = _container_requests(container, non_zero)
        if container.restart_policy == "Always":
            total.add(requests)
            sidecars.add(requests)
            phase = sidecars.clone()
        else:
            phase = requests.clone()
            phase.add(sidecars)
        init_peak.set_max(phase)
    total.set_max(init_peak)
    if spec.resources is not None and spec.resources.requests:
        # Pod-level resources replace the container sum for what they name.
        for name in (CPU, MEMORY):
            if name in spec.resources.requests:
                total.set(name, spec.resources.requests[name])
    if spec.overhead:
        total.add(Resource.from_mapping(spec.overhead))
    return total
