"""NodeResourcesFit's PlacementScore (TopologyAwareWorkloadScheduling): MostAllocated
over the placement's nodes together, upstream's table (noderesources,
TestScorePlacement_Resources)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.placement import (
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    ProposedAssignment,
)
from kpysched.plugins.node_resources.fit import NodeResourcesFitArgs, new
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod, make_pod_group

GPU = "nvidia.com/gpu"


def _resources(cpu: str, memory: str, gpu: str | None = None) -> dict[str, str]:
    found = {"cpu": cpu, "memory": memory}
    if gpu is not None:
        found[GPU] = gpu
    return found


FOO = make_pod("foo").req(_resources("1000m", "0"))
BAR = make_pod("bar").req(_resources("2000m", "2000"))


@pytest.mark.parametrize(
    ("nodes", "placement", "members", "existing", "weights", "expected"), [
        pytest.param(2, 2, [(FOO, "node1"), (BAR, "node2")], {}, {"cpu": 1, "memory": 1}, 25,
                     id="Computes score based on total requests"),
        pytest.param(2, 2, [(FOO, "node1"), (BAR, "node2")], {}, {"cpu": 4, "memory": 1}, 28,
                     id="Computes score using weights"),
        pytest.param(2, 2, [(FOO, "node1"), (BAR, "node1")], {}, {"cpu": 4, "memory": 1}, 28,
                     id="Handles multiple pods per node"),
        pytest.param(3, 2, [(FOO, "node1"), (BAR, "node2")], {}, {"cpu": 1, "memory": 1}, 25,
                     id="Does not include nodes from outside of placement"),
        pytest.param(2, 2, [(FOO, "node1"), (BAR, "node2")],
                     {"node1": make_pod("baz").req(_resources("1000m", "0"))},
                     {"cpu": 1, "memory": 1}, 30,
                     id="Includes pre-existing pods from outside of pod group"),
    ])
def test_score_placement(nodes: int, placement: int, members: list[tuple[PodBuilder, str]],
                         existing: Mapping[str, PodBuilder], weights: Mapping[str, int],
                         expected: int) -> None:
    _check(nodes, placement, members, existing, weights, expected, gpu=None)


@pytest.mark.parametrize(("members", "existing", "expected"), [
    pytest.param([(make_pod("foo").req(_resources("1000m", "0", "0")), "node1"),
                  (make_pod("bar").req(_resources("1000m", "2000", "1")), "node2")],
                 {"node1": make_pod("baz").req(_resources("1000m", "0", "0"))}, 20,
                 id="Includes scalar resources if any pod in pod group has nonzero requests"),
    pytest.param([(make_pod("foo").req(_resources("1000m", "0", "0")), "node1"),
                  (make_pod("bar").req(_resources("1000m", "2000", "0")), "node2")],
                 {"node1": make_pod("baz").req(_resources("1000m", "0", "1"))}, 25,
                 id="Does not include scalar resources if all pods in pod group have zero "
                    "requests"),
])
def test_score_placement_with_scalar_resources(
        members: list[tuple[PodBuilder, str]], existing: Mapping[str, PodBuilder],
        expected: int) -> None:
    _check(2, 2, members, existing, {"cpu": 1, "memory": 1, GPU: 1}, expected, gpu="5")


def _check(nodes: int, placement: int, members: list[tuple[PodBuilder, str]],
           existing: Mapping[str, PodBuilder], weights: Mapping[str, int], expected: int,
           *, gpu: str | None) -> None:
    infos = []
    for index in range(1, nodes + 1):
        name = f"node{index}"
        pods = [existing[name]] if name in existing else []
        infos.append(make_node(name).capacity(_resources("5000m", "5000", gpu)).info(*pods))
    fit = new(NodeResourcesFitArgs.model_validate({"scoringStrategy": {
        "type": "LeastAllocated",
        "resources": [{"name": name, "weight": weight} for name, weight in weights.items()],
    }}), FakeHandle())
    group = PodGroupInfo("default", "g", make_pod_group("g", 2), PodGroupState())
    assignments = PodGroupAssignments(
        Placement("p", tuple(infos[:placement])),
        tuple(ProposedAssignment(pod.info(), node) for pod, node in members))
    score, status = fit.score_placement(group, assignments)
    assert status.ok
    assert score == expected
