"""NodeResourcesFit, with upstream's fit_test.go / *_allocated_test.go tables."""

from __future__ import annotations

import random

import numpy as np
import pydantic
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins.node_resources import fit
from kpysched.plugins.node_resources.fit import NodeResourcesFit, NodeResourcesFitArgs
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod, make_snapshot
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter, run_scores

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def plugin(**args: object) -> NodeResourcesFit:
    return fit.new(NodeResourcesFitArgs.model_validate(args), FakeHandle())


def res(cpu_m: int = 0, memory: int = 0, storage: int = 0, **scalar: int) -> dict[str, str]:
    """A request list as upstream's newResourcePod builds it (all fields, zeros included)."""
    requests = {"cpu": f"{cpu_m}m", "memory": str(memory), "pods": "0",
                "ephemeral-storage": str(storage)}
    requests.update({name: str(amount) for name, amount in scalar.items()})
    return requests


def resource_pod(*containers: dict[str, str], init: tuple[dict[str, str], ...] = ()
                 ) -> PodBuilder:
    pod = make_pod()
    for requests in containers:
        pod.req(requests)
    for requests in init:
        pod.init_req(requests)
    return pod


def fit_node(*existing: PodBuilder, pods: int = 32) -> NodeInfo:
    """Upstream's test node: 10m cpu, 20 memory, 20 storage, 5 of example.com/aaa and hugepages."""
    node = make_node("node").capacity({
        "cpu": "10m", "memory": "20", "pods": str(pods), EXT_A: "5",
        "ephemeral-storage": "20", HUGE_A: "5"})
    return node.info(*existing)


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


U, R = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

