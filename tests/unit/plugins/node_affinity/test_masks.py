"""NodeAffinity's vector Filter and Score agree with its per-node forms, node for node.

Hypothesis draws nodes (names, labels) and pods (nodeSelector, required terms with every
operator and matchFields, preferred terms) from small alphabets, so selectors meet labels
they match; the odd values (words and huge numbers under Gt/Lt, unknown operators, wrong
value counts, fields other than metadata.name) make terms that do not parse and values
that do not read as integers. Each pod is judged with and without an addedAffinity, on a
snapshot fresh from the cache and again after some nodes were relabelled, added or
removed, so the label columns and memo built for the first round must follow.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.cache import Cache
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import NodeScore
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.labels import node_selector_term_matches
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_affinity import masks
from kpysched.plugins.node_affinity import plugin as na
from kpysched.scheduling.algorithm import Algorithm
from tests.unit.builders import FakeHandle, expr, make_node, make_pod, make_snapshot, term
from tests.unit.framework.fake_plugins import build

# Derandomised and without a deadline, as tests/unit/fuzz's profile (not loaded here).
_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

def _mostly(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any],
            one_in: int = 8) -> st.SearchStrategy[Any]:
    """`usual`, and `odd` about once in `one_in` draws."""
    return st.sampled_from([False] * (one_in - 1) + [True]).flatmap(
        lambda rare: odd if rare else usual)


# Few keys and values, so that selectors often meet labels they match.
keys = _mostly(st.sampled_from(("zone", "tier", "gen")), st.just("kubernetes.io/hostname"))
COMMON_VALUES = ("a", "b", "1", "2", "10")
# On nodes: integers in spellings Python's int() reads (and Go's would not), words, a
# value past int64 and the empty string, so Gt/Lt and In meet all of them.
node_values = _mostly(st.sampled_from(COMMON_VALUES),
                      st.sampled_from(("-3", "+4", " 7", "1_0", "x1", "", "9" * 25)), 3)
# In selectors: valid label values, and now and then one that makes the term unparsable.
term_values = _mostly(
    _mostly(st.sampled_from(COMMON_VALUES), st.sampled_from(("1_0", "x1", "", "9" * 25)), 4),
    st.sampled_from(("-3", " 7", "x y")), 16)
node_labels = st.dictionaries(keys, node_values, min_size=1, max_size=4)
NAMES = ("n0", "n1", "n2", "n3", "10", "-3")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
BOUNDS = ("0", "2", "-4", "10", "9223372036854775807")
ODD_BOUNDS = ("x", "1.5", "99999999999999999999")


@st.composite
def requirements(draw: st.DrawFn) -> api.NodeSelectorRequirement:
    """Mostly ones upstream parses; now and then an unknown operator or wrong values."""
    operator = draw(_mostly(st.sampled_from(OPERATORS), st.just("Bogus"), 16))
    if operator in ("Gt", "Lt"):
        bound = _mostly(st.sampled_from(BOUNDS), st.sampled_from(ODD_BOUNDS), 16)
        chosen = draw(_mostly(st.lists(bound, min_size=1, max_size=1),
                              st.lists(bound, max_size=2), 16))
    elif operator in ("Exists", "DoesNotExist"):
        chosen = draw(_mostly(st.just([]), st.lists(term_values, min_size=1, max_size=1), 16))
    else:
        chosen = draw(_mostly(st.lists(term_values, min_size=1, max_size=3), st.just([]), 16))
    return expr(draw(keys), operator, *chosen)


@st.composite
def name_fields(draw: st.DrawFn) -> api.NodeSelectorRequirement:
    """metadata.name In/NotIn one name, mostly; now and then another field, another
    operator or two names (which upstream does not parse)."""
    key = draw(_mostly(st.just("metadata.name"), st.just("metadata.uid")))
    operator = draw(_mostly(st.sampled_from(("In", "NotIn")), st.just("Exists")))
    names = st.sampled_from(NAMES)
    chosen = draw(_mostly(st.lists(names, min_size=1, max_size=1), st.lists(names, max_size=2)))
    return expr(key, operator, *chosen)


terms = st.builds(
    lambda expressions, fields: term(*expressions, fields=fields),
    _mostly(st.lists(requirements(), min_size=1, max_size=3), st.just([]), 16),
    _mostly(st.just([]), st.lists(name_fields(), min_size=1, max_size=1)))
weights = st.sampled_from((0, 1, 5, 37, 100, -20))


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, dict[str, str]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=3, max_size=6, unique=True))
    return {name: draw(node_labels) for name in names}


@st.composite
def pods(draw: st.DrawFn) -> PodInfo:
    pod = make_pod("p").node_selector(
        draw(_mostly(st.just({}), st.dictionaries(keys, term_values, max_size=2), 3)))
    if draw(_mostly(st.just(True), st.just(False), 4)):
        pod = pod.required(*draw(_mostly(st.lists(terms, min_size=1, max_size=3), st.just([]),
                                         16)))
    for weight, preference in draw(st.lists(st.tuples(weights, terms), max_size=3)):
        pod = pod.preferred(weight, preference)
    return pod.info()


def _wire(selector_term: api.NodeSelectorTerm) -> dict[str, Any]:
    def requirement(r: api.NodeSelectorRequirement) -> dict[str, Any]:
        return {"key": r.key, "operator": r.operator, "values": list(r.values)}
    return {"matchExpressions": [requirement(r) for r in selector_term.match_expressions],
            "matchFields": [requirement(r) for r in selector_term.match_fields]}


@st.composite
def added_affinities(draw: st.DrawFn) -> na.NodeAffinity:
    """A plugin with an addedAffinity the args accept (one they reject draws again)."""
    added: dict[str, Any] = {}
    if draw(st.booleans()):
        added["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_wire(t) for t in draw(st.lists(terms, max_size=2))]}
    added["preferredDuringSchedulingIgnoredDuringExecution"] = [
        {"weight": weight, "preference": _wire(preference)}
        for weight, preference in draw(st.lists(st.tuples(weights, terms), max_size=2))]
    try:
        args = na.NodeAffinityArgs.model_validate({"addedAffinity": added})
    except pydantic.ValidationError:
        return draw(added_affinities())
    return na.new(args, FakeHandle())


def _node(name: str, node_labels: dict[str, str]) -> api.Node:
    return make_node(name).labels(node_labels).obj()


def _assert_filter_agrees(plugin: na.NodeAffinity, pod: PodInfo, snapshot: Snapshot) -> None:
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_infos)
    mask = plugin.filter_vector(state, pod, snapshot)
    assert mask is not None
    expected = [plugin.filter(state, pod, info).ok for info in snapshot.node_infos]
    assert mask.tolist() == expected
    # The reasons stated at once for the rejected rows are the per-node ones.
    rejected = np.flatnonzero(~mask)
    stated = plugin.filter_statuses(state, pod, snapshot, rejected)
    assert stated is not None
    assert [(s.code, s.reasons) for s in stated] == [
        (s.code, s.reasons) for s in (plugin.filter(state, pod, snapshot.node_infos[row])
                                      for row in rejected.tolist())]


def _assert_score_agrees(plugin: na.NodeAffinity, pod: PodInfo, snapshot: Snapshot) -> None:
    state = CycleState()
    pre_score = plugin.pre_score(state, pod, snapshot.node_infos)
    vector = plugin.score_vector(state, pod, snapshot)
    per_node = [plugin.score(state, pod, info) for info in snapshot.node_infos]
    if pre_score.code == Code.ERROR:
        # A preferred term that does not parse: the vector form leaves the error to the
        # per-node form, which reports it.
        assert vector is None
        assert all(status.code == Code.ERROR for _, status in per_node)
        return
    assert vector is not None
    assert all(status.ok for _, status in per_node)
    scores = [NodeScore(info.name, value) for info, (value, _) in
              zip(snapshot.node_infos, per_node, strict=True)]
    assert vector.tolist() == [entry.score for entry in scores]
    plugin.normalize_score(state, pod, scores)
    assert plugin.normalize_vector(state, pod, vector).tolist() == [s.score for s in scores]


def _assert_terms_agree(pod: PodInfo, snapshot: Snapshot) -> None:
    """Each term upstream parses, on its own: the mask is the per-node matcher's verdicts
    (a term's verdict can hide behind another's in the pod's OR or sum)."""
    affinity = pod.pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    found = [*(required.node_selector_terms if required is not None else ()),
             *(p.preference for p in
               affinity.node_affinity.preferred_during_scheduling_ignored_during_execution)]
    for one in found:
        if na.term_errors(one, ""):
            continue
        expected = [node_selector_term_matches(one, info.labels, info.name)
                    for info in snapshot.node_infos]
        assert masks.term_rows(one, snapshot.labels).tolist() == expected


@_SETTINGS
@given(cluster=clusters(), changes=clusters(), pods=st.lists(pods(), min_size=1, max_size=3),
       added=added_affinities())
def test_vector_forms_match_per_node_forms(cluster: dict[str, dict[str, str]],
                                           changes: dict[str, dict[str, str]],
                                           pods: list[PodInfo], added: na.NodeAffinity) -> None:
    cache = Cache()
    for name, node_labels in cluster.items():
        cache.add_or_update_node(_node(name, node_labels))
    snapshot = Snapshot()
    plain = na.new(None, FakeHandle())
    relabelled = {name: changes[name] for name in changes.keys() & cluster.keys()}
    added_nodes = {name: changes[name] for name in changes.keys() - cluster.keys()}
    # Three rounds over one snapshot: fresh; after known nodes were relabelled (rows
    # rewritten in place, with columns and memo built in the first round); after nodes
    # came and one went (a new row order and index).
    for round_changes in (relabelled, added_nodes, None):
        cache.update_snapshot(snapshot)
        for pod in pods:
            _assert_terms_agree(pod, snapshot)
            for plugin in (plain, added):
                _assert_filter_agrees(plugin, pod, snapshot)
                _assert_score_agrees(plugin, pod, snapshot)
        if round_changes is None:
            break
        for name, node_labels in round_changes.items():
            cache.add_or_update_node(_node(name, node_labels))
        if round_changes is added_nodes and len(cluster) > 1:
            cache.remove_node(min(cluster))


def test_label_columns_follow_a_relabelled_node_without_a_rebuild() -> None:
    # Two nodes, then one relabelled: the snapshot replaces the row in place (no node
    # came or went), so the vector verdict depends on the index rewriting that row.
    cache = Cache()
    for name, zone in (("n0", "a"), ("n1", "b")):
        cache.add_or_update_node(make_node(name).label("zone", zone).obj())
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    plugin = na.new(None, FakeHandle())
    pod = make_pod("p").required(term(expr("zone", "In", "a"))).info()
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_infos)
    before = plugin.filter_vector(state, pod, snapshot)
    assert before is not None and before.tolist() == [True, False]
    labels_before = snapshot.labels
    cache.add_or_update_node(make_node("n1").label("zone", "a").obj())
    cache.update_snapshot(snapshot)
    assert snapshot.labels is labels_before  # rewritten in place, not rebuilt
    after = plugin.filter_vector(state, pod, snapshot)
    assert after is not None and after.tolist() == [True, True]
    assert before.tolist() == [True, False]  # the first verdict was not a shared buffer


