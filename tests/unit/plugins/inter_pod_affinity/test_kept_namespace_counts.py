"""InterPodAffinity's counts of the incoming pod's terms, kept per node across cycles, for
terms that pick namespaces by their labels (namespaceSelector).

A term's verdict on a namespace depends on that namespace's labels, which change without
any node's pods changing, so such counts are kept under the handle's
namespace_labels_version and counted afresh once a namespace was added, relabelled or
deleted. Hypothesis draws clusters with pods in several namespaces (one unknown to the
namespace informer), an incoming pod whose terms mix namespace lists and selectors, and
then cycle after cycle with the same plugin (so the same kept counts): namespaces
relabelled, added and deleted, and nodes' pods changed between cycles. PreFilter's counts
and PreScore's topology score must equal the walk over every pod in every cycle, for
v1.37's reading of the selector and v1.36's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.pod_affinity import affinity_terms
from kpysched.plugins._shared.row_counts import RowCountsCache
from kpysched.plugins.inter_pod_affinity import plugin as ipa
from kpysched.plugins.inter_pod_affinity import scoring
from kpysched.plugins.inter_pod_affinity.common import (
    counted_under,
    incoming_terms,
    incoming_weighted_terms,
)
from kpysched.plugins.inter_pod_affinity.filtering import PreFilterState, compute_state
from kpysched.plugins.inter_pod_affinity.plugin import InterPodAffinity, InterPodAffinityArgs
from tests.unit.builders import FakeHandle
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    NAMESPACES as FIXTURE_NAMESPACES,
)
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    affinity,
    cluster,
    pod,
    req,
    selector,
    term,
)
from tests.unit.plugins.inter_pod_affinity.test_pod_columns import (
    NAMESPACES,
    affinity_terms_,
    clusters,
    pod_labels,
    weighted_terms,
)

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=250,
                     suppress_health_check=[HealthCheck.too_slow])
CYCLES = 4
TEAMS = ("team1", "team2", None)  # None: the namespace has no team label


def plugin_with(snapshot: Snapshot, release: int, hard_weight: int = 1
                ) -> InterPodAffinity:
    """The plugin over its own copy of the fixtures' namespaces (the test relabels them)."""
    handle = FakeHandle(snapshot_value=snapshot,
                        namespaces={name: dict(labels)
                                    for name, labels in FIXTURE_NAMESPACES.items()},
                        features_value=Features(release=release))
    return ipa.new(InterPodAffinityArgs(hard_pod_affinity_weight=hard_weight), handle)


def change_namespaces(data: st.DataObject, namespaces: dict[str, dict[str, str]]) -> None:
    """What happens to namespaces between two cycles: one relabelled (its team changed or
    dropped), one added (the pods' unknown namespace becoming known), one deleted, or
    none changed."""
    change = data.draw(st.sampled_from(("relabel", "add", "delete", "none")))
    name = data.draw(st.sampled_from(NAMESPACES))
    team = data.draw(st.sampled_from(TEAMS))
    if change == "delete":
        namespaces.pop(name, None)
    elif change != "none":
        labels = namespaces.setdefault(name, {}) if change == "relabel" else {}
        labels.pop("team", None)
        if team is not None:
            labels["team"] = team
        namespaces[name] = labels


def change_a_node_s_pods(data: st.DataObject, snapshot: Snapshot) -> None:
    """Sometimes, also a node's pods change: one leaves, one of any namespace joins."""
    if not data.draw(st.booleans()):
        return
    row = data.draw(st.integers(0, len(snapshot.node_infos) - 1))
    changed: NodeInfo = snapshot.node_infos[row].clone()
    for uid in list(changed.pods)[:data.draw(st.integers(0, 1))]:
        changed.remove_pod(uid)
    if data.draw(st.booleans()):
        changed.add_pod(PodInfo.of(pod(ns=data.draw(st.sampled_from(NAMESPACES)),
                                       labels=data.draw(pod_labels()), node=changed.name)))
    snapshot.replace(changed)


@_SETTINGS
@given(data=st.data(), release=st.sampled_from((36, 37)))
def test_required_terms_kept_per_node_count_as_the_walk_while_namespaces_change(
        data: st.DataObject, release: int) -> None:
    nodes, pods = data.draw(clusters())
    snapshot = cluster(nodes, pods)
    instance = plugin_with(snapshot, release)
    handle = instance._handle
    assert isinstance(handle, FakeHandle)
    incoming = PodInfo.of(pod(
        "incoming", ns=data.draw(st.sampled_from(NAMESPACES)), labels=data.draw(pod_labels()),
        spec_affinity=affinity(required=data.draw(st.lists(affinity_terms_(), max_size=2)),
                               required_anti=data.draw(st.lists(affinity_terms_(),
                                                                min_size=1, max_size=2)))))
    for _ in range(CYCLES):
        state = CycleState()
        _, status = instance.pre_filter(state, incoming, snapshot.node_infos)
        assert status.ok  # the pod has required terms: PreFilter never skips it
        kept: PreFilterState = state.get("PreFilterInterPodAffinity")
        walked = compute_state(incoming, list(snapshot.node_infos), snapshot,
                               handle.namespace_labels, unresolved_selectors=release < 37)
        assert kept.affinity_counts.pairs() == walked.affinity_counts.pairs()
        assert kept.anti_affinity_counts.pairs() == walked.anti_affinity_counts.pairs()
        change_namespaces(data, handle.namespaces)
        change_a_node_s_pods(data, snapshot)