ENOUGH_REQUESTS = [
    pytest.param(make_pod(), fit_node(resource_pod(res(10, 20))), {}, None, [],
                 id="no resources requested always fits"),
    pytest.param(resource_pod(res(1, 1)), fit_node(resource_pod(res(10, 20))), {}, U,
                 [insufficient("cpu"), insufficient("memory")], id="too many resources fails"),
    pytest.param(resource_pod(res(1, 1), init=(res(3, 1),)), fit_node(resource_pod(res(8, 19))),
                 {}, U, [insufficient("cpu")], id="fails due to init container cpu"),
    pytest.param(resource_pod(res(1, 1), init=(res(3, 1), res(2, 1))),
                 fit_node(resource_pod(res(8, 19))), {}, U, [insufficient("cpu")],
                 id="fails due to highest init container cpu"),
    pytest.param(resource_pod(res(1, 1), init=(res(1, 3),)), fit_node(resource_pod(res(9, 19))),
                 {}, U, [insufficient("memory")], id="fails due to init container memory"),
    pytest.param(resource_pod(res(1, 1), init=(res(1, 1),)), fit_node(resource_pod(res(9, 19))),
                 {}, None, [], id="init container fits: max, not sum"),
    pytest.param(resource_pod(res(1, 1), init=(res(1, 1), res(1, 1))),
                 fit_node(resource_pod(res(9, 19))), {}, None, [],
                 id="multiple init containers fit: max, not sum"),
    pytest.param(resource_pod(res(1, 1)), fit_node(resource_pod(res(5, 5))), {}, None, [],
                 id="both resources fit"),
    pytest.param(resource_pod(res(2, 1)), fit_node(resource_pod(res(9, 5))), {}, U,
                 [insufficient("cpu")], id="one resource memory fits"),
    pytest.param(resource_pod(res(1, 2)), fit_node(resource_pod(res(5, 19))), {}, U,
                 [insufficient("memory")], id="one resource cpu fits"),
    pytest.param(resource_pod(res(5, 1)), fit_node(resource_pod(res(5, 19))), {}, None, [],
                 id="equal edge case"),
    pytest.param(resource_pod(res(4, 1), init=(res(5, 1),)), fit_node(resource_pod(res(5, 19))),
                 {}, None, [], id="equal edge case for init container"),
    pytest.param(resource_pod(res(**{EXT_A: 1})), fit_node(resource_pod(res())), {}, None, [],
                 id="extended resource fits"),
    pytest.param(resource_pod(res(), init=(res(**{EXT_A: 1}),)), fit_node(resource_pod(res())),
                 {}, None, [], id="extended resource fits for init container"),
    pytest.param(resource_pod(res(1, 1, **{EXT_A: 10})), fit_node(resource_pod(res(**{EXT_A: 0}))),
                 {}, R, [insufficient(EXT_A)], id="extended resource capacity enforced"),
    pytest.param(resource_pod(res(), init=(res(1, 1, **{EXT_A: 10}),)),
                 fit_node(resource_pod(res(**{EXT_A: 0}))), {}, R, [insufficient(EXT_A)],
                 id="extended resource capacity enforced for init container"),
    pytest.param(resource_pod(res(1, 1, **{EXT_A: 1})), fit_node(resource_pod(res(**{EXT_A: 5}))),
                 {}, U, [insufficient(EXT_A)], id="extended resource allocatable enforced"),
    pytest.param(resource_pod(res(1, 1, **{EXT_A: 3}), res(1, 1, **{EXT_A: 3})),
                 fit_node(resource_pod(res(**{EXT_A: 2}))), {}, R, [insufficient(EXT_A)],
                 id="extended resource allocatable enforced for multiple containers"),
    pytest.param(resource_pod(res(), init=(res(1, 1, **{EXT_A: 3}), res(1, 1, **{EXT_A: 3}))),
                 fit_node(resource_pod(res(**{EXT_A: 2}))), {}, None, [],
                 id="extended resource allocatable admits multiple init containers"),
    pytest.param(resource_pod(res(), init=(res(1, 1, **{EXT_A: 6}), res(1, 1, **{EXT_A: 3}))),
                 fit_node(resource_pod(res(**{EXT_A: 2}))), {}, R, [insufficient(EXT_A)],
                 id="extended resource allocatable enforced for multiple init containers"),
    pytest.param(resource_pod(res(1, 1, **{EXT_B: 1})), fit_node(resource_pod(res())), {}, R,
                 [insufficient(EXT_B)], id="extended resource enforced for unknown resource"),
    pytest.param(resource_pod(res(1, 1, **{K8S_IO_A: 10})), fit_node(resource_pod(res())), {}, R,
                 [insufficient(K8S_IO_A)], id="kubernetes.io resource capacity enforced"),
    pytest.param(resource_pod(res(), init=(res(1, 1, **{K8S_IO_B: 10}),)),
                 fit_node(resource_pod(res())), {}, R, [insufficient(K8S_IO_B)],
                 id="kubernetes.io resource capacity enforced for init container"),
    pytest.param(resource_pod(res(1, 1, **{HUGE_A: 10})),
                 fit_node(resource_pod(res(**{HUGE_A: 0}))), {}, R,
                 [insufficient(HUGE_A)], id="hugepages resource capacity enforced"),
    pytest.param(resource_pod(res(1, 1, **{HUGE_A: 3}), res(1, 1, **{HUGE_A: 3})),
                 fit_node(resource_pod(res(**{HUGE_A: 2}))), {}, R, [insufficient(HUGE_A)],
                 id="hugepages resource allocatable enforced for multiple containers"),
    pytest.param(resource_pod(res(1, 1, **{EXT_B: 1})), fit_node(resource_pod(res())),
                 {"ignoredResources": [EXT_B]}, None, [],
                 id="skip checking ignored extended resource"),
    pytest.param(resource_pod(res(1, 1)).overhead(cpu="3m", memory="13"),
                 fit_node(resource_pod(res(5, 5))), {}, None, [],
                 id="resources + pod overhead fits"),
    pytest.param(resource_pod(res(1, 1)).overhead(cpu="1m", memory="15"),
                 fit_node(resource_pod(res(5, 5))), {}, U, [insufficient("memory")],
                 id="requests + overhead does not fit for memory"),
    pytest.param(resource_pod(res(1, 1, **{EXT_B: 1, K8S_IO_A: 1})), fit_node(resource_pod(res())),
                 {"ignoredResourceGroups": ["example.com"]}, R, [insufficient(K8S_IO_A)],
                 id="skip checking ignored extended resource via resource groups"),
    pytest.param(resource_pod(res(1, 1, **{EXT_A: 0})), fit_node(resource_pod(res(**{EXT_A: 6}))),
                 {}, None, [], id="skip checking extended resource request with quantity zero"),
    pytest.param(resource_pod(res(1, 1)).pod_requests(cpu="1m", memory="2"),
                 fit_node(resource_pod(res(5, 5))), {}, None, [],
                 id="both pod-level and container-level resources fit"),
    pytest.param(resource_pod(res(1, 1)).pod_requests(cpu="7m", memory="2"),
                 fit_node(resource_pod(res(5, 5))), {}, U, [insufficient("cpu")],
                 id="pod-level cpu resource not fit"),
    pytest.param(resource_pod(res(1, 1)).pod_requests(cpu="3m", memory="2"),
                 fit_node(resource_pod(res(5, 19))), {}, U, [insufficient("memory")],
                 id="pod-level memory resource not fit"),
    pytest.param(resource_pod(res(1, 1, **{"extended.resource.dra.io/something": 1})),
                 fit_node(resource_pod(res())), {}, R,
                 [insufficient("extended.resource.dra.io/something")],
                 id="extended resource without DRA is checked like any other"),
]


