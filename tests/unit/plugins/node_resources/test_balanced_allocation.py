"""NodeResourcesBalancedAllocation, with upstream's balanced_allocation_test.go table."""

from __future__ import annotations

import random

import numpy as np
import pydantic
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.plugins.node_resources import balanced_allocation as ba
from kpysched.plugins.node_resources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from kpysched.plugins.node_resources.resource_allocation import balanced
from tests.unit.builders import (
    FakeHandle,
    NodeBuilder,
    PodBuilder,
    make_node,
    make_pod,
    make_snapshot,
)
from tests.unit.plugins.runner import run_scores

GPU = "nvidia.com/gpu"
WITH_GPU = [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]


def plugin(resources: list[dict[str, object]] | None = None) -> NodeResourcesBalancedAllocation:
    raw = {} if resources is None else {"resources": resources}
    return ba.new(NodeResourcesBalancedAllocationArgs.model_validate(raw), FakeHandle())


def node(name: str, milli_cpu: int, memory: int, gpu: int | None = None) -> NodeBuilder:
    capacity: dict[str, str] = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    if gpu is not None:
        capacity[GPU] = str(gpu)
    return make_node(name).capacity(capacity)


def cpu_mem(cpu: str, memory: str) -> dict[str, str]:
    return {"cpu": cpu, "memory": memory}


def cpu_only(cpu: str) -> dict[str, str]:
    return {"cpu": cpu}


def split_pod(name: str = "pod") -> PodBuilder:
    """Upstream's pod requesting 1000m/2000 + 2000m/3000 in two containers."""
    return make_pod(name).req(cpu_mem("1000m", "2000")).req(cpu_mem("2000m", "3000"))


def cpu_pod(name: str) -> PodBuilder:
    return make_pod(name).req(cpu_only("1000m")).req(cpu_only("2000m"))


def nodes(*entries: tuple[NodeBuilder, tuple[PodBuilder, ...]]) -> list[NodeInfo]:
    return [builder.info(*pods) for builder, pods in entries]


CASES = [
    pytest.param(split_pod(),
                 nodes((node("node1", 4000, 10000), ()), (node("node2", 6000, 10000), ())),
                 None, [68, 75], id="nothing scheduled, resources requested, differently sized"),
    pytest.param(split_pod(),
                 nodes((node("node1", 10000, 20000), (cpu_pod("e1"),)),
                       (node("node2", 10000, 20000), (split_pod("e2"),))),
                 None, [73, 74], id="resources requested, pods scheduled with resources"),
    pytest.param(split_pod(),
                 nodes((node("node1", 10000, 20000), (cpu_pod("e1"),)),
                       (node("node2", 10000, 50000), (split_pod("e2"),))),
                 None, [73, 70], id="pods scheduled with resources, differently sized nodes"),
    pytest.param(make_pod().req(memory="2000").req(memory="3000"),
                 nodes((node("node1", 3000, 5000), (cpu_pod("e1"),)),
                       (node("node2", 3000, 5000), ())),
                 None, [100, 50], id="nodes to reach min/max score"),
    pytest.param(cpu_pod("pod"),
                 nodes((node("node1", 6000, 10000), (cpu_pod("e1"),)),
                       (node("node2", 6000, 10000), (split_pod("e2"),))),
                 None, [62, 62], id="requested resources at node capacity"),
    pytest.param(make_pod().req({"cpu": "0", "memory": "0", GPU: "1"}),
                 nodes((node("node1", 3500, 40000, 8),
                        (make_pod("e1").req(cpu_mem("1000m", "2000"))
                         .req({"cpu": "2000m", "memory": "3000", GPU: "3"}),)),
                       (node("node2", 3500, 40000, 8), (split_pod("e2"),))),
                 WITH_GPU, [75, 76], id="scalar resource is included if the pod requests it"),
    pytest.param(split_pod(),
                 nodes((node("node1", 3500, 40000, 8), ()), (node("node2", 3500, 40000), ())),
                 WITH_GPU, [56, 56], id="scalar resource left out if the pod does not request it"),
]


