"""Where v1.37.2's allocator answers differently from v1.36.4's with the default DRA
gates (both pick upstream's "incubating" variant): each case runs under both releases
and names what each one answers. Cases with an upstream name are ported from v1.37.2's
allocatortesting table (the v1.36 answer is what v1.36.4's code gives for them)."""

from __future__ import annotations

import dataclasses

import pytest

from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.allocator import Features
from kpysched.plugins.dynamic_resources.capacity import consumed_by_request
from kpysched.plugins.dynamic_resources.search import MISSING_KEY_HINT
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    CAPACITY0,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    REQ2,
    SHARE_ID,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    attrs,
    cel,
    claim,
    config,
    counter_set,
    counters,
    device,
    device_class,
    distinct_attribute,
    first_available,
    local_node_selector,
    many_devices_slice,
    opaque,
    pool,
    request,
    result,
    shared_result,
    slice_,
    sub_request,
)

LOCAL = local_node_selector(NODE1)
CLASS_A_OBJ = device_class(CLASS_A, DRIVER_A)
NUMA = f"{DRIVER_A}/numa"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
DEVICE4 = "device-4"
RELEASES = (36, 37)


def _run(case: Case, release: int) -> None:
    dataclasses.replace(case, features=Features(release=release)).check()


def _numa_slice(*values: int) -> r.ResourceSlice:
    return slice_(SLICE1, NODE1, POOL1, DRIVER_A, *(
        device(f"device-{i + 1}", attributes=attrs(numa=value))
        for i, value in enumerate(values)))


# ---- distinctAttribute: every device, not one value per request ----------------------

def _distinct_case(slice_obj: r.ResourceSlice, *requests: r.DeviceRequest,
                   constraint: r.DeviceConstraint) -> Case:
    return Case(claims=[claim(CLAIM0, *requests, constraints=[constraint])],
                classes=[CLASS_A_OBJ], slices=[slice_obj])


@pytest.mark.parametrize("release", RELEASES)
def test_distinct_constraint_single_request_multiple_devices_attribute_set(release: int) -> None:
    case = _distinct_case(_numa_slice(1, 2, 1, 3), request(REQ0, CLASS_A, 3),
                          constraint=distinct_attribute(NUMA))
    # v1.36 compares the third device with the request's last value only (2).
    third = DEVICE3 if release == 36 else DEVICE4
    case.expect = [allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                              result(REQ0, DRIVER_A, POOL1, DEVICE2),
                              result(REQ0, DRIVER_A, POOL1, third))]
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_distinct_constraint_single_request_not_enough_distinct_values(release: int) -> None:
    """No solution in either: v1.36 forgets device-1's value once it backs out of
    device-2, but the remaining devices all repeat 2."""
    _run(_distinct_case(_numa_slice(1, 2, 2, 2), request(REQ0, CLASS_A, 3),
                        constraint=distinct_attribute(NUMA)), release)


@pytest.mark.parametrize("release", RELEASES)
def test_distinct_constraint_two_requests_with_count_not_distinct(release: int) -> None:
    values = ("value1", "value2", "value1")
    slice_obj = slice_(SLICE1, NODE1, POOL1, DRIVER_A, *(
        device(f"device-{i + 1}", attributes=attrs(stringAttribute=value))
        for i, value in enumerate(values)))
    case = _distinct_case(slice_obj, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1),
                          constraint=distinct_attribute(STRING_ATTRIBUTE, REQ0, REQ1))
    if release == 36:
        case.expect = [allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                                  result(REQ0, DRIVER_A, POOL1, DEVICE2),
                                  result(REQ1, DRIVER_A, POOL1, DEVICE3))]
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_distinct_constraint_backs_out_of_a_device_of_the_same_request(release: int) -> None:
    """A request of two with values 1, 1, 2: the search backs out of the second device;
    both releases then pick the first and third, which v1.37 must remember as both."""
    case = _distinct_case(_numa_slice(1, 1, 2), request(REQ0, CLASS_A, 2),
                          constraint=distinct_attribute(NUMA))
    case.expect = [allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                              result(REQ0, DRIVER_A, POOL1, DEVICE3))]
    _run(case, release)


# ---- configuration in the results ----------------------------------------------------