@pytest.mark.parametrize(("pod", "node", "args", "code", "reasons"), ENOUGH_REQUESTS)
def test_enough_requests(pod: PodBuilder, node: NodeInfo, args: dict[str, object],
                         code: Code | None, reasons: list[str]) -> None:
    status = run_filter(plugin(**args), pod.info(), node)
    if code is None:
        assert status.ok, status
    else:
        assert (status.code, status.reasons) == (code, reasons)
        assert status.plugin == fit.NAME


NOT_ENOUGH_PODS = [
    pytest.param(make_pod(), resource_pod(res(10, 20)), id="no requests, no room for another pod"),
    pytest.param(resource_pod(res(1, 1)), resource_pod(res(5, 5)), id="resources fit, pods do not"),
    pytest.param(resource_pod(res(5, 1)), resource_pod(res(5, 19)), id="equal edge case"),
    pytest.param(resource_pod(res(5, 1), init=(res(5, 1),)), resource_pod(res(5, 19)),
                 id="equal edge case with init container"),
]


@pytest.mark.parametrize(("pod", "existing"), NOT_ENOUGH_PODS)
def test_not_enough_pods(pod: PodBuilder, existing: PodBuilder) -> None:
    node = make_node().capacity(cpu="10m", memory="20", pods="1").info(existing)
    status = run_filter(plugin(), pod.info(), node)
    assert (status.code, status.reasons) == (U, [fit.REASON_TOO_MANY_PODS])


STORAGE = [
    pytest.param(resource_pod(res(1, 1)), resource_pod(res(2, 10)), None, [],
                 id="empty storage requested, and pod fits"),
    pytest.param(resource_pod(res(storage=25)), resource_pod(res(2, 2)), R,
                 [fit.REASON_INSUFFICIENT_EPHEMERAL_STORAGE],
                 id="ephemeral storage request exceeds allocatable"),
    pytest.param(resource_pod(init=(res(storage=5),)), resource_pod(res(2, 2, storage=10)), None,
                 [], id="ephemeral local storage is sufficient"),
    pytest.param(resource_pod(res(storage=10)), resource_pod(res(2, 2)), None, [], id="pod fits"),
    pytest.param(resource_pod(res(storage=15)), resource_pod(res(2, 2, storage=10)), U,
                 [fit.REASON_INSUFFICIENT_EPHEMERAL_STORAGE],
                 id="storage short but not larger than the node"),
]


@pytest.mark.parametrize(("pod", "existing", "code", "reasons"), STORAGE)
def test_storage_requests(pod: PodBuilder, existing: PodBuilder, code: Code | None,
                          reasons: list[str]) -> None:
    status = run_filter(plugin(), pod.info(), fit_node(existing))
    if code is None:
        assert status.ok, status
    else:
        assert (status.code, status.reasons) == (code, reasons)


@pytest.mark.parametrize(("pod", "existing", "code", "reasons"), [
    pytest.param(resource_pod(res(11, 1)), res(), R, [fit.REASON_INSUFFICIENT_CPU],
                 id="cpu larger than allocatable on an empty node"),
    pytest.param(resource_pod(res(11, 1)), res(5, 5), R, [fit.REASON_INSUFFICIENT_CPU],
                 id="cpu larger than allocatable on a busy node"),
    pytest.param(resource_pod(res(6, 21)), res(5, 5), R,
                 [fit.REASON_INSUFFICIENT_CPU, fit.REASON_INSUFFICIENT_MEMORY],
                 id="one unresolvable resource makes the whole status unresolvable"),
    pytest.param(resource_pod(res(6, 1)), res(5, 5), U, [fit.REASON_INSUFFICIENT_CPU],
                 id="room taken by other pods is resolvable by preemption"),
])
def test_unresolvable_when_larger_than_node(pod: PodBuilder, existing: dict[str, str],
                                            code: Code, reasons: list[str]) -> None:
    status = run_filter(plugin(), pod.info(), fit_node(resource_pod(existing)))
    assert (status.code, status.reasons) == (code, reasons)


