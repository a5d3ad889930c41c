"""Resource pools as one node sees them: which ResourceSlices reach the node, grouped
into pools by (driver, pool name), keeping only each pool's newest generation, and
whether each pool is complete and valid enough to allocate from.

A SliceCatalog holds what follows from one set of slices alone, so that it is worked
out once for as long as the slices stay the same (the plugin keeps one across
scheduling cycles until a slice changes): the slices grouped by node and by pool, each
node's pools, and per device what the allocator would otherwise recompute for every
node and cycle (whether it fits its own capacity, CEL selector results).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kpysched.objects import api
from kpysched.objects.dra import CounterSet, Device, ResourceSlice
from kpysched.objects.labels import node_selector_matches
from kpysched.plugins.dynamic_resources.capacity import DeviceID, request_fits_capacity
from kpysched.plugins.node_affinity import term_errors

PoolID = tuple[str, str]
"""(driver, pool name)."""


class NodeSelectionError(Exception):
    """A node selector that upstream's parser rejects."""


def go_node_selector_string(selector: api.NodeSelector) -> str:
    """v1.NodeSelector's String(), for error messages."""
    def requirements(items: list[api.NodeSelectorRequirement]) -> str:
        return "".join(
            f"NodeSelectorRequirement{{Key:{r.key},Operator:{r.operator},"
            f"Values:[{' '.join(r.values)}],}}," for r in items)

    terms = "".join(
        f"NodeSelectorTerm{{MatchExpressions:[]NodeSelectorRequirement{{"
        f"{requirements(t.match_expressions)}}},MatchFields:[]NodeSelectorRequirement{{"
        f"{requirements(t.match_fields)}}},}}," for t in selector.node_selector_terms)
    return f"&NodeSelector{{NodeSelectorTerms:[]NodeSelectorTerm{{{terms}}},}}"


def _selector_errors(selector: api.NodeSelector) -> list[str]:
    errors: list[str] = []
    for index, term in enumerate(selector.node_selector_terms):
        if term.match_expressions or term.match_fields:
            errors += term_errors(term, f"nodeSelectorTerms[{index}]")
    return errors


def node_matches(node: api.Node | None, node_name: str | None, all_nodes: bool | None,
                 node_selector: api.NodeSelector | None) -> bool:
    """Whether a slice's (or device's) node selection covers the node; exactly one of the
    three is meant to be set. Raises NodeSelectionError for a selector that does not parse.
    """
    if node_name:
        return node is not None and node.metadata.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        errors = _selector_errors(node_selector)
        if errors:
            text = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            raise NodeSelectionError(
                f"failed to parse node selector {go_node_selector_string(node_selector)}: "
                f"{text}")
        if node is None:
            return False
        return node_selector_matches(node_selector, node.metadata.labels, node.metadata.name)
    return False


@dataclass(slots=True, eq=False)
class Pool:
    pool_id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Slices with devices that may be allocated for this node, sorted by name.
    device_slices: list[ResourceSlice] = field(default_factory=list)
    # The pool's other slices: their devices only matter for the counters they consume.
    other_device_slices: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    has_binding_conditions: bool = False
    # Per device slice (same order), the IDs of its devices.
    device_ids: list[list[DeviceID]] = field(default_factory=list)


def slice_pool_id(resource_slice: ResourceSlice) -> PoolID:
    return resource_slice.spec.driver, resource_slice.spec.pool.name


def _slice_reaches_node(resource_slice: ResourceSlice, node: api.Node) -> bool | None:
    """True/False whether the slice is relevant for the node; None for a slice whose node
    selection this version does not know (skipped)."""
    spec = resource_slice.spec
    if spec.shared_counters:
        # Counter sets are needed to use the pool, wherever its devices are.
        return True
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        try:
            return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
        except NodeSelectionError as error:
            raise NodeSelectionError(
                f"failed to perform node selection for slice {resource_slice.metadata.name}: "
                f"{error}") from None
    if spec.per_device_node_selection:
        for device in spec.devices:
            try:
                if node_matches(node, device.node_name, device.all_nodes, device.node_selector):
                    return True
            except NodeSelectionError as error:
                raise NodeSelectionError(
                    f"failed to perform node selection for device {device.name} in slice "
                    f"{resource_slice.metadata.name}: {error}") from None
        return False
    return None