@pytest.mark.parametrize("release", RELEASES)
def test_with_class_device_config(release: int) -> None:
    """A class config covering the only request: v1.37 writes it with no requests."""
    case = Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
                classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute")],
                slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1))],
                expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
                    config("FromClass", [REQ0] if release == 36 else [], DRIVER_A,
                           "classAttribute")])])
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_with_claim_config_for_two_requests(release: int) -> None:
    """A claim config naming two of three requests: v1.36 writes it once per request it
    names, v1.37 once."""
    claim_config = r.DeviceClaimConfiguration(requests=[REQ0, REQ1],
                                              opaque=opaque(DRIVER_A, "deviceAttribute"))
    written = config("FromClaim", [REQ0, REQ1], DRIVER_A, "deviceAttribute")
    case = Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
                      request(REQ2, CLASS_A), config=[claim_config])],
        classes=[CLASS_A_OBJ],
        slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 3)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE0),
                           result(REQ1, DRIVER_A, POOL1, DEVICE1),
                           result(REQ2, DRIVER_A, POOL1, DEVICE2),
                           config=[written] * (2 if release == 36 else 1))])
    _run(case, release)


def _prioritized_claim(config_requests: list[str]) -> r.ResourceClaim:
    return claim(CLAIM0,
                 first_available(REQ0, sub_request(SUB0, CLASS_A), sub_request(SUB1, CLASS_B)),
                 request(REQ1, CLASS_A),
                 config=[r.DeviceClaimConfiguration(requests=config_requests,
                                                    opaque=opaque(DRIVER_A, "cfg"))])


@pytest.mark.parametrize("release", RELEASES)
def test_claim_config_covering_all_requests_is_cleared(release: int) -> None:
    """req-0 through its chosen subrequest and req-1 by name: every request. v1.36
    writes it once per request it names, as written; v1.37 once, with no requests."""
    names = [f"{REQ0}/{SUB0}", REQ1]
    written = ([config("FromClaim", names, DRIVER_A, "cfg")] * 2 if release == 36
               else [config("FromClaim", [], DRIVER_A, "cfg")])
    case = Case(claims=[_prioritized_claim(names)],
                classes=[CLASS_A_OBJ, device_class(CLASS_B, DRIVER_B)],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
                expect=[allocation(LOCAL, result(f"{REQ0}/{SUB0}", DRIVER_A, POOL1, DEVICE0),
                                   result(REQ1, DRIVER_A, POOL1, DEVICE1),
                                   config=written)])
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_claim_config_scoped_to_subrequests_of_one_request(release: int) -> None:
    """Both subrequests of req-0, not req-1: kept as written in both releases."""
    names = [f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}"]
    case = Case(claims=[_prioritized_claim(names)],
                classes=[CLASS_A_OBJ, device_class(CLASS_B, DRIVER_B)],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
                expect=[allocation(LOCAL, result(f"{REQ0}/{SUB0}", DRIVER_A, POOL1, DEVICE0),
                                   result(REQ1, DRIVER_A, POOL1, DEVICE1),
                                   config=[config("FromClaim", names, DRIVER_A, "cfg")])])
    _run(case, release)


def test_cleared_config_leaves_the_claims_own_config_alone() -> None:
    claim_obj = _prioritized_claim([f"{REQ0}/{SUB0}", REQ1])
    case = Case(claims=[claim_obj], classes=[CLASS_A_OBJ, device_class(CLASS_B, DRIVER_B)],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
                features=Features(release=37))
    case.allocator().allocate(case.node, case.claims)
    assert claim_obj.spec.devices.config[0].requests == [f"{REQ0}/{SUB0}", REQ1]


# ---- the claim limit (32 devices) ----------------------------------------------------

@pytest.mark.parametrize(("release", "error"), [
    (36, "claim claim-0: number of requested devices 40 exceeds the claim limit of 32"),
    (37, "claim claim-0, request req-1: adding 20 devices exceeds the claim limit of 32, "
         "with 20 already accounted for"),
])
def test_exact_count_sum_exceeds_claim_limit(release: int, error: str) -> None:
    _run(Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 20), request(REQ1, CLASS_A, 20))],
              classes=[CLASS_A_OBJ], error=error), release)


@pytest.mark.parametrize(("release", "error"), [
    (36, "claim claim-0: number of requested devices 40 exceeds the claim limit of 32"),
    (37, "claim claim-0, request req-1: adding 20 devices exceeds the claim limit of 32, "
         "with 20 already accounted for"),
])
def test_prioritized_list_minimum_sum_exceeds_claim_limit(release: int, error: str) -> None:
    _run(Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 20), first_available(
        REQ1, sub_request(SUB0, CLASS_A, 20), sub_request(SUB1, CLASS_A, 24)))],
        classes=[CLASS_A_OBJ], error=error), release)


