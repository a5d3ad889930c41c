"""InterPodAffinity's vector PreFilter and Filter agree with the per-node forms.

Hypothesis draws nodes (zone/rack/hostname labels, some missing), pods on them with
labels and their own required anti-affinity (so the existing pods' check has work),
and an incoming pod with required affinity and anti-affinity terms over those keys,
some selecting itself. The verdicts must be the same on every row, also after
PreFilter's AddPod and RemovePod changed the counts (as preemption's dry runs and
nominated pods do). PreFilter's counts over the label columns, kept per node across
cycles, must equal the ones counted node by node, also after a node's pods changed.
PreScore's topology score from the existing pods' distinct terms must equal the walk
over every pod with affinity.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.inter_pod_affinity import InterPodAffinity, scoring
from kpysched.plugins.inter_pod_affinity.common import incoming_weighted_terms
from kpysched.plugins.inter_pod_affinity.existing_terms import ExistingTerms
from kpysched.plugins.inter_pod_affinity.filtering import PreFilterState, compute_state
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    affinity,
    cluster,
    plugin,
    pod,
    t_in,
    weighted,
)

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=200,
                     suppress_health_check=[HealthCheck.too_slow])
KEYS = ("zone", "rack", "kubernetes.io/hostname")
APPS = ("a", "b", "c")


@st.composite
def node_labels(draw: st.DrawFn, name: str) -> dict[str, str]:
    labels = {}
    if draw(st.integers(0, 6)):
        labels["kubernetes.io/hostname"] = name
    if draw(st.integers(0, 4)):
        labels["zone"] = draw(st.sampled_from(("z1", "z2")))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(("r1", "r2", "r3")))
    return labels


def terms(draw: st.DrawFn, most: int) -> list[api.PodAffinityTerm]:
    return [t_in("app", draw(st.sampled_from(KEYS)), draw(st.sampled_from(APPS)))
            for _ in range(draw(st.integers(0, most)))]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[str, dict[str, str]], list[api.Pod]]:
    names = [f"n{i}" for i in range(draw(st.integers(1, 7)))]
    nodes = {name: draw(node_labels(name)) for name in names}
    pods = [pod(labels={"app": draw(st.sampled_from(APPS))},
                node=draw(st.sampled_from(names)), required_anti=terms(draw, 1))
            for _ in range(draw(st.integers(0, 10)))]
    return nodes, pods


@_SETTINGS
@given(data=st.data())
def test_the_vector_filter_is_the_per_node_filter_on_every_row(data: st.DataObject) -> None:
    nodes, pods = data.draw(clusters())
    snapshot = cluster(nodes, pods)
    affinity = plugin(snapshot)
    incoming = PodInfo.of(pod("incoming", labels={"app": data.draw(st.sampled_from(APPS))},
                              required=terms(data.draw, 2),
                              required_anti=terms(data.draw, 2)))
    state = CycleState()
    _, status = affinity.pre_filter(state, incoming, snapshot.node_infos)
    if not status.ok:
        return  # skipped: nothing for Filter to judge
    assert_counted_as_node_by_node(affinity, state, incoming)

    def agree() -> None:
        mask = affinity.filter_vector(state, incoming, snapshot)
        assert mask is not None
        assert mask.tolist() == [affinity.filter(state, incoming, info).ok
                                 for info in snapshot.node_infos]

    agree()
    row = data.draw(st.integers(0, len(snapshot.node_infos) - 1))
    node = snapshot.node_infos[row]
    added = PodInfo.of(pod(labels={"app": data.draw(st.sampled_from(APPS))},
                           node=node.name, required_anti=terms(data.draw, 1)))
    assert affinity.add_pod(state, incoming, added, node).ok
    agree()
    if node.pods:
        removed = next(iter(node.pods.values()))
        assert affinity.remove_pod(state, incoming, removed, node).ok
        agree()

    # The next cycle, after a pod joined that node: its counts are taken again.
    grown = node.clone()
    grown.add_pod(added)
    snapshot.replace(grown)
    state = CycleState()
    _, status = affinity.pre_filter(state, incoming, snapshot.node_infos)
    assert status.ok
    assert_counted_as_node_by_node(affinity, state, incoming)
    agree()

    # And the cycle after its pods left again (existing terms forgotten for that row).
    emptied = grown.clone()
    for uid in list(emptied.pods):
        emptied.remove_pod(uid)
    snapshot.replace(emptied)
    state = CycleState()
    _, status = affinity.pre_filter(state, incoming, snapshot.node_infos)
    if status.ok:
        assert_counted_as_node_by_node(affinity, state, incoming)
        agree()


def assert_counted_as_node_by_node(affinity: InterPodAffinity, state: CycleState,
                                   incoming: PodInfo) -> None:
    snapshot = affinity._handle.snapshot
    kept: PreFilterState = state.get("PreFilterInterPodAffinity")
    by_node = compute_state(incoming, list(snapshot.node_infos), snapshot,
                            affinity._handle.namespace_labels)
    assert kept.affinity_counts.pairs() == by_node.affinity_counts.pairs()
    assert kept.anti_affinity_counts.pairs() == by_node.anti_affinity_counts.pairs()
    assert (kept.existing_anti_affinity_counts.pairs()
            == by_node.existing_anti_affinity_counts.pairs())


def test_missing_prefilter_state_falls_back_to_the_per_node_error() -> None:
    snapshot = cluster({"n0": {"zone": "z1"}})
    incoming = PodInfo.of(pod("incoming", required=[t_in("app", "zone", "a")]))
    assert plugin(snapshot).filter_vector(CycleState(), incoming, snapshot) is None


@st.composite
def scoring_clusters(draw: st.DrawFn) -> tuple[dict[str, dict[str, str]], list[api.Pod]]:
    """Existing pods with any mix of required affinity, preferred and preferred anti
    terms (some sharing equal terms, as replicas do), on nodes with some labels."""
    names = [f"n{i}" for i in range(draw(st.integers(1, 7)))]
    nodes = {name: draw(node_labels(name)) for name in names}

    def weighted_terms() -> list[api.WeightedPodAffinityTerm]:
        return [weighted(draw(st.integers(1, 3)), term)
                for term in terms(draw, 2)]

    pods = [pod(labels={"app": draw(st.sampled_from(APPS))},
                node=draw(st.sampled_from(names)),
                spec_affinity=affinity(required=terms(draw, 1),
                                       required_anti=terms(draw, 1),
                                       preferred=weighted_terms(),
                                       preferred_anti=weighted_terms()))
            for _ in range(draw(st.integers(0, 10)))]
    return nodes, pods


def replace_a_node_s_pods(data: st.DataObject, snapshot: Snapshot, joining: int) -> None:
    """The next cycle's snapshot: one drawn node lost a pod and gained up to `joining`
    drawn pods (with their own affinity), as a new NodeInfo in its row."""
    row = data.draw(st.integers(0, len(snapshot.node_infos) - 1))
    changed = snapshot.node_infos[row].clone()
    for uid in list(changed.pods)[:1]:
        changed.remove_pod(uid)
    _, more = data.draw(scoring_clusters())
    for extra in more[:joining]:
        extra.spec.node_name = changed.name
        changed.add_pod(PodInfo.of(extra))
    snapshot.replace(changed)


@_SETTINGS
@given(data=st.data(), hard_weight=st.sampled_from((0, 1, 5)))
def test_existing_terms_score_is_the_walk_over_pods_with_affinity(
        data: st.DataObject, hard_weight: int) -> None:
    """With no preferred terms of its own, the incoming pod's topology score from the
    rows holding each distinct existing term equals the walk over every pod with
    affinity, zero-sum pairs included; also after a node's pods change."""
    nodes, pods = data.draw(scoring_clusters())
    snapshot = cluster(nodes, pods)
    existing = ExistingTerms(scoring.scoring_terms(hard_weight))
    incoming = PodInfo.of(pod("incoming", labels={"app": data.draw(st.sampled_from(APPS))}))

    def agree() -> None:
        walked = scoring.topology_score(
            incoming, snapshot.have_pods_with_affinity.values(), all_pods=False,
            preferred=(), preferred_anti=(), namespace_labels={}, hard_weight=hard_weight)
        assert scoring.existing_terms_score(incoming, snapshot, existing, {}).as_dict() == walked

    agree()
    replace_a_node_s_pods(data, snapshot, joining=2)
    agree()