def _add_slice(pools: dict[PoolID, list[ResourceSlice]], resource_slice: ResourceSlice) -> None:
    """Group by pool, keeping only the newest generation seen."""
    pool_id = slice_pool_id(resource_slice)
    slices = pools.get(pool_id)
    generation = resource_slice.spec.pool.generation
    if slices is None or generation > slices[0].spec.pool.generation:
        pools[pool_id] = [resource_slice]
    elif generation == slices[0].spec.pool.generation:
        slices.append(resource_slice)


def _invalid(pool_id: PoolID, reason: str) -> Pool:
    return Pool(pool_id, invalid=True, invalid_reason=reason)


def _duplicate_device_name(slices: Sequence[ResourceSlice]) -> str | None:
    seen: set[str] = set()
    for resource_slice in slices:
        for device in resource_slice.spec.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return None


def _bad_counter_consumption(counter_sets: Mapping[str, CounterSet],
                             slices: Sequence[ResourceSlice]) -> str | None:
    for resource_slice in slices:
        for device in resource_slice.spec.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counter_set.counters:
                        return f"counter {name} not found in counter set {counter_set.name}"
    return None


def build_pool(pool_id: PoolID, slices: list[ResourceSlice], partitionable_devices: bool,
               all_slices_of_pool: list[ResourceSlice] | None) -> Pool:
    """Validate a complete pool; `all_slices_of_pool` is given when some of its slices
    were not relevant for the node (their devices may still consume shared counters)."""
    slices = sorted(slices, key=lambda s: s.metadata.name)
    if partitionable_devices:
        counter_slices = [s for s in slices if s.spec.shared_counters]
        device_slices = [s for s in slices if not s.spec.shared_counters]
    else:
        counter_slices, device_slices = [], slices
    reason = _duplicate_device_name(device_slices)
    if reason is not None:
        return _invalid(pool_id, reason)
    if not partitionable_devices:
        return _with_binding_flag(Pool(pool_id, device_slices=device_slices))

    counter_sets: dict[str, CounterSet] = {}
    for resource_slice in counter_slices:
        for counter_set in resource_slice.spec.shared_counters:
            if counter_set.name in counter_sets:
                return _invalid(pool_id, f"duplicate counter set name {counter_set.name}")
            counter_sets[counter_set.name] = counter_set
    reason = _bad_counter_consumption(counter_sets, slices)
    if reason is not None:
        return _invalid(pool_id, reason)
    if all_slices_of_pool is None or len(slices) == len(all_slices_of_pool):
        return _with_binding_flag(Pool(pool_id, device_slices=device_slices,
                                       counter_sets=counter_sets))

    names = {s.metadata.name for s in slices}
    others = [s for s in all_slices_of_pool if s.metadata.name not in names]
    reason = _bad_counter_consumption(counter_sets, others)
    if reason is not None:
        return _invalid(pool_id, reason)
    return _with_binding_flag(Pool(pool_id, device_slices=device_slices,
                                   other_device_slices=others, counter_sets=counter_sets))


def _with_binding_flag(pool: Pool) -> Pool:
    pool.has_binding_conditions = any(
        device.binding_conditions
        for resource_slice in pool.device_slices for device in resource_slice.spec.devices)
    driver, pool_name = pool.pool_id
    pool.device_ids = [[(driver, pool_name, device.name) for device in s.spec.devices]
                       for s in pool.device_slices]
    return pool