def test_zero_request_ignores_an_overcommitted_node() -> None:
    # Only requested (non-zero) resources are compared with what is left.
    node = fit_node(resource_pod(res(15, 30)))
    assert run_filter(plugin(), resource_pod(res(0, 0, storage=1)).info(), node).ok


def test_filter_without_pre_filter_is_an_error() -> None:
    status = plugin().filter(CycleState(), make_pod().info(), fit_node())
    assert status.code == Code.ERROR


# ---- scoring -------------------------------------------------------------------------------

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED = [*DEFAULT, {"name": "abc.com/xyz", "weight": 1}]
# An existing pod whose only container requests nothing (non-zero defaults apply).
NO_REQUESTS: dict[str, str] = {}
EMPTY_CONTAINER = {"container": "empty"}


def node_spec(cpu: str | None, memory: str | None, *existing: dict[str, str],
              **scalar: str) -> tuple[str | None, str | None, tuple[dict[str, str], ...],
                                      dict[str, str]]:
    """A node by capacity (None: no allocatable at all) with pods requesting `existing`."""
    return cpu, memory, existing, {name.replace("__", "/"): v for name, v in scalar.items()}


def build_nodes(specs: list[tuple[str | None, str | None, tuple[dict[str, str], ...],
                                  dict[str, str]]]) -> list[NodeInfo]:
    nodes = []
    for index, (cpu, memory, existing, scalar) in enumerate(specs):
        builder = make_node(f"node{index + 1}")
        if cpu is not None and memory is not None:
            builder.capacity({"cpu": cpu, "memory": memory, **scalar})
        pods = []
        for requests in existing:
            pod = make_pod(f"existing{len(pods)}").node(f"node{index + 1}")
            if requests is EMPTY_CONTAINER:
                pod.container()
            elif requests:
                pod.req(requests)
            pods.append(pod)
        nodes.append(builder.info(*pods))
    return nodes


def two_container_pod() -> PodBuilder:
    return make_pod().req(cpu="1000", memory="2000").req(cpu="2000", memory="3000")


CPU_3000 = {"cpu": "3000", "memory": "0"}
CPU_3000_MEM_5000 = {"cpu": "3000", "memory": "5000"}
XYZ = "abc.com__xyz"

