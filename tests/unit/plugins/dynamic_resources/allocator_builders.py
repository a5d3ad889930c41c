"""Builders for the DRA allocator tests, shaped like upstream's allocatortesting helpers
(node, class, claim, request, slice, device, results) so cases port line by line."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from kpysched.objects import api
from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    Features,
    SharedDeviceID,
)
from kpysched.plugins.dynamic_resources.capacity import (
    ConsumedCapacityCollection,
    DeviceID,
    parse_amount,
)
from kpysched.plugins.dynamic_resources.cel import SelectorError

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3 = "pool-1", "pool-2", "pool-3"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3 = "slice-1", "slice-2", "slice-3"
DEVICE0, DEVICE1, DEVICE2, DEVICE3 = "device-0", "device-1", "device-2", "device-3"
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
CAPACITY0 = "capacity-0"
ALL_NODES = "<all nodes>"
PER_DEVICE = "<per device>"
SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


# ---- a CEL stand-in for the expressions these tests use ------------------------------

_DRIVER = re.compile(r'device\.driver == "([^"]*)"')
_CAPACITY = re.compile(
    r'device\.capacity\["([^"]*)"\]\.(\w+)\.compareTo\(quantity\("([^"]*)"\)\) >= 0')
_ATTRIBUTE = re.compile(r'device\.attributes\["([^"]*)"\]\.(\w+) == (.*)')
_MULTI = re.compile(r'device\.allowMultipleAllocations == (true|false)')


@dataclass
class _Compiled:
    test: Callable[[str, r.Device], bool]

    def matches(self, driver: str, device: r.Device, deadline: float | None = None) -> bool:
        return self.test(driver, device)


def _qualified(mapping: dict[str, Any], domain: str, name: str, driver: str) -> Any:
    if f"{domain}/{name}" in mapping:
        return mapping[f"{domain}/{name}"]
    return mapping.get(name) if domain == driver else None


def _attribute_equals(domain: str, name: str, literal: str) -> Callable[[str, r.Device], bool]:
    wanted: object = literal.strip('"') if literal.startswith('"') else (
        literal == "true" if literal in ("true", "false") else int(literal))

    def test(driver: str, device: r.Device) -> bool:
        attribute = _qualified(device.attributes, domain, name, driver)
        if attribute is None:
            raise SelectorError(f"no such key: {name}")
        value = attribute.value()
        return bool(value == wanted and type(value) is type(wanted))
    return test


class FakeCel:
    """Understands the handful of expression shapes upstream's table uses; anything
    else fails to compile, and "runtime error" fails when evaluated."""

    def __init__(self) -> None:
        self.compiled: list[str] = []

    def compile(self, expression: str) -> _Compiled:
        self.compiled.append(expression)
        alternatives = [[self._one(p.strip()) for p in alternative.split("&&")]
                        for alternative in expression.split("||")]
        return _Compiled(lambda driver, device: any(
            all(t(driver, device) for t in tests) for tests in alternatives))

    @staticmethod
    def _one(expression: str) -> Callable[[str, r.Device], bool]:
        if expression == "runtime error":
            def fail(driver: str, device: r.Device) -> bool:
                raise SelectorError("runtime failure")
            return fail
        if expression == "true":
            return lambda driver, device: True
        if match := _DRIVER.fullmatch(expression):
            wanted = match.group(1)
            return lambda driver, device: driver == wanted
        if match := _MULTI.fullmatch(expression):
            multi = match.group(1) == "true"
            return lambda driver, device: bool(device.allow_multiple_allocations) == multi
        if match := _CAPACITY.fullmatch(expression):
            domain, name, quantity = match.groups()

            def at_least(driver: str, device: r.Device) -> bool:
                capacity = _qualified(device.capacity, domain, name, driver)
                if capacity is None:
                    raise SelectorError(f"no such key: {name}")
                return bool(parse_amount(capacity.value) >= parse_amount(quantity))
            return at_least
        if match := _ATTRIBUTE.fullmatch(expression):
            domain, name, literal = match.groups()
            return _attribute_equals(domain, name, literal)
        raise SelectorError(f"ERROR: <input>:1:1: Syntax error: {expression}")


# ---- objects ------------------------------------------------------------------------

def node(name: str, region: str) -> api.Node:
    return api.Node(metadata=api.ObjectMeta(
        name=name, labels={"region": region, "planet": "earth"}))


def cel(expression: str) -> r.DeviceSelector:
    return r.DeviceSelector(cel=r.CELDeviceSelector(expression=expression))


def device_class(name: str, driver: str, config: str | None = None,
                 expression: str | None = None) -> r.DeviceClass:
    configs = [] if config is None else [r.DeviceClassConfiguration(opaque=opaque(driver, config))]
    return r.DeviceClass(
        metadata=api.ObjectMeta(name=name),
        spec=r.DeviceClassSpec(selectors=[cel(expression or f'device.driver == "{driver}"')],
                               config=configs))


def opaque(driver: str, attribute: str) -> r.OpaqueDeviceConfiguration:
    return r.OpaqueDeviceConfiguration(driver=driver, parameters=msgspec.Raw(
        msgspec.json.encode({attribute: attribute + "Value"})))


def request(name: str, class_name: str, count: int = 1, *selectors: r.DeviceSelector,
            mode: str = r.ALLOCATION_MODE_EXACT_COUNT, admin_access: bool | None = None,
            tolerations: Iterable[r.DeviceToleration] = (),
            capacity: str | None = None) -> r.DeviceRequest:
    return r.DeviceRequest(name=name, exactly=r.ExactDeviceRequest(
        device_class_name=class_name, count=count if mode == r.ALLOCATION_MODE_EXACT_COUNT else 0,
        allocation_mode=mode, selectors=list(selectors), admin_access=admin_access,
        tolerations=list(tolerations), capacity=_capacity_request(capacity)))


def all_request(name: str, class_name: str, *selectors: r.DeviceSelector,
                **kwargs: Any) -> r.DeviceRequest:
    return request(name, class_name, 0, *selectors, mode=r.ALLOCATION_MODE_ALL, **kwargs)


def _capacity_request(capacity: str | None) -> r.CapacityRequirements | None:
    if capacity is None:
        return None
    return r.CapacityRequirements(requests={CAPACITY0: capacity} if capacity else {})


def sub_request(name: str, class_name: str, count: int = 1, *selectors: r.DeviceSelector,
                mode: str = r.ALLOCATION_MODE_EXACT_COUNT,
                tolerations: Iterable[r.DeviceToleration] = (),
                capacity: str | None = None) -> r.DeviceSubRequest:
    return r.DeviceSubRequest(name=name, device_class_name=class_name,
                              count=count if mode == r.ALLOCATION_MODE_EXACT_COUNT else 0,
                              allocation_mode=mode, selectors=list(selectors),
                              tolerations=list(tolerations),
                              capacity=_capacity_request(capacity))


def first_available(name: str, *subs: r.DeviceSubRequest) -> r.DeviceRequest:
    return r.DeviceRequest(name=name, first_available=list(subs))


def claim(name: str, *requests: r.DeviceRequest,
          constraints: Iterable[r.DeviceConstraint] = (),
          config: Iterable[r.DeviceClaimConfiguration] = ()) -> r.ResourceClaim:
    return r.ResourceClaim(
        metadata=api.ObjectMeta(name=name),
        spec=r.ResourceClaimSpec(devices=r.DeviceClaim(
            requests=list(requests), constraints=list(constraints), config=list(config))))


def simple_claim(name: str, request_name: str, class_name: str) -> r.ResourceClaim:
    return claim(name, request(request_name, class_name))


def match_attribute(attribute: str, *requests: str) -> r.DeviceConstraint:
    return r.DeviceConstraint(requests=list(requests), match_attribute=attribute)


def distinct_attribute(attribute: str, *requests: str) -> r.DeviceConstraint:
    return r.DeviceConstraint(requests=list(requests), distinct_attribute=attribute)


def attrs(**values: int | str | bool) -> dict[str, r.DeviceAttribute]:
    """Attributes in the driver's own domain (unqualified names)."""
    out: dict[str, r.DeviceAttribute] = {}
    for name, value in values.items():
        if isinstance(value, bool):
            out[name] = r.DeviceAttribute(bool_value=value)
        elif isinstance(value, int):
            out[name] = r.DeviceAttribute(int_value=value)
        elif name.endswith("Version"):
            out[name] = r.DeviceAttribute(version=value)
        else:
            out[name] = r.DeviceAttribute(string=value)
    return out