# --- the whole Filter pass: the vector verdict must not change the diagnosis --------------

_PROFILE = {
    "preFilter": ["NodeAffinity"],
    "filter": ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"],
    "preScore": ["TaintToleration", "NodeAffinity"],
    "score": ["TaintToleration", "NodeAffinity"],
}


def _diagnosis(snapshot: Snapshot, pod: PodInfo, added: dict[str, Any]) -> Diagnosis:
    args = na.NodeAffinityArgs.model_validate({"addedAffinity": added})
    framework = build(_PROFILE, scripts={"NodeAffinity": args})  # type: ignore[dict-item]
    outcome = Algorithm(rng=random.Random(0)).schedule(framework, CycleState(), pod, snapshot)
    assert isinstance(outcome, Diagnosis), outcome
    return outcome


def test_rejections_keep_the_per_node_reasons_and_counts() -> None:
    infos = [make_node(f"a{i}").label("zone", "a").label("pool", "gpu").info() for i in range(3)]
    infos += [make_node(f"b{i}").label("zone", "b").label("pool", "gpu").info() for i in range(2)]
    infos += [make_node("c0").label("zone", "a").label("pool", "cpu").info()]
    infos += [make_node("t0").label("zone", "b").label("pool", "gpu").taint("k", "v").info()]
    pod = make_pod("p").required(term(expr("zone", "In", "b"))).info()
    outcome = _diagnosis(make_snapshot(*infos), pod, {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["cpu"]}]}]}})
    reasons = Counter(reason for status in outcome.node_to_status.values()
                      for reason in status.reasons)
    # The tainted node is reported for its taint, the first Filter in the profile that
    # rejects it; the rest by NodeAffinity, enforced affinity before the pod's own.
    assert reasons == Counter({
        "node(s) didn't match scheduler-enforced node affinity": 5,
        "node(s) didn't match Pod's node affinity/selector": 1,
        "node(s) had untolerated taint(s)": 1,
    })
    assert outcome.message() == (
        "0/7 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s), 5 node(s) didn't match scheduler-enforced node "
        "affinity.")
