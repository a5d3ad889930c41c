"""NodeResourcesFit and BalancedAllocation scoring DRA-backed extended resources named
in their resources (issue 33 item 11; upstream's TestFitScore DRA cases and
resource_allocation.go's calculateDRAResourceTotals): a node without the resource in
its allocatable offers the devices of the backing DeviceClass on it, minus those
claims hold."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.objects import api
from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources.tracker import tracker_for
from kpysched.plugins.node_resources import balanced_allocation as balanced
from kpysched.plugins.node_resources import dra_scoring, fit
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    ALL_NODES,
    PER_DEVICE,
    allocation,
    attrs,
    cel,
    claim,
    device,
    node_label_selector,
    result,
    slice_,
)
from tests.unit.plugins.runner import run_scores

GPU = "extended.resource.dra.io/something"
DRIVER = "test-driver"


def gpu_class(*selectors: r.DeviceSelector, name: str = "gpus") -> r.DeviceClass:
    return r.DeviceClass(metadata=api.ObjectMeta(name=name),
                         spec=r.DeviceClassSpec(extended_resource_name=GPU,
                                                selectors=list(selectors)))


def devices(node: str, count: int, driver: str = DRIVER) -> r.ResourceSlice:
    return slice_(f"{node}-{driver}", node, node, driver,
                  *(device(f"device-{i}") for i in range(1, count + 1)))


def held(name: str, node: str, *device_names: str) -> r.ResourceClaim:
    allocated = claim(name)
    return msgspec.structs.replace(allocated, metadata=msgspec.structs.replace(
        allocated.metadata, namespace="default", uid=f"uid-{name}"),
        status=r.ResourceClaimStatus(allocation=allocation(None, *(
            result("req", DRIVER, node, device_name) for device_name in device_names))))


def shared(name: str, node: str, device_name: str) -> r.ResourceClaim:
    """A claim holding a share of a device (consumable capacity)."""
    share = result("req", DRIVER, node, device_name,
                   share_id="3f7c9d0e-0000-4000-8000-000000000001")
    return msgspec.structs.replace(held(name, node), status=r.ResourceClaimStatus(
        allocation=allocation(None, share)))


def handle_with(*objects: Any) -> FakeHandle:
    handle = FakeHandle()
    listers = handle.resource_listers
    for obj in objects:
        if isinstance(obj, r.DeviceClass):
            listers.device_classes.on_add(obj)
        elif isinstance(obj, r.ResourceSlice):
            listers.resource_slices.on_add(obj)
        else:
            listers.resource_claims.on_add(obj)
    return handle


def nodes(*names: str, labels: dict[str, str] | None = None) -> list[NodeInfo]:
    built = []
    for name in names:
        node = make_node(name).capacity(cpu="4", memory="8Gi", pods=110)
        for key, value in (labels or {}).items():
            node = node.label(key, value)
        built.append(node.info())
    return built


def fit_plugin(handle: FakeHandle, *names: str, strategy: str = "LeastAllocated") -> Any:
    args = fit.NodeResourcesFitArgs.model_validate({"scoringStrategy": {
        "type": strategy, "resources": [{"name": name, "weight": 1} for name in names]}})
    return fit.new(args, handle)  # type: ignore[arg-type]


GPU_POD = make_pod("p").req({GPU: "1"}).info()


@pytest.mark.parametrize("pre_score", [True, False], ids=["after-pre-score", "without-it"])
def test_upstreams_least_allocated_case(pre_score: bool) -> None:
    """TestFitScore "LeastAllocated with Extended resources": 3 devices -> 66, 2 -> 50."""
    handle = handle_with(gpu_class(), devices("node1", 3), devices("node2", 2))
    scores = run_scores(fit_plugin(handle, GPU), GPU_POD, nodes("node1", "node2"),
                        pre_score=pre_score)
    assert scores == [66, 50]


@pytest.mark.parametrize(("objects", "expected"), [
    # Devices claims hold count as allocated: 1 of 3 held, the pod's makes 2 -> 33.
    ((devices("node1", 3), held("c1", "node1", "device-1")), 33),
    # A share of a device (consumable capacity) makes it allocated too.
    ((devices("node1", 3), shared("c1", "node1", "device-2")), 33),
    # Only the devices the class's selectors pick: one of the two drivers' slices.
    ((devices("node1", 3), devices("node1", 4, driver="other")), 66),
    # A slice for all nodes counts on every node.
    ((slice_("shared", ALL_NODES, "shared", DRIVER, device("a"), device("b")),), 50),
    # A slice whose node selector does not match this node counts nothing: left out.
    ((slice_("elsewhere", node_label_selector("zone", "b"), "p", DRIVER, device("a")),), 0),
    # Per-device node selection: only this node's devices.
    ((slice_("mixed", PER_DEVICE, "p", DRIVER, device("a", node_name="node1"),
             device("b", node_name="node2"), device("c", all_nodes=True),
             device("d", node_selector=node_label_selector("zone", "a"))),), 66),
], ids=["allocated", "shared-allocation", "class-selector", "all-nodes", "not-here",
        "per-device"])
def test_devices_counted_on_the_node(objects: tuple[Any, ...], expected: int) -> None:
    selected = gpu_class(cel(f'device.driver == "{DRIVER}"'))
    handle = handle_with(selected, *objects)
    node = nodes("node1", labels={"zone": "a"})
    assert run_scores(fit_plugin(handle, GPU), GPU_POD, node) == [expected]


def test_a_node_advertising_the_resource_is_scored_on_its_allocatable() -> None:
    handle = handle_with(gpu_class(), devices("node1", 3))
    node = make_node("node1").capacity({GPU: "4"}, cpu="4", memory="8Gi", pods=110).info()
    assert run_scores(fit_plugin(handle, GPU), GPU_POD, [node]) == [75]  # (4-1)/4


def test_without_a_backing_class_the_resource_is_left_out() -> None:
    handle = handle_with(devices("node1", 3))
    assert run_scores(fit_plugin(handle, GPU), GPU_POD, nodes("node1")) == [0]


def test_a_selector_that_fails_leaves_the_node_without_the_resource() -> None:
    broken = gpu_class(cel('device.attributes["test-driver"].missing == 1'))
    handle = handle_with(broken, slice_("s", "node1", "node1", DRIVER,
                                        device("d", attributes=attrs(model="a"))))
    assert run_scores(fit_plugin(handle, GPU), GPU_POD, nodes("node1")) == [0]


def test_most_allocated_counts_the_pods_devices() -> None:
    handle = handle_with(gpu_class(), devices("node1", 4), held("c1", "node1", "device-1"))
    scores = run_scores(fit_plugin(handle, GPU, strategy="MostAllocated"), GPU_POD,
                        nodes("node1"))
    assert scores == [50]  # 2 of 4


def test_balanced_allocation_scores_devices_beside_cpu() -> None:
    """cpu 2 of 4 and devices 1 of 4 with the pod (std 0.125 -> 87), nothing without it
    (100): 50 + (50 + 87 - 100) / 2 = 68. With no class backing the name only cpu is
    scored: one resource, 100 both ways, 75."""
    resources = {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]}
    pod = make_pod("p").req({GPU: "1"}, cpu="2").info()
    with_devices = balanced.new(balanced.NodeResourcesBalancedAllocationArgs.model_validate(
        resources), handle_with(gpu_class(), devices("node1", 4)))  # type: ignore[arg-type]
    assert run_scores(with_devices, pod, nodes("node1")) == [68]
    without = balanced.new(balanced.NodeResourcesBalancedAllocationArgs.model_validate(
        resources), handle_with(devices("node1", 4)))  # type: ignore[arg-type]
    assert run_scores(without, pod, nodes("node1")) == [75]


def test_no_counting_without_a_scored_extended_resource() -> None:
    """Default resources (cpu, memory): nothing to follow, no claim tracking."""
    assert dra_scoring.dra_extended_resources(FakeHandle(), ["cpu", "memory"]) is None  # type: ignore[arg-type]


def test_allocations_in_flight_count_as_upstreams_shared_dra_manager_does() -> None:
    """A device DynamicResources gave a claim in Reserve, not yet written by PreBind, is
    allocated for scoring too: both read one tracker of the claims."""
    handle = handle_with(gpu_class(), devices("node1", 3))
    # DynamicResources builds its tracker so, before the scoring plugins in the profile.
    dynamic_resources = tracker_for(handle.resource_listers.resource_claims)
    dynamic_resources.signal_pending_allocation(held("pending", "node1", "device-1"))
    plugin = fit_plugin(handle, GPU)
    assert run_scores(plugin, GPU_POD, nodes("node1")) == [33]  # 2 of 3 with the pod's
