"""Figures kept per snapshot row find the rows to read again by the rows' versions, and
their sums per topology domain are kept from the rows read again.

RowCounts (plugins/_shared/row_counts.py: InterPodAffinity's incoming terms,
PodTopologySpread's matching pods) and ExistingTerms (the existing pods' terms by the
rows holding them) are given the snapshot's ResourceColumns.version beside its rows and
compare those arrays instead of each row's NodeInfo identity. Hypothesis drives a real
Cache and Snapshot through pods added, moved and deleted, nodes added, relabelled and
removed (the snapshot rebuilding its order), and a pod-group trial's assume and undo on
the snapshot alone (the same NodeInfo back in its row under a new version), and after
every step the kept figures, read with versions, without them and alternately, must
equal those read from every node afresh, and so must their sums per domain code of
the zone and hostname columns (DomainSums), read after every step or after several.
"""

from __future__ import annotations

from collections import Counter
from itertools import count

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.cache import Cache
from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.row_counts import RowCounts
from kpysched.plugins.inter_pod_affinity.existing_terms import ExistingTerms, TermRows
from kpysched.plugins.inter_pod_affinity.filtering import required_anti_terms
from tests.unit.builders import make_node
from tests.unit.plugins._shared.test_domain_sums import by_code
from tests.unit.plugins.inter_pod_affinity.test_plugin import pod, t_in

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow])
NODES = tuple(f"n{i}" for i in range(6))
APPS = ("a", "b")
# Interned alike by the pod parser: pods share these terms, as a workload's replicas do.
TERMS = (t_in("app", "zone", "a"), t_in("app", "kubernetes.io/hostname", "b"))
# The keys the kept figures are summed over per domain (DomainSums).
SUMMED_KEYS = ("zone", "kubernetes.io/hostname")

_uids = count()


def _app_a(node: NodeInfo) -> int:
    return sum(1 for other in node.pods.values() if other.pod.metadata.labels.get("app") == "a")


def _walked_terms(rows: list[NodeInfo]) -> dict[tuple[int, int], dict[int, int]]:
    """(id(term), weight) -> pods with it per row, read from every row."""
    found: dict[tuple[int, int], Counter[int]] = {}
    for row, node in enumerate(rows):
        for term, weight in required_anti_terms(node):
            found.setdefault((id(term), weight), Counter())[row] += 1
    return {key: dict(per_row) for key, per_row in found.items()}


def _kept_terms(existing: ExistingTerms[object], snapshot: Snapshot, with_versions: bool
                ) -> dict[tuple[int, int], dict[int, int]]:
    versions = snapshot.columns.version if with_versions else None
    kept: dict[tuple[int, int], dict[int, int]] = {}
    for term, weight, held in existing.current(snapshot.node_infos, versions):
        rows, pods = held.arrays()
        assert len(rows) == len(set(rows.tolist()))  # one entry per row
        assert (pods > 0).all()
        kept[(id(term), weight)] = dict(zip(rows.tolist(), pods.tolist(), strict=True))
    return kept


def _node(name: str, zone: str | None) -> api.Node:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["zone"] = zone
    return make_node(name).labels(labels).obj()


def _placed(app: str, term: int, node: str) -> PodInfo:
    """A pod of `app` on `node`, with TERMS[term] as its required anti-affinity (none
    for -1)."""
    return PodInfo.of(pod(labels={"app": app}, node=node,
                          required_anti=[TERMS[term]] if term >= 0 else []))


def _placed_again(placed: PodInfo, node: str) -> PodInfo:
    """The same pod (uid, labels, terms) reported on `node`."""
    moved = msgspec.structs.replace(
        placed.pod, spec=msgspec.structs.replace(placed.pod.spec, node_name=node))
    return PodInfo.of(moved)


operations = st.lists(st.one_of(
    st.tuples(st.just("add pod"), st.sampled_from(NODES), st.sampled_from(APPS),
              st.integers(-1, len(TERMS) - 1)),
    st.tuples(st.just("move pod"), st.integers(0, 50), st.sampled_from(NODES)),
    st.tuples(st.just("delete pod"), st.integers(0, 50)),
    st.tuples(st.just("relabel node"), st.sampled_from(NODES),
              st.sampled_from(("z1", "z2", "z3", "none"))),
    st.tuples(st.just("remove node"), st.sampled_from(NODES)),
    st.tuples(st.just("add node"), st.sampled_from(NODES)),
    st.tuples(st.just("trial"), st.sampled_from(NODES), st.sampled_from(APPS)),
    st.tuples(st.just("read"), st.sampled_from(("versions", "identity", "both", "no sums"))),
), min_size=1, max_size=25)