def device(name: str, capacity: dict[str, str] | None = None,
           attributes: dict[str, r.DeviceAttribute] | None = None, **fields: Any) -> r.Device:
    return r.Device(name=name,
                    capacity={k: r.DeviceCapacity(value=v) for k, v in (capacity or {}).items()},
                    attributes=attributes or {}, **fields)


def counters(counter_set: str, **values: str) -> r.DeviceCounterConsumption:
    return r.DeviceCounterConsumption(
        counter_set=counter_set, counters={k: r.Counter(value=v) for k, v in values.items()})


def counter_set(name: str, **values: str) -> r.CounterSet:
    return r.CounterSet(name=name, counters={k: r.Counter(value=v) for k, v in values.items()})


def pool(name: str, count: int = 1, generation: int = 1) -> r.ResourcePool:
    return r.ResourcePool(name=name, generation=generation, resource_slice_count=count)


def slice_(name: str, where: str | api.NodeSelector, pool_: str | r.ResourcePool, driver: str,
           *devices: r.Device, shared_counters: Iterable[r.CounterSet] = ()) -> r.ResourceSlice:
    spec = r.ResourceSliceSpec(
        driver=driver, pool=pool(pool_) if isinstance(pool_, str) else pool_,
        devices=list(devices), shared_counters=list(shared_counters))
    if isinstance(where, api.NodeSelector):
        spec.node_selector = where
    elif where == ALL_NODES:
        spec.all_nodes = True
    elif where == PER_DEVICE:
        spec.per_device_node_selection = True
    else:
        spec.node_name = where
    return r.ResourceSlice(metadata=api.ObjectMeta(name=name), spec=spec)


