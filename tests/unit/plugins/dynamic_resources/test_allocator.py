"""The DRA allocator: cases ported from upstream's allocatortesting table (same names),
covering counts, All, several claims, classes, selectors, constraints, admin access,
node selection and pool states."""

from __future__ import annotations

import pytest

from kpysched.objects import api
from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.allocator import Features
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    ALL_NODES,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    POOL3,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    SHARE_ID,
    SLICE1,
    SLICE2,
    Case,
    all_request,
    allocation,
    attrs,
    cel,
    claim,
    config,
    device,
    device_class,
    distinct_attribute,
    local_node_selector,
    many_devices_slice,
    match_attribute,
    node,
    node_label_selector,
    one_device_slice,
    pool,
    request,
    result,
    simple_claim,
    slice_,
)

CLASS_A_OBJ = device_class(CLASS_A, DRIVER_A)
LOCAL = local_node_selector(NODE1)
NUMA = f"{DRIVER_A}/numa"
NUMA_ATTRS = (
    device(DEVICE1, attributes=attrs(numa=1)),
    device(DEVICE2, attributes=attrs(numa=2)),
)


def memory_at_least(quantity: str) -> r.DeviceSelector:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{quantity}")) >= 0')


def _with_count_pool(resource_slice: r.ResourceSlice, count: int,
                     generation: int = 1) -> r.ResourceSlice:
    resource_slice.spec.pool = pool(resource_slice.spec.pool.name, count, generation)
    return resource_slice


