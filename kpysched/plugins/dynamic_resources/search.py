"""One run of the allocator for one node: the depth-first search over candidate devices
with backtracking (upstream's allocateOne/allocateDevice), and the bookkeeping it undoes
when it backs out of a candidate (devices in use, constraints, shared counters,
consumed capacity).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from kpysched.objects import api
from kpysched.objects.dra import (
    ALLOCATION_MODE_ALL,
    Device,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
    ResourceSlice,
)
from kpysched.plugins.dynamic_resources.allocation_state import AllocatedState, Features
from kpysched.plugins.dynamic_resources.capacity import (
    Amount,
    CapacityError,
    ConsumedCapacityCollection,
    DeviceID,
    consumed_by_request,
    insert_consumed,
    parse_amount,
    remove_consumed,
    request_fits_capacity,
)
from kpysched.plugins.dynamic_resources.cel_errors import SelectorError, SelectorTimeoutError
from kpysched.plugins.dynamic_resources.constraints import (
    Constraint,
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
)
from kpysched.plugins.dynamic_resources.pools import (
    NodeSelectionError,
    Pool,
    SliceCatalog,
    node_matches,
)
from kpysched.plugins.dynamic_resources.request_data import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    AllocationTimeoutError,
    Candidate,
    CompiledSelector,
    DeviceResult,
    RequestData,
    RequestView,
    klog_name,
    taint_prevents_allocation,
)

RequestKey = tuple[int, int, int]
"""(claim index, request index, subrequest index)."""
DeviceIndices = tuple[int, int, int, int]
"""A request key plus which of its devices is being picked."""
Location = tuple[int, int, int]
"""(pool index, slice index, device index): where the search for a device starts."""
_ORIGIN: Location = (0, 0, 0)
# What v1.37's cel.EnhanceRuntimeError appends to a "no such key:" error.
MISSING_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or "
                    "guarding the check with has() for optional fields")


class _MaxSizeExceededError(Exception):
    """More devices than an allocation result may hold: back off further than usual."""


@dataclass(slots=True)
class _Tentative:
    """What _allocate_device did for one device (upstream's allocateDeviceState)."""

    claim_index: int
    candidate: Candidate
    base_request: str
    sub_request: str
    results_before: int
    constraints_added: int = 0
    marked: bool = False
    counters_reserved: bool = False
    inserted: dict[str, Fraction] | None = None
    entry_existed: bool = False


class AllocatorView(Protocol):
    """What a search reads of the Allocator that runs it (allocator.py), named here so
    that the search does not import the allocator back."""

    features: Features
    allocated_state: AllocatedState
    catalog: SliceCatalog
    new_share_id: Callable[[], str]

    def compiled_selector(self, expression: str) -> CompiledSelector: ...

    def selector_matches(self, expression: str, compiled: CompiledSelector, driver: str,
                         device: Device, deadline: float | None = None) -> bool: ...

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]: ...


