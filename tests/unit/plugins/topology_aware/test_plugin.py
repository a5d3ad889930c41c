"""TopologyPlacementGenerator's placements, upstream's table (topologyaware,
TestGeneratePlacements, the PodGroup cases; CompositePodGroup is not ported)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from kpysched.cache.pod_groups import PodGroupState
from kpysched.framework.placement import Placement, PodGroupInfo, ScheduledMember
from kpysched.framework.status import Code
from kpysched.objects import scheduling
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins import topology_aware
from tests.unit.builders import (
    FakeHandle,
    NodeBuilder,
    make_node,
    make_pod,
    make_pod_group,
    make_snapshot,
)


def _group(topology_key: str | None,
           scheduled: dict[str, str] | None = None) -> PodGroupInfo:
    """A PodGroup "root" constrained to `topology_key` (None: no constraint), with
    members already placed on the given nodes (pod name -> node)."""
    pod_group: PodGroup = make_pod_group("root", 2)
    if topology_key is not None:
        pod_group = msgspec.structs.replace(pod_group, spec=msgspec.structs.replace(
            pod_group.spec, scheduling_constraints=scheduling.PodGroupSchedulingConstraints(
                topology=[scheduling.TopologyConstraint(key=topology_key)])))
    placed = tuple(ScheduledMember(make_pod(name).group("root").node(node).info(), node)
                   for name, node in (scheduled or {}).items())
    return PodGroupInfo("default", "root", pod_group, PodGroupState(), placed)


def _run(group: PodGroupInfo, placement_nodes: Sequence[NodeBuilder],
         other_nodes: Sequence[NodeBuilder] = ()) -> tuple[dict[str, list[str]], Code]:
    in_placement = [node.info() for node in placement_nodes]
    snapshot = make_snapshot(*in_placement, *(node.info() for node in other_nodes))
    plugin = topology_aware.new(None, FakeHandle(snapshot_value=snapshot))
    placements, status = plugin.generate_placements(
        group, Placement("test-placement", tuple(in_placement)))
    return {p.name: [node.name for node in p.nodes] for p in placements}, status.code


SIX_NODES = [make_node("node0").label("topology2", "d1"),
             make_node("node1").label("topology2", "d4"),
             make_node("node2").label("topology1", "d1"),
             make_node("node3").label("topology1", "d2"),
             make_node("node4").label("topology1", "d1"),
             make_node("node5").label("topology1", "d3")]


@pytest.mark.parametrize(("group", "placement_nodes", "other_nodes", "expected"), [
    pytest.param(_group(None), [make_node("node1"), make_node("node2").label("foo", "bar")],
                 [make_node("node3")], {"test-placement": ["node1", "node2"]},
                 id="without constraint returns placement matching all nodes"),
    pytest.param(_group("topology1"), SIX_NODES, [],
                 {"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]},
                 id="with topology key constraint, returns placement for each topology domain"),
    pytest.param(_group("topology3"), SIX_NODES, [], {},
                 id="without matching topology label, returns empty"),
    pytest.param(_group("topology", {"a": "node2", "b": "node3"}),
                 [make_node("node0").label("topology", "d2"),
                  make_node("node1").label("topology", "d1")],
                 [make_node("node2").label("topology", "d1"),
                  make_node("node3").label("topology", "d1")],
                 {"d1": ["node1"]},
                 id="with pods already scheduled in a single domain, returns that domain"),
    pytest.param(_group("topology", {"a": "node2", "b": "node3"}),
                 [make_node("node0").label("topology", "d2")],
                 [make_node("node2").label("topology", "d1"),
                  make_node("node3").label("topology", "d1")],
                 {},
                 id="with pods already scheduled in a single domain not present in current "
                    "placement, returns empty"),
])
def test_generate_placements(group: PodGroupInfo, placement_nodes: list[NodeBuilder],
                             other_nodes: list[NodeBuilder],
                             expected: dict[str, list[str]]) -> None:
    placements, code = _run(group, placement_nodes, other_nodes)
    assert code is Code.SUCCESS
    assert placements == expected


@pytest.mark.parametrize(("group", "placement_nodes", "other_nodes", "message"), [
    pytest.param(_group("topology", {"a": "node2", "b": "node3"}),
                 [make_node("node0").label("topology", "d2"),
                  make_node("node1").label("topology", "d1")],
                 [make_node("node2").label("topology", "d0"),
                  make_node("node3").label("topology", "d1")],
                 "cannot determine domain for already scheduled pods: more than 1 domain "
                 "found for pod group: d0, d1",
                 id="with pods already scheduled in conflicting domains, returns error"),
    pytest.param(_group("topology", {"a": "node2", "b": "node4"}),
                 [make_node("node0").label("topology", "d2"),
                  make_node("node1").label("topology", "d1")],
                 [make_node("node2").label("topology", "d1"),
                  make_node("node3").label("topology", "d1")],
                 "cannot determine domain for already scheduled pods: getting node for pod "
                 'default/b: nodeinfo not found for node name "node4"',
                 id="with already scheduled pod on node outside of snapshot, returns error"),
    pytest.param(_group("topology", {"a": "node2"}),
                 [make_node("node1").label("topology", "d2")],
                 [make_node("node2").label("foo", "bar")],
                 "cannot determine domain for already scheduled pods: no topology domain "
                 "found for pod default/a",
                 id="with already scheduled pod on node without topology label, returns error"),
])
def test_scheduled_members_that_pin_no_single_domain_are_an_error(
        group: PodGroupInfo, placement_nodes: list[NodeBuilder],
        other_nodes: list[NodeBuilder], message: str) -> None:
    in_placement = [node.info() for node in placement_nodes]
    snapshot = make_snapshot(*in_placement, *(node.info() for node in other_nodes))
    plugin = topology_aware.new(None, FakeHandle(snapshot_value=snapshot))
    placements, status = plugin.generate_placements(
        group, Placement("test-placement", tuple(in_placement)))
    assert placements == []
    assert status.code is Code.ERROR
    assert status.message() == message
    assert status.plugin == "TopologyPlacementGenerator"


def test_placements_follow_the_order_domains_first_appear_in() -> None:
    """Upstream walks a Go map (random order); kpysched's order is stable: the first
    node of each domain, in the parent placement's order."""
    placements, _ = _run(_group("rack"), [make_node("n1").label("rack", "b"),
                                          make_node("n2").label("rack", "a"),
                                          make_node("n3").label("rack", "b")])
    assert list(placements) == ["b", "a"]


def test_only_the_first_topology_constraint_counts() -> None:
    group = _group("rack")
    assert group.pod_group is not None
    constraints = group.pod_group.spec.scheduling_constraints
    assert constraints is not None
    constraints.topology.append(scheduling.TopologyConstraint(key="zone"))
    assert topology_aware.plugin.topology_key(group.pod_group) == "rack"
    assert topology_aware.plugin.topology_key(None) is None