def one_device_slice(name: str, where: str | api.NodeSelector, pool_: str | r.ResourcePool,
                     driver: str) -> r.ResourceSlice:
    return slice_(name, where, pool_, driver, device(DEVICE1))


def many_devices_slice(name: str, where: str, pool_: str | r.ResourcePool, driver: str,
                       count: int) -> r.ResourceSlice:
    return slice_(name, where, pool_, driver, *(device(f"device-{i}") for i in range(count)))


def node_label_selector(key: str, *values: str) -> api.NodeSelector:
    return api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(match_expressions=[
        api.NodeSelectorRequirement(key=key, operator="In", values=list(values))])])


def local_node_selector(name: str) -> api.NodeSelector:
    return api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(match_fields=[
        api.NodeSelectorRequirement(key="metadata.name", operator="In", values=[name])])])


def taint(effect: str, value: str = "taint-value") -> r.DeviceTaint:
    return r.DeviceTaint(key="taint-key", value=value, effect=effect)


def toleration(effect: str, operator: str = "Exists", value: str = "") -> r.DeviceToleration:
    return r.DeviceToleration(key="taint-key", operator=operator, value=value, effect=effect)


# ---- results ------------------------------------------------------------------------

def result(request_name: str, driver: str, pool_name: str, device_name: str,
           admin_access: bool = False, **fields: Any) -> r.DeviceRequestAllocationResult:
    return r.DeviceRequestAllocationResult(
        request=request_name, driver=driver, pool=pool_name, device=device_name,
        admin_access=True if admin_access else None, **fields)