class Search:
    def __init__(self, allocator: AllocatorView, node: api.Node, claims: Sequence[ResourceClaim],
                 pools: list[Pool], deadline: float | None) -> None:
        self.allocator = allocator
        self.features = allocator.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.deadline = deadline
        self.request_data: dict[RequestKey, RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.device_results: list[list[DeviceResult]] = [[] for _ in claims]
        self._selectable: dict[tuple[DeviceID, RequestKey], bool] = {}
        self._allocating_devices: dict[DeviceID, set[int]] = {}
        self._allocating_capacity: ConsumedCapacityCollection = {}
        self._consumed_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        self._shared_device_ids: set[DeviceID] | None = None

    # -- before the search ------------------------------------------------------------

    def add_constraints(self, claim_index: int, claim: ResourceClaim) -> None:
        constraints: list[Constraint] = []
        for index, constraint in enumerate(claim.spec.devices.constraints):
            if constraint.match_attribute is not None:
                constraints.append(MatchAttributeConstraint(constraint.requests,
                                                            constraint.match_attribute))
            elif constraint.distinct_attribute is not None:
                constraints.append(DistinctAttributeConstraint(
                    constraint.requests, constraint.distinct_attribute,
                    per_device=self.features.v1_37))
            else:
                raise AllocationError(
                    f"claim {klog_name(claim)}, constraint #{index}: empty constraint "
                    "(unsupported constraint type?)")
        self.constraints[claim_index] = constraints

    def collect_all_devices(self, key: RequestKey, data: RequestData) -> None:
        """Allocation mode All: every selectable device of every pool, which must all be
        complete and valid."""
        claim = self.claims[key[0]]
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                state = "being updated" if pool.incomplete else "invalid"
                raise AllocationError(
                    f"claim {klog_name(claim)}, request {data.request.name}: asks for all "
                    f"devices, but resource pool {pool.pool_id[0]}/{pool.pool_id[1]} is "
                    f"currently {state}")
            for resource_slice, device_ids in zip(pool.device_slices, pool.device_ids,
                                                  strict=True):
                for device, device_id in zip(resource_slice.spec.devices, device_ids,
                                             strict=True):
                    if not self._is_selectable(key, data, resource_slice, device, device_id):
                        continue
                    if self.features.consumable_capacity and not (
                            self._fits_static_capacity(claim, data.request, device)
                            if self.features.v1_37
                            else self._fits_capacity(data.request, device_id, device)):
                        continue
                    data.all_devices.append(Candidate(device_id, device, resource_slice, pool))
        data.num_devices = len(data.all_devices)

    # -- the search -------------------------------------------------------------------

    def run(self) -> bool:
        """Search from the first device of the first claim."""
        try:
            return self.allocate_one((0, 0, 0, 0), False, _ORIGIN)
        except _MaxSizeExceededError:
            # Only the first claim can let this escape (later claims turn it into "no");
            # upstream then returns the sentinel itself as the error.
            raise AllocationError("allocation max size exceeded") from None

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeoutError("filter operation aborted: context deadline exceeded")

    def allocate_one(self, indices: DeviceIndices, allocating_sub_request: bool,
                     start: Location) -> bool:
        """Pick the device `indices` names and, recursively, all after it. True once
        everything is allocated; the tentative state then holds the solution."""
        self._check_deadline()
        claim_index, request_index, sub_index, device_index = indices
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.spec.devices.requests):
            try:
                return self.allocate_one((claim_index + 1, 0, 0, 0), False, _ORIGIN)
            except _MaxSizeExceededError:
                # An earlier claim choosing differently may let this one pick a
                # subrequest with fewer devices.
                return False

        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]
        if not allocating_sub_request and data.parent is not None:
            return self._allocate_first_available(indices, data)

        request = data.request
        all_mode = request.allocation_mode == ALLOCATION_MODE_ALL
        if all_mode and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self.allocate_one((claim_index, request_index + 1, 0, 0), False, _ORIGIN)
        if (len(self.device_results[claim_index]) + data.num_devices - device_index
                > ALLOCATION_RESULTS_MAX_SIZE):
            raise _MaxSizeExceededError
        following = (claim_index, request_index, sub_index, device_index + 1)

        if all_mode:
            tentative = self._allocate_device(indices, data.all_devices[device_index],
                                              must=True)
            if tentative is None:
                return False
            try:
                done = self.allocate_one(following, allocating_sub_request, _ORIGIN)
            except Exception:
                self._deallocate_device(tentative)
                raise
            if not done:
                self._deallocate_device(tentative)
            return done

        admin_access = request.admin_access
        allocated_devices = self.allocator.allocated_state.allocated_devices
        allocating_devices = self._allocating_devices
        for pool_index in range(start[0], len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start[1] if pool_index == start[0] else 0
            for slice_index in range(first_slice, len(pool.device_slices)):
                resource_slice = pool.device_slices[slice_index]
                devices = resource_slice.spec.devices
                device_ids = pool.device_ids[slice_index]
                first_device = (start[2] if pool_index == start[0] and slice_index == start[1]
                                else 0)
                for candidate_index in range(first_device, len(devices)):
                    device_id = device_ids[candidate_index]
                    if admin_access:
                        if claim_index in allocating_devices.get(device_id, ()):
                            continue
                    elif device_id in allocated_devices or allocating_devices.get(device_id):
                        continue  # _device_in_use
                    device = devices[candidate_index]
                    if not self._is_selectable(key, data, resource_slice, device, device_id):
                        continue
                    if (self.features.consumable_capacity
                            and not self._fits_capacity(request, device_id, device,
                                                        claim_index)):
                        continue
                    candidate = Candidate(device_id, device, resource_slice, pool)
                    tentative = self._allocate_device(indices, candidate, must=False)
                    if tentative is None:
                        continue
                    try:
                        done = self.allocate_one(following, allocating_sub_request,
                                                 (pool_index, slice_index, candidate_index + 1))
                    except Exception:
                        self._deallocate_device(tentative)
                        raise
                    if done:
                        return True
                    self._deallocate_device(tentative)
        return False

    def _allocate_first_available(self, indices: DeviceIndices, data: RequestData) -> bool:
        """A request with subrequests: the first subrequest that leads to a solution."""
        claim_index, request_index, _, device_index = indices
        all_exceeded = True
        sub_index = 0
        while (claim_index, request_index, sub_index) in self.request_data:
            try:
                success = self.allocate_one((claim_index, request_index, sub_index,
                                             device_index), True, _ORIGIN)
            except _MaxSizeExceededError:
                sub_index += 1
                continue
            all_exceeded = False
            if success:
                data.selected_sub_request = sub_index
                return True
            sub_index += 1
        if all_exceeded:
            raise _MaxSizeExceededError
        return False

    def _allocate_device(self, indices: DeviceIndices, candidate: Candidate,
                         must: bool) -> _Tentative | None:
        """Tentatively allocate a selectable candidate; returns what _deallocate_device
        needs to undo it, or None when it cannot be used (raises when `must` and a
        constraint forbids it)."""
        claim_index = indices[0]
        data = self.request_data[indices[:3]]
        request = data.request
        device, device_id = candidate.device, candidate.device_id
        shared = self.features.consumable_capacity and bool(device.allow_multiple_allocations)
        if not shared and request.admin_access and \
                claim_index in self._allocating_devices.get(device_id, ()):
            return None
        if not request.admin_access and self._device_in_use(device_id):
            return None
        if not self.features.partitionable_devices and device.consumes_counters:
            return None

        counters_reserved = False
        if device.consumes_counters and not (shared and self._capacity_in_use(device_id)):
            if not self._reserve_counters(candidate):
                return None
            counters_reserved = True

        if data.parent is None:
            base_request, sub_request, parent_name = request.name, "", ""
        else:
            base_request, sub_request = data.parent.name, request.name
            parent_name = data.parent.name
        results = self.device_results[claim_index]
        tentative = _Tentative(claim_index, candidate, base_request, sub_request, len(results),
                               counters_reserved=counters_reserved)

        if (self.features.device_taints and device.taints
                and taint_prevents_allocation(device, request)):
            self._deallocate_device(tentative)
            return None
        for constraint in self.constraints[claim_index]:
            if not constraint.add(base_request, sub_request, device, device_id):
                self._deallocate_device(tentative)
                if must:
                    raise AllocationError(
                        f"claim {klog_name(self.claims[claim_index])}, request {request.name}: "
                        f"cannot add device {'/'.join(device_id)} because a claim constraint "
                        "would not be satisfied")
                return None
            tentative.constraints_added += 1

        if not shared:
            self._allocating_devices.setdefault(device_id, set()).add(claim_index)
            tentative.marked = True

        consumed: dict[str, Amount] = {}
        share_id: str | None = None
        if self.features.consumable_capacity:
            try:
                fits = self._fits_capacity(request, device_id, device, claim_index,
                                           "rechecking")
            except AllocationError:
                self._deallocate_device(tentative)
                raise
            if not fits:
                self._deallocate_device(tentative)
                return None
            if shared:
                try:
                    consumed = consumed_by_request(request.capacity, device.capacity,
                                                   self.features.v1_37)
                except CapacityError as error:
                    self._deallocate_device(tentative)
                    raise AllocationError(
                        f"claim {klog_name(self.claims[claim_index])}, request "
                        f"{request.name}: computing consumed capacity for device "
                        f"{'/'.join(device_id)}: {error}") from None
                share_id = self.allocator.new_share_id()
                tentative.entry_existed = device_id in self._allocating_capacity
                tentative.inserted = {name: amount.exact for name, amount in consumed.items()}
                insert_consumed(self._allocating_capacity, device_id, tentative.inserted)

        results.append(DeviceResult(
            request=request, parent_request=parent_name, candidate=candidate,
            share_id=share_id, consumed=consumed or None,
            admin_access=True if request.admin_access else None))
        return tentative

    def _deallocate_device(self, tentative: _Tentative) -> None:
        """Take back what _allocate_device did (so far)."""
        claim_index = tentative.claim_index
        candidate = tentative.candidate
        device, device_id = candidate.device, candidate.device_id
        del self.device_results[claim_index][tentative.results_before:]
        if tentative.inserted is not None:
            remove_consumed(self._allocating_capacity, device_id, tentative.inserted)
            if tentative.entry_existed:
                # The entry marks the device as shared; an earlier share still needs it.
                self._allocating_capacity.setdefault(device_id, {})
        if tentative.marked:
            self._allocating_devices[device_id].discard(claim_index)
        constraints = self.constraints[claim_index]
        for constraint in reversed(constraints[:tentative.constraints_added]):
            constraint.remove(tentative.base_request, tentative.sub_request, device, device_id)
        if tentative.counters_reserved:
            self._release_counters(candidate)

    # -- checks -----------------------------------------------------------------------

    def _device_in_use(self, device_id: DeviceID) -> bool:
        return (device_id in self.allocator.allocated_state.allocated_devices
                or bool(self._allocating_devices.get(device_id)))

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        state = self.allocator.allocated_state
        if device_id in state.aggregated_capacity or device_id in self._allocating_capacity:
            return True
        # v1.37: a persisted share that consumes no capacity is only in the shared IDs,
        # and its device's counters are charged already all the same.
        return self.features.v1_37 and device_id in self._shared_devices()

    def _shared_devices(self) -> set[DeviceID]:
        if self._shared_device_ids is None:
            self._shared_device_ids = {
                shared[:3] for shared in self.allocator.allocated_state.allocated_shared_device_ids}
        return self._shared_device_ids

    def _fits_static_capacity(self, claim: ResourceClaim, request: RequestView,
                              device: Device) -> bool:
        """v1.37's allocation mode All: the request against the device's capacity alone;
        what others consume is checked when the device is allocated, so a device that
        matches but has no room left stays in the list and All fails."""
        try:
            return bool(request_fits_capacity({}, request.capacity, device.capacity, {},
                                              strict=True))
        except CapacityError as error:
            raise AllocationError(
                f"claim {klog_name(claim)}, request {request.name}: checking capacity for "
                f"device {device.name}: {error}") from None

    def _fits_capacity(self, request: RequestView, device_id: DeviceID, device: Device,
                       claim_index: int = -1, action: str = "checking") -> bool:
        """Whether the request fits what the device has left. v1.37 stops the allocation
        (AllocationError, `action` names the step in its text) for a request it cannot
        represent or a negative amount."""
        allocated = self.allocator.allocated_state.aggregated_capacity.get(device_id)
        allocating = self._allocating_capacity.get(device_id)
        if allocated is None and allocating is None and (
                request.capacity is None or not request.capacity.requests):
            # The common case (nothing shares the device, no capacity requested):
            # the same answer every time, worked out once per device.
            return self.allocator.catalog.fits_alone(device)
        try:
            return bool(request_fits_capacity(allocated or {}, request.capacity,
                                              device.capacity, allocating or {},
                                              strict=self.features.v1_37))
        except CapacityError as error:
            raise AllocationError(
                f"claim {klog_name(self.claims[claim_index])}, request {request.name}: "
                f"{action} capacity for device {'/'.join(device_id)}: {error}") from None

    def is_selectable(self, key: RequestKey, device: Candidate) -> bool:
        """Whether the request `key` may take the device by its class and own selectors
        and the device's node selection (raises AllocationError as the search would)."""
        return self._is_selectable(key, self.request_data[key], device.slice, device.device,
                                   device.device_id)

    def _is_selectable(self, key: RequestKey, data: RequestData, resource_slice: ResourceSlice,
                       device: Device, device_id: DeviceID) -> bool:
        """Class and request selectors, and per-device node selection (cached per call)."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        cached = self._selectable.get((device_id, key))
        if cached is not None:
            return cached
        selectable = (
            self._selectors_match(key, device, device_id, data.device_class,
                                  data.device_class.spec.selectors)
            and self._selectors_match(key, device, device_id, None, data.request.selectors))
        if selectable and resource_slice.spec.per_device_node_selection:
            try:
                selectable = node_matches(self.node, device.node_name, device.all_nodes,
                                          device.node_selector)
            except NodeSelectionError as error:
                raise AllocationError(str(error)) from None
        self._selectable[(device_id, key)] = selectable
        return selectable

    def _selectors_match(self, key: RequestKey, device: Device, device_id: DeviceID,
                         device_class: DeviceClass | None,
                         selectors: Sequence[DeviceSelector]) -> bool:
        owner = (f"class {device_class.metadata.name}" if device_class is not None
                 else f"claim {klog_name(self.claims[key[0]])}")
        for index, selector in enumerate(selectors):
            assert selector.cel is not None  # checked before the search
            try:
                compiled = self.allocator.compiled_selector(selector.cel.expression)
            except SelectorError as error:
                raise AllocationError(
                    f"{owner}: selector #{index}: CEL compile error: {error}") from None
            # Upstream's context interrupts CEL evaluation too; devices that no selector
            # matches never reach allocate_one's check, so the scan checks as it goes.
            self._check_deadline()
            try:
                matches = self.allocator.selector_matches(selector.cel.expression, compiled,
                                                          device_id[0], device, self.deadline)
            except SelectorTimeoutError as error:
                raise AllocationTimeoutError(self._runtime_error(owner, index, device_id,
                                                                 error)) from None
            except SelectorError as error:
                raise AllocationError(self._runtime_error(owner, index, device_id,
                                                          error)) from None
            if not matches:
                return False
        return True

    def _runtime_error(self, owner: str, index: int, device_id: DeviceID,
                       error: SelectorError) -> str:
        """A selector's runtime error as the allocator words it: v1.37 names the device
        and adds its hint to a missing key (cel.EnhanceRuntimeError)."""
        if not self.features.v1_37:
            return f"{owner}: selector #{index}: CEL runtime error: {error}"
        text = str(error)
        if "no such key:" in text:
            text += MISSING_KEY_HINT
        return (f"{owner}: selector #{index} on device {'/'.join(device_id)}: "
                f"CEL runtime error: {text}")

    # -- shared counters (partitionable devices) --------------------------------------

    def _reserve_counters(self, candidate: Candidate) -> bool:
        """Count the candidate's counter consumption; False (and nothing counted) when
        some counter of its pool would be exceeded."""
        pool = candidate.pool
        available = self.allocator.available_counters(pool)
        consumed = self._consumed_counters.setdefault(pool.pool_id, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, counter in consumption.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + parse_amount(counter.value)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, amount in counters.items():
                if amount < used.get(name, Fraction(0)):
                    self._release_counters(candidate)
                    return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        consumed = self._consumed_counters[candidate.pool.pool_id]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, counter in consumption.counters.items():
                counters[name] -= parse_amount(counter.value)
