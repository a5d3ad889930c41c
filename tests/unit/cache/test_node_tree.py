"""NodeTree: zones round-robin, each zone in insertion order, as upstream's nodeTree."""

from __future__ import annotations

import pytest

from kpysched.cache.cache import Cache
from kpysched.cache.node_tree import NodeTree, zone_key
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from tests.unit.builders import make_node


def node(name: str, zone: str | None = None, region: str | None = None,
         *, beta: bool = False) -> api.Node:
    builder = make_node(name).capacity(cpu="4", memory="8Gi", pods=110)
    prefix = "failure-domain.beta.kubernetes.io" if beta else "topology.kubernetes.io"
    if zone is not None:
        builder = builder.label(f"{prefix}/zone", zone)
    if region is not None:
        builder = builder.label(f"{prefix}/region", region)
    return builder.obj()


@pytest.mark.parametrize(("labels", "key"), [
    ({}, ""),
    ({"zone": "a"}, ":\x00:a"),
    ({"zone": "a", "region": "r"}, "r:\x00:a"),
    ({"region": "r"}, "r:\x00:"),
], ids=["none", "zone", "region-and-zone", "region"])
def test_zone_key_as_upstream(labels: dict[str, str], key: str) -> None:
    assert zone_key(node("n", labels.get("zone"), labels.get("region"))) == key


def test_beta_labels_count_when_the_new_ones_are_missing() -> None:
    assert zone_key(node("n", "a", "r", beta=True)) == "r:\x00:a"


def test_zones_are_walked_round_robin_in_order_of_first_sight() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"),
                       ("b2", "b")]:
        tree.add_or_update(node(name, zone))
    assert tree.ordered() == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_a_zone_change_moves_the_node_to_the_end_of_its_new_zone() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        tree.add_or_update(node(name, zone))
    assert not tree.add_or_update(node("a1", "a"))  # unchanged zone: same place
    assert tree.add_or_update(node("a1", "b"))
    assert tree.ordered() == ["a2", "b1", "a1"]


def test_an_emptied_zone_that_returns_goes_last() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "a"), ("b1", "b"), ("c1", "c")]:
        tree.add_or_update(node(name, zone))
    tree.remove("a1")
    tree.add_or_update(node("a2", "a"))
    assert tree.ordered() == ["b1", "c1", "a2"]
    assert len(tree) == 3


def test_the_snapshot_lists_nodes_in_tree_order() -> None:
    cache = Cache()
    for name, zone in [("n-a-1", "a"), ("n-a-2", "a"), ("n-b-1", "b"), ("n-b-2", "b")]:
        cache.add_or_update_node(node(name, zone))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    names = [info.name for info in snapshot.node_infos]
    assert names == ["n-a-1", "n-b-1", "n-a-2", "n-b-2"]
    assert snapshot.index == {name: row for row, name in enumerate(names)}
    assert snapshot.columns.allocatable_cpu.tolist() == [4000] * 4
