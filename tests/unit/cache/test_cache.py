"""Cache (assume/forget/confirm/expire, nodes coming and going) and incremental snapshots."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from kpysched.cache.cache import Cache
from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node, make_pod

GI = 1024 ** 3


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory=memory, pods="110").obj()


def pod(name: str, cpu: str = "1", node_name: str = "") -> PodInfo:
    builder = make_pod(name).req(cpu=cpu, memory="1Gi")
    if node_name:
        builder.node(node_name)
    return builder.info()


def bound(info: PodInfo, node_name: str) -> PodInfo:
    """The informer's view of `info` once bound to `node_name`."""
    return PodInfo.of(msgspec.structs.replace(
        info.pod, spec=msgspec.structs.replace(info.pod.spec, node_name=node_name)))


def cache_with(*nodes: api.Node) -> Cache:
    cache = Cache()
    for item in nodes:
        cache.add_or_update_node(item)
    return cache


def snapshot_of(cache: Cache) -> Snapshot:
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def cpu_on(cache: Cache, name: str) -> int:
    info = snapshot_of(cache).get(name)
    assert info is not None
    return info.requested.milli_cpu


def assert_columns_match(snapshot: Snapshot) -> None:
    columns = snapshot.columns
    expected = {
        "allocatable_cpu": [i.allocatable.milli_cpu for i in snapshot.node_infos],
        "allocatable_memory": [i.allocatable.memory for i in snapshot.node_infos],
        "allocatable_ephemeral": [i.allocatable.ephemeral_storage for i in snapshot.node_infos],
        "allowed_pods": [i.allocatable.allowed_pod_number for i in snapshot.node_infos],
        "requested_cpu": [i.requested.milli_cpu for i in snapshot.node_infos],
        "requested_memory": [i.requested.memory for i in snapshot.node_infos],
        "requested_ephemeral": [i.requested.ephemeral_storage for i in snapshot.node_infos],
        "pod_count": [len(i.pods) for i in snapshot.node_infos],
        "non_zero_cpu": [i.non_zero_requested.milli_cpu for i in snapshot.node_infos],
        "non_zero_memory": [i.non_zero_requested.memory for i in snapshot.node_infos],
    }
    for name, values in expected.items():
        np.testing.assert_array_equal(getattr(columns, name), np.array(values, dtype=np.int64),
                                      err_msg=name)
    assert snapshot.index == {info.name: row for row, info in enumerate(snapshot.node_infos)}
    assert sorted(info.name for info in snapshot.node_infos) == sorted(snapshot.by_name)


# --- assume / forget / confirm / expire --------------------------------------------------


def test_assumed_pod_counts_on_its_node_at_once() -> None:
    cache = cache_with(node("n1"))
    info = pod("p")
    cache.assume_pod(info, "n1")
    assert cache.is_assumed(info.uid)
    assert (cache.pod_count(), cache.assumed_count()) == (1, 1)
    assert cpu_on(cache, "n1") == 1000


def test_assuming_a_pod_twice_is_a_bug() -> None:
    cache = cache_with(node("n1"))
    info = pod("p")
    cache.assume_pod(info, "n1")
    with pytest.raises(ValueError, match="already in the cache"):
        cache.assume_pod(info, "n1")


def test_forget_undoes_the_assumption() -> None:
    cache = cache_with(node("n1"))
    info = pod("p")
    cache.assume_pod(info, "n1")
    cache.forget_pod(info.uid)
    assert not cache.has_pod(info.uid)
    assert cpu_on(cache, "n1") == 0


def test_forget_leaves_a_confirmed_pod_alone() -> None:
    cache = cache_with(node("n1"))
    info = pod("p", node_name="n1")
    cache.add_or_update_pod(info)
    cache.forget_pod(info.uid)
    assert cache.has_pod(info.uid)
    assert cpu_on(cache, "n1") == 1000


def test_confirmation_replaces_the_assumed_pod_without_double_counting() -> None:
    cache = cache_with(node("n1"))
    info = pod("p")
    cache.assume_pod(info, "n1")
    cache.add_or_update_pod(bound(info, "n1"))
    assert not cache.is_assumed(info.uid)
    assert (cache.pod_count(), cache.assumed_count()) == (1, 0)
    assert cpu_on(cache, "n1") == 1000
    assert cpu_on(cache, "n1") == 1000


