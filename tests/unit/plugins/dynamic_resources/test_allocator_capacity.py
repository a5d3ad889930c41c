"""The DRA allocator's consumable capacity (shared devices, request policies, share IDs),
ported from upstream's allocatortesting table (same case names), and the capacity math
on its own."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.allocator import Features
from kpysched.plugins.dynamic_resources.capacity import (
    consumed_by_request,
    insert_consumed,
    remove_consumed,
    request_fits_capacity,
)
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    CAPACITY0,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    SLICE1,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    attrs,
    claim,
    device,
    device_class,
    first_available,
    local_node_selector,
    match_attribute,
    request,
    result,
    shared_result,
    slice_,
    sub_request,
    with_range_policy,
    with_valid_values_policy,
)

LOCAL = local_node_selector(NODE1)
CLASS_A_OBJ = device_class(CLASS_A, DRIVER_A)
SHAREABLE = device_class(CLASS_A, DRIVER_A,
                         expression=f'device.driver == "{DRIVER_A}" && '
                                    "device.allowMultipleAllocations == true")
DEDICATED = device_class(CLASS_A, DRIVER_A,
                         expression=f'device.driver == "{DRIVER_A}" && '
                                    "device.allowMultipleAllocations == false")
ID1 = (DRIVER_A, POOL1, DEVICE1)


def shared(name: str, capacity: dict[str, str] | None = None) -> r.Device:
    return device(name, capacity, allow_multiple_allocations=True)


def _with_attributes(shared_device: r.Device, **values: str) -> r.Device:
    shared_device.attributes = attrs(**values)
    return shared_device


def two_claims(capacity: str | None = None) -> list[r.ResourceClaim]:
    return [claim(CLAIM0, request(REQ0, CLASS_A, capacity=capacity)),
            claim(CLAIM1, request(REQ0, CLASS_A, capacity=capacity))]


def one_slice(*devices: r.Device) -> list[r.ResourceSlice]:
    return [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


CASES: dict[str, Case] = {
    "consumable-capacity-disabled-feature": Case(
        features=Features(consumable_capacity=False),
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"})),
        error="claim claim-0, request req-0: has capacity requests, but the "
              "DRAConsumableCapacity feature is disabled"),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        features=Features(consumable_capacity=False),
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A, capacity="1")))],
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"})),
        error="claim claim-0, subrequest subReq-0: has capacity requests, but the "
              "DRAConsumableCapacity feature is disabled"),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {"capacity-1": "1"}))),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-"
    "request": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1, {"capacity-1": "1"}))),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request":
    Case(
        claims=two_claims(),
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1)),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1)),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1))]),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request":
    Case(
        claims=two_claims(),
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "1"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2, {CAPACITY0: "1"}))]),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-"
    "block": Case(
        claims=two_claims(),
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}))),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=two_claims("1"),
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "1"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "1"}))]),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=two_claims(),
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "4"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=two_claims(),
        classes=[SHAREABLE],
        slices=one_slice(with_valid_values_policy(DEVICE1, "0", {CAPACITY0: "1"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "0"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "0"}))]),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[SHAREABLE],
        slices=one_slice(with_valid_values_policy(DEVICE1, "0", {CAPACITY0: "1"}))),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request":
    Case(
        claims=two_claims("1"),
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "4"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="3"))],
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "4"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "4"}))]),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        classes=[SHAREABLE],
        slices=one_slice(with_valid_values_policy(DEVICE1, "1", {CAPACITY0: "4"}, ["2"])),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        classes=[SHAREABLE],
        slices=one_slice(with_valid_values_policy(DEVICE1, "1", {CAPACITY0: "3"}, ["3"])),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "3"}))]),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1")),
                claim(CLAIM1, request(REQ0, CLASS_A, capacity="2"))],
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"}))),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="6"))],
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "10"}))),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        consumed={ID1: {CAPACITY0: Fraction(2)}},
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "4"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        consumed={ID1: {CAPACITY0: Fraction(2)}},
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"}),
                         with_range_policy(DEVICE2, {CAPACITY0: "2"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2, {CAPACITY0: "2"}))]),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"),
                      request(REQ1, CLASS_A, capacity="2"),
                      constraints=[match_attribute(f"{DRIVER_A}/stringAttribute")]),
                claim(CLAIM1, request(REQ0, CLASS_A, capacity="2"))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       _with_attributes(with_range_policy(DEVICE2, {CAPACITY0: "2"}),
                                        stringAttribute="stringAttributeValue1"),
                       _with_attributes(with_range_policy(DEVICE1, {CAPACITY0: "4"}),
                                        stringAttribute="stringAttributeValue2"))],
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}),
                           shared_result(REQ1, POOL1, DEVICE1, {CAPACITY0: "2"})),
                allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[claim(CLAIM0, first_available(
            REQ0, sub_request(SUB0, CLASS_A, capacity="4"),
            sub_request(SUB1, CLASS_A, capacity="2"), sub_request(SUB1, CLASS_A)))],
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"})),
        expect=[allocation(LOCAL, shared_result(f"{REQ0}/{SUB1}", POOL1, DEVICE1,
                                                {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="2"))],
        consumed={ID1: {CAPACITY0: Fraction(2)}},
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"}))),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity":
    Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity="2"))],
        classes=[SHAREABLE],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2)),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "2"}))]),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"),
                      all_request(REQ1, CLASS_A, capacity="1"))],
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "2"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1, {CAPACITY0: "1"}),
                           shared_result(REQ1, POOL1, DEVICE1, {CAPACITY0: "1"}),
                           shared_result(REQ1, POOL1, DEVICE2, {CAPACITY0: "1"}))]),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"),
                      all_request(REQ1, CLASS_A, capacity="1"))],
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"}))),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient":
    Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, capacity="1"))],
        consumed={ID1: {CAPACITY0: Fraction(1)}},
        classes=[CLASS_A_OBJ],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}), shared(DEVICE2, {CAPACITY0: "1"})),
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE2, {CAPACITY0: "1"}))]),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[DEDICATED],
        slices=one_slice(device(DEVICE1, {CAPACITY0: "1"})),
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=two_claims("1"),
        classes=[DEDICATED],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"}, shared=False))),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        classes=[DEDICATED],
        slices=one_slice(shared(DEVICE1, {CAPACITY0: "1"}))),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated":
    Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, capacity="1"))],
        allocated=[ID1],
        classes=[SHAREABLE],
        slices=one_slice(with_range_policy(DEVICE1, {CAPACITY0: "2"}))),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    case.check()


# ---- the capacity math --------------------------------------------------------------

RANGE = r.DeviceCapacity(value="10Gi", request_policy=r.CapacityRequestPolicy(
    default="1Gi", valid_range=r.CapacityRequestPolicyRange(min="1Gi", max="8Gi", step="1Gi")))


@pytest.mark.parametrize(("requested", "consumed"), [
    (None, "1Gi"),          # the default
    ("512Mi", "1Gi"),       # raised to the minimum
    ("1536Mi", "2Gi"),      # rounded up to a step, written out in binary SI
    ("3Gi", "3Gi"),         # already on a step: kept as written
])
def test_a_request_is_rounded_up_by_the_range_policy(requested: str | None,
                                                     consumed: str) -> None:
    requirements = None if requested is None else r.CapacityRequirements(
        requests={"memory": requested})
    assert consumed_by_request(requirements, {"memory": RANGE})["memory"].text == consumed


@pytest.mark.parametrize(("requested", "already", "fits"), [
    ("2Gi", "0", True),
    ("2Gi", "8Gi", True),
    ("2Gi", "9Gi", False),   # 9Gi + 2Gi > 10Gi
    ("9Gi", "0", False),     # over the policy's maximum
    ("500m", "0", True),     # raised to the 1Gi minimum, which is valid
])
def test_request_fits_next_to_what_is_consumed(requested: str, already: str,
                                               fits: bool) -> None:
    from kpysched.plugins.dynamic_resources.capacity import parse_amount

    assert request_fits_capacity(
        {"memory": parse_amount(already)},
        r.CapacityRequirements(requests={"memory": requested}), {"memory": RANGE}, {}) is fits


def test_a_request_for_a_capacity_the_device_lacks_is_not_comparable() -> None:
    assert request_fits_capacity(
        {}, r.CapacityRequirements(requests={"gpus": "1"}), {"memory": RANGE}, {}) is None


def test_consumed_capacity_entries_go_when_emptied() -> None:
    collection: dict[tuple[str, str, str], dict[str, Fraction]] = {}
    insert_consumed(collection, ID1, {"memory": Fraction(2)})
    insert_consumed(collection, ID1, {"memory": Fraction(3)})
    assert collection == {ID1: {"memory": Fraction(5)}}
    remove_consumed(collection, ID1, {"memory": Fraction(2)})
    assert collection == {ID1: {"memory": Fraction(3)}}
    remove_consumed(collection, ID1, {"memory": Fraction(3)})
    assert collection == {}