CASES: dict[str, Case] = {
    "empty": Case(claims=[], expect=[]),
    "simple": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "other-node": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_B),
                one_device_slice(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        expect=[allocation(local_node_selector(NODE2),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "small-and-large": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory_at_least("1Gi")),
                      request(REQ1, CLASS_A, 1, memory_at_least("2Gi")))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "1Gi"}),
                       device(DEVICE2, {"memory": "2Gi"}))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory_at_least("1Gi")),
                      request(REQ1, CLASS_A, 1, memory_at_least("2Gi")))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, {"memory": "2Gi"}),
                       device(DEVICE1, {"memory": "1Gi"}))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "small-and-large-backtrack-claims": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory_at_least("1Gi"))),
                claim(CLAIM1, request(REQ1, CLASS_A, 1, memory_at_least("2Gi")))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE2, {"memory": "2Gi"}),
                       device(DEVICE1, {"memory": "1Gi"}))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL, result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "obsolete-slice": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_("slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_("slice-1-obsolete", NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2))],
        expect=None),
    "duplicate-slice": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A),
                one_device_slice(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A)],
        error="invalid resource pools were encountered", error_on_node=True),
    "no-slices": Case(claims=[simple_claim(CLAIM0, REQ0, CLASS_A)], classes=[CLASS_A_OBJ]),
    "not-enough-suitable-devices": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A), simple_claim(CLAIM0, REQ1, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "no-classes": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error='claim claim-0, request req-0: could not retrieve device class class-a: '
              'deviceclass.resource.k8s.io "class-a" not found'),
    "empty-class": Case(
        claims=[simple_claim(CLAIM0, REQ0, "")],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name "
              "(unsupported request type?)"),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
                one_device_slice(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A)],
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
              "driver-a/pool-1 is currently being updated"),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))]),
    "all-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, admin_access=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, True),
                           result(REQ0, DRIVER_A, POOL1, DEVICE2, True))]),
    "all-devices-some-allocating-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True),
                      all_request(REQ1, CLASS_A, admin_access=True))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))]),
    "separate-claims-share-device-admin-access": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True)),
                claim(CLAIM1, request(REQ0, CLASS_A, admin_access=True))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, True)),
                allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A),
                claim(CLAIM1, request(REQ0, CLASS_A, admin_access=True))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "admin-access-disabled": Case(
        features=Features(admin_access=False),
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: admin access is requested, but the feature is "
              "disabled"),
    "admin-access-enabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, admin_access=True))],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1, True))]),
    "network-attached-device": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, node_label_selector("region", REGION1), POOL1,
                                 DRIVER_A)],
        expect=[allocation(node_label_selector("region", REGION1),
                           result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, node_label_selector("region", REGION1), POOL1,
                                 DRIVER_A)],
        node=node(NODE2, REGION2)),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, node_label_selector("region", REGION1), POOL1,
                                 DRIVER_A),
                one_device_slice(SLICE1, ALL_NODES, POOL2, DRIVER_A),
                one_device_slice(SLICE1, node_label_selector("planet", "earth"), POOL3,
                                 DRIVER_A),
                one_device_slice(SLICE1, local_node_selector(NODE1), "pool-4", DRIVER_A)],
        expect=[allocation(
            api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(
                match_expressions=[
                    api.NodeSelectorRequirement(key="region", operator="In", values=[REGION1]),
                    api.NodeSelectorRequirement(key="planet", operator="In", values=["earth"])],
                match_fields=[api.NodeSelectorRequirement(key="metadata.name", operator="In",
                                                          values=[NODE1])])]),
            result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1),
            result(REQ0, DRIVER_A, POOL3, DEVICE1), result(REQ0, DRIVER_A, "pool-4", DEVICE1))]),
    "all-nodes-device-has-no-node-selector": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, ALL_NODES, POOL1, DRIVER_A)],
        expect=[allocation(None, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, node_label_selector("region", REGION1), POOL1,
                                 DRIVER_A),
                one_device_slice(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "several-different-drivers": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A), simple_claim(CLAIM0, REQ0, CLASS_B)],
        classes=[CLASS_A_OBJ, device_class(CLASS_B, DRIVER_B)],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
                one_device_slice(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1)),
                allocation(LOCAL, result(REQ0, DRIVER_B, POOL1, DEVICE1))]),
    "already-allocated-devices": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        allocated=[(DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "with-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), constraints=[
            match_attribute(NUMA), match_attribute(f"{DRIVER_A}/driverVersion"),
            match_attribute(f"{DRIVER_A}/stringAttribute"),
            match_attribute(f"{DRIVER_A}/boolAttribute")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, *(
            device(name, attributes=attrs(driverVersion="1.0.0", numa=1,
                                          stringAttribute="stringAttributeValue",
                                          boolAttribute=True))
            for name in (DEVICE1, DEVICE2)))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-non-existent-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A),
                      constraints=[match_attribute(f"{DRIVER_A}/NonExistentAttribute")])],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match_attribute(NUMA)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, *NUMA_ATTRS)]),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=[match_attribute(NUMA)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, *NUMA_ATTRS)],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
              "because a claim constraint would not be satisfied"),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2),
                      constraints=[match_attribute(f"{DRIVER_A}/s")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, attributes=attrs(s="a")),
                       device(DEVICE2, attributes=attrs(s="b")))]),
    "with-constraint-for-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
                      constraints=[match_attribute(NUMA, REQ0)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, *NUMA_ATTRS)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ1, DRIVER_A, POOL1, DEVICE2))]),
    "with-constraint-for-request-retry": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A), constraints=[
            match_attribute(f"{DRIVER_A}/driverVersion", REQ0),
            match_attribute(f"{DRIVER_A}/stringAttribute")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, attributes=attrs(driverVersion="1.0.0",
                                                        stringAttribute="a")),
                       device(DEVICE2, attributes=attrs(driverVersion="2.0.0",
                                                        stringAttribute="b")),
                       device(DEVICE3, attributes=attrs(driverVersion="3.0.0",
                                                        stringAttribute="b")))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2),
                           result(REQ1, DRIVER_A, POOL1, DEVICE3))]),
    "with-distinct-constraints": Case(
        claims=[claim(CLAIM0, *(request(name, CLASS_A) for name in (REQ0, REQ1, REQ2, "req-3")),
                      constraints=[
                          distinct_attribute(f"{DRIVER_A}/boolAttribute", REQ0, REQ1),
                          distinct_attribute(f"{DRIVER_A}/driverVersion", REQ0, REQ1, REQ2),
                          distinct_attribute(NUMA, REQ0, REQ1, REQ2, "req-3")])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, *(
            device(name, attributes=attrs(driverVersion=version, numa=numa, boolAttribute=flag),
                   allow_multiple_allocations=True)
            for name, version, numa, flag in (
                (DEVICE1, "1.0.0", 0, True), (DEVICE2, "1.0.1", 1, False),
                (DEVICE3, "1.0.2", 2, True), ("device-4", "1.0.0", 3, True))))],
        expect=[allocation(LOCAL, *(
            result(name, DRIVER_A, POOL1, device_name, share_id=SHARE_ID)
            for name, device_name in ((REQ0, DEVICE1), (REQ1, DEVICE2), (REQ2, DEVICE3),
                                      ("req-3", "device-4"))))]),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A),
                      constraints=[distinct_attribute(f"{DRIVER_A}/boolAttribute", REQ0)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device(DEVICE1, allow_multiple_allocations=True))]),
    "with-class-device-config": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute")],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            config("FromClass", [REQ0], DRIVER_A, "classAttribute")])]),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), request(REQ1, CLASS_A),
                      request("req-2", CLASS_B))],
        classes=[device_class(CLASS_A, DRIVER_A, config="classAttribute"),
                 device_class(CLASS_B, DRIVER_B, config="classAttributeB")],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        expect=[allocation(
            LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2),
            result("req-2", DRIVER_B, POOL2, DEVICE1),
            config=[config("FromClass", [REQ0, REQ1], DRIVER_A, "classAttribute"),
                    config("FromClass", ["req-2"], DRIVER_B, "classAttributeB")])]),
    "claim-with-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), config=[r.DeviceClaimConfiguration(
            opaque=config("", [], DRIVER_A, "deviceAttribute").opaque)])],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[
            config("FromClaim", [], DRIVER_A, "deviceAttribute")])]),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, r.DeviceSelector()))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0, selector #0: CEL expression empty "
              "(unsupported selector type?)"),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, mode="other"))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: unsupported count mode other"),
    "unknown-constraint": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A), constraints=[r.DeviceConstraint()])],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, constraint #0: empty constraint (unsupported constraint type?)"),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, cel("noSuchVar")))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0: selector #0: CEL compile error: ERROR: <input>:1:1: Syntax "
              "error: noSuchVar"),
    "invalid-CEL-one-device-class": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A, expression="noSuchVar")],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="class class-a: selector #0: CEL compile error: ERROR: <input>:1:1: Syntax "
              "error: noSuchVar"),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, cel("runtime error")))],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0: selector #0: CEL runtime error: runtime failure"),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))],
        classes=[CLASS_A_OBJ],
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32"),
    "many-devices-okay": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 32))],
        classes=[CLASS_A_OBJ],
        slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 32)],
        expect=[allocation(LOCAL, *(result(REQ0, DRIVER_A, POOL1, f"device-{i}")
                                    for i in range(32)))]),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 16), request(REQ1, CLASS_A, 17))],
        classes=[CLASS_A_OBJ],
        error="claim claim-0: number of requested devices 33 exceeds the claim limit of 32"),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE2, pool(POOL1, 2), DRIVER_A),
                slice_(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE2))]),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE1)),
                one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL2, DEVICE1))]),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE1))],
        error="invalid resource pools were encountered", error_on_node=True),
    "no-allocation-from-incomplete-pools": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A)]),
    "multi-host-pool-newer-generation-elsewhere-hides-pool": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[one_device_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A),
                one_device_slice(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A)]),
    "check-combinations-with-backtracking": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match_attribute(NUMA)])],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A,
                       device("device-0", attributes=attrs(numa=1)),
                       device(DEVICE1, attributes=attrs(numa=2)),
                       device(DEVICE2, attributes=attrs(numa=3)),
                       device("device-3", attributes=attrs(numa=2)))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1),
                           result(REQ0, DRIVER_A, POOL1, "device-3"))]),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    case.check()