def _current_generation(slices_of_pool: Sequence[ResourceSlice],
                        generation: int) -> list[ResourceSlice] | None:
    """All of the pool's slices at `generation`; None when a newer generation exists
    (the driver is replacing the pool, so the node's view of it is outdated)."""
    current: list[ResourceSlice] = []
    for resource_slice in slices_of_pool:
        if resource_slice.spec.pool.generation == generation:
            current.append(resource_slice)
        elif resource_slice.spec.pool.generation > generation:
            return None
    return current


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node: api.Node,
    partitionable_devices: bool,
    slices_by_pool: Mapping[PoolID, list[ResourceSlice]],
    build: Callable[[PoolID, list[ResourceSlice], list[ResourceSlice] | None], Pool],
) -> list[Pool]:
    """The pools with devices the node can reach, sorted by (driver, pool), pools with
    binding conditions last. Raises NodeSelectionError for an unparsable node selector.

    `build` turns a complete pool's slices into a Pool (build_pool, possibly cached).
    """
    grouped: dict[PoolID, list[ResourceSlice]] = {}
    for resource_slice in slices_for_node:
        spec = resource_slice.spec
        if not partitionable_devices and (spec.per_device_node_selection is not None
                                          or spec.shared_counters):
            continue
        if _slice_reaches_node(resource_slice, node):
            _add_slice(grouped, resource_slice)

    plain: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, slices in grouped.items():
        expected = slices[0].spec.pool.resource_slice_count
        if len(slices) == expected:
            pool = build(pool_id, slices, None)
        else:
            # Slices for other nodes were filtered out above; count the whole pool.
            all_current = _current_generation(slices_by_pool.get(pool_id, []),
                                              slices[0].spec.pool.generation)
            if all_current is None:
                continue
            if len(all_current) != expected:
                plain.append(Pool(pool_id, incomplete=True))
                continue
            pool = build(pool_id, slices, all_current)
        (with_binding_conditions if pool.has_binding_conditions else plain).append(pool)

    plain.sort(key=lambda p: p.pool_id)
    with_binding_conditions.sort(key=lambda p: p.pool_id)
    return plain + with_binding_conditions


_MAX_SELECTOR_RESULTS = 1 << 18


class SliceCatalog:
    """What the allocator derives from one set of ResourceSlices alone, kept while the
    slices stay the same. Device-keyed memos go by the device object's identity: the
    catalog holds its slices, so an identity cannot be reused while it lives."""

    def __init__(self, slices: Sequence[ResourceSlice], partitionable_devices: bool) -> None:
        self.partitionable_devices = partitionable_devices
        self.slices = list(slices)
        self.slices_on_node: dict[str, list[ResourceSlice]] = {}
        self.slices_shared: list[ResourceSlice] = []
        self.slices_by_pool: dict[PoolID, list[ResourceSlice]] = {}
        for resource_slice in slices:
            node_name = resource_slice.spec.node_name
            if not node_name or resource_slice.spec.shared_counters:
                self.slices_shared.append(resource_slice)
            else:
                self.slices_on_node.setdefault(node_name, []).append(resource_slice)
            self.slices_by_pool.setdefault(slice_pool_id(resource_slice), []).append(
                resource_slice)
        self._pools: dict[tuple[PoolID, tuple[int, ...], bool], Pool] = {}
        # Node name -> (the Node object the pools were gathered for, its pools).
        self._node_pools: dict[str, tuple[api.Node, list[Pool]]] = {}
        self._fits_alone: dict[int, bool] = {}
        # (CEL expression, id(device)) -> whether it matches, or the runtime error text.
        self.selector_results: dict[tuple[str, int], bool | str] = {}

    def pools_for(self, node: api.Node) -> list[Pool]:
        """gather_pools for the node (the same list again while the Node object is the
        same). Raises NodeSelectionError."""
        name = node.metadata.name
        cached = self._node_pools.get(name)
        if cached is not None and cached[0] is node:
            return cached[1]
        pools = gather_pools(self.slices_on_node.get(name, []) + self.slices_shared, node,
                             self.partitionable_devices, self.slices_by_pool, self._build_pool)
        self._node_pools[name] = (node, pools)
        return pools

    def _build_pool(self, pool_id: PoolID, slices: list[ResourceSlice],
                    all_slices: list[ResourceSlice] | None) -> Pool:
        key = (pool_id, tuple(id(s) for s in slices), all_slices is not None)
        pool = self._pools.get(key)
        if pool is None:
            pool = build_pool(pool_id, slices, self.partitionable_devices, all_slices)
            self._pools[key] = pool
        return pool

    def fits_alone(self, device: Device) -> bool:
        """Whether a request without capacity requests fits the device while nothing
        else consumes any of its capacity (request_fits_capacity's answer then)."""
        fits = self._fits_alone.get(id(device))
        if fits is None:
            fits = self._fits_alone[id(device)] = bool(
                request_fits_capacity({}, None, device.capacity, {}))
        return fits

    def remember_selector_result(self, key: tuple[str, int], result: bool | str) -> None:
        if len(self.selector_results) >= _MAX_SELECTOR_RESULTS:
            self.selector_results.clear()
        self.selector_results[key] = result