def test_confirmation_on_another_node_moves_the_pod() -> None:
    cache = cache_with(node("n1"), node("n2"))
    info = pod("p")
    cache.assume_pod(info, "n1")
    cache.add_or_update_pod(bound(info, "n2"))
    assert (cpu_on(cache, "n1"), cpu_on(cache, "n2")) == (0, 1000)


def test_remove_pod_releases_its_resources() -> None:
    cache = cache_with(node("n1"))
    info = pod("p", node_name="n1")
    cache.add_or_update_pod(info)
    cache.remove_pod(info.uid)
    assert not cache.has_pod(info.uid)
    assert cpu_on(cache, "n1") == 0


def test_informer_update_of_a_pod_replaces_its_usage() -> None:
    cache = cache_with(node("n1"))
    cache.add_or_update_pod(pod("p", cpu="1", node_name="n1"))
    cache.add_or_update_pod(pod("p", cpu="3", node_name="n1"))
    assert cache.pod_count() == 1
    assert cpu_on(cache, "n1") == 3000


# --- nodes coming and going ----------------------------------------------------------------


def test_pod_on_a_node_that_arrives_later() -> None:
    cache = Cache()
    cache.add_or_update_pod(pod("early", node_name="late-node"))
    snapshot = snapshot_of(cache)
    assert snapshot.get("late-node") is None
    assert len(snapshot) == 0
    assert cache.node_count() == 0
    cache.add_or_update_node(node("late-node"))
    cache.update_snapshot(snapshot)
    info = snapshot.get("late-node")
    assert info is not None
    assert info.requested.milli_cpu == 1000
    assert len(info.pods) == 1
    assert_columns_match(snapshot)


def test_removed_node_with_pods_leaves_the_snapshot_but_keeps_the_pods() -> None:
    cache = cache_with(node("n1"), node("n2"))
    info = pod("p", node_name="n1")
    cache.add_or_update_pod(info)
    snapshot = snapshot_of(cache)
    cache.remove_node("n1")
    cache.update_snapshot(snapshot)
    assert [i.name for i in snapshot.node_infos] == ["n2"]
    assert cache.node_count() == 1
    assert cache.has_pod(info.uid)
    assert_columns_match(snapshot)
    cache.add_or_update_node(node("n1"))  # the node comes back: its pod still counts
    cache.update_snapshot(snapshot)
    assert cpu_on(cache, "n1") == 1000
    assert_columns_match(snapshot)


def test_removed_node_placeholder_goes_with_its_last_pod() -> None:
    cache = cache_with(node("n1"))
    info = pod("p", node_name="n1")
    cache.add_or_update_pod(info)
    cache.remove_node("n1")
    cache.remove_pod(info.uid)
    cache.add_or_update_node(node("n1"))  # a fresh node must not inherit old usage
    assert cpu_on(cache, "n1") == 0


def test_removing_an_unknown_node_is_harmless() -> None:
    cache = cache_with(node("n1"))
    cache.remove_node("nope")
    assert cache.node_count() == 1


# --- snapshots -------------------------------------------------------------------------------


def test_snapshot_columns_match_node_infos() -> None:
    cache = cache_with(node("b", cpu="2"), node("a", cpu="8", memory="16Gi"), node("c"))
    cache.add_or_update_pod(pod("p1", cpu="1", node_name="a"))
    cache.add_or_update_pod(pod("p2", cpu="500m", node_name="c"))
    cache.assume_pod(make_pod("p3").req().info(), "c")  # requestless: non-zero defaults
    snapshot = snapshot_of(cache)
    # No zone labels: one zone, listed in the order the nodes arrived (as upstream).
    assert [i.name for i in snapshot.node_infos] == ["b", "a", "c"]
    assert_columns_match(snapshot)
    assert snapshot.columns.allocatable_memory.tolist() == [8 * GI, 16 * GI, 8 * GI]
    assert snapshot.columns.non_zero_cpu.tolist() == [0, 1000, 600]


def test_update_snapshot_replaces_only_changed_nodes() -> None:
    cache = cache_with(node("n1"), node("n2"), node("n3"))
    snapshot = snapshot_of(cache)
    before = {i.name: i for i in snapshot.node_infos}
    cache.assume_pod(pod("p"), "n2")
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1") is before["n1"]
    assert snapshot.get("n3") is before["n3"]
    assert snapshot.get("n2") is not before["n2"]
    assert before["n2"].requested.milli_cpu == 0  # the old copy was not mutated
    assert snapshot.node_infos[snapshot.index["n2"]].requested.milli_cpu == 1000
    assert_columns_match(snapshot)