@_SETTINGS
@given(data=st.data(), release=st.sampled_from((36, 37)), hard_weight=st.sampled_from((0, 1)))
def test_preferred_terms_kept_per_node_score_as_the_walk_while_namespaces_change(
        data: st.DataObject, release: int, hard_weight: int) -> None:
    nodes, pods = data.draw(clusters())
    snapshot = cluster(nodes, pods)
    instance = plugin_with(snapshot, release, hard_weight)
    handle = instance._handle
    assert isinstance(handle, FakeHandle)
    preferred = data.draw(weighted_terms(2))
    preferred_anti = data.draw(weighted_terms(2))
    if not preferred and not preferred_anti:
        preferred = [data.draw(weighted_terms(1).filter(bool))[0]]
    incoming = PodInfo.of(pod(
        "incoming", ns=data.draw(st.sampled_from(NAMESPACES)), labels=data.draw(pod_labels()),
        spec_affinity=affinity(preferred=preferred, preferred_anti=preferred_anti)))
    lookup = handle.namespace_labels
    unresolved = release < 37
    for _ in range(CYCLES):
        # Fresh terms for the walk each cycle: they remember namespace verdicts.
        preferred_terms = incoming_weighted_terms(incoming.pod_affinity.preferred, lookup,
                                                  unresolved_selectors=unresolved)
        anti_terms = incoming_weighted_terms(incoming.pod_affinity.preferred_anti, lookup,
                                             unresolved_selectors=unresolved)
        assert scoring.rows_pay(preferred_terms, anti_terms)
        walked = scoring.topology_score(
            incoming, snapshot.node_infos, all_pods=True, preferred=preferred_terms,
            preferred_anti=anti_terms, namespace_labels=lookup(incoming.namespace) or {},
            hard_weight=hard_weight)
        state = CycleState()
        status = instance.pre_score(state, incoming, snapshot.node_infos)
        if walked:
            assert status.ok
            assert state.get("PreScoreInterPodAffinity").topology_score.as_dict() == walked
        else:
            assert status.code == Code.SKIP
        change_namespaces(data, handle.namespaces)
        change_a_node_s_pods(data, snapshot)


TEAM1_ANTI = term(req("app", "In", "a"), topology="kubernetes.io/hostname",
                  ns_selector=selector(req("team", "In", "team1")))


def test_a_relabelled_namespace_changes_the_next_cycle_s_verdict() -> None:
    """The case the version is for: no node changes, only a namespace's labels. Its pod
    stops counting against the anti-affinity term once its namespace leaves team1, and
    counts again once it is back."""
    snapshot = cluster({"n0": {"kubernetes.io/hostname": "n0"}},
                       [pod(ns="subteam1.team1", labels={"app": "a"}, node="n0")])
    instance = plugin_with(snapshot, 37)
    handle = instance._handle
    assert isinstance(handle, FakeHandle)
    incoming = PodInfo.of(pod("incoming", ns="subteam1.team2", required_anti=[TEAM1_ANTI]))

    def fits() -> bool:
        state = CycleState()
        assert instance.pre_filter(state, incoming, snapshot.node_infos)[1].ok
        mask = instance.filter_vector(state, incoming, snapshot)
        assert mask is not None
        return bool(mask[0])

    assert not fits()
    handle.namespaces["subteam1.team1"]["team"] = "team3"
    assert fits()
    handle.namespaces["subteam1.team1"]["team"] = "team1"
    assert not fits()


def test_kept_counts_are_dropped_when_their_version_changes() -> None:
    """RowCountsCache: the same version keeps the counts (only changed rows recounted);
    another version counts every row afresh with the new counting function."""
    snapshot = cluster({"n0": {}, "n1": {}}, [pod(node="n0"), pod(node="n1"), pod(node="n1")])
    rows = snapshot.node_infos
    cache = RowCountsCache(4)
    asked: list[str] = []

    def pods_on(node: NodeInfo) -> int:
        asked.append(node.name)
        return len(node.pods)

    def twice(node: NodeInfo) -> int:
        asked.append(node.name)
        return 2 * len(node.pods)

    assert cache.get("k", pods_on, 1).counts(rows).tolist() == [1, 2]
    assert cache.get("k", twice, 1).counts(rows).tolist() == [1, 2]  # kept: not asked again
    assert asked == ["n0", "n1"]
    assert cache.get("k", twice, 2).counts(rows).tolist() == [2, 4]
    assert asked == ["n0", "n1", "n0", "n1"]
    assert np.array_equal(cache.get("k", pods_on, 2).counts(rows), [2, 4])


@pytest.mark.parametrize(("ns_selector", "reads"), [
    pytest.param(None, False, id="no selector: the pod's own namespace"),
    pytest.param(selector(), False, id="an empty selector: every namespace"),
    pytest.param(selector(req("team", "In", "team1")), True, id="a selector reads labels"),
])
def test_only_terms_reading_namespace_labels_are_counted_under_the_version(
        ns_selector: api.LabelSelector | None, reads: bool) -> None:
    parsed = affinity_terms(pod(required_anti=[term(req("app", "In", "a"), topology="zone",
                                                    ns_selector=ns_selector)]))
    terms = incoming_terms(parsed.required_anti, lambda _: None)
    assert counted_under(terms, 7) == (7 if reads else None)