SCORE_CASES = [
    # LeastAllocated (least_allocated_test.go)
    pytest.param("LeastAllocated", make_pod(),
                 [node_spec("4000", "10000"), node_spec("4000", "10000")], DEFAULT, [100, 100],
                 id="least: nothing scheduled, nothing requested"),
    pytest.param("LeastAllocated", two_container_pod(),
                 [node_spec("4000", "10000"), node_spec("6000", "10000")], DEFAULT, [37, 50],
                 id="least: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param("LeastAllocated", make_pod(),
                 [node_spec("4000", "10000", NO_REQUESTS, NO_REQUESTS),
                  node_spec("4000", "10000", NO_REQUESTS, NO_REQUESTS)], DEFAULT, [100, 100],
                 id="least: no resources requested, pods scheduled"),
    pytest.param("LeastAllocated", make_pod(),
                 [node_spec("10000", "20000", CPU_3000, CPU_3000),
                  node_spec("10000", "20000", CPU_3000, CPU_3000_MEM_5000)], DEFAULT, [70, 57],
                 id="least: no resources requested, pods scheduled with resources"),
    pytest.param("LeastAllocated", two_container_pod(),
                 [node_spec("10000", "20000", CPU_3000),
                  node_spec("10000", "20000", CPU_3000_MEM_5000)], DEFAULT, [57, 45],
                 id="least: resources requested, pods scheduled with resources"),
    pytest.param("LeastAllocated", two_container_pod(),
                 [node_spec("10000", "20000", CPU_3000),
                  node_spec("10000", "50000", CPU_3000_MEM_5000)], DEFAULT, [57, 60],
                 id="least: pods scheduled with resources, differently sized nodes"),
    pytest.param("LeastAllocated", make_pod().req(CPU_3000),
                 [node_spec("4000", "10000", CPU_3000),
                  node_spec("4000", "10000", CPU_3000_MEM_5000)], DEFAULT, [50, 25],
                 id="least: requested resources exceed node capacity"),
    pytest.param("LeastAllocated", make_pod(),
                 [node_spec(None, None, CPU_3000), node_spec(None, None, CPU_3000_MEM_5000)],
                 DEFAULT, [0, 0], id="least: zero node resources, pods scheduled with resources"),
    pytest.param("LeastAllocated", two_container_pod(),
                 [node_spec("4000", "10000"), node_spec("6000", "10000")],
                 [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [41, 50],
                 id="least: different weights on cpu and memory"),
    pytest.param("LeastAllocated", two_container_pod(),
                 [node_spec("6000", "10000"), node_spec("6000", "10000", **{XYZ: "4"})],
                 EXTENDED, [50, 50], id="least: bypass extended resource the pod doesn't request"),
    pytest.param("LeastAllocated", make_pod().req({**CPU_3000_MEM_5000, "abc.com/xyz": "2"}),
                 [node_spec("6000", "10000", **{XYZ: "4"}),
                  node_spec("6000", "10000", **{XYZ: "10"})],
                 EXTENDED, [50, 60], id="least: honor extended resource the pod requests"),
    pytest.param("LeastAllocated", make_pod().req(cpu="3000", memory="4000"),
                 [node_spec("6000", "10000"), node_spec("6000", "10000", **{XYZ: "4"})],
                 [{"name": "abc.com/xyz", "weight": 2}, *DEFAULT], [55, 55],
                 id="least: the node doesn't have a resource"),
    # cpu (4000m - 100m) / 4000m -> 97, memory (1Gi - 200Mi) / 1Gi -> 80: (97 + 80) / 2.
    pytest.param("LeastAllocated", make_pod().container(),
                 [node_spec("4", "1Gi"), node_spec("4", "1Gi")],
                 [{"name": "cpu", "weight": 0}, {"name": "memory", "weight": 1}], [88, 88],
                 id="least: weight 0 defaults to 1, non-zero defaults for a container"),
    # MostAllocated (most_allocated_test.go)
    pytest.param("MostAllocated", make_pod(),
                 [node_spec("4000", "10000"), node_spec("4000", "10000")], DEFAULT, [0, 0],
                 id="most: nothing scheduled, nothing requested"),
    pytest.param("MostAllocated", two_container_pod(),
                 [node_spec("4000", "10000"), node_spec("6000", "10000")], DEFAULT, [62, 50],
                 id="most: nothing scheduled, resources requested, differently sized nodes"),
    pytest.param("MostAllocated", make_pod(),
                 [node_spec("10000", "20000", CPU_3000, CPU_3000),
                  node_spec("10000", "20000", CPU_3000, CPU_3000_MEM_5000)], DEFAULT, [30, 42],
                 id="most: no resources requested, pods scheduled with resources"),
    pytest.param("MostAllocated", two_container_pod(),
                 [node_spec("10000", "20000", CPU_3000),
                  node_spec("10000", "20000", CPU_3000_MEM_5000)], DEFAULT, [42, 55],
                 id="most: resources requested, pods scheduled with resources"),
    pytest.param("MostAllocated",
                 make_pod().req(cpu="2000", memory="4000").req(cpu="3000", memory="5000"),
                 [node_spec("5000", "10000"), node_spec("10000", "9000")], DEFAULT, [95, 75],
                 id="most: resources requested equal node capacity"),
    pytest.param("MostAllocated", two_container_pod(),
                 [node_spec("4000", "10000"), node_spec("6000", "10000")],
                 [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], [58, 50],
                 id="most: different weights on cpu and memory"),
    pytest.param("MostAllocated", make_pod().container(),
                 [node_spec("250m", "1000Mi", EMPTY_CONTAINER, EMPTY_CONTAINER),
                  node_spec("250m", "1000Mi")], DEFAULT, [80, 30],
                 id="most: no resources requested, nonzero request for resource"),
    pytest.param("MostAllocated", two_container_pod(),
                 [node_spec("6000", "10000"), node_spec("6000", "10000", **{XYZ: "4"})],
                 EXTENDED, [50, 50], id="most: bypass extended resource the pod doesn't request"),
    pytest.param("MostAllocated", make_pod().req({**CPU_3000_MEM_5000, "abc.com/xyz": "2"}),
                 [node_spec("6000", "10000", **{XYZ: "4"}),
                  node_spec("6000", "10000", **{XYZ: "10"})],
                 EXTENDED, [50, 40], id="most: honor extended resource the pod requests"),
    pytest.param("MostAllocated", make_pod().req(cpu="3000", memory="4000"),
                 [node_spec("6000", "10000"), node_spec("6000", "10000", **{XYZ: "4"})],
                 [{"name": "abc.com/xyz", "weight": 2}, *DEFAULT], [45, 45],
                 id="most: the node doesn't have a resource"),
]


@pytest.mark.parametrize(("strategy", "pod", "node_specs", "resources", "expected"), SCORE_CASES)
def test_allocated_scoring(strategy: str, pod: PodBuilder, node_specs: list[tuple[
        str | None, str | None, tuple[dict[str, str], ...], dict[str, str]]],
        resources: list[dict[str, object]], expected: list[int]) -> None:
    nodes = build_nodes(node_specs)
    scorer = plugin(scoringStrategy={"type": strategy, "resources": resources})
    assert run_scores(scorer, pod.info(), nodes) == expected
    vector = scorer.score_vector(CycleState(), pod.info(), make_snapshot(*nodes))
    if vector is not None:
        assert vector.tolist() == expected


SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


@pytest.mark.parametrize(("pod", "node_specs", "expected"), [
    pytest.param(make_pod(), [node_spec("4000", "10000", NO_REQUESTS, NO_REQUESTS),
                              node_spec("4000", "10000")], [100, 100],
                 id="nothing scheduled, nothing requested"),
    pytest.param(two_container_pod(), [node_spec("4000", "10000", NO_REQUESTS, NO_REQUESTS),
                                       node_spec("6000", "10000")],
                 [38, 50], id="resources requested, differently sized nodes"),
    pytest.param(make_pod(), [node_spec("4000", "10000", CPU_3000_MEM_5000),
                              node_spec("6000", "10000", CPU_3000_MEM_5000)],
                 [38, 50], id="no resources requested, pods scheduled with resources"),
])
def test_requested_to_capacity_ratio(pod: PodBuilder, node_specs: list[tuple[
        str | None, str | None, tuple[dict[str, str], ...], dict[str, str]]],
        expected: list[int]) -> None:
    nodes = build_nodes(node_specs)
    scorer = plugin(scoringStrategy={"type": "RequestedToCapacityRatio", "resources": DEFAULT,
                                     "requestedToCapacityRatio": {"shape": SHAPE}})
    assert run_scores(scorer, pod.info(), nodes) == expected
    vector = scorer.score_vector(CycleState(), pod.info(), make_snapshot(*nodes))
    assert vector is not None
    assert vector.tolist() == expected


def bin_packing_nodes(*existing: PodBuilder) -> list[NodeInfo]:
    node1 = make_node("node1").capacity({"cpu": "4", "memory": str(10000 * 1024 * 1024),
                                         "intel.com/foo": "8"})
    node2 = make_node("node2").capacity({"cpu": "4", "memory": str(10000 * 1024 * 1024),
                                         "intel.com/foo": "4"})
    return [node1.info(), node2.info(*existing)]


@pytest.mark.parametrize(("pod", "existing", "expected"), [
    pytest.param(make_pod(), (), [0, 0], id="nothing scheduled, nothing requested"),
    pytest.param(make_pod().req({"intel.com/foo": "2"}), (), [2, 5],
                 id="resources requested, pods scheduled with less resources"),
    pytest.param(make_pod().req({"intel.com/foo": "2"}),
                 (make_pod("x").req({"intel.com/foo": "2"}),), [2, 10],
                 id="resources requested, on node with existing pod running"),
    pytest.param(make_pod().req({"intel.com/foo": "4"}), (), [5, 10],
                 id="resources requested, pods scheduled with more resources"),
])
def test_bin_packing_single_extended(pod: PodBuilder, existing: tuple[PodBuilder, ...],
                                     expected: list[int]) -> None:
    scorer = plugin(scoringStrategy={
        "type": "RequestedToCapacityRatio", "resources": [{"name": "intel.com/foo", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 1}]}})
    assert run_scores(scorer, pod.info(), bin_packing_nodes(*existing)) == expected


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    # cpu 36% -> 64, memory 55% -> 45 (decreasing shape): (64 + 45) / 2 = 54.5 -> 55.
    scorer = plugin(scoringStrategy={"type": "RequestedToCapacityRatio", "resources": DEFAULT,
                                     "requestedToCapacityRatio": {"shape": SHAPE}})
    node = make_node("n").capacity(cpu="100", memory="100").info()
    pod = make_pod().req(cpu="36", memory="55").info()
    assert run_scores(scorer, pod, [node]) == [55]


