"""The DRA allocator's optional features, ported from upstream's allocatortesting table
(same case names): prioritized lists (firstAvailable), device taints, binding
conditions, partitionable devices (shared counters, per-device node selection)."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.allocator import Features
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    COUNTER_SET1,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    PER_DEVICE,
    POOL1,
    POOL2,
    REGION1,
    REQ0,
    REQ1,
    REQ2,
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
    first_available,
    local_node_selector,
    match_attribute,
    node_label_selector,
    one_device_slice,
    opaque,
    pool,
    request,
    result,
    shared_result,
    simple_claim,
    slice_,
    sub_request,
    taint,
    toleration,
)

CLASS_A_OBJ = device_class(CLASS_A, DRIVER_A)
CLASS_B_OBJ = device_class(CLASS_B, DRIVER_B)
LOCAL = local_node_selector(NODE1)
TAINT_NO_SCHEDULE = taint("NoSchedule")
TAINT_NO_EXECUTE = taint("NoExecute", "taint-value-2")
TOLERATE_NO_SCHEDULE = toleration("NoSchedule")
TOLERATE_NO_EXECUTE = toleration("NoExecute", "Equal", "taint-value-2")
R0S0, R0S1, R1S1 = f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}", f"{REQ1}/{SUB1}"


def memory_at_least(quantity: str) -> r.DeviceSelector:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{quantity}")) >= 0')


def kind_is(kind: str) -> r.DeviceSelector:
    return cel(f'device.attributes["{DRIVER_A}"].kind == "{kind}"')


def memory_device(name: str, memory: str, **fields: Any) -> r.Device:
    return device(name, {"memory": memory}, **fields)


def counted(name: str, memory: str, **fields: Any) -> r.Device:
    """A partition consuming `memory` of counter-set-1 (capacity "from counters")."""
    return device(name, {"memory": memory},
                  consumes_counters=[counters(COUNTER_SET1, memory=memory)], **fields)


def counter_slice(name: str, where: str, pool_: str | r.ResourcePool,
                  **values: str) -> r.ResourceSlice:
    return slice_(name, where, pool_, DRIVER_A,
                  shared_counters=[counter_set(COUNTER_SET1, **values)])


def one_counter(name: str, **fields: Any) -> r.Device:
    return device(name, consumes_counters=[counters(COUNTER_SET1, c="1")], **fields)


CASES: dict[str, Case] = {
    # ---- prioritized list -------------------------------------------------------------
    "prioritized-list-first-unavailable": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_B),
                                              sub_request(SUB1, CLASS_A)))],
        classes=[CLASS_A_OBJ, CLASS_B_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    "prioritized-list-non-available": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_B, 2),
                                              sub_request(SUB1, CLASS_A, 2)))],
        classes=[CLASS_A_OBJ, CLASS_B_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)]),
    "prioritized-list-device-config": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A),
                                              sub_request(SUB1, CLASS_B, 2)), config=[
            r.DeviceClaimConfiguration(requests=[R0S0], opaque=opaque(DRIVER_A, "foo")),
            r.DeviceClaimConfiguration(requests=[R0S1], opaque=opaque(DRIVER_B, "bar"))])],
        classes=[CLASS_A_OBJ, CLASS_B_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_B, POOL1, DEVICE1),
                           result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[config("FromClaim", [R0S1], DRIVER_B, "bar")])]),
    "prioritized-list-class-config": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A, 2),
                                              sub_request(SUB1, CLASS_B, 2)))],
        classes=[device_class(CLASS_A, DRIVER_A, config="foo"),
                 device_class(CLASS_B, DRIVER_B, config="bar")],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2)),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_B, POOL1, DEVICE1),
                           result(R0S1, DRIVER_B, POOL1, DEVICE2),
                           config=[config("FromClass", [R0S1], DRIVER_B, "bar")])]),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory_at_least("8Gi")),
                      first_available(REQ1, sub_request(SUB0, CLASS_A, 1, memory_at_least("2Gi")),
                                      sub_request(SUB1, CLASS_A, 1, memory_at_least("1Gi"))),
                      constraints=[match_attribute(f"{DRIVER_A}/driverVersion", REQ0, REQ1)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       memory_device(DEVICE1, "8Gi", attributes=attrs(driverVersion="1.0.0"))),
                slice_(SLICE2, NODE1, POOL2, DRIVER_A,
                       memory_device(DEVICE2, "2Gi", attributes=attrs(driverVersion="2.0.0")),
                       memory_device(DEVICE3, "1Gi", attributes=attrs(driverVersion="1.0.0")))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(R1S1, DRIVER_A, POOL2, DEVICE3))]),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory_at_least("8Gi")),
                      first_available(REQ1, sub_request(SUB0, CLASS_A, 1, memory_at_least("2Gi")),
                                      sub_request(SUB1, CLASS_A, 1, memory_at_least("1Gi"))),
                      constraints=[match_attribute(f"{DRIVER_A}/driverVersion", REQ0,
                                                   f"{REQ1}/{SUB0}")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       memory_device(DEVICE1, "8Gi", attributes=attrs(driverVersion="1.0.0"))),
                slice_(SLICE2, NODE1, POOL2, DRIVER_A,
                       memory_device(DEVICE2, "2Gi", attributes=attrs(driverVersion="2.0.0")))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(R1S1, DRIVER_A, POOL2, DEVICE2))]),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), first_available(
            REQ1, sub_request(SUB0, CLASS_A, mode=r.ALLOCATION_MODE_ALL),
            sub_request(SUB1, CLASS_A)))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(R1S1, DRIVER_A, POOL1, DEVICE2))]),
    "prioritized-list-disabled": Case(
        features=Features(prioritized_list=False),
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_A)))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
              "feature is disabled"),
    "prioritized-list-multi-request": Case(
        claims=[claim(CLAIM0, request(REQ1, CLASS_A, 1, memory_at_least("8Gi")),
                      first_available(REQ0, sub_request(SUB0, CLASS_A, 1, memory_at_least("8Gi")),
                                      sub_request(SUB1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, memory_device(DEVICE1, "8Gi")),
                slice_(SLICE2, NODE1, POOL2, DRIVER_A, memory_device(DEVICE2, "4Gi"))],
        expect=[allocation(LOCAL, result(REQ1, DRIVER_A, POOL1, DEVICE1),
                           result(R0S1, DRIVER_A, POOL2, DEVICE2))]),
    "prioritized-list-with-backtracking": Case(
        claims=[claim(CLAIM0,
                      first_available(REQ0, sub_request(SUB0, CLASS_A, 1, memory_at_least("8Gi")),
                                      sub_request(SUB1, CLASS_A, 1, memory_at_least("4Gi"))),
                      request(REQ1, CLASS_A, 1, memory_at_least("8Gi")))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, memory_device(DEVICE1, "8Gi")),
                slice_(SLICE2, NODE1, POOL2, DRIVER_A, memory_device(DEVICE2, "4Gi"))],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_A, POOL2, DEVICE2),
                           result(REQ1, DRIVER_A, POOL1, DEVICE1))]),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[claim(CLAIM0, first_available(REQ0, sub_request(SUB0, CLASS_B, 500),
                                              sub_request(SUB1, CLASS_A)))],
        classes=[CLASS_A_OBJ, CLASS_B_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    # ---- device taints ----------------------------------------------------------------
    "tainted-two-devices": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                       device(DEVICE2, taints=[TAINT_NO_EXECUTE]))]),
    "tainted-two-devices-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATE_NO_EXECUTE]))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                       device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2,
                                         tolerations=[TOLERATE_NO_EXECUTE]))]),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        claims=[claim(CLAIM0, first_available(
            REQ0, sub_request(SUB0, CLASS_A),
            sub_request(SUB1, CLASS_A, tolerations=[TOLERATE_NO_EXECUTE])))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                       device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_A, POOL1, DEVICE2,
                                         tolerations=[TOLERATE_NO_EXECUTE]))]),
    "tainted-no-effect": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[taint("None")]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "tainted-one-device-two-taints-both-tolerated": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, tolerations=[TOLERATE_NO_SCHEDULE,
                                                                   TOLERATE_NO_EXECUTE]))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[
            TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))]),
    "tainted-disabled": Case(
        features=Features(device_taints=False),
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "tainted-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))]),
    "tainted-all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))]),
    # ---- binding conditions -----------------------------------------------------------
    "device-binding-conditions": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(
            DEVICE1, binding_conditions=["IsPrepare"],
            binding_failure_conditions=["BindingFailed"]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1,
                                         binding_conditions=["IsPrepare"],
                                         binding_failure_conditions=["BindingFailed"]))]),
    "binding-conditions-with-and-without": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(
            DEVICE2, binding_conditions=["IsPrepare"],
            binding_failure_conditions=["BindingFailed"]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2,
                                  binding_conditions=["IsPrepare"],
                                  binding_failure_conditions=["BindingFailed"]))]),
    "binding-conditions-pool-tried-last": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, binding_conditions=["IsPrepare"])),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "binding-conditions-without-feature-gate": Case(
        features=Features(device_binding_and_status=False),
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(
            DEVICE1, binding_conditions=["IsPrepare"],
            binding_failure_conditions=["BindingFailed"]))]),
    "node-restriction": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, node_label_selector("planet", "earth"), POOL1, DRIVER_A,
                       device(DEVICE1, binds_to_node=True))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    # ---- partitionable devices --------------------------------------------------------
    "partitionable-devices-single-device": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counted(DEVICE1, "4Gi")),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), memory="8Gi")],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "partitionable-devices-taint-releases-counter": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                       one_counter(DEVICE1, taints=[TAINT_NO_SCHEDULE]), one_counter(DEVICE2)),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), c="1")],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2))]),
    "partitionable-devices-constraint-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(f"{DRIVER_A}/stringAttribute")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                       one_counter(DEVICE1, attributes=attrs(stringAttribute="red")),
                       one_counter(DEVICE2, attributes=attrs(stringAttribute="blue")),
                       one_counter(DEVICE3, attributes=attrs(stringAttribute="blue"))),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), c="2")],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2),
                           result(REQ0, DRIVER_A, POOL1, DEVICE3))]),
    "partitionable-consumable-capacity-backtrack-releases-counter": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, kind_is("shared")),
                      request(REQ1, CLASS_A, 1, kind_is("counteronly")))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                       one_counter(DEVICE1, attributes=attrs(kind="shared"),
                                   allow_multiple_allocations=True),
                       device(DEVICE2, attributes=attrs(kind="shared")),
                       one_counter(DEVICE3, attributes=attrs(kind="counteronly"))),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), c="1")],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2),
                           result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "partitionable-empty-capacity-multiple-share-backtrack-keeps-counter-ownership": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, kind_is("shared"))),
                claim(CLAIM1,
                      request(REQ1, CLASS_A, 1, cel(
                          f'device.attributes["{DRIVER_A}"].kind == "shared" || '
                          f'device.attributes["{DRIVER_A}"].kind == "fallback"')),
                      request(REQ2, CLASS_A, 1, kind_is("gate")),
                      request("req-3", CLASS_A, 1, kind_is("shared")),
                      constraints=[match_attribute(f"{DRIVER_A}/stringAttribute", REQ1, REQ2)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A,
                       one_counter(DEVICE1, attributes=attrs(kind="shared", stringAttribute="red"),
                                   allow_multiple_allocations=True),
                       device(DEVICE2, attributes=attrs(kind="fallback", stringAttribute="blue")),
                       device(DEVICE3, attributes=attrs(kind="gate", stringAttribute="blue"))),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), c="1")],
        expect=[allocation(LOCAL, shared_result(REQ0, POOL1, DEVICE1)),
                allocation(LOCAL, result(REQ1, DRIVER_A, POOL1, DEVICE2),
                           result(REQ2, DRIVER_A, POOL1, DEVICE3),
                           shared_result("req-3", POOL1, DEVICE1))]),
    "partitionable-devices-multiple-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counted(DEVICE1, "4Gi"),
                       counted(DEVICE2, "6Gi"), counted(DEVICE3, "4Gi")),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), memory="8Gi")],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "partitionable-devices-no-capacity-available": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counted(DEVICE1, "4Gi"),
                       counted(DEVICE2, "16Gi")),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), memory="18Gi")]),
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        allocated=[(DRIVER_A, POOL1, DEVICE2)],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counted(DEVICE1, "4Gi"),
                       counted(DEVICE2, "20Gi")),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), memory="18Gi")]),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        features=Features(partitionable_devices=False),
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, counted(DEVICE1, "4Gi"))]),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        features=Features(partitionable_devices=False),
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, PER_DEVICE, POOL1, DRIVER_A, device(DEVICE1, node_name=NODE1))]),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[claim(CLAIM0, first_available(
            REQ0, sub_request(SUB0, CLASS_A, 1, memory_at_least("6Gi")),
            sub_request(SUB1, CLASS_A, 1, memory_at_least("4Gi"))))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A,
                       counted(DEVICE1, "4Gi", node_name=NODE1),
                       counted(DEVICE2, "6Gi", node_name=NODE2)),
                counter_slice(SLICE2, PER_DEVICE, pool(POOL1, 2), memory="18Gi")],
        expect=[allocation(LOCAL, result(R0S1, DRIVER_A, POOL1, DEVICE1))]),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, PER_DEVICE, pool(POOL1, 2), DRIVER_A, counted(
                    DEVICE1, "4Gi", node_selector=node_label_selector("region", REGION1))),
                counter_slice(SLICE2, PER_DEVICE, pool(POOL1, 2), memory="18Gi")],
        expect=[allocation(node_label_selector("region", REGION1),
                           result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, counted(DEVICE1, "4Gi")),
                counter_slice(SLICE2, NODE1, pool(POOL1, 3), memory="8Gi"),
                counter_slice("slice-3", NODE1, pool(POOL1, 3), memory="8Gi")],
        error="invalid resource pools were encountered", error_on_node=True),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(
                    DEVICE1, consumes_counters=[counters("unknown", memory="4Gi")])),
                counter_slice(SLICE2, NODE1, pool(POOL1, 2), memory="8Gi")],
        error="invalid resource pools were encountered", error_on_node=True),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        allocated=[(DRIVER_A, POOL1, DEVICE3)],
        slices=[counter_slice(SLICE1, NODE1, pool(POOL1, 3), memory="8Gi"),
                slice_(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, counted(DEVICE1, "6Gi"),
                       counted(DEVICE2, "2Gi")),
                slice_("slice-3", NODE2, pool(POOL1, 3), DRIVER_A, device(
                    DEVICE3, consumes_counters=[counters(COUNTER_SET1, memory="6Gi")]))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2))]),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[counter_slice(SLICE1, NODE1, pool(POOL1, 3), memory="8Gi"),
                slice_(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, counted(DEVICE1, "6Gi")),
                slice_("slice-3", NODE2, pool(POOL1, 3), DRIVER_A, device(
                    DEVICE3, consumes_counters=[counters("counter-set-2", memory="6Gi")]))],
        error="invalid resource pools were encountered", error_on_node=True),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    case.check()
