"""The structured-parameters device allocator (k8s.io/dynamic-resource-allocation
structured, the "incubating" implementation kube-scheduler v1.36 and v1.37 pick with
their default DRA features; Features.release selects v1.37's answers where they differ).

Interface for the plugin:

    allocator = Allocator(features, allocated_state, class_lookup, slices, cel_cache)
    results = allocator.allocate(node, claims, deadline=None)

One Allocator per scheduling cycle (PreFilter); `allocate` once per node (Filter). It
returns one AllocationResult per claim, in order, or None when the claims cannot all be
allocated on this node. It raises AllocationError for what upstream returns as an
error: `on_node` True means only this node is affected (upstream's
ErrFailedAllocationOnNode: Filter answers Unschedulable with the text), False means
the claim or class is broken (Filter answers Error). AllocationTimeoutError (both an
AllocationError and a TimeoutError) when `deadline` (time.monotonic()) passes mid-search.

`node_matches(node, node_name, all_nodes, node_selector)` is upstream's NodeMatches.
AllocatedState's aggregated capacity is built with capacity.insert_consumed and
capacity.consumed_from_texts from the allocated claims' results.

The search is upstream's: claims in order, requests in order, for each needed device
the pools sorted by (driver, pool) (pools with binding conditions last), their slices
by name, devices in slice order; depth first with backtracking, first full solution
wins. Within one request only ascending device combinations are tried.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from fractions import Fraction

from kpysched.objects import api
from kpysched.objects.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from kpysched.plugins.dynamic_resources.allocation_state import (
    AllocatedState,
    Features,
    SharedDeviceID,
)
from kpysched.plugins.dynamic_resources.capacity import DeviceID, parse_amount
from kpysched.plugins.dynamic_resources.cel_errors import SelectorError, SelectorTimeoutError
from kpysched.plugins.dynamic_resources.pools import (
    NodeSelectionError,
    Pool,
    PoolID,
    SliceCatalog,
    node_matches,
)
from kpysched.plugins.dynamic_resources.request_data import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationError,
    AllocationTimeoutError,
    CompiledSelector,
    RequestData,
    RequestView,
    SelectorCompiler,
    klog_name,
)
from kpysched.plugins.dynamic_resources.results import allocation_results, check_node_selectors
from kpysched.plugins.dynamic_resources.search import Search

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationTimeoutError",
    "Allocator",
    "DeviceID",
    "Features",
    "SharedDeviceID",
    "node_matches",
]

class Allocator:
    def __init__(
        self,
        features: Features,
        allocated_state: AllocatedState,
        class_lookup: Callable[[str], DeviceClass | None],
        slices: Sequence[ResourceSlice] | SliceCatalog,
        cel_cache: SelectorCompiler,
        new_share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        """`slices`: all ResourceSlices, or a SliceCatalog of them kept from an earlier
        cycle (built with the same partitionable_devices setting and CEL cache)."""
        self.features = features
        self.allocated_state = allocated_state
        self.class_lookup = class_lookup
        self.cel_cache = cel_cache
        self.new_share_id = new_share_id
        if (not isinstance(slices, SliceCatalog)
                or slices.partitionable_devices != features.partitionable_devices):
            slices = SliceCatalog(
                slices.slices if isinstance(slices, SliceCatalog) else slices,
                features.partitionable_devices)
        self.catalog = slices
        # Memos over inputs that do not change for the Allocator's lifetime.
        self._devices_allocated: set[DeviceID] | None = None
        self._available_counters: dict[PoolID, dict[str, dict[str, Fraction]]] = {}
        self._classes: dict[str, DeviceClass | None] = {}
        self._selectors: dict[str, CompiledSelector | SelectorError] = {}
        # id(claim) -> (claim, its validated (sub)requests): validation does not depend
        # on the node, so a claim that passed it once skips it on the other nodes.
        self._validated: dict[int, tuple[ResourceClaim, list[list[RequestData]]]] = {}

    def allocate(self, node: api.Node, claims: Sequence[ResourceClaim],
                 deadline: float | None = None) -> list[AllocationResult] | None:
        search = self._search(node, claims, deadline)
        return None if search is None else allocation_results(search)

    def fits(self, node: api.Node, claims: Sequence[ResourceClaim],
             deadline: float | None = None) -> bool:
        """Whether allocate() would return results, without building them (it raises
        as allocate() does). The search is deterministic for one Allocator, so
        allocate() later finds the same devices."""
        search = self._search(node, claims, deadline)
        if search is None:
            return False
        check_node_selectors(search)
        return True

    def prepared_search(self, node: api.Node, claims: Sequence[ResourceClaim],
                        deadline: float | None = None) -> Search:
        """The search for the node with the claims' requests checked and recorded, not
        run yet; raises AllocationError as allocate() does before it searches."""
        try:
            pools = self.catalog.pools_for(node)
        except NodeSelectionError as error:
            raise AllocationError(f"gather pool information: {error}") from None
        search = Search(self, node, claims, pools, deadline)
        self._prepare(search)
        return search

    def _search(self, node: api.Node, claims: Sequence[ResourceClaim],
                deadline: float | None) -> Search | None:
        """The search that found a solution, or None."""
        search = self.prepared_search(node, claims, deadline)
        pools = search.pools
        if not search.run():
            if any(pool.invalid for pool in pools):
                raise AllocationError("invalid resource pools were encountered", on_node=True)
            return None
        return search

    # -- per-cycle memos --------------------------------------------------------------

    def device_class(self, name: str) -> DeviceClass | None:
        if name not in self._classes:
            self._classes[name] = self.class_lookup(name)
        return self._classes[name]

    def compiled_selector(self, expression: str) -> CompiledSelector:
        """The compiled CEL expression; raises SelectorError (also when asked again)."""
        compiled = self._selectors.get(expression)
        if compiled is None:
            try:
                compiled = self.cel_cache.compile(expression)
            except SelectorError as error:
                compiled = error
            self._selectors[expression] = compiled
        if isinstance(compiled, SelectorError):
            raise compiled
        return compiled

    def selector_matches(self, expression: str, compiled: CompiledSelector, driver: str,
                         device: Device, deadline: float | None = None) -> bool:
        """compiled.matches(driver, device, deadline), remembered in the catalog across
        cycles (a device's driver is its slice's); raises SelectorError as it does. An
        evaluation the deadline interrupted (SelectorTimeoutError) is not remembered."""
        key = (expression, id(device))
        result = self.catalog.selector_results.get(key)
        if result is None:
            try:
                result = compiled.matches(driver, device, deadline)
            except SelectorTimeoutError:
                raise
            except SelectorError as error:
                result = str(error)
            self.catalog.remember_selector_result(key, result)
        if isinstance(result, str):
            raise SelectorError(result)
        return result

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        """The pool's shared counters minus what allocated devices consume (may go
        negative). Claims being allocated are accounted separately by the search."""
        available = self._available_counters.get(pool.pool_id)
        if available is not None:
            return available
        if self._devices_allocated is None:
            self._devices_allocated = self.allocated_state.devices_in_use()
        available = {
            counter_set.name: {name: parse_amount(counter.value)
                               for name, counter in counter_set.counters.items()}
            for counter_set in pool.counter_sets.values()}
        driver, pool_name = pool.pool_id
        for resource_slice in (*pool.device_slices, *pool.other_device_slices):
            for device in resource_slice.spec.devices:
                if (driver, pool_name, device.name) not in self._devices_allocated:
                    continue
                for consumption in device.consumes_counters:
                    counters = available.get(consumption.counter_set, {})
                    for name, counter in consumption.counters.items():
                        if name in counters:
                            counters[name] -= parse_amount(counter.value)
        self._available_counters[pool.pool_id] = available
        return available

    # -- checking the claims before the search ----------------------------------------

    def _prepare(self, search: Search) -> None:
        for claim_index, claim in enumerate(search.claims):
            validated = self._validated.get(id(claim))
            min_devices = 0
            if validated is not None and validated[0] is claim:
                for request_index, fewest in enumerate(
                        self._prepare_validated(search, claim_index, validated[1])):
                    min_devices = self._count_devices(claim, request_index, min_devices,
                                                      fewest)
            else:
                requests: list[list[RequestData]] = []
                for request_index, request in enumerate(claim.spec.devices.requests):
                    fewest = self._prepare_request(search, claim_index, claim,
                                                   request_index, request, requests)
                    min_devices = self._count_devices(claim, request_index, min_devices,
                                                      fewest)
                self._validated[id(claim)] = (claim, requests)
            if not self.features.v1_37 and min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {klog_name(claim)}: number of requested devices {min_devices} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
            search.add_constraints(claim_index, claim)

    def _count_devices(self, claim: ResourceClaim, request_index: int, counted: int,
                       fewest: int) -> int:
        """The claim's least device count so far with one more request. v1.37 refuses
        the request that takes it past the claim limit, right after validating it (so
        a later request's own error is not reached); v1.36 checks the total at the end."""
        if self.features.v1_37 and fewest > ALLOCATION_RESULTS_MAX_SIZE - counted:
            name = claim.spec.devices.requests[request_index].name
            raise AllocationError(
                f"claim {klog_name(claim)}, request {name}: adding {fewest} devices exceeds "
                f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {counted} already "
                "accounted for")
        return counted + fewest

    def _prepare_validated(self, search: Search, claim_index: int,
                           requests: list[list[RequestData]]) -> list[int]:
        """_prepare_request for a claim that passed validation for an earlier node:
        only what depends on the node (allocation mode All) is worked out again. The
        fewest devices each request can take."""
        per_request: list[int] = []
        for request_index, sub_requests in enumerate(requests):
            fewest = -1
            for sub_index, validated in enumerate(sub_requests):
                key = (claim_index, request_index, sub_index)
                data = RequestData(validated.request, validated.parent, validated.device_class)
                if data.request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
                    data.num_devices = data.request.count
                else:
                    search.collect_all_devices(key, data)
                search.request_data[key] = data
                if fewest < 0 or data.num_devices < fewest:
                    fewest = data.num_devices
            per_request.append(fewest)
        return per_request

    def _prepare_request(self, search: Search, claim_index: int, claim: ResourceClaim,
                         request_index: int, request: DeviceRequest,
                         record: list[list[RequestData]]) -> int:
        """Record what each (sub)request needs; the fewest devices it can take. The
        request's data goes to `record` too (one entry per subrequest)."""
        name = klog_name(claim)
        if request.first_available and not self.features.prioritized_list:
            raise AllocationError(
                f"claim {name}, request {request.name}: has subrequests, but the "
                "DRAPrioritizedList feature is disabled")
        if not self.features.consumable_capacity:
            if request.exactly is not None and request.exactly.capacity is not None:
                raise AllocationError(
                    f"claim {name}, request {request.name}: has capacity requests, but the "
                    "DRAConsumableCapacity feature is disabled")
            for sub_request in request.first_available:
                if sub_request.capacity is not None:
                    raise AllocationError(
                        f"claim {name}, subrequest {sub_request.name}: has capacity requests, "
                        "but the DRAConsumableCapacity feature is disabled")
        if request.first_available:
            parent = RequestView.of_request(request)
            fewest = -1
            sub_requests: list[RequestData] = []
            for sub_index, sub_request in enumerate(request.first_available):
                data = self._validate_request(search, (claim_index, request_index, sub_index),
                                              RequestView.of_sub_request(sub_request), parent)
                search.request_data[(claim_index, request_index, sub_index)] = data
                sub_requests.append(data)
                if fewest < 0 or data.num_devices < fewest:
                    fewest = data.num_devices
            record.append(sub_requests)
            return fewest
        data = self._validate_request(search, (claim_index, request_index, 0),
                                      RequestView.of_request(request), None)
        search.request_data[(claim_index, request_index, 0)] = data
        record.append([data])
        return data.num_devices

    def _validate_request(self, search: Search, key: tuple[int, int, int],
                          request: RequestView, parent: RequestView | None) -> RequestData:
        claim = search.claims[key[0]]
        name = klog_name(claim)
        for index, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(
                    f"claim {name}, request {request.name}, selector #{index}: CEL expression "
                    "empty (unsupported selector type?)")
        if request.has_admin_access and not self.features.admin_access:
            raise AllocationError(
                f"claim {name}, request {request.name}: admin access is requested, but the "
                "feature is disabled")
        if not request.class_name:
            raise AllocationError(
                f"claim {name}, request {request.name}: missing device class name "
                "(unsupported request type?)")
        device_class = self.device_class(request.class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {name}, request {request.name}: could not retrieve device class "
                f"{request.class_name}: deviceclass.resource.k8s.io "
                f'"{request.class_name}" not found')
        data = RequestData(request, parent, device_class)
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            search.collect_all_devices(key, data)
        else:
            raise AllocationError(
                f"claim {name}, request {request.name}: unsupported count mode "
                f"{request.allocation_mode}")
        return data