@pytest.mark.parametrize(("release", "error"), [
    # v1.36 validates every request before it counts, so the missing class is found.
    (36, "claim claim-0, request req-1: could not retrieve device class class-b: "
         'deviceclass.resource.k8s.io "class-b" not found'),
    (37, "claim claim-0, request req-0: adding 33 devices exceeds the claim limit of 32, "
         "with 0 already accounted for"),
])
def test_claim_limit_is_checked_before_later_requests(release: int, error: str) -> None:
    _run(Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 33), request(REQ1, CLASS_B))],
              classes=[CLASS_A_OBJ], error=error), release)


def test_exact_count_sum_exactly_fills_claim_limit() -> None:
    case = Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 16), request(REQ1, CLASS_A, 16))],
                classes=[CLASS_A_OBJ],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 32)],
                expect=[allocation(LOCAL, *(
                    result(REQ0 if i < 16 else REQ1, DRIVER_A, POOL1, f"device-{i}")
                    for i in range(32)))])
    _run(case, 37)


# ---- consumable capacity -------------------------------------------------------------

def _shared(name: str, value: str) -> r.Device:
    return r.Device(name=name, allow_multiple_allocations=True,
                    capacity={CAPACITY0: r.DeviceCapacity(value=value)})


@pytest.mark.parametrize("release", RELEASES)
def test_allocation_mode_all_counts_devices_without_room_left(release: int) -> None:
    """Allocation mode All with a capacity request: device-1 matches but others already
    consume 3 of its 4. v1.36 leaves it out of "all devices" and allocates device-2
    alone; v1.37 keeps it (static capacity fits), so All cannot be satisfied."""
    case = Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity="2"))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _shared(DEVICE1, "4"),
                       _shared(DEVICE2, "4"))],
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: 3}})
    if release == 36:
        case.expect = [allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2,
                                                       {CAPACITY0: "2"}))]
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_partitionable_consumable_capacity_shared_device_counter_not_recharged(
        release: int) -> None:
    """device-1 has a persisted share with no consumed capacity (only its share ID):
    v1.37 does not charge its counters again for a further share, v1.36 does and finds
    the counter set used up."""
    shareable = r.Device(name=DEVICE1, allow_multiple_allocations=True,
                         consumes_counters=[counters(COUNTER_SET1, c="1")])
    case = Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, shareable),
                slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A,
                       shared_counters=[counter_set(COUNTER_SET1, c="1")])],
        allocated_shares=[(DRIVER_A, POOL1, DEVICE1, SHARE_ID)])
    if release == 37:
        case.expect = [allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1))]
    _run(case, release)


def _stepped(step: str, minimum: str, value: str) -> dict[str, r.DeviceCapacity]:
    return {CAPACITY0: r.DeviceCapacity(value=value, request_policy=r.CapacityRequestPolicy(
        valid_range=r.CapacityRequestPolicyRange(min=minimum, step=step)))}


@pytest.mark.parametrize(("step", "minimum", "requested", "v1_36", "v1_37"), [
    ("1G", "1G", "1500M", "1953125Ki", "2G"),
    ("1", "0", "1048576", "1Mi", "1048576"),
    ("1Gi", "1Gi", "1500Mi", "2Gi", "2Gi"),
    ("1e3", "0", "1500", "2000", "2e3"),
    ("5", "0", "7", "10", "10"),
])
def test_rounded_up_capacity_is_written_in_the_steps_format(
        step: str, minimum: str, requested: str, v1_36: str, v1_37: str) -> None:
    """roundUpRange: NewQuantity(value, BinarySI) in v1.36, the step's format in v1.37."""
    capacities = _stepped(step, minimum, "100G")
    requirements = r.CapacityRequirements(requests={CAPACITY0: requested})
    assert consumed_by_request(requirements, capacities)[CAPACITY0].text == v1_36
    assert consumed_by_request(requirements, capacities, True)[CAPACITY0].text == v1_37


@pytest.mark.parametrize("release", RELEASES)
def test_rounded_up_capacity_in_the_allocation_result(release: int) -> None:
    case = Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1500M"))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, r.Device(
            name=DEVICE1, allow_multiple_allocations=True,
            capacity=_stepped("1G", "1G", "10G")))],
        expect=[allocation(LOCAL, shared_result(
            REQ0, POOL1, DEVICE1, {CAPACITY0: "1953125Ki" if release == 36 else "2G"}))])
    _run(case, release)


# ---- CEL runtime errors --------------------------------------------------------------

@pytest.mark.parametrize(("release", "error"), [
    (36, "claim claim-0: selector #0: CEL runtime error: no such key: model"),
    (37, "claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: "
         "no such key: model" + MISSING_KEY_HINT),
])
def test_cel_runtime_error_names_the_device_and_hints_at_optional_access(
        release: int, error: str) -> None:
    case = Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1,
                                      cel(f'device.attributes["{DRIVER_A}"].model == "a"')))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1))],
        error=error)
    _run(case, release)


