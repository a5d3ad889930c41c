"""WorkloadForest: upstream v1.37.2's workload_forest_test.go tables, ported (each
upstream table is one parametrized test; ids are upstream's case names)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kpysched.framework.pod_group_tree import (
    EntityKey,
    GroupTree,
    composite_key,
    pod_group_key,
)
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.scheduling import PodGroup
from kpysched.queue.workload_forest import WorkloadForest
from tests.unit.builders import make_composite_pod_group, make_pod_group

NS = "ns1"


def pg(name: str, parent: str | None = None, min_count: int | None = None) -> PodGroup:
    return make_pod_group(name, min_count, NS, parent=parent)


def cpg(name: str, parent: str | None = None) -> CompositePodGroup:
    return make_composite_pod_group(name, None, NS, parent=parent)


def pgk(name: str) -> EntityKey:
    return pod_group_key(NS, name)


def cpgk(name: str) -> EntityKey:
    return composite_key(NS, name)


def forest(pod_groups: Sequence[PodGroup] = (), composites: Sequence[CompositePodGroup] = (),
           *, enabled: bool = True, composites_first: bool = False) -> WorkloadForest:
    made = WorkloadForest(composite_pod_groups=enabled)
    if composites_first:
        for group in composites:
            made.add_composite(group)
    for pod_group in pod_groups:
        made.add_pod_group(pod_group)
    if not composites_first:
        for group in composites:
            made.add_composite(group)
    return made


PG1, PG2 = pg("pg1"), pg("pg2")
PG3_IN_CPG1, PG4_IN_CPG1 = pg("pg3", "cpg1"), pg("pg4", "cpg1")
CPG_CHILD = cpg("cpgChild", "cpg1")


@pytest.mark.parametrize(("enabled", "initial", "added", "want_groups", "want_children"), [
    pytest.param(True, [], [PG1], {pgk("pg1"): PG1}, {}, id="add single pod group"),
    pytest.param(True, [], [PG1, PG2], {pgk("pg1"): PG1, pgk("pg2"): PG2}, {},
                 id="add multiple pod groups"),
    pytest.param(True, [], [PG3_IN_CPG1], {pgk("pg3"): PG3_IN_CPG1},
                 {cpgk("cpg1"): {pgk("pg3")}},
                 id="add pod group with parent, parent not in children"),
    pytest.param(True, [], [PG3_IN_CPG1, PG4_IN_CPG1],
                 {pgk("pg3"): PG3_IN_CPG1, pgk("pg4"): PG4_IN_CPG1},
                 {cpgk("cpg1"): {pgk("pg3"), pgk("pg4")}},
                 id="add pod group with parent, parent already in children"),
    pytest.param(True, [CPG_CHILD], [PG3_IN_CPG1], {pgk("pg3"): PG3_IN_CPG1},
                 {cpgk("cpg1"): {cpgk("cpgChild"), pgk("pg3")}},
                 id="add pod group with parent, parent already has composite pod group child"),
    pytest.param(False, [], [PG3_IN_CPG1], {pgk("pg3"): PG3_IN_CPG1}, {},
                 id="add pod group with parent, feature disabled"),
    pytest.param(True, [], [PG1, PG1], {pgk("pg1"): PG1}, {},
                 id="add same pod group again, feature enabled"),
    pytest.param(False, [], [PG1, PG1], {pgk("pg1"): PG1}, {},
                 id="add same pod group again, feature disabled"),
    pytest.param(True, [], [PG3_IN_CPG1, PG3_IN_CPG1], {pgk("pg3"): PG3_IN_CPG1},
                 {cpgk("cpg1"): {pgk("pg3")}},
                 id="add same pod group with parent again, feature enabled"),
    pytest.param(False, [], [PG3_IN_CPG1, PG3_IN_CPG1], {pgk("pg3"): PG3_IN_CPG1}, {},
                 id="add same pod group with parent again, feature disabled"),
])
def test_add_pod_group(enabled: bool, initial: list[CompositePodGroup], added: list[PodGroup],
                       want_groups: dict[EntityKey, PodGroup],
                       want_children: dict[EntityKey, set[EntityKey]]) -> None:
    made = forest(added, initial, enabled=enabled, composites_first=True)
    assert made.pod_groups == want_groups
    assert made.children == want_children


PG1_MIN_1 = pg("pg1", min_count=1)
PG1_MIN_2 = pg("pg1", min_count=2)
PG2_MIN_1 = pg("pg2", min_count=1)


@pytest.mark.parametrize(("updated", "want"), [
    pytest.param(PG1_MIN_2, {pgk("pg1"): PG1_MIN_2}, id="update existing pod group"),
    pytest.param(PG2_MIN_1, {pgk("pg1"): PG1_MIN_1, pgk("pg2"): PG2_MIN_1},
                 id="update non-existent pod group adds it"),
])
def test_update_pod_group(updated: PodGroup, want: dict[EntityKey, PodGroup]) -> None:
    made = forest([PG1_MIN_1])
    made.update_pod_group(updated)
    assert made.pod_groups == want


@pytest.mark.parametrize(
    ("enabled", "pod_groups", "composites", "deleted", "want_groups", "want_children"), [
        pytest.param(True, [PG1, PG2], [], PG1, {pgk("pg2"): PG2}, {},
                     id="delete existing pod group"),
        pytest.param(True, [PG1], [], PG2, {pgk("pg1"): PG1}, {},
                     id="delete non-existent pod group is no-op"),
        pytest.param(True, [PG3_IN_CPG1], [], PG3_IN_CPG1, {}, {},
                     id="delete pod group with parent, where parent CPG does not exist in "
                        "compositePodGroups (e.g. was just deleted)"),
        pytest.param(True, [PG3_IN_CPG1], [cpg("cpg1")], PG3_IN_CPG1, {}, {},
                     id="delete pod group with parent, where parent CPG exists in "
                        "compositePodGroups"),
        pytest.param(True, [PG3_IN_CPG1, PG4_IN_CPG1], [], PG3_IN_CPG1,
                     {pgk("pg4"): PG4_IN_CPG1}, {cpgk("cpg1"): {pgk("pg4")}},
                     id="delete pod group with parent, parent has other pod group children"),
        pytest.param(True, [PG3_IN_CPG1], [CPG_CHILD], PG3_IN_CPG1, {},
                     {cpgk("cpg1"): {cpgk("cpgChild")}},
                     id="delete pod group with parent, parent has other composite pod group "
                        "children"),
        pytest.param(False, [PG3_IN_CPG1], [], PG3_IN_CPG1, {}, {},
                     id="delete pod group with parent, feature disabled"),
    ])
def test_delete_pod_group(enabled: bool, pod_groups: list[PodGroup],
                          composites: list[CompositePodGroup], deleted: PodGroup,
                          want_groups: dict[EntityKey, PodGroup],
                          want_children: dict[EntityKey, set[EntityKey]]) -> None:
    made = forest(pod_groups, composites, enabled=enabled)
    made.delete_pod_group(deleted)
    assert made.pod_groups == want_groups
    assert made.children == want_children


@pytest.mark.parametrize("enabled", [True, False], ids=["CPG=true", "CPG=false"])
@pytest.mark.parametrize(("name", "found"), [("pg1", True), ("pg2", False)],
                         ids=["get existing pod group", "get non-existent pod group"])
def test_get_pod_group(enabled: bool, name: str, found: bool) -> None:
    made = forest([PG1], enabled=enabled)
    assert made.pod_group(pgk(name)) == (PG1 if found else None)


@pytest.mark.parametrize(("name", "found"), [("cpg1", True), ("cpg2", False)],
                         ids=["get existing composite pod group",
                              "get non-existent composite pod group"])
def test_get_composite(name: str, found: bool) -> None:
    group = cpg("cpg1")
    made = forest([], [group])
    assert made.composite(cpgk(name)) == (group if found else None)


CPG1, CPG2 = cpg("cpg1"), cpg("cpg2")
CPG3_IN_CPG1, CPG4_IN_CPG1 = cpg("cpg3", "cpg1"), cpg("cpg4", "cpg1")
PG_CHILD = pg("pgChild", "cpg1")


@pytest.mark.parametrize(("pod_groups", "added", "want_composites", "want_children"), [
    pytest.param([], [CPG1], {cpgk("cpg1"): CPG1}, {}, id="add single composite pod group"),
    pytest.param([], [CPG1, CPG2], {cpgk("cpg1"): CPG1, cpgk("cpg2"): CPG2}, {},
                 id="add multiple composite pod groups"),
    pytest.param([], [CPG3_IN_CPG1], {cpgk("cpg3"): CPG3_IN_CPG1},
                 {cpgk("cpg1"): {cpgk("cpg3")}},
                 id="add composite pod group with parent, parent not in children"),
    pytest.param([], [CPG3_IN_CPG1, CPG4_IN_CPG1],
                 {cpgk("cpg3"): CPG3_IN_CPG1, cpgk("cpg4"): CPG4_IN_CPG1},
                 {cpgk("cpg1"): {cpgk("cpg3"), cpgk("cpg4")}},
                 id="add composite pod group with parent, parent already has other composite "
                    "pod group child"),
    pytest.param([PG_CHILD], [CPG3_IN_CPG1], {cpgk("cpg3"): CPG3_IN_CPG1},
                 {cpgk("cpg1"): {pgk("pgChild"), cpgk("cpg3")}},
                 id="add composite pod group with parent, parent already has pod group child"),
    pytest.param([], [CPG1, CPG1], {cpgk("cpg1"): CPG1}, {},
                 id="add same composite pod group again"),
    pytest.param([], [CPG3_IN_CPG1, CPG3_IN_CPG1], {cpgk("cpg3"): CPG3_IN_CPG1},
                 {cpgk("cpg1"): {cpgk("cpg3")}},
                 id="add same composite pod group with parent again"),
])
def test_add_composite(pod_groups: list[PodGroup], added: list[CompositePodGroup],
                       want_composites: dict[EntityKey, CompositePodGroup],
                       want_children: dict[EntityKey, set[EntityKey]]) -> None:
    made = forest(pod_groups, added)
    assert made.composites == want_composites
    assert made.children == want_children


CPG1_V2 = make_composite_pod_group("cpg1", 2, NS)


@pytest.mark.parametrize(("updated", "want"), [
    pytest.param(CPG1_V2, {cpgk("cpg1"): CPG1_V2}, id="update existing composite pod group"),
    pytest.param(CPG2, {cpgk("cpg1"): CPG1, cpgk("cpg2"): CPG2},
                 id="update non-existent composite pod group adds it"),
])
def test_update_composite(updated: CompositePodGroup,
                          want: dict[EntityKey, CompositePodGroup]) -> None:
    made = forest([], [CPG1])
    made.update_composite(updated)
    assert made.composites == want


CPG_MID = cpg("cpgMid", "cpg1")
PG_LEAF = pg("pgLeaf", "cpgMid")


@pytest.mark.parametrize(
    ("pod_groups", "composites", "deleted", "want_composites", "want_children"), [
        pytest.param([], [CPG1], CPG1, {}, {},
                     id="delete existing composite pod group without parent"),
        pytest.param([], [CPG3_IN_CPG1], CPG3_IN_CPG1, {}, {},
                     id="delete composite pod group with parent, cleans up children map"),
        pytest.param([PG_CHILD], [CPG3_IN_CPG1], CPG3_IN_CPG1, {},
                     {cpgk("cpg1"): {pgk("pgChild")}},
                     id="delete composite pod group with parent, parent has other pod group "
                        "child"),
        pytest.param([], [CPG3_IN_CPG1, CPG4_IN_CPG1], CPG3_IN_CPG1,
                     {cpgk("cpg4"): CPG4_IN_CPG1}, {cpgk("cpg1"): {cpgk("cpg4")}},
                     id="delete composite pod group with parent, parent has other composite "
                        "pod group child"),
        pytest.param([PG_CHILD], [CPG3_IN_CPG1, CPG4_IN_CPG1], CPG3_IN_CPG1,
                     {cpgk("cpg4"): CPG4_IN_CPG1}, {cpgk("cpg1"): {pgk("pgChild"), cpgk("cpg4")}},
                     id="delete composite pod group with parent, parent has both other pg and "
                        "cpg children"),
        pytest.param([PG_LEAF], [CPG1, CPG_MID], CPG_MID, {cpgk("cpg1"): CPG1},
                     {cpgk("cpgMid"): {pgk("pgLeaf")}},
                     id="delete mid cpg from root-mid-leaf hierarchy"),
        pytest.param([], [CPG3_IN_CPG1], CPG1, {cpgk("cpg3"): CPG3_IN_CPG1},
                     {cpgk("cpg1"): {cpgk("cpg3")}}, id="delete non-existent composite pod group"),
    ])
def test_delete_composite(pod_groups: list[PodGroup], composites: list[CompositePodGroup],
                          deleted: CompositePodGroup,
                          want_composites: dict[EntityKey, CompositePodGroup],
                          want_children: dict[EntityKey, set[EntityKey]]) -> None:
    made = forest(pod_groups, composites)
    made.delete_composite(deleted)
    assert made.composites == want_composites
    assert made.children == want_children


PG2_IN_CPG1 = pg("pg2", "cpg1")


# Upstream's TestWorkloadForest_GetRootLookupInfoForPod and ..ForPodGroup: a pod's root
# is its PodGroup's (upstream looks the PodGroup up by the pod's podGroupName).
@pytest.mark.parametrize(("enabled", "pod_groups", "composites", "group", "want"), [
    pytest.param(True, [PG1], [], "pg1", pgk("pg1"), id="standalone pod group"),
    pytest.param(True, [PG2_IN_CPG1], [CPG1], "pg2", cpgk("cpg1"),
                 id="pod group with existing parent cpg"),
    pytest.param(True, [pg("pg3", "cpg-missing")], [], "pg3", None,
                 id="pod group with non-existent parent cpg"),
    pytest.param(True, [], [], "pg1", None, id="non-existent pod group"),
    pytest.param(True, [PG1], [], "pg3", None, id="pod belongs to non-existent pod group"),
    pytest.param(False, [PG1], [], "pg1", pgk("pg1"), id="standalone pod group (CPG=false)"),
    pytest.param(False, [PG2_IN_CPG1], [CPG1], "pg2", pgk("pg2"),
                 id="pod group with existing parent cpg (CPG=false)"),
    pytest.param(False, [pg("pg3", "cpg-missing")], [], "pg3", pgk("pg3"),
                 id="pod group with non-existent parent cpg (CPG=false)"),
    pytest.param(False, [], [], "pg1", None, id="non-existent pod group (CPG=false)"),
])
def test_root_of_pod_group(enabled: bool, pod_groups: list[PodGroup],
                           composites: list[CompositePodGroup], group: str,
                           want: EntityKey | None) -> None:
    made = forest(pod_groups, composites, enabled=enabled)
    assert made.root_of_pod_group(NS, group) == want


@pytest.mark.parametrize(("composites", "group", "want"), [
    pytest.param([CPG1], "cpg1", cpgk("cpg1"), id="standalone cpg"),
    pytest.param([CPG1, cpg("cpg2", "cpg1")], "cpg2", cpgk("cpg1"), id="cpg with parent"),
    pytest.param([cpg("cpg2", "cpg1")], "cpg2", None, id="cpg with parent missing"),
    pytest.param([cpg("cpg3", "cpg4"), cpg("cpg4", "cpg3")], "cpg3", None,
                 id="cpg cycle detection"),
])
def test_root_of_composite(composites: list[CompositePodGroup], group: str,
                           want: EntityKey | None) -> None:
    assert forest([], composites).root_of_composite(NS, group) == want


PG3_IN_CPG2 = pg("pg3", "cpg2")
CPG2_IN_CPG1 = cpg("cpg2", "cpg1")


@pytest.mark.parametrize(("enabled", "pod_groups", "composites", "root", "want"), [
    pytest.param(True, [PG1], [], pgk("pg1"), [PG1], id="single pod group lookup"),
    pytest.param(True, [PG2_IN_CPG1], [CPG1], cpgk("cpg1"), [PG2_IN_CPG1],
                 id="cpg with direct pod group child"),
    pytest.param(True, [PG2_IN_CPG1, PG3_IN_CPG2], [CPG1, CPG2_IN_CPG1], cpgk("cpg1"),
                 [PG2_IN_CPG1, PG3_IN_CPG2], id="cpg with nested pod group child"),
    pytest.param(True, [], [], cpgk("missing"), [], id="missing root"),
    pytest.param(False, [PG1], [], pgk("pg1"), [PG1], id="single pod group lookup (CPG=false)"),
    pytest.param(False, [PG2_IN_CPG1], [CPG1], pgk("pg2"), [PG2_IN_CPG1],
                 id="pg with direct pod group child lookup (CPG=false)"),
    pytest.param(False, [], [], cpgk("missing"), [], id="missing root (CPG=false)"),
])
def test_leaf_pod_groups(enabled: bool, pod_groups: list[PodGroup],
                         composites: list[CompositePodGroup], root: EntityKey,
                         want: list[PodGroup]) -> None:
    made = forest(pod_groups, composites, enabled=enabled)
    got = made.leaf_pod_groups(root)
    assert sorted(got, key=lambda group: group.metadata.uid) == sorted(
        want, key=lambda group: group.metadata.uid)


@pytest.mark.parametrize("enabled", [True, False], ids=["", "(CPG=false)"])
def test_build_info_for_pod_group(enabled: bool) -> None:
    """Upstream's TestWorkloadForest_BuildPodGroupInfoForPG."""
    assert forest([PG1], enabled=enabled).tree(pgk("pg1")) == GroupTree(pgk("pg1"),
                                                                         pod_group=PG1)