def test_score_without_pre_score_matches() -> None:
    nodes = build_nodes([node_spec("10000", "20000", CPU_3000),
                         node_spec("10000", "20000", CPU_3000_MEM_5000)])
    assert run_scores(plugin(), two_container_pod().info(), nodes, pre_score=False) == [57, 45]


# ---- vectorised forms against the per-node reference -----------------------------------------


def random_nodes(seed: int, count: int = 60) -> list[NodeInfo]:
    rng = random.Random(seed)
    nodes = []
    for index in range(count):
        builder = make_node(f"n{index:03d}").capacity(
            cpu=f"{rng.choice([0, 500, 1000, 4000])}m", memory=str(rng.choice([0, 1000, 8000])),
            pods=str(rng.choice([1, 3, 110])), ephemeral_storage=str(rng.choice([0, 100])))
        pods = [make_pod(f"e{i}").req(cpu=f"{rng.randrange(0, 1500)}m",
                                      memory=str(rng.randrange(0, 4000)),
                                      ephemeral_storage=str(rng.randrange(0, 60)))
                for i in range(rng.randrange(0, 3))]
        if rng.random() < 0.3:
            pods.append(make_pod("besteffort").container())
        nodes.append(builder.info(*pods))
    return nodes


VECTOR_PODS = [
    pytest.param(make_pod(), id="best effort"),
    pytest.param(make_pod().req(cpu="300m", memory="700"), id="cpu and memory"),
    pytest.param(make_pod().req(cpu="2", memory="9000", ephemeral_storage="50"), id="large"),
    pytest.param(make_pod().req(memory="100").container(), id="partly defaulted"),
]

