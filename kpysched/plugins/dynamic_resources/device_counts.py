"""DynamicResources' Filter for every snapshot row at once, for the common claim: every
claim of the pod still to allocate, each asking for a number of devices of one and the
same kind (one class, the same selectors and tolerations, no constraints, no capacity,
no admin access, no subrequests).

For such claims the allocator's depth-first search cannot fail for any reason but too
few devices: no constraint or shared counter ties one choice to another, so it finds
a solution exactly when the node can reach as many devices the request may take
("eligible": selectable by the class and the request, fitting their own capacity, not
tainted against it) as the claims ask for, less those allocated already. The eligible
devices of each node are worked out once, by the search's own selection code, and kept
while the slices (the SliceCatalog), the DeviceClass and the Node object stay the same;
each cycle only counts how many of them are taken.

Whenever a node's devices are not of that plain kind (shared or counter-consuming
devices, selectors that fail to evaluate, node selectors Filter would refuse), or
something else is taken (consumed capacity), the form answers None and Filter runs
node by node as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.dra import (
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClass,
    ResourceClaim,
)
from kpysched.plugins.dynamic_resources.allocator import Allocator
from kpysched.plugins.dynamic_resources.capacity import DeviceID
from kpysched.plugins.dynamic_resources.pools import SliceCatalog
from kpysched.plugins.dynamic_resources.request_data import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    Candidate,
    taint_prevents_allocation,
)
from kpysched.plugins.dynamic_resources.results import device_placement

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PlainClaims:
    """Claims the count decides: the one kind of device they ask for, and how many."""

    signature: bytes
    class_name: str
    needed: int


def plain_claims(claims: Sequence[ResourceClaim]) -> PlainClaims | None:
    """The kind and number of devices the claims ask for, when they are of the plain
    shape the module docstring names; None otherwise."""
    signature: bytes | None = None
    class_name = ""
    needed = 0
    for claim in claims:
        devices = claim.spec.devices
        if claim.status.allocation is not None or devices.constraints or not devices.requests:
            return None
        in_claim = 0
        for request in devices.requests:
            exactly = request.exactly
            if (exactly is None or request.first_available or exactly.admin_access is not None
                    or exactly.capacity is not None
                    or exactly.allocation_mode != ALLOCATION_MODE_EXACT_COUNT
                    or exactly.count < 1 or not exactly.device_class_name
                    or any(selector.cel is None for selector in exactly.selectors)):
                return None
            kind = msgspec.json.encode(msgspec.structs.replace(exactly, count=1))
            if signature is None:
                signature, class_name = kind, exactly.device_class_name
            elif kind != signature:
                return None
            in_claim += exactly.count
        if in_claim > ALLOCATION_RESULTS_MAX_SIZE:
            return None
        needed += in_claim
    if signature is None:
        return None
    return PlainClaims(signature, class_name, needed)


def _node_selector_refused(candidate: Candidate) -> bool:
    """Whether an allocation result with this device could fail to make its node
    selector (results.py: a selector of several terms, no device local to the node)."""
    local_to, selector = device_placement(candidate)
    if local_to is not None or candidate.device.binds_to_node:
        return False
    return selector is not None and len(selector.node_selector_terms) > 1


def eligible_devices(allocator: Allocator, node: api.Node,
                     claims: Sequence[ResourceClaim]) -> list[DeviceID] | None:
    """The devices on the node the claims' (plain) request may take when free, in the
    search's order; None when the count cannot stand for the search on this node."""
    features = allocator.features
    try:
        search = allocator.prepared_search(node, claims)
    except AllocationError:
        return None
    key = (0, 0, 0)
    request = search.request_data[key].request
    eligible: list[DeviceID] = []
    for pool in search.pools:
        if pool.incomplete or pool.invalid:
            continue
        for resource_slice, device_ids in zip(pool.device_slices, pool.device_ids, strict=True):
            for device, device_id in zip(resource_slice.spec.devices, device_ids, strict=True):
                candidate = Candidate(device_id, device, resource_slice, pool)
                try:
                    if not search.is_selectable(key, candidate):
                        continue
                except AllocationError:
                    return None
                if features.consumable_capacity:
                    if device.allow_multiple_allocations:
                        return None
                    if not allocator.catalog.fits_alone(device):
                        continue
                if device.consumes_counters:
                    if features.partitionable_devices:
                        return None
                    continue
                if (features.device_taints and device.taints
                        and taint_prevents_allocation(device, request)):
                    continue
                if _node_selector_refused(candidate):
                    return None
                eligible.append(device_id)
    return eligible