PG1_IN_CPG1 = pg("pg1", "cpg1", min_count=2)
CPG1_MIN_1 = make_composite_pod_group("cpg1", 1, NS)


@pytest.mark.parametrize(("enabled", "want_children"), [
    pytest.param(True, [GroupTree(pgk("pg1"), pod_group=PG1_IN_CPG1)],
                 id="build info for cpg with child pg"),
    pytest.param(False, [], id="build info for cpg with child pg (CPG=false)"),
])
def test_build_info_for_composite(enabled: bool, want_children: list[GroupTree]) -> None:
    """Upstream's TestWorkloadForest_BuildPodGroupInfoForCPG."""
    made = forest([PG1_IN_CPG1], [CPG1_MIN_1], enabled=enabled)
    assert made.tree(cpgk("cpg1")) == GroupTree(cpgk("cpg1"), composite=CPG1_MIN_1,
                                                children=want_children)


# Beyond upstream's tables.

def test_tree_nests_and_tries_children_oldest_first_then_by_name() -> None:
    root = cpg("root")
    late = make_pod_group("a-late", 1, NS, parent="root", created="2026-11-28T05:00:02Z")
    early = make_pod_group("z-early", 1, NS, parent="root", created="2026-11-28T05:00:01Z")
    inner = make_composite_pod_group("inner", 1, NS, parent="root",
                                     created="2026-11-28T05:00:01Z")
    leaf = make_pod_group("leaf", 2, NS, parent="inner")
    tree = forest([late, early, leaf], [root, inner]).tree(cpgk("root"))
    assert tree is not None
    assert [child.key.name for child in tree.child_groups()] == ["inner", "z-early", "a-late"]
    assert [group.key.name for group in tree.leaves()] == ["leaf", "z-early", "a-late"]
    assert GroupTree(pgk("leaf"), pod_group=leaf).child_groups() == []


def test_a_loop_of_parents_builds_no_tree_below_the_loop() -> None:
    made = forest([pg("pg", "b")], [cpg("a", "b"), cpg("b", "a")])
    assert made.root_of_pod_group(NS, "pg") is None
    looped = made.tree(cpgk("a"))
    assert looped is not None
    # a -> b -> a: the second visit of a is cut, b keeps its PodGroup.
    assert [child.key for child in looped.children] == [cpgk("b")]
    assert [leaf.key for leaf in looped.leaves()] == [pgk("pg")]