def test_missing_key_hint_wording() -> None:
    """cel.EnhanceRuntimeError's text in v1.37.2 (errors.go)."""
    assert MISSING_KEY_HINT == (
        ". consider using CEL optional chaining (.? followed by orValue()) or guarding the "
        "check with has() for optional fields")


@pytest.mark.parametrize("release", RELEASES)
def test_prioritized_list_overflowing_first_subrequest_is_pruned(release: int) -> None:
    """A subrequest far over the limit counts as its smallest alternative before the
    search (no error in either release) and is passed over during it."""
    case = Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), first_available(
            REQ1, sub_request(SUB0, CLASS_A, 2**63 - 1), sub_request(SUB1, CLASS_A)))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEVICE2))])
    _run(case, release)


@pytest.mark.parametrize("release", RELEASES)
def test_consumable_capacity_multi_allocatable_device_allocation_mode_all_in_use_insufficient(
        release: int) -> None:
    """Upstream's case: device-1's only unit is consumed already; v1.36 allocates
    device-2 alone, v1.37 fails All (device-1 still matches)."""
    case = Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: 1}},
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _shared(DEVICE1, "1"),
                       _shared(DEVICE2, "1"))])
    if release == 36:
        case.expect = [allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2, {CAPACITY0: "1"}))]
    _run(case, release)


# ---- requests the v1.37 allocator refuses outright -----------------------------------

def _ranged(name: str) -> r.Device:
    """upstream's withCapacityRequestPolicyRange(four): 4, default 2, 2..4 by 2."""
    return r.Device(name=name, allow_multiple_allocations=True, capacity={
        CAPACITY0: r.DeviceCapacity(value="4", request_policy=r.CapacityRequestPolicy(
            default="2", valid_range=r.CapacityRequestPolicyRange(min="2", step="2",
                                                                   max="4")))})


_CHECKING = ("claim claim-0, request req-0: checking capacity for device {device}: "
             'capacity "capacity-0": capacity request cannot be represented in the '
             "device's range arithmetic: ")


# v1.36.4 reads these requests with int64 wrap-around (Go's Quantity.Value of 2**64 is
# 0, MaxInt64 rounded up to a step wraps negative) and then takes device-1; kpysched's
# exact arithmetic never did, so only v1.37's refusal is asserted.

def test_consumable_capacity_range_policy_rounded_value_overflow_rejected() -> None:
    """Rounding MaxInt64 up to the step passes MaxInt64: v1.37 stops with an error."""
    _run(Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="9223372036854775807"))],
              classes=[CLASS_A_OBJ],
              slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _ranged(DEVICE1))],
              error=_CHECKING.format(device="driver-a/pool-1/device-1") + (
                  "rounding request 9223372036854775807 up to the next step passes "
                  "MaxInt64")), 37)


def test_consumable_capacity_range_policy_overflow_aborts_not_skip() -> None:
    """device-2 (no policy, room enough) could take the request, but v1.37 stops at
    device-1, whose range cannot represent it."""
    big = "18446744073709551616"
    _run(Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity=big))],
              classes=[CLASS_A_OBJ],
              slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _ranged(DEVICE1),
                             _shared(DEVICE2, "36893488147419103232"))],
              error=_CHECKING.format(device="driver-a/pool-1/device-1") + (
                  f"request {big} exceeds MaxInt64")), 37)


def test_consumable_capacity_range_policy_allocation_mode_all_overflow_aborts() -> None:
    """The same refusal while gathering allocation mode All's devices (which names the
    device alone)."""
    big = "18446744073709551616"
    _run(Case(claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity=big))],
              classes=[CLASS_A_OBJ],
              slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _ranged(DEVICE1))],
              error=_CHECKING.format(device=DEVICE1) + f"request {big} exceeds MaxInt64"),
         37)


@pytest.mark.parametrize("release", RELEASES)
def test_consumable_capacity_negative_request_aborts(release: int) -> None:
    case = Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="-5"))],
                classes=[CLASS_A_OBJ],
                slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _shared(DEVICE1, "10"))])
    if release == 36:
        case.expect = [allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1,
                                                       {CAPACITY0: "-5"}))]
    else:
        case.error = ("claim claim-0, request req-0: checking capacity for device "
                      'driver-a/pool-1/device-1: capacity "capacity-0": capacity value is '
                      "negative")
    _run(case, release)