@_SETTINGS
@given(steps=operations, start=st.integers(1, len(NODES)))
def test_kept_rows_read_by_version_equal_every_row_read_afresh(
        steps: list[tuple[object, ...]], start: int) -> None:
    cache, snapshot = Cache(), Snapshot()
    for name in NODES[:start]:
        cache.add_or_update_node(_node(name, "z1"))
    placed: list[PodInfo] = []
    app_a = RowCounts(_app_a)
    existing: ExistingTerms[object] = ExistingTerms(required_anti_terms)
    read = "versions"

    def check(how: str) -> None:
        rows = snapshot.node_infos
        uses = (True, False) if how in ("both", "no sums") else (how == "versions",)
        for with_versions in uses:
            versions = snapshot.columns.version if with_versions else None
            assert app_a.counts(rows, versions).tolist() == [_app_a(node) for node in rows]
            assert _kept_terms(existing, snapshot, with_versions) == _walked_terms(rows)
        if how == "no sums":
            return  # the rows read again pile up for the next read of the sums
        walked = _walked_terms(rows)
        for key in SUMMED_KEYS:
            column = snapshot.labels.column(key)
            per_row = np.array([_app_a(node) for node in rows], dtype=np.int64)
            assert app_a.domain_sums(key, column).tolist() == by_code(column, per_row)
            for term, weight, held in existing.current(rows, snapshot.columns.version):
                per_row = np.zeros(len(rows), dtype=np.int64)
                for row, pods in walked[(id(term), weight)].items():
                    per_row[row] = pods
                assert held.domain_sums(key, column).tolist() == by_code(column, per_row)

    cache.update_snapshot(snapshot)
    check("both")
    for step in steps:
        kind = step[0]
        if kind == "add pod":
            _, node, app, term = step
            placed.append(_placed(str(app), int(str(term)), str(node)))
            cache.add_or_update_pod(placed[-1])
        elif kind == "move pod" and placed:
            _, index, node = step
            at = int(str(index)) % len(placed)
            placed[at] = _placed_again(placed[at], str(node))
            cache.add_or_update_pod(placed[at])
        elif kind == "delete pod" and placed:
            _, index = step
            cache.remove_pod(placed.pop(int(str(index)) % len(placed)).uid)
        elif kind == "relabel node":
            _, node, zone = step
            cache.add_or_update_node(_node(str(node), None if zone == "none" else str(zone)))
        elif kind == "remove node":
            cache.remove_node(str(step[1]))
        elif kind == "add node":
            cache.add_or_update_node(_node(str(step[1]), "z2"))
        elif kind == "trial" and str(step[1]) in snapshot.by_name:
            # A pod-group trial: assumed on the snapshot alone, read, then undone.
            _, node, app = step
            trial = PodInfo.of(pod(labels={"app": str(app)}, node=str(node),
                                   required_anti=[TERMS[0]]))
            undo = snapshot.assume_pod(trial, str(node))
            check(read)
            undo()
        elif kind == "read":
            read = str(step[1])
        cache.update_snapshot(snapshot)
        check(read)


def test_term_rows_keep_one_entry_per_row_through_swaps() -> None:
    """Rows leaving from the middle move the last entry into their place."""
    held = TermRows()
    for row, added in ((3, 1), (7, 2), (1, 1), (9, 4)):
        held.add(row, added)
    held.add(7, -2)  # leaves: row 9 takes its entry
    held.add(3, 2)
    held.add(1, -1)
    rows, pods = held.arrays()
    assert dict(zip(rows.tolist(), pods.tolist(), strict=True)) == {3: 3, 9: 4}
    held.add(3, -3)
    held.add(9, -4)
    assert not held
    assert held.arrays()[0].size == 0
    for row in range(10):  # grows past its first arrays
        held.add(row, row + 1)
    rows, pods = held.arrays()
    assert np.array_equal(rows, np.arange(10)) and np.array_equal(pods, np.arange(1, 11))
