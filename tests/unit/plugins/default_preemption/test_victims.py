"""v1.37's preemption victims with GenericWorkload on (victims.py): upstream's
MoreImportantVictim table (framework/preemption/util_test.go TestMoreImportantVictim),
how pods become victims (a PodGroup with disruptionMode all goes whole; a member's
priority is its PodGroup's), and PDB accounting per victim."""

from __future__ import annotations

import msgspec
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.objects import api, scheduling
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption.victims import (
    Victim,
    by_importance,
    placed_on,
    split_victims_by_pdb_violation,
    victims_on,
)
from tests.unit.builders import label_selector, make_pod, make_pod_group
from tests.unit.scheduler_harness import node

NOW = 1_000 * 10**9
BEFORE = 500 * 10**9
POD, GROUP = 1, 2


def unit(priority: int, rank: int, size: int = 1, start: int = NOW) -> Victim:
    pods = [PodInfo.of(make_pod(f"p{i}").obj()) for i in range(size)]
    return Victim(pods, priority, rank, start)


@pytest.mark.parametrize(("first", "second", "first_more_important"), [
    (unit(20, POD), unit(10, POD), True),
    (unit(10, POD), unit(20, POD), False),
    (unit(10, GROUP), unit(10, POD), True),
    (unit(10, POD), unit(10, GROUP), False),
    (unit(10, POD, start=BEFORE), unit(10, POD, start=NOW), True),
    (unit(10, POD, start=NOW), unit(10, POD, start=BEFORE), False),
    (unit(10, GROUP, size=2), unit(10, GROUP, size=1), True),
    (unit(10, GROUP, size=1), unit(10, GROUP, size=2), False),
    (unit(10, GROUP, 2, BEFORE), unit(10, GROUP, 2, NOW), True),
    (unit(10, GROUP, 2, NOW), unit(10, GROUP, 2, BEFORE), False),
    (unit(20, POD), unit(10, GROUP, size=3), True),  # priority before kind and size
], ids=["vi1-higher-priority", "vi2-higher-priority", "vi1-pod-group-vi2-pod",
        "vi1-pod-vi2-pod-group", "both-pods-vi1-older", "both-pods-vi2-older",
        "both-groups-vi1-larger", "both-groups-vi2-larger", "same-size-vi1-older",
        "same-size-vi2-older", "priority-first"])
def test_more_important_victim(first: Victim, second: Victim,
                               first_more_important: bool) -> None:
    ordered = by_importance([second, first])
    assert (ordered[0] is first) is first_more_important


def _group(name: str, priority: int, *, whole: bool) -> scheduling.PodGroup:
    group = make_pod_group(name, 1)
    group.spec.priority = priority
    if whole:
        group.spec.disruption_mode = scheduling.DisruptionMode(
            all=scheduling.AllDisruptionMode())
    return group


def test_a_whole_group_is_one_victim_across_nodes_and_others_stand_alone() -> None:
    groups = {"default/whole": _group("whole", 7, whole=True),
              "default/single": _group("single", 8, whole=False)}
    n1, n2 = node("n1", "8"), node("n2", "8")
    infos = []
    for info_node, pods in ((n1, [make_pod("w1").group("whole").priority(50).node("n1"),
                                  make_pod("s1").group("single").priority(50).node("n1"),
                                  make_pod("plain").priority(50).node("n1")]),
                            (n2, [make_pod("w2").group("whole").priority(50).node("n2")])):
        info = NodeInfo(info_node)
        for pod in pods:
            info.add_pod(PodInfo.of(pod.obj()))
        infos.append(info)

    def lookup(namespace: str, name: str) -> scheduling.PodGroup | None:
        return groups.get(f"{namespace}/{name}")

    found = victims_on([infos[0]], lookup, NOW, placed_on(infos))
    assert [([p.name for p in v.pods], v.priority, v.is_group) for v in found] == [
        (["w1", "w2"], 7, True),  # the group's priority, its members on both nodes
        (["s1"], 8, True),
        (["plain"], 50, False)]


def test_one_pod_over_a_budget_makes_its_whole_unit_violating() -> None:
    labelled = PodInfo.of(make_pod("a").label("app", "foo").obj())
    other = PodInfo.of(make_pod("b").obj())
    budget = api.PodDisruptionBudget(
        metadata=api.ObjectMeta(name="pdb", namespace="default"),
        spec=api.PodDisruptionBudgetSpec(selector=label_selector({"app": "foo"})),
        status=api.PodDisruptionBudgetStatus(disruptions_allowed=0))
    group = Victim([other, labelled], 10, GROUP, NOW)
    alone = Victim([PodInfo.of(make_pod("c").obj())], 10, POD, NOW)
    violating, non_violating = split_victims_by_pdb_violation([group, alone], [budget])
    assert violating == [(group, 1)]
    assert non_violating == [alone]



@pytest.mark.parametrize(("body", "whole"), [
    (b'{"spec": {"disruptionMode": {"all": {}}}}', True),  # v1beta1
    (b'{"spec": {"disruptionMode": {"single": {}}}}', False),
    (b'{"spec": {"disruptionMode": "All"}}', False),  # v1alpha2 (v1.36): not read
    (b'{"spec": {}}', False),
], ids=["v1beta1-all", "v1beta1-single", "v1alpha2-string", "unset"])
def test_both_api_versions_decode_and_only_v1beta1_all_goes_whole(body: bytes,
                                                                  whole: bool) -> None:
    group = msgspec.json.decode(body, type=scheduling.PodGroup)
    infos = []
    for name in ("n1", "n2"):
        info = NodeInfo(node(name, "8"))
        info.add_pod(PodInfo.of(make_pod(f"m-{name}").group("g").node(name).obj()))
        infos.append(info)
    [found] = victims_on([infos[0]], lambda namespace, name: group, NOW, placed_on(infos))
    assert [p.name for p in found.pods] == (["m-n1", "m-n2"] if whole else ["m-n1"])
