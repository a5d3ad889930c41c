"""InterPodAffinity over pod columns (pod_columns.py) agrees with matching pod by pod.

Hypothesis draws clusters with pods in several namespaces (some unknown to the
namespace informer), nodes missing some topology keys, and an incoming pod whose
terms mix In / NotIn / Exists / DoesNotExist, namespaces and namespace selectors,
with preferred weights that may cancel. PreScore's topology score from columns, and
PreFilter's counts of the incoming pod's required terms from columns, must equal the
walk over every pod, pair for pair (zero-sum pairs included). A pod with thousands
of preferred terms must be scored without matching pod by pod.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.pod_affinity import Selector, affinity_terms
from kpysched.plugins.inter_pod_affinity import filtering, scoring
from kpysched.plugins.inter_pod_affinity.common import (
    IncomingTerm,
    TopologyCounts,
    incoming_terms,
    incoming_weighted_terms,
)
from kpysched.plugins.inter_pod_affinity.pod_columns import COLUMN_TERMS, PodColumns
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    affinity,
    cluster,
    plugin,
    pod,
    req,
    selector,
    t_in,
    term,
    weighted,
)

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=300,
                     suppress_health_check=[HealthCheck.too_slow])
KEYS = ("zone", "rack", "kubernetes.io/hostname", "absent-everywhere")
# "ghost" is unknown to the namespace informer; the others are the fixtures' namespaces.
NAMESPACES = ("", "subteam1.team1", "subteam2.team1", "subteam1.team2", "ghost")
VALUES = ("a", "b", "c")
HOSTNAME = "kubernetes.io/hostname"


@st.composite
def node_labels(draw: st.DrawFn, name: str) -> dict[str, str]:
    labels = {}
    if draw(st.integers(0, 4)):
        labels[HOSTNAME] = name
    if draw(st.integers(0, 3)):
        labels["zone"] = draw(st.sampled_from(("z1", "z2")))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(("r1", "r2", "r3")))
    return labels


@st.composite
def pod_labels(draw: st.DrawFn) -> dict[str, str]:
    labels = {}
    if draw(st.integers(0, 3)):
        labels["app"] = draw(st.sampled_from(VALUES))
    if draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(VALUES))
    return labels


@st.composite
def requirements(draw: st.DrawFn) -> api.LabelSelectorRequirement:
    key = draw(st.sampled_from(("app", "tier", "nowhere")))
    operator = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
    if operator in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True))
        return req(key, operator, *values)
    return req(key, operator)


@st.composite
def affinity_terms_(draw: st.DrawFn) -> api.PodAffinityTerm:
    namespaces = draw(st.sampled_from(((), ("subteam1.team1",), ("", "ghost"))))
    ns_selector = draw(st.sampled_from((
        None, selector(), selector(req("team", "In", "team1")), selector(req("team", "Exists")),
        selector(req("team", "DoesNotExist")))))
    topology = draw(st.sampled_from(KEYS))
    if not draw(st.integers(0, 12)):
        # No labelSelector at all: selects nothing.
        return api.PodAffinityTerm(topology_key=topology, label_selector=None,
                                   namespaces=list(namespaces), namespace_selector=ns_selector)
    found = term(*draw(st.lists(requirements(), max_size=2)), topology=topology,
                 namespaces=namespaces, ns_selector=ns_selector)
    if draw(st.integers(0, 4)) == 0 and found.label_selector is not None:
        found.label_selector.match_labels = {"app": draw(st.sampled_from(VALUES))}
    return found


@st.composite
def weighted_terms(draw: st.DrawFn, most: int) -> list[api.WeightedPodAffinityTerm]:
    return [weighted(draw(st.integers(1, 3)), draw(affinity_terms_()))
            for _ in range(draw(st.integers(0, most)))]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[str, dict[str, str]], list[api.Pod]]:
    names = [f"n{i}" for i in range(draw(st.integers(1, 7)))]
    nodes = {name: draw(node_labels(name)) for name in names}
    pods = []
    for _ in range(draw(st.integers(0, 14))):
        own = None
        if not draw(st.integers(0, 3)):
            own = affinity(required=[draw(affinity_terms_())] if draw(st.booleans()) else [],
                           preferred=draw(weighted_terms(1)),
                           preferred_anti=draw(weighted_terms(1)))
        pods.append(pod(ns=draw(st.sampled_from(NAMESPACES)), labels=draw(pod_labels()),
                        node=draw(st.sampled_from(names)), spec_affinity=own))
    return nodes, pods


def _cancelling(data: st.DataObject, preferred: list[api.WeightedPodAffinityTerm]
                ) -> list[api.WeightedPodAffinityTerm]:
    """Preferred anti-affinity terms, some repeating a preferred term with its weight
    (so the pair's weights cancel to 0)."""
    anti = data.draw(weighted_terms(3))
    for entry in preferred:
        if data.draw(st.booleans()):
            anti.append(weighted(entry.weight, entry.pod_affinity_term))
    return anti


@_SETTINGS
@given(data=st.data(), hard_weight=st.sampled_from((0, 1, 4)))
def test_preferred_terms_by_columns_score_as_the_walk_over_every_pod(
        data: st.DataObject, hard_weight: int) -> None:
    nodes, pods = data.draw(clusters())
    snapshot = cluster(nodes, pods)
    instance = plugin(snapshot, hardPodAffinityWeight=hard_weight)
    lookup = instance._handle.namespace_labels
    preferred_api = data.draw(weighted_terms(3))
    incoming_pod = pod("incoming", ns=data.draw(st.sampled_from(NAMESPACES)),
                       labels=data.draw(pod_labels()),
                       spec_affinity=affinity(preferred=preferred_api,
                                              preferred_anti=_cancelling(data, preferred_api)))
    incoming = PodInfo.of(incoming_pod)
    own_labels = lookup(incoming_pod.metadata.namespace) or {}

    def terms() -> tuple[tuple[IncomingTerm, ...], tuple[IncomingTerm, ...]]:
        # Fresh terms each time: they remember namespace verdicts.
        return (incoming_weighted_terms(incoming.pod_affinity.preferred, lookup),
                incoming_weighted_terms(incoming.pod_affinity.preferred_anti, lookup))

    walked = scoring.topology_score(incoming, snapshot.node_infos, all_pods=True,
                                    preferred=terms()[0], preferred_anti=terms()[1],
                                    namespace_labels=own_labels, hard_weight=hard_weight)
    # The incoming terms' part from columns, for any number of terms, plus the
    # existing pods' own terms walked.
    by_columns = scoring.incoming_terms_score(snapshot, *terms())
    scoring.add_scores(by_columns, scoring.topology_score(
        incoming, snapshot.node_infos, all_pods=False, preferred=(), preferred_anti=(),
        namespace_labels=own_labels, hard_weight=hard_weight))
    assert by_columns == walked

    # And the plugin, whichever way it takes, leaves the same state (or skips).
    state = CycleState()
    status = instance.pre_score(state, incoming, snapshot.node_infos)
    if not walked:
        assert status.code == Code.SKIP
    else:
        assert status.ok
        assert state.get("PreScoreInterPodAffinity").topology_score.as_dict() == walked


@_SETTINGS
@given(data=st.data())
def test_required_terms_by_columns_count_as_the_walk_over_every_pod(
        data: st.DataObject) -> None:
    nodes, pods = data.draw(clusters())
    snapshot = cluster(nodes, pods)
    lookup = plugin(snapshot)._handle.namespace_labels
    parsed = affinity_terms(pod("incoming", ns=data.draw(st.sampled_from(NAMESPACES)),
                                spec_affinity=affinity(
                                    required=data.draw(st.lists(affinity_terms_(), max_size=3)),
                                    required_anti=data.draw(st.lists(affinity_terms_(),
                                                                     max_size=3)))))

    def counts(affinity_or_anti: tuple[TopologyCounts, ...]
               ) -> list[dict[tuple[str, str], int]]:
        return [found.pairs() for found in affinity_or_anti]

    walked = filtering._incoming_counts(incoming_terms(parsed.required, lookup),
                                        incoming_terms(parsed.required_anti, lookup),
                                        snapshot.node_infos)
    by_columns = filtering._incoming_counts_columns(
        incoming_terms(parsed.required, lookup), incoming_terms(parsed.required_anti, lookup),
        snapshot)
    assert counts(by_columns) == counts(walked)


@pytest.mark.parametrize(("requirement", "labels", "expected"), [
    pytest.param(req("app", "In", "a", "b"), [{"app": "a"}, {"app": "c"}, {}],
                 [True, False, False], id="In"),
    pytest.param(req("app", "NotIn", "a", "b"), [{"app": "a"}, {"app": "c"}, {}],
                 [False, True, True], id="NotIn: a pod without the key matches"),
    pytest.param(req("app", "Exists"), [{"app": "a"}, {"app": ""}, {"tier": "a"}],
                 [True, True, False], id="Exists"),
    pytest.param(req("app", "DoesNotExist"), [{"app": "a"}, {"tier": "a"}],
                 [False, True], id="DoesNotExist"),
    pytest.param(req("app", "In", "zzz"), [{"app": "a"}, {}], [False, False],
                 id="In a value no pod has"),
])
def test_a_requirement_mask_is_the_matcher_pod_by_pod(
        requirement: api.LabelSelectorRequirement, labels: list[dict[str, str]],
        expected: list[bool]) -> None:
    pods = [pod(labels=own, node="n0") for own in labels]
    snapshot = cluster({"n0": {"zone": "z1"}}, pods)
    incoming = PodInfo.of(pod(spec_affinity=affinity(
        preferred=[weighted(1, term(requirement, topology="zone"))])))
    terms = incoming_weighted_terms(incoming.pod_affinity.preferred, lambda _: None)
    columns = PodColumns(snapshot.node_infos, terms)
    order = [info.pod.metadata.labels for info in snapshot.node_infos[0].pods.values()]
    assert order == labels
    assert columns.term_mask(terms[0]).tolist() == expected
    assert expected == [terms[0].matches(other) for other in pods]


def test_pods_on_nodes_without_labels_are_left_out() -> None:
    snapshot = cluster({"bare": {}, "n1": {"zone": "z1"}},
                       [pod(labels={"app": "a"}, node="bare"), pod(labels={"app": "a"}, node="n1")])
    terms = incoming_terms([affinity_terms(pod(required=[t_in("app", "zone", "a")])).required[0]],
                           lambda _: None)
    assert len(PodColumns(snapshot.node_infos, terms)) == 1


def test_one_preferred_term_is_walked_and_two_by_columns() -> None:
    one = incoming_weighted_terms(affinity_terms(pod(spec_affinity=affinity(
        preferred=[weighted(1, t_in("app", "zone", "a"))]))).preferred, lambda _: None)
    assert COLUMN_TERMS == 2
    assert not scoring.columns_pay(one, ())
    assert scoring.columns_pay(one, one)


class _MatchCounter:
    """Counts the pod-by-pod matches (IncomingTerm.matches, Selector.matches) made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.incoming = self.selectors = 0
        incoming_matches, selector_matches = IncomingTerm.matches, Selector.matches

        def count_incoming(term: IncomingTerm, other: api.Pod) -> bool:
            self.incoming += 1
            return incoming_matches(term, other)

        def count_selector(found: Selector, labels: dict[str, str]) -> bool:
            self.selectors += 1
            return selector_matches(found, labels)

        monkeypatch.setattr(IncomingTerm, "matches", count_incoming)
        monkeypatch.setattr(Selector, "matches", count_selector)


NODES, PODS, ANTI_TERMS, AFFINITY_TERMS = 500, 3000, 2000, 500


def test_a_pod_with_thousands_of_preferred_terms_is_scored_by_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30: 2,500 preferred terms over 3,000 pods were 7.5M matches in Python (seconds
    of CPU in one cycle). Anti-affinity term t selects pod p{t} (on hostname), affinity
    term u the pods p{2u} and p{2u+1} (on zone), so the score is known pair by pair."""
    nodes = {f"n{n}": {HOSTNAME: f"n{n}", "zone": f"z{n % 3}"} for n in range(NODES)}
    pods = [pod(f"p{i}", ns="tenant", labels={"app": f"p{i}"}, node=f"n{i % NODES}")
            for i in range(PODS)]
    snapshot = cluster(nodes, pods)
    anti = [weighted(1 + t % 3, term(req("app", "In", f"p{t}"), topology=HOSTNAME,
                                     ns_selector=selector()))
            for t in range(ANTI_TERMS)]
    toward = [weighted(2, term(req("app", "In", f"p{2 * u}", f"p{2 * u + 1}"),
                               topology="zone", namespaces=["tenant"]))
              for u in range(AFFINITY_TERMS)]
    incoming = PodInfo.of(pod("tenant-pod", ns="tenant",
                              spec_affinity=affinity(preferred=toward, preferred_anti=anti)))
    expected: dict[str, dict[str, int]] = {HOSTNAME: {}, "zone": {}}
    for t in range(ANTI_TERMS):
        host = f"n{t % NODES}"
        expected[HOSTNAME][host] = expected[HOSTNAME].get(host, 0) - (1 + t % 3)
    for i in range(2 * AFFINITY_TERMS):
        zone = f"z{i % NODES % 3}"
        expected["zone"][zone] = expected["zone"].get(zone, 0) + 2

    counter = _MatchCounter(monkeypatch)
    state = CycleState()
    assert plugin(snapshot).pre_score(state, incoming, snapshot.node_infos).ok
    assert state.get("PreScoreInterPodAffinity").topology_score.as_dict() == expected
    # No term was matched pod by pod: the matcher was only asked about each distinct
    # requirement (three questions each), not PODS x terms = 7.5M times.
    assert counter.incoming == 0
    assert counter.selectors <= 3 * (ANTI_TERMS + AFFINITY_TERMS)


def test_a_pod_with_more_required_terms_than_are_kept_is_counted_by_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """More required anti-affinity terms than RowCounts are kept for: each would be
    counted afresh pod by pod every cycle; columns count them with no match per pod."""
    nodes = {f"n{n}": {HOSTNAME: f"n{n}", "zone": f"z{n % 3}"} for n in range(20)}
    pods = [pod(f"p{i}", labels={"app": f"p{i % 90}"}, node=f"n{i % 20}") for i in range(200)]
    snapshot = cluster(nodes, pods)
    required_anti = [t_in("app", HOSTNAME if t % 2 else "zone", f"p{t}")
                     for t in range(filtering.KEPT_ROW_COUNTS + 6)]
    incoming = PodInfo.of(pod("tenant-pod", required_anti=required_anti))
    instance = plugin(snapshot)
    by_node = filtering.compute_state(incoming, list(snapshot.node_infos), snapshot,
                                      instance._handle.namespace_labels)

    counter = _MatchCounter(monkeypatch)
    state = CycleState()
    assert instance.pre_filter(state, incoming, snapshot.node_infos)[1].ok
    assert counter.incoming == 0
    kept: filtering.PreFilterState = state.get("PreFilterInterPodAffinity")
    assert kept.anti_affinity_counts.pairs() == by_node.anti_affinity_counts.pairs()
    assert kept.anti_affinity_counts.pairs()  # the terms did select pods