STRATEGIES = [
    pytest.param({}, id="default"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1},
        {"name": "ephemeral-storage", "weight": 2}, {"name": "pods", "weight": 1}]}},
        id="most allocated with storage and pods"),
    pytest.param({"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "resources": DEFAULT,
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 2},
                                               {"utilization": 30, "score": 10},
                                               {"utilization": 70, "score": 1},
                                               {"utilization": 100, "score": 7}]}}},
        id="ratio with a zigzag shape"),
]


@pytest.mark.parametrize("args", STRATEGIES)
@pytest.mark.parametrize("pod", VECTOR_PODS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vector_forms_match_per_node(args: dict[str, object], pod: PodBuilder, seed: int) -> None:
    nodes = random_nodes(seed)
    snapshot = make_snapshot(*nodes)
    scorer = plugin(**args)
    info = pod.info()
    state = CycleState()
    scorer.pre_filter(state, info, snapshot.node_infos)
    mask = scorer.filter_vector(state, info, snapshot)
    assert mask is not None
    assert mask.tolist() == [scorer.filter(state, info, n).ok for n in snapshot.node_infos]
    scorer.pre_score(state, info, snapshot.node_infos)
    vector = scorer.score_vector(state, info, snapshot)
    assert vector is not None
    assert vector.dtype == np.int64
    assert vector.tolist() == [scorer.score(state, info, n)[0] for n in snapshot.node_infos]
    # Some rows, out of order (the feasible rows of a rotated window), score the same.
    rows = np.arange(len(nodes), dtype=np.int64)[::-1][::2]
    picked = scorer.score_rows(state, info, snapshot, rows)
    assert picked is not None and picked.tolist() == vector[rows].tolist()


@pytest.mark.parametrize("pod", VECTOR_PODS)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_statuses_of_rejected_rows_match_per_node(pod: PodBuilder, seed: int) -> None:
    """The reasons stated for many rows at once are `filter`'s, row for row: the same
    resources in the same order, and unresolvable where even an empty node is short."""
    snapshot = make_snapshot(*random_nodes(seed))
    scorer = plugin()
    info = pod.info()
    state = CycleState()
    scorer.pre_filter(state, info, snapshot.node_infos)
    mask = scorer.filter_vector(state, info, snapshot)
    assert mask is not None
    rows = np.flatnonzero(~mask)
    statuses = scorer.filter_statuses(state, info, snapshot, rows)
    assert statuses is not None
    expected = [scorer.filter(state, info, snapshot.node_infos[row]) for row in rows]
    assert [(s.code, s.reasons, s.plugin) for s in statuses] == \
        [(s.code, s.reasons, s.plugin) for s in expected]


def test_statuses_of_rejected_rows_say_what_preemption_cannot_fix() -> None:
    small = make_node("small").capacity(cpu="1", memory="1Gi", pods="110").info()
    full = make_node("full").capacity(cpu="8", memory="1Gi", pods="1").info(make_pod("x"))
    busy = make_node("busy").capacity(cpu="4", memory="1Gi", pods="110").info(
        make_pod("y").req(cpu="3"))
    snapshot = make_snapshot(small, full, busy)
    scorer = plugin()
    info = make_pod().req(cpu="2").info()
    state = CycleState()
    scorer.pre_filter(state, info, snapshot.node_infos)
    statuses = scorer.filter_statuses(state, info, snapshot, np.arange(3))
    assert statuses is not None
    assert [(node.name, s.code, s.reasons) for node, s in zip(
        snapshot.node_infos, statuses, strict=True)] == [
        ("busy", Code.UNSCHEDULABLE, ["Insufficient cpu"]),
        ("full", Code.UNSCHEDULABLE, ["Too many pods"]),
        ("small", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient cpu"])]


def test_vector_forms_decline_scalar_requests() -> None:
    scorer = plugin(scoringStrategy={"type": "LeastAllocated", "resources": EXTENDED})
    info = make_pod().req({"cpu": "1", "abc.com/xyz": "1"}).info()
    snapshot = make_snapshot(*random_nodes(4, 5))
    state = CycleState()
    scorer.pre_filter(state, info, snapshot.node_infos)
    scorer.pre_score(state, info, snapshot.node_infos)
    assert scorer.filter_vector(state, info, snapshot) is None
    assert scorer.score_vector(state, info, snapshot) is None
    assert scorer.filter_statuses(state, info, snapshot, np.arange(4)) is None


# ---- args -------------------------------------------------------------------------------------


def test_default_args() -> None:
    args = NodeResourcesFitArgs.model_validate({})
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1), ("memory", 1)]
    strategy_only = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type":
                                                                            "MostAllocated"}})
    assert [r.name for r in strategy_only.scoring_strategy.resources] == ["cpu", "memory"]
    by_field_name = NodeResourcesFitArgs(ignored_resources=[EXT_A])
    assert by_field_name.ignored_resources == [EXT_A]
    assert NodeResourcesFitArgs.model_validate({"scoringStrategy": None}).scoring_strategy.type \
        == "LeastAllocated"


