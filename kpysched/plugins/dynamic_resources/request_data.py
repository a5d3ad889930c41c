"""What the allocator's search works with: the (sub)requests it allocates for, the
candidate devices it tries, the device results it records, and the errors it raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kpysched.objects.dra import (
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    CapacityRequirements,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kpysched.plugins.dynamic_resources.capacity import Amount, DeviceID
from kpysched.plugins.dynamic_resources.pools import Pool

ALLOCATION_RESULTS_MAX_SIZE = 32


class AllocationError(Exception):
    """What upstream's Allocate returns as an error; str() is upstream's text.

    `on_node`: the problem is this node's alone (ErrFailedAllocationOnNode), so Filter
    answers Unschedulable; otherwise it answers Error.
    """

    def __init__(self, message: str, on_node: bool = False) -> None:
        super().__init__(message)
        self.on_node = on_node


class AllocationTimeoutError(AllocationError, TimeoutError):
    """The deadline passed during the search (upstream: the context's deadline)."""


class CompiledSelector(Protocol):
    def matches(self, driver: str, device: Device, deadline: float | None = None) -> bool: ...


class SelectorCompiler(Protocol):
    def compile(self, expression: str) -> CompiledSelector: ...


def klog_name(claim: ResourceClaim) -> str:
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


@dataclass(frozen=True, slots=True)
class RequestView:
    """A request's or subrequest's fields (upstream's requestAccessor)."""

    name: str
    class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: list[DeviceSelector]
    tolerations: list[DeviceToleration]
    capacity: CapacityRequirements | None

    @classmethod
    def of_request(cls, request: DeviceRequest) -> RequestView:
        exactly = request.exactly
        if exactly is None:
            return cls(request.name, "", "", 0, False, False, [], [], None)
        return cls(request.name, exactly.device_class_name, exactly.allocation_mode,
                   exactly.count, bool(exactly.admin_access), exactly.admin_access is not None,
                   exactly.selectors, exactly.tolerations, exactly.capacity)

    @classmethod
    def of_sub_request(cls, sub: DeviceSubRequest) -> RequestView:
        return cls(sub.name, sub.device_class_name, sub.allocation_mode, sub.count, False,
                   False, sub.selectors, sub.tolerations, sub.capacity)


@dataclass(slots=True)
class Candidate:
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class RequestData:
    request: RequestView
    parent: RequestView | None
    device_class: DeviceClass
    num_devices: int = 0
    # On the entry of a request's first subrequest: the subrequest that got picked.
    selected_sub_request: int = 0
    # Allocation mode All: the devices, determined up front.
    all_devices: list[Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        if self.parent is None:
            return self.request.name
        return f"{self.parent.name}/{self.request.name}"


@dataclass(slots=True)
class DeviceResult:
    request: RequestView
    parent_request: str  # "" unless `request` is a subrequest
    candidate: Candidate
    share_id: str | None
    consumed: dict[str, Amount] | None
    admin_access: bool | None

    def request_name(self) -> str:
        if not self.parent_request:
            return self.request.name
        return f"{self.parent_request}/{self.request.name}"


def _tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def taint_prevents_allocation(device: Device, request: RequestView) -> bool:
    """An untolerated NoSchedule or NoExecute taint; other effects do not count."""
    return any(taint.effect in (TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE)
               and not any(_tolerates(t, taint) for t in request.tolerations)
               for taint in device.taints)
