"""The DRA allocator's view of pools and nodes: multi-host pools across generations
(upstream's multi-host-resource-pool cases), node matching and its errors, and how the
plugin uses one Allocator for many nodes."""

from __future__ import annotations

import time

import pytest

from kpysched.objects import api
from kpysched.plugins.dynamic_resources.allocator import (
    AllocationTimeoutError,
    node_matches,
)
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    ALL_NODES,
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    REGION1,
    REGION2,
    REQ0,
    SLICE1,
    SLICE2,
    Case,
    FakeCel,
    all_request,
    allocation,
    claim,
    device,
    device_class,
    dump,
    local_node_selector,
    many_devices_slice,
    node,
    pool,
    request,
    result,
    simple_claim,
    slice_,
)

CLASS_A_OBJ = device_class(CLASS_A, DRIVER_A)
LOCAL = local_node_selector(NODE1)


CASES: dict[str, Case] = {
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
                slice_(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
                slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2))]),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
                slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
                slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
                slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
                slice_(SLICE1, NODE2, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
                slice_(SLICE2, NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
                slice_(SLICE2, NODE1, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
                slice_(SLICE1, NODE1, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
                slice_(SLICE2, NODE2, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1))],
        expect=[allocation(LOCAL, result(REQ0, DRIVER_A, POOL1, DEVICE1))]),
    "slice-with-unknown-node-selection-is-skipped": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, "", POOL1, DRIVER_A, device(DEVICE1))]),
    "bad-node-selector-is-an-error-for-the-claim": Case(
        claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
        classes=[CLASS_A_OBJ],
        slices=[slice_(SLICE1, api.NodeSelector(node_selector_terms=[api.NodeSelectorTerm(
            match_expressions=[api.NodeSelectorRequirement(key="region", operator="Near",
                                                           values=["x"])])]),
            POOL1, DRIVER_A, device(DEVICE1))],
        error="gather pool information: failed to perform node selection for slice slice-1: "
              "failed to parse node selector &NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm"
              "{NodeSelectorTerm{MatchExpressions:[]NodeSelectorRequirement{NodeSelector"
              "Requirement{Key:region,Operator:Near,Values:[x],},},MatchFields:[]NodeSelector"
              "Requirement{},},},}: nodeSelectorTerms[0].matchExpressions[0].operator: "
              "Unsupported value: 'Near'"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    case.check()


@pytest.mark.parametrize(("node_name", "all_nodes", "selector", "matches"), [
    (NODE1, None, None, True),
    (NODE2, None, None, False),
    (None, True, None, True),
    (None, None, local_node_selector(NODE1), True),
    (None, None, local_node_selector(NODE2), False),
    (None, None, api.NodeSelector(), False),
    (None, None, None, False),
], ids=["name", "other-name", "all", "selector", "other-selector", "no-terms", "nothing"])
def test_node_matches(node_name: str | None, all_nodes: bool | None,
                      selector: api.NodeSelector | None, matches: bool) -> None:
    assert node_matches(node(NODE1, REGION1), node_name, all_nodes, selector) is matches


def test_one_allocator_serves_many_nodes_without_carrying_state_over() -> None:
    """PreFilter builds it once; Filter asks per node. Each answer stands alone."""
    case = Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))], classes=[CLASS_A_OBJ],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 2),
                        many_devices_slice(SLICE2, NODE2, "pool-2", DRIVER_A, 1),
                        many_devices_slice("slice-3", ALL_NODES, "pool-3", DRIVER_A, 1)])
    allocator = case.allocator()
    first = dump(allocator.allocate(node(NODE1, REGION1), case.claims))
    on_node2 = allocator.allocate(node(NODE2, REGION2), case.claims)
    assert dump(on_node2) == dump([allocation(
        local_node_selector(NODE2), result(REQ0, DRIVER_A, "pool-2", "device-0"),
        result(REQ0, DRIVER_A, "pool-3", "device-0"))])
    assert dump(allocator.allocate(node(NODE1, REGION1), case.claims)) == first
    assert allocator.allocate(node("node-3", REGION1), case.claims) is None


def test_selectors_are_compiled_once_per_allocator() -> None:
    cel = FakeCel()
    case = Case(claims=[simple_claim(CLAIM0, REQ0, CLASS_A)], classes=[CLASS_A_OBJ],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 3)])
    allocator = case.allocator(cel)
    allocator.allocate(node(NODE1, REGION1), case.claims)
    allocator.allocate(node(NODE2, REGION2), case.claims)
    assert cel.compiled == [f'device.driver == "{DRIVER_A}"']


def test_a_passed_deadline_stops_the_search() -> None:
    case = Case(claims=[simple_claim(CLAIM0, REQ0, CLASS_A)], classes=[CLASS_A_OBJ],
                slices=[many_devices_slice(SLICE1, NODE1, POOL1, DRIVER_A, 1)])
    with pytest.raises(AllocationTimeoutError) as raised:
        case.allocator().allocate(case.node, case.claims, deadline=time.monotonic() - 1)
    assert isinstance(raised.value, TimeoutError)
    assert str(raised.value) == "filter operation aborted: context deadline exceeded"