@_SETTINGS
@given(data=st.data(), hard_weight=st.sampled_from((0, 1, 5)))
def test_preferred_terms_kept_per_node_score_as_the_walk_across_cycles(
        data: st.DataObject, hard_weight: int) -> None:
    """An incoming pod with a few preferred terms (a workload's replicas) is scored from
    its terms' matching pods counted per node and kept across cycles: the plugin's
    PreScore state equals the walk over every pod, in the first cycle and in the next
    ones, after a node's pods changed (one left, others joined) and after a node with
    pods was emptied, with the same plugin (and so the same kept counts) throughout."""
    nodes, pods = data.draw(scoring_clusters())
    snapshot = cluster(nodes, pods)
    affinity_plugin = plugin(snapshot, hardPodAffinityWeight=hard_weight)
    preferred = [weighted(data.draw(st.integers(1, 3)), found)
                 for found in terms(data.draw, 2)]
    preferred_anti = [weighted(data.draw(st.integers(1, 3)), found)
                      for found in terms(data.draw, 2)]
    if not preferred and not preferred_anti:
        preferred = [weighted(1, t_in("app", "zone", "a"))]
    incoming = PodInfo.of(pod("incoming", labels={"app": data.draw(st.sampled_from(APPS))},
                              spec_affinity=affinity(preferred=preferred,
                                                     preferred_anti=preferred_anti)))
    lookup = affinity_plugin._handle.namespace_labels
    assert scoring.rows_pay(
        incoming_weighted_terms(incoming.pod_affinity.preferred, lookup),
        incoming_weighted_terms(incoming.pod_affinity.preferred_anti, lookup))

    def agree() -> None:
        walked = scoring.topology_score(
            incoming, snapshot.node_infos, all_pods=True,
            preferred=incoming_weighted_terms(incoming.pod_affinity.preferred, lookup),
            preferred_anti=incoming_weighted_terms(incoming.pod_affinity.preferred_anti,
                                                   lookup),
            namespace_labels=lookup(incoming.pod.metadata.namespace) or {},
            hard_weight=hard_weight)
        state = CycleState()
        status = affinity_plugin.pre_score(state, incoming, snapshot.node_infos)
        if not walked:
            assert status.code == Code.SKIP
        else:
            assert status.ok
            assert state.get("PreScoreInterPodAffinity").topology_score.as_dict() == walked

    agree()
    replace_a_node_s_pods(data, snapshot, joining=3)
    agree()
    emptied = snapshot.node_infos[data.draw(st.integers(0, len(snapshot.node_infos) - 1))]
    emptied = emptied.clone()
    for uid in list(emptied.pods):
        emptied.remove_pod(uid)
    snapshot.replace(emptied)
    agree()


