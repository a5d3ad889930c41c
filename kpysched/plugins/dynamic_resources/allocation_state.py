"""What the allocator is told besides the claims: the DRA features it honours and the
devices other claims hold already. Kept apart from allocator.py so that the search
(search.py), which reads both through the allocator, need not import the allocator."""

from __future__ import annotations

from dataclasses import dataclass, field

from kpysched.plugins.dynamic_resources.capacity import ConsumedCapacityCollection, DeviceID

SharedDeviceID = tuple[str, str, str, str]
"""(driver, pool, device, share ID); the share ID is "" for a device not shared."""


@dataclass(frozen=True, slots=True)
class Features:
    """The DRA features the allocator honours (v1.36 and v1.37 defaults: all on), and
    the kube-scheduler release whose allocator it behaves as (`release`, the minor: 36
    or 37). Both releases pick upstream's "incubating" allocator with their default
    gates; v1.37's differs in a few answers (see `v1_37`)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True
    release: int = 36

    @property
    def v1_37(self) -> bool:
        """v1.37's allocator: results' configs named once and cleared when they cover
        every request, the claim limit checked per request, distinctAttribute over every
        device, allocation mode All judged by static capacity, a shared device's counters
        not charged again while a share is persisted, step-rounded capacity written in
        the step's format, CEL runtime errors naming the device."""
        return self.release >= 37


@dataclass(slots=True)
class AllocatedState:
    """Devices allocated to claims already (and in flight), as the plugin gathers it."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: ConsumedCapacityCollection = field(default_factory=dict)

    def devices_in_use(self) -> set[DeviceID]:
        """IsDeviceAllocated for all devices at once: dedicated, shared or consuming."""
        in_use = set(self.allocated_devices)
        in_use.update(shared[:3] for shared in self.allocated_shared_device_ids)
        in_use.update(self.aggregated_capacity)
        return in_use