@pytest.mark.parametrize(("raw", "message"), [
    pytest.param({"scoringStrategy": {"type": "LeastAllocated",
                                      "resources": [{"name": "memory", "weight": -1}]}},
                 "scoringStrategy.resources[0].weight", id="negative weight"),
    pytest.param({"scoringStrategy": {"type": "LeastAllocated",
                                      "resources": [{"name": "cpu", "weight": 101}]}},
                 "not in valid range (0, 100]", id="weight above 100"),
    pytest.param({"scoringStrategy": {"resources": DEFAULT}}, "scoringStrategy.type",
                 id="strategy without type"),
    pytest.param({"scoringStrategy": {"type": "Spread"}}, "Unsupported value", id="unknown type"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
                 "must be specified when type is RequestedToCapacityRatio", id="ratio missing"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                      "requestedToCapacityRatio": {"shape": []}}},
                 "at least one point must be specified", id="empty shape"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                      "requestedToCapacityRatio": {"shape": [
                                          {"utilization": 50, "score": 1},
                                          {"utilization": 50, "score": 2}]}}},
                 "values must be sorted in increasing order", id="shape not increasing"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                      "requestedToCapacityRatio": {"shape": [
                                          {"utilization": 101, "score": 1}]}}},
                 "not in valid range [0, 100]", id="utilization above 100"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                      "requestedToCapacityRatio": {"shape": [
                                          {"utilization": 10, "score": 11}]}}},
                 "not in valid range [0, 10]", id="shape score above 10"),
    pytest.param({"scoringStrategy": {"type": "MostAllocated",
                                      "requestedToCapacityRatio": {"shape": SHAPE}}},
                 "must be nil when type is not RequestedToCapacityRatio", id="ratio forbidden"),
    pytest.param({"ignoredResources": ["bad name/with/slashes"]}, "ignoredResources[0]",
                 id="bad ignored resource"),
    pytest.param({"ignoredResourceGroups": ["example.com/aaa"]},
                 "resource group name can't contain '/'", id="group with slash"),
    pytest.param({"ignoredResource": ["x"]}, "ignoredResource", id="unknown field"),
])
def test_invalid_args(raw: dict[str, object], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message.replace("[", r"\[")
                       .replace("(", r"\(").replace("]", r"\]").replace(".", r"\.")):
        NodeResourcesFitArgs.model_validate(raw)


def test_spec_and_events() -> None:
    assert fit.SPEC.name == "NodeResourcesFit"
    assert fit.SPEC.extension_points() == ["preFilter", "filter", "preScore", "score",
                                          "placementScore"]
    assert isinstance(fit.SPEC.parse_args({"ignoredResources": [EXT_A]}), NodeResourcesFitArgs)
    assert registered(plugin()) == [
        (ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), True),
        (ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE), True),
    ]