def test_update_snapshot_without_changes_keeps_everything() -> None:
    cache = cache_with(node("n1"), node("n2"))
    snapshot = snapshot_of(cache)
    infos, columns = list(snapshot.node_infos), snapshot.columns
    cache.update_snapshot(snapshot)
    assert snapshot.node_infos == infos
    assert snapshot.columns is columns


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    cache = cache_with(node("n1"))
    snapshot = snapshot_of(cache)
    cache.assume_pod(pod("p"), "n1")
    info = snapshot.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 0
    assert snapshot.columns.requested_cpu.tolist() == [0]


def test_added_node_rebuilds_order_and_columns() -> None:
    cache = cache_with(node("n1"), node("n3"))
    cache.add_or_update_pod(pod("p", node_name="n3"))
    snapshot = snapshot_of(cache)
    untouched = snapshot.get("n1")
    cache.add_or_update_node(node("n2", cpu="2"))
    cache.update_snapshot(snapshot)
    assert [i.name for i in snapshot.node_infos] == ["n1", "n3", "n2"]  # arrival order
    assert snapshot.get("n1") is untouched
    assert snapshot.columns.allocatable_cpu.tolist() == [4000, 4000, 2000]
    assert snapshot.columns.requested_cpu.tolist() == [0, 1000, 0]
    assert_columns_match(snapshot)


def test_added_and_changed_nodes_in_one_update() -> None:
    cache = cache_with(node("n1"), node("n3"))
    snapshot = snapshot_of(cache)
    cache.add_or_update_node(node("n2"))
    cache.assume_pod(pod("p"), "n3")
    cache.update_snapshot(snapshot)
    assert snapshot.columns.requested_cpu.tolist() == [0, 1000, 0]
    assert_columns_match(snapshot)


def test_removed_node_rebuilds_order_and_columns() -> None:
    cache = cache_with(node("n1"), node("n2"), node("n3"))
    cache.add_or_update_pod(pod("p", node_name="n3"))
    snapshot = snapshot_of(cache)
    cache.remove_node("n2")
    cache.update_snapshot(snapshot)
    assert [i.name for i in snapshot.node_infos] == ["n1", "n3"]
    assert snapshot.get("n2") is None
    assert snapshot.columns.requested_cpu.tolist() == [0, 1000]
    assert_columns_match(snapshot)


def test_node_update_changes_allocatable_in_the_snapshot() -> None:
    cache = cache_with(node("n1", cpu="4"))
    snapshot = snapshot_of(cache)
    cache.add_or_update_node(node("n1", cpu="16"))
    cache.update_snapshot(snapshot)
    assert snapshot.columns.allocatable_cpu.tolist() == [16000]
    assert_columns_match(snapshot)


def test_fresh_snapshot_sees_everything() -> None:
    cache = cache_with(node("n1"), node("n2"))
    snapshot_of(cache)  # consume the changes with one snapshot
    cache.assume_pod(pod("p"), "n1")
    other = snapshot_of(cache)
    assert [i.name for i in other.node_infos] == ["n1", "n2"]
    assert_columns_match(other)


def test_many_changes_between_snapshots() -> None:
    cache = Cache()
    snapshot = Snapshot()
    for round_ in range(5):
        for i in range(round_ * 3, round_ * 3 + 3):
            cache.add_or_update_node(node(f"n{i:02d}"))
        cache.add_or_update_pod(pod(f"p{round_}", node_name=f"n{round_:02d}"))
        if round_ >= 2:
            cache.remove_node(f"n{round_ * 3 - 1:02d}")
        cache.update_snapshot(snapshot)
        reference = snapshot_of(cache)
        assert [i.name for i in snapshot.node_infos] == [i.name for i in reference.node_infos]
        for name in reference.by_name:
            mine, theirs = snapshot.get(name), reference.get(name)
            assert isinstance(mine, NodeInfo) and isinstance(theirs, NodeInfo)
            assert mine.requested == theirs.requested
            assert set(mine.pods) == set(theirs.pods)
        assert_columns_match(snapshot)
