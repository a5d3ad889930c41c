"""Victims in trees of groups (v1.37's CompositePodGroup on, victims.py): upstream
v1.37.2's TestGetPodPriority and TestGetHighestAllAncestor tables
(framework/preemption), ported; then a CompositePodGroup with disruptionMode all
taken whole across its PodGroups, ranked above a PodGroup."""

from __future__ import annotations

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.objects import composite_pod_groups as cpgs
from kpysched.objects import scheduling
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins.default_preemption.victims import (
    COMPOSITE_KIND,
    POD_GROUP_KIND,
    CompositeLookup,
    UnitKey,
    placed_on,
    pod_priority,
    victims_on,
    whole_unit,
)
from tests.unit.builders import make_composite_pod_group, make_pod, make_pod_group
from tests.unit.scheduler_harness import node

NS = "default"
NOW = 1_000 * 10**9


def pg(name: str, priority: int | None = None, parent: str | None = None, *,
       all_: bool = False) -> PodGroup:
    group = make_pod_group(name, 1, NS, parent=parent)
    group.spec.priority = priority
    if all_:
        group.spec.disruption_mode = scheduling.DisruptionMode(
            all=scheduling.AllDisruptionMode())
    return group


def cpg(name: str, priority: int | None = None, parent: str | None = None, *,
        all_: bool = False) -> CompositePodGroup:
    group = make_composite_pod_group(name, 1, NS, parent=parent)
    group.spec.priority = priority
    if all_:
        group.spec.disruption_mode = cpgs.CompositeDisruptionMode(
            all=cpgs.AllCompositeDisruptionMode())
    return group


def member(name: str, priority: int, group: str | None) -> PodInfo:
    built = make_pod(name).priority(priority)
    return (built.group(group) if group is not None else built).info()


def lookups(groups: list[PodGroup], composites: list[CompositePodGroup] | None
            ) -> tuple[object, CompositeLookup | None]:
    by_name = {g.metadata.name: g for g in groups}
    composite_by_name = {g.metadata.name: g for g in composites or []}
    return ((lambda _, name: by_name.get(name)),
            None if composites is None else (lambda _, name: composite_by_name.get(name)))


@pytest.mark.parametrize(("pod", "groups", "composites", "want"), [
    pytest.param(member("p1", 10, None), [], [], 10,
                 id="pod without PodGroup returns pod priority"),
    pytest.param(member("p2", 10, "pg1"), [pg("pg1", 50)], None, 50,
                 id="pod with PodGroup returns PodGroup priority instead of pod priority"),
    pytest.param(member("p5", 30, "missing-pg"), [], None, 30,
                 id="pod with PodGroup but PodGroup not found in lister falls back to pod "
                    "priority"),
    pytest.param(member("p7", 10, "pg1"), [pg("pg1", 50, "cpg1")], [cpg("cpg1", 100)], 100,
                 id="pod with PodGroup and parent CPG, returns CPG priority"),
    pytest.param(member("p8", 10, "pg1"), [pg("pg1", 50, "cpg1")],
                 [cpg("cpg1", 100, "cpg2"), cpg("cpg2", 200)], 200,
                 id="pod with PodGroup and grandparent CPG, returns grandparent CPG priority"),
    pytest.param(member("p9", 10, "pg1"), [pg("pg1", 50, "cpg1")], None, 50,
                 id="pod with PodGroup and parent CPG, but nil compositePodGroupLister, "
                    "falls back to PodGroup priority"),
    pytest.param(member("p10", 10, "pg1"), [pg("pg1", 50, "cpg1")], [], 50,
                 id="pod with PodGroup and parent CPG, but parent CPG not found in lister, "
                    "falls back to PodGroup priority"),
    pytest.param(member("p11", 10, "pg1"), [pg("pg1", 50, "cpg1")],
                 [cpg("cpg1", 100, "missing-cpg2")], 100,
                 id="grandparent CPG not found in lister, falls back to parent CPG priority"),
    pytest.param(member("p12", 50, "missing-pg"), [], [], 50,
                 id="pod with PodGroup, but PodGroup not found in lister and non-nil "
                    "compositePodGroupLister, falls back to pod priority"),
])
def test_get_pod_priority(pod: PodInfo, groups: list[PodGroup],
                          composites: list[CompositePodGroup] | None, want: int) -> None:
    lookup, composite_lookup = lookups(groups, composites)
    assert pod_priority(pod, lookup, composite_lookup) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(("groups", "composites", "want"), [
    pytest.param([], [], None, id="pod group missing from the lister"),
    pytest.param([pg("pg1")], [], None, id="pod group disruption mode single"),
    pytest.param([pg("pg1", all_=True)], [], (POD_GROUP_KIND, NS, "pg1"),
                 id="pod group disruption mode All"),
    pytest.param([pg("pg1", parent="cpg1")], [cpg("cpg1", all_=True)],
                 (COMPOSITE_KIND, NS, "cpg1"),
                 id="parent CPG disruption mode All, child PG disruption mode single"),
    pytest.param([pg("pg1", parent="cpg1")], [cpg("cpg1", parent="cpg2"),
                                               cpg("cpg2", all_=True)],
                 (COMPOSITE_KIND, NS, "cpg2"),
                 id="grandparent CPG disruption mode All, parent CPG disruption mode single, "
                    "child PG disruption mode single"),
    pytest.param([pg("pg1", parent="cpg1", all_=True)], [cpg("cpg1", all_=True)],
                 (COMPOSITE_KIND, NS, "cpg1"),
                 id="highest All parent wins (both have disruption mode All)"),
    pytest.param([pg("pg1", parent="cpg1", all_=True)], [], (POD_GROUP_KIND, NS, "pg1"),
                 id="parent CPG missing from cache lister, child PG All returned"),
])
def test_get_highest_all_ancestor(groups: list[PodGroup], composites: list[CompositePodGroup],
                                  want: UnitKey | None) -> None:
    lookup, composite_lookup = lookups(groups, composites)
    pod = member("p", 0, "pg1")
    assert whole_unit(pod, lookup, composite_lookup) == want  # type: ignore[arg-type]
    assert whole_unit(member("plain", 0, None), lookup,  # type: ignore[arg-type]
                      composite_lookup) is None


def test_a_composite_with_disruption_mode_all_is_one_victim_across_its_groups() -> None:
    groups = [pg("a", parent="root"), pg("b", parent="root"), pg("lone", all_=True)]
    lookup, composite_lookup = lookups(groups, [cpg("root", 5, all_=True)])
    pods = {"a0": member("a0", 0, "a").pod, "b0": member("b0", 0, "b").pod,
            "l0": member("l0", 0, "lone").pod}
    n1, n2 = node("n1", "4"), node("n2", "4")
    infos = []
    for info, names in ((n1, ("a0", "l0")), (n2, ("b0",))):
        built = NodeInfo(info)
        for name in names:
            pods[name].spec.node_name = info.metadata.name
            built.add_pod(PodInfo.of(pods[name]))
        infos.append(built)
    found = victims_on([infos[0]], lookup, NOW,  # type: ignore[arg-type]
                       placed_on(infos, lookup, composite_lookup),  # type: ignore[arg-type]
                       composite_lookup)
    by_members = {tuple(sorted(p.name for p in v.pods)): (v.priority, v.rank) for v in found}
    # The tree's two PodGroups go whole at the root's priority, above the lone group.
    assert by_members == {("a0", "b0"): (5, 3), ("l0",): (0, 2)}
