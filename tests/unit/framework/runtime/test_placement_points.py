"""The placement points' runners (TopologyAwareWorkloadScheduling): upstream's
RunPlacementGeneratePlugins and RunPlacementScorePlugins, their order, weights and
error wording."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.cluster_events import Registration
from kpysched.framework.placement import (
    Placement,
    PlacementGeneratePlugin,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, FrameworkError, ProfileSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.metrics import NoMetrics
from kpysched.plugins import IN_TREE
from tests.unit.builders import make_node, make_pod_group
from tests.unit.framework.fake_plugins import SharedHandle

GROUP = PodGroupInfo("default", "g", make_pod_group("g", 2), PodGroupState())
NODES = [make_node(name).info() for name in ("n1", "n2", "n3")]


class _Quiet:
    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.calls = 0

    def events_to_register(self) -> Sequence[Registration]:
        return ()


class Halves(_Quiet, PlacementGeneratePlugin):
    """Two placements: the first node, and the rest; `answer` replaces them."""

    NAME: ClassVar[str] = "Halves"

    def generate_placements(self, group: PodGroupInfo,
                            parent: Placement) -> tuple[list[Placement], Status]:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        if self.answer is not None:
            placements, status = self.answer
            return placements, status
        return [Placement("first", parent.nodes[:1]), Placement("rest", parent.nodes[1:])], SUCCESS


class Unused(Halves):
    NAME: ClassVar[str] = "Unused"


class NodeCount(_Quiet, PlacementScorePlugin):
    """Ten points per node of the placement."""

    NAME: ClassVar[str] = "NodeCount"

    def score_placement(self, group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status]:
        if isinstance(self.answer, Status):
            return 0, self.answer
        return 10 * len(assignments.placement.nodes), SUCCESS


class Scaled(_Quiet, PlacementScorePlugin, PlacementScoreExtensions):
    """Node count, normalized so the largest is 100 (or by `answer`)."""

    NAME: ClassVar[str] = "Scaled"

    def score_placement(self, group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status]:
        return len(assignments.placement.nodes), SUCCESS

    def normalize_placement_scores(self, group: PodGroupInfo, scores: list[int]) -> Status:
        if isinstance(self.answer, Status):
            return self.answer
        top = max(scores)
        scores[:] = [score * 100 // top for score in scores]
        return SUCCESS


def _build(plugins: dict[str, list[str]], weights: dict[str, int] | None = None,
           answers: dict[str, Any] | None = None) -> Framework:
    specs = [PluginSpec(cls.NAME, cls, lambda args, handle, cls=cls: cls(args))
             for cls in (Halves, Unused, NodeCount, Scaled)]
    points = {"queueSort": ["PrioritySort"], "bind": ["DefaultBinder"], **plugins}
    profile = ProfileSpec("test", points, {}, dict(answers or {}), None,
                          dict(weights or {}))
    return Framework(profile, {**IN_TREE, **{s.name: s for s in specs}}, SharedHandle(),
                     NoMetrics())


def _assignments(*placements: Placement) -> list[PodGroupAssignments]:
    return [PodGroupAssignments(placement) for placement in placements]


def test_without_a_generator_the_parent_placement_is_the_only_one() -> None:
    placements, status = _build({}).run_placement_generate(GROUP, NODES)
    assert status.ok
    assert [(p.name, [n.name for n in p.nodes]) for p in placements] == [
        ("", ["n1", "n2", "n3"])]


def test_only_the_first_generator_runs() -> None:
    framework = _build({"placementGenerate": ["Halves", "Unused"]})
    placements, status = framework.run_placement_generate(GROUP, NODES)
    assert status.ok
    assert [(p.name, [n.name for n in p.nodes]) for p in placements] == [
        ("first", ["n1"]), ("rest", ["n2", "n3"])]
    assert framework.plugin("Unused").calls == 0


@pytest.mark.parametrize(("answer", "code", "message"), [
    pytest.param(([], SUCCESS), Code.UNSCHEDULABLE, "no feasible placements found",
                 id="none-found"),
    pytest.param(([], Status.error("boom")), Code.ERROR, "boom", id="error"),
    pytest.param(RuntimeError("bug"), Code.ERROR, "RuntimeError: bug", id="raised"),
])
def test_a_generator_that_gives_nothing_fails_the_group(answer: Any, code: Code,
                                                         message: str) -> None:
    framework = _build({"placementGenerate": ["Halves"]}, answers={"Halves": answer})
    placements, status = framework.run_placement_generate(GROUP, NODES)
    assert placements == []
    assert (status.code, status.message(), status.plugin) == (code, message, "Halves")


def test_totals_are_weighted_sums_of_the_normalized_scores() -> None:
    framework = _build({"placementScore": ["NodeCount", "Scaled"]},
                       weights={"NodeCount": 2, "Scaled": 3})
    one, three = Placement("one", tuple(NODES[:1])), Placement("three", tuple(NODES))
    totals, status = framework.run_placement_score(GROUP, _assignments(one, three))
    assert status.ok
    # NodeCount 10 and 30 (weight 2); Scaled 1 and 3 normalized to 33 and 100 (weight 3).
    assert totals == [10 * 2 + 33 * 3, 30 * 2 + 100 * 3]


@pytest.mark.parametrize(("answers", "nodes", "message"), [
    pytest.param({"NodeCount": Status.error("no luck")}, 1,
                 'running PlacementScore plugins: plugin "NodeCount" failed with: no luck',
                 id="score-error"),
    pytest.param({"Scaled": Status.error("cannot")}, 1,
                 "running NormalizePlacementScore on PlacementScore plugins: plugin "
                 '"Scaled" failed with: cannot', id="normalize-error"),
    pytest.param({}, 11,
                 "applying score defaultWeights on PlacementScore plugins: plugin "
                 '"NodeCount" returns an invalid score 110, it should in the range of '
                 "[0, 100] after normalizing", id="out-of-range"),
])
def test_placement_score_errors_use_upstreams_words(answers: dict[str, Any], nodes: int,
                                                     message: str) -> None:
    framework = _build({"placementScore": ["NodeCount", "Scaled"]}, answers=answers)
    wide = Placement("wide", tuple(make_node(f"w{i}").info() for i in range(nodes)))
    _, status = framework.run_placement_score(GROUP, _assignments(wide))
    assert (status.code, status.message()) == (Code.ERROR, message)


def test_a_plugin_at_a_placement_point_must_implement_it() -> None:
    with pytest.raises(FrameworkError, match="does not implement placementScore"):
        _build({"placementScore": ["Halves"]})