@_SETTINGS
@given(data=st.data(), hard_weight=st.sampled_from((0, 1, 5)))
def test_the_vector_score_and_normalize_are_the_per_node_ones(
        data: st.DataObject, hard_weight: int) -> None:
    """score_rows (over any subset of rows, as the cycle scores the feasible ones) and
    normalize_vector give, row for row, what score and normalize_score give node by
    node; score_vector is score_rows over every row."""
    nodes, pods = data.draw(scoring_clusters())
    snapshot = cluster(nodes, pods)
    affinity_plugin = plugin(snapshot, hardPodAffinityWeight=hard_weight)
    incoming = PodInfo.of(pod(
        "incoming", labels={"app": data.draw(st.sampled_from(APPS))},
        spec_affinity=affinity(
            preferred=[weighted(data.draw(st.integers(1, 3)), found)
                       for found in terms(data.draw, 2)],
            preferred_anti=[weighted(data.draw(st.integers(1, 3)), found)
                            for found in terms(data.draw, 2)])))
    state = CycleState()
    if not affinity_plugin.pre_score(state, incoming, snapshot.node_infos).ok:
        return  # skipped: no plugin score at all
    picked = sorted(data.draw(st.sets(st.integers(0, len(snapshot.node_infos) - 1),
                                      min_size=1)))
    rows = np.array(picked, dtype=np.int64)
    by_node = [NodeScore(snapshot.node_infos[row].name,
                         affinity_plugin.score(state, incoming, snapshot.node_infos[row])[0])
               for row in picked]
    raw = affinity_plugin.score_rows(state, incoming, snapshot, rows)
    assert raw is not None
    assert raw.tolist() == [entry.score for entry in by_node]
    every_row = affinity_plugin.score_vector(state, incoming, snapshot)
    assert every_row is not None
    assert every_row[rows].tolist() == raw.tolist()
    assert affinity_plugin.normalize_score(state, incoming, by_node).ok
    assert (affinity_plugin.normalize_vector(state, incoming, raw).tolist()
            == [entry.score for entry in by_node])


def test_pairs_whose_weights_cancel_are_kept() -> None:
    """+2 and -2 on one node still make a pair (scored, not skipped), as the walk does."""
    key = "kubernetes.io/hostname"
    toward = pod(labels={"app": "b"}, node="n0", spec_affinity=affinity(
        preferred=[weighted(2, t_in("app", key, "a"))]))
    away = pod(labels={"app": "c"}, node="n0", spec_affinity=affinity(
        preferred_anti=[weighted(2, t_in("app", key, "a"))]))
    snapshot = cluster({"n0": {key: "n0"}, "n1": {key: "n1"}}, [toward, away])
    incoming = PodInfo.of(pod("incoming", labels={"app": "a"}))
    scored = scoring.existing_terms_score(incoming, snapshot,
                                          ExistingTerms(scoring.scoring_terms(1)), {})
    assert scored  # a pair: PreScore scores, it does not skip
    assert scored.as_dict() == {key: {"n0": 0}}


def test_existing_terms_are_kept_only_where_many_nodes_hold_them() -> None:
    from kpysched.plugins.inter_pod_affinity.existing_terms import worth_keeping
    assert not worth_keeping(0, 15000)  # nothing to walk: no identity pass either
    assert not worth_keeping(100, 15000)
    assert worth_keeping(1000, 15000)
    assert worth_keeping(1, 7)