@pytest.mark.parametrize(("pod", "node_infos", "resources", "expected"), CASES)
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_balanced_allocation(pod: PodBuilder, node_infos: list[NodeInfo],
                             resources: list[dict[str, object]] | None, expected: list[int],
                             pre_score: bool) -> None:
    scorer = plugin(resources)
    assert run_scores(scorer, pod.info(), node_infos, pre_score=pre_score) == expected


def test_best_effort_pod_is_skipped() -> None:
    infos = nodes((node("node1", 4000, 10000), ()), (node("node2", 4000, 10000), ()))
    result = run_scores(plugin(), make_pod().container().info(), infos)
    assert isinstance(result, Status)
    assert result.code == Code.SKIP
    assert run_scores(plugin(), make_pod().info(), infos, pre_score=False) == [0, 0]


@pytest.mark.parametrize(("requested", "allocated", "allocatable", "expected"), [
    pytest.param([3, 5], [0, 0], [4, 10], 68, id="75% and 50% from empty"),
    # Without the pod: 50% and 0% (std 0.25, 75); with it: 50% and 50% (100).
    pytest.param([5, 5], [5, 0], [10, 10], 87, id="pod evens out the node"),
    pytest.param([10, 0], [5, 0], [10, 10], 62, id="pod makes the node lopsided"),
    pytest.param([5, 5], [0, 0], [0, 0], 75, id="nothing allocatable"),
    # 1/3, 2/3, 1: std sqrt(2/27) = 0.272 -> 72 against 100 empty.
    pytest.param([1, 2, 3], [0, 0, 0], [3, 3, 3], 61, id="three resources use the full formula"),
])
def test_balanced_formula(requested: list[int], allocated: list[int], allocatable: list[int],
                          expected: int) -> None:
    assert balanced(requested, allocated, allocatable) == expected


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_vector_form_matches_per_node(seed: int) -> None:
    rng = random.Random(seed)
    infos = []
    for index in range(80):
        builder = make_node(f"n{index:03d}").capacity(
            cpu=f"{rng.choice([0, 1000, 3500])}m", memory=str(rng.choice([0, 5000, 40000])))
        existing = [make_pod(f"e{i}").req(cpu=f"{rng.randrange(0, 4000)}m",
                                          memory=str(rng.randrange(0, 40000)))
                    for i in range(rng.randrange(0, 3))]
        infos.append(builder.info(*existing))
    snapshot = make_snapshot(*infos)
    scorer = plugin()
    for pod in (make_pod().req(cpu="700m", memory="3000"), make_pod().req(memory="1")):
        info = pod.info()
        state = CycleState()
        assert scorer.pre_score(state, info, snapshot.node_infos).ok
        vector = scorer.score_vector(state, info, snapshot)
        assert vector is not None
        assert vector.tolist() == [scorer.score(state, info, n)[0] for n in snapshot.node_infos]
        # Some rows, out of order (the feasible rows of a rotated window), score the same.
        rows = np.arange(len(snapshot.node_infos), dtype=np.int64)[::-1][::2]
        picked = scorer.score_rows(state, info, snapshot, rows)
        assert picked is not None and picked.tolist() == vector[rows].tolist()


def test_vector_form_declines_more_than_two_resources() -> None:
    scorer = plugin(WITH_GPU)
    info = make_pod().req(cpu="1").info()
    assert scorer.score_vector(CycleState(), info, make_snapshot()) is None


def test_default_args() -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": "cpu"}]})
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1)]
    assert [r.name for r in NodeResourcesBalancedAllocationArgs().resources] == ["cpu", "memory"]


@pytest.mark.parametrize(("raw", "message"), [
    pytest.param({"resources": [{"name": "cpu", "weight": 2}]}, "must be 1", id="weight not 1"),
    pytest.param({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "Duplicate value",
                 id="duplicate resource"),
    pytest.param({"resource": []}, "resource", id="unknown field"),
])
def test_invalid_args(raw: dict[str, object], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        NodeResourcesBalancedAllocationArgs.model_validate(raw)


def test_spec() -> None:
    assert ba.SPEC.name == "NodeResourcesBalancedAllocation"
    assert ba.SPEC.extension_points() == ["preScore", "score"]
    assert plugin().events_to_register() == ()