def allocation(selector: api.NodeSelector | None, *results: r.DeviceRequestAllocationResult,
               config: Iterable[r.DeviceAllocationConfiguration] = ()) -> r.AllocationResult:
    return r.AllocationResult(devices=r.DeviceAllocationResult(
        results=list(results), config=list(config)), node_selector=selector)


def config(source: str, requests: list[str], driver: str,
           attribute: str) -> r.DeviceAllocationConfiguration:
    return r.DeviceAllocationConfiguration(source=source, requests=requests,
                                           opaque=opaque(driver, attribute))


# ---- running a case -----------------------------------------------------------------

@dataclass
class Case:
    claims: list[r.ResourceClaim]
    classes: list[r.DeviceClass] = field(default_factory=list)
    slices: list[r.ResourceSlice] = field(default_factory=list)
    node: api.Node = field(default_factory=lambda: node(NODE1, REGION1))
    features: Features = field(default_factory=Features)
    allocated: list[DeviceID] = field(default_factory=list)
    allocated_shares: list[SharedDeviceID] = field(default_factory=list)
    consumed: ConsumedCapacityCollection = field(default_factory=dict)
    # The expected outcome: results per claim, None, or an error text (with on_node).
    expect: list[r.AllocationResult] | None = None
    error: str | None = None
    error_on_node: bool = False

    def allocator(self, cel_cache: Any = None) -> Allocator:
        classes = {c.metadata.name: c for c in self.classes}
        state = AllocatedState(set(self.allocated), set(self.allocated_shares),
                               {k: dict(v) for k, v in self.consumed.items()})
        return Allocator(self.features, state, classes.get, self.slices,
                         cel_cache or FakeCel(), new_share_id=lambda: SHARE_ID)

    def check(self, cel_cache: Any = None) -> None:
        """Allocate and compare with the expected results or error (text and on_node;
        the real CEL's errors name no node, so on_node is checked with the stand-in)."""
        allocator = self.allocator(cel_cache)
        if self.error is None:
            assert dump(allocator.allocate(self.node, self.claims)) == dump(self.expect)
            return
        with pytest.raises(AllocationError) as raised:
            allocator.allocate(self.node, self.claims)
        assert str(raised.value) == self.error
        if cel_cache is None:
            assert raised.value.on_node == self.error_on_node


def dump(results: list[r.AllocationResult] | None) -> Any:
    """Comparable and readable on failure."""
    return None if results is None else msgspec.to_builtins(
        results, enc_hook=msgspec.json.decode)


def with_range_policy(name: str, capacity: dict[str, str], shared: bool = True) -> r.Device:
    """upstream's withCapacityRequestPolicyRange: default 2, range 2..4 in steps of 2."""
    policy = r.CapacityRequestPolicy(default="2", valid_range=r.CapacityRequestPolicyRange(
        min="2", step="2", max="4"))
    return r.Device(name=name, allow_multiple_allocations=True if shared else None, capacity={
        key: r.DeviceCapacity(value=value, request_policy=policy)
        for key, value in capacity.items()})


def with_valid_values_policy(name: str, default: str, capacity: dict[str, str],
                             more_values: Iterable[str] = ()) -> r.Device:
    """upstream's withCapacityRequestPolicyValidValues: the default is the least value."""
    policy = r.CapacityRequestPolicy(default=default, valid_values=[default, *more_values])
    return r.Device(name=name, allow_multiple_allocations=True, capacity={
        key: r.DeviceCapacity(value=value, request_policy=policy)
        for key, value in capacity.items()})


def shared_result(request_name: str, pool_name: str, device_name: str,
                  consumed: dict[str, str] | None = None,
                  driver: str = DRIVER_A) -> r.DeviceRequestAllocationResult:
    return result(request_name, driver, pool_name, device_name, share_id=SHARE_ID,
                  consumed_capacity=consumed or {})
