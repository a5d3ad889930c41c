"""DRA-backed extended resources for NodeResourcesFit's and BalancedAllocation's
scores (DRAExtendedResource, on in v1.36; upstream's resource_allocation.go).

A resource named in the scoring strategy that the pod requests and the node does not
advertise in its allocatable, but that a DeviceClass backs (its extendedResourceName,
or deviceclass.resource.kubernetes.io/<class>), is scored on devices: the node's
capacity is the number of ResourceSlice devices on the node that the class selects,
what is allocated the number of those that claims hold. PreScore takes the claims and
slices once per cycle (`prepare`); each node's counts are worked out when first
asked. A node whose counts cannot be worked out (a node selector that does not parse,
a selector that fails) offers none of the resource, as upstream logs and moves on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from kpysched.framework.interfaces import Handle, ResourceListers
from kpysched.objects import api
from kpysched.objects.dra import Device, DeviceClass, ResourceSlice
from kpysched.plugins._shared.resource_names import is_dra_extended_resource_name
from kpysched.plugins.dynamic_resources.capacity import DeviceID
from kpysched.plugins.dynamic_resources.cel_errors import SelectorError
from kpysched.plugins.dynamic_resources.cel_lazy import LazyCelCache
from kpysched.plugins.dynamic_resources.pools import NodeSelectionError, node_matches
from kpysched.plugins.dynamic_resources.request_data import SelectorCompiler
from kpysched.plugins.dynamic_resources.tracker import AllocatedSnapshot, tracker_for

log = structlog.get_logger(__name__)

# Upstream keeps the ten most recent compiled class selectors for scoring.
CEL_CACHE_SIZE = 10


class _CountingFailedError(Exception):
    """The node's devices of the class cannot be counted."""


@dataclass(slots=True)
class DraCounts:
    """One cycle's view of the devices (upstream's draPreScoreState)."""

    allocated: AllocatedSnapshot
    slices: Sequence[ResourceSlice]
    class_for: Callable[[str], DeviceClass | None]
    cel: SelectorCompiler
    _totals: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    # A slice naming its node serves that node only: looked up, not scanned per node.
    _by_node: dict[str, list[ResourceSlice]] = field(default_factory=dict)
    _elsewhere: list[ResourceSlice] = field(default_factory=list)

    def __post_init__(self) -> None:
        for resource_slice in self.slices:
            spec = resource_slice.spec
            if spec.node_name and not spec.per_device_node_selection and not spec.all_nodes:
                self._by_node.setdefault(spec.node_name, []).append(resource_slice)
            else:
                self._elsewhere.append(resource_slice)

    def totals(self, node: api.Node, resource_name: str) -> tuple[int, int]:
        """(devices of the backing class on the node, how many are allocated); (0, 0)
        when no class backs the name or the devices cannot be counted."""
        key = (node.metadata.name, resource_name)
        found = self._totals.get(key)
        if found is None:
            found = self._count(node, resource_name)
            self._totals[key] = found
        return found

    def _count(self, node: api.Node, resource_name: str) -> tuple[int, int]:
        device_class = self.class_for(resource_name)
        if device_class is None:
            return 0, 0
        try:
            return self._count_class(node, device_class)
        except _CountingFailedError as error:
            log.warning("dra_scoring.count_failed", node=node.metadata.name,
                        resource=resource_name, device_class=device_class.metadata.name,
                        reason=str(error))
            return 0, 0

    def _count_class(self, node: api.Node, device_class: DeviceClass) -> tuple[int, int]:
        capacity = allocated = 0
        for resource_slice in (*self._by_node.get(node.metadata.name, ()), *self._elsewhere):
            spec = resource_slice.spec
            for device in _devices_on_node(resource_slice, node):
                if not self._selected(device_class, spec.driver, device):
                    continue
                capacity += 1
                if self._is_allocated((spec.driver, spec.pool.name, device.name)):
                    allocated += 1
        return capacity, allocated

    def _selected(self, device_class: DeviceClass, driver: str, device: Device) -> bool:
        for selector in device_class.spec.selectors:
            if selector.cel is None:
                continue
            try:
                if not self.cel.compile(selector.cel.expression).matches(driver, device):
                    return False
            except SelectorError as error:
                raise _CountingFailedError(str(error)) from None
        return True

    def _is_allocated(self, device: DeviceID) -> bool:
        """Upstream's IsDeviceAllocated: held whole, or any share of it."""
        if device in self.allocated.devices:
            return True
        return any(share[:3] == device for share in self.allocated.shared_device_ids)


def _devices_on_node(resource_slice: ResourceSlice, node: api.Node) -> Sequence[Device]:
    """The slice's devices available on the node, by the slice's node selection or,
    with perDeviceNodeSelection, each device's own."""
    spec = resource_slice.spec
    name = node.metadata.name
    try:
        if spec.per_device_node_selection:
            return [device for device in spec.devices
                    if device.all_nodes or (device.node_name and device.node_name == name)
                    or (device.node_selector is not None
                        and node_matches(node, device.node_name, device.all_nodes,
                                         device.node_selector))]
        if not spec.all_nodes and spec.node_name != name and spec.node_selector is not None:
            if not node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector):
                return []
        elif not spec.all_nodes and spec.node_name and spec.node_name != name:
            return []
    except NodeSelectionError as error:
        raise _CountingFailedError(str(error)) from None
    return spec.devices


class DraExtendedResources:
    """What a resource-allocation scorer needs to count DRA-backed extended resources:
    the DeviceClass behind a name, the slices and the claims holding devices."""

    def __init__(self, listers: ResourceListers,
                 is_dra_extended_resource_name: Callable[[str], bool]) -> None:
        self._listers = listers
        self._is_candidate = is_dra_extended_resource_name
        # DynamicResources' view: the informer's allocations, PreBind's writes the
        # informer has yet to deliver and the allocations in flight (Reserve to PreBind).
        self._tracker = tracker_for(listers.resource_claims)
        self._cel = LazyCelCache(CEL_CACHE_SIZE)

    def prepare(self, resource_names: Sequence[str]) -> DraCounts | None:
        """PreScore: None unless a DeviceClass backs one of the scored names."""
        class_for = self._listers.device_class_for_extended_resource
        if not any(self._is_candidate(name) and class_for(name) is not None
                   for name in resource_names):
            return None
        return DraCounts(self._tracker.allocated(), self._listers.resource_slices.values(),
                         class_for, self._cel)


def dra_extended_resources(handle: Handle,
                           scored: Sequence[str]) -> DraExtendedResources | None:
    """The device counting for scored names a DeviceClass could back; None when no
    scored name can be one (cpu and memory only: nothing to follow)."""
    if not any(is_dra_extended_resource_name(name) for name in scored):
        return None
    return DraExtendedResources(handle.resources, is_dra_extended_resource_name)
