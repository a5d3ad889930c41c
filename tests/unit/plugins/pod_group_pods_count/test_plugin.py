"""PodGroupPodsCount's scores and their normalization, upstream's tables
(podgrouppodscount, TestScorePlacement and TestNormalizePlacementScore, the PodGroup
cases; CompositePodGroup is not ported)."""

from __future__ import annotations

import pytest

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.placement import (
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    ProposedAssignment,
)
from kpysched.framework.status import Code
from kpysched.plugins import pod_group_pods_count
from tests.unit.builders import FakeHandle, make_pod, make_pod_group

PROPOSED = (ProposedAssignment(make_pod("proposed-pod-1").group("root").info(), "node1"),
            ProposedAssignment(make_pod("proposed-pod-2").group("root").info(), "node2"))


def _group(assigned: list[str], assumed: list[str]) -> PodGroupInfo:
    members = PodGroupState()
    for index, node in enumerate(assigned):
        members.add(make_pod(f"assigned-{index}").group("root").node(node).info())
    for index in range(len(assumed)):
        pod = make_pod(f"assumed-{index}").group("root").info()
        members.add(pod)
        members.assume(pod)
    return PodGroupInfo("default", "root", make_pod_group("root", 1), members)


@pytest.mark.parametrize(("assigned", "assumed", "expected"), [
    pytest.param(["node2", "node3"], ["node1"], 5, id="existing assigned and assumed pods"),
    pytest.param(["node1"], [], 3, id="no assumed pods"),
    pytest.param([], ["node1"], 3, id="no assigned pods"),
    pytest.param([], [], 2, id="no assigned pods, no assumed pods"),
])
def test_score_placement(assigned: list[str], assumed: list[str], expected: int) -> None:
    plugin = pod_group_pods_count.new(None, FakeHandle())
    score, status = plugin.score_placement(
        _group(assigned, assumed), PodGroupAssignments(Placement("p", ()), PROPOSED))
    assert status.ok
    assert score == expected


@pytest.mark.parametrize(("scores", "expected"), [
    pytest.param([10, 50, 110], [9, 45, 100], id="distinct scores"),
    pytest.param([50, 50], [100, 100], id="equal scores"),
    pytest.param([50], [100], id="single score"),
    pytest.param([11, 100, 101, 102], [10, 98, 99, 100],
                 id="some minimal score that is far from a group of scores located closely"),
])
def test_normalize_placement_score(scores: list[int], expected: list[int]) -> None:
    plugin = pod_group_pods_count.new(None, FakeHandle())
    status = plugin.normalize_placement_scores(_group([], []), scores)
    assert status.ok
    assert scores == expected


def test_normalize_zero_scores_is_an_error() -> None:
    plugin = pod_group_pods_count.new(None, FakeHandle())
    status = plugin.normalize_placement_scores(_group([], []), [0, 0])
    assert status.code is Code.ERROR
    assert status.message() == (
        "no pods from pod group are assigned to any of the candidate placements")