class DeviceCounts:
    """Per snapshot row, the eligible devices for one kind of claim, kept across cycles
    while the catalog, the DeviceClass and the row's Node object stay the same, and how
    many of them are taken: counted again only for the devices taken or freed since the
    last cycle (the allocated set changes by a device or two per cycle)."""

    def __init__(self) -> None:
        self._catalog: SliceCatalog | None = None
        self._device_class: DeviceClass | None = None
        self._signature = b""
        self._reset_rows(0)

    def _reset_rows(self, size: int) -> None:
        self._nodes: list[api.Node | None] = [None] * size
        self._eligible: list[list[DeviceID] | None] = [None] * size
        self._eligible_count: IntArray = np.zeros(size, dtype=np.int64)
        self._unjudgeable = size  # rows whose devices the count cannot stand for
        # Eligible device -> the rows that can take it (several for a shared pool).
        self._rows_of: dict[DeviceID, list[int]] = {}
        # The taken devices `_taken_per_row` counts; None: count afresh.
        self._taken: frozenset[DeviceID] | None = None
        self._taken_per_row: IntArray = np.zeros(size, dtype=np.int64)

    def _set_row(self, row: int, devices: list[DeviceID] | None) -> None:
        for device in self._eligible[row] or ():
            rows = self._rows_of[device]
            rows.remove(row)
            if not rows:
                del self._rows_of[device]
        self._unjudgeable += (devices is None) - (self._eligible[row] is None)
        self._eligible[row] = devices
        self._eligible_count[row] = len(devices) if devices is not None else 0
        for device in devices or ():
            self._rows_of.setdefault(device, []).append(row)
        self._taken = None

    def free(self, allocator: Allocator, claims: Sequence[ResourceClaim],
             plain: PlainClaims, snapshot: Snapshot) -> IntArray | None:
        """How many eligible devices each row has free; None when some row's count
        cannot stand for the search there."""
        device_class = allocator.device_class(plain.class_name)
        if device_class is None:
            return None
        nodes = [info.node for info in snapshot.node_infos]
        if (allocator.catalog is not self._catalog or device_class is not self._device_class
                or plain.signature != self._signature or len(nodes) != len(self._nodes)):
            self._catalog, self._device_class = allocator.catalog, device_class
            self._signature = plain.signature
            self._reset_rows(len(nodes))
        kept_nodes = self._nodes
        for row, node in enumerate(nodes):
            if node is not kept_nodes[row]:
                if node is None:
                    return None
                self._set_row(row, eligible_devices(allocator, node, claims))
                kept_nodes[row] = node
        if self._unjudgeable:
            return None
        taken = allocator.allocated_state.allocated_devices
        if self._taken is None:
            self._taken_per_row[:] = 0
            self._count(taken, 1)
        else:
            self._count(taken - self._taken, 1)
            self._count(self._taken - taken, -1)
        self._taken = frozenset(taken)
        return self._eligible_count - self._taken_per_row

    def _count(self, devices: set[DeviceID] | frozenset[DeviceID], sign: int) -> None:
        rows_of, per_row = self._rows_of, self._taken_per_row
        for device in devices:
            for row in rows_of.get(device, ()):
                per_row[row] += sign
