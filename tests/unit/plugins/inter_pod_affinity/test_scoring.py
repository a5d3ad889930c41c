"""InterPodAffinity PreScore/Score/NormalizeScore, with cases from upstream's
scoring_test.go (v1.36.4)."""

from __future__ import annotations

import pytest

from kpysched.config.features import NEWEST_RELEASE
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.inter_pod_affinity import scoring
from tests.unit.plugins.inter_pod_affinity.test_plugin import (
    affinity,
    cluster,
    outcome,
    plugin,
    pod,
    req,
    selector,
    term,
    weighted,
)

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = selector(req("team", "In", "team1"))


def _security(topology: str, operator: str = "In", *values: str) -> api.PodAffinityTerm:
    return term(req("security", operator, *values), topology=topology)


STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, _security("region", "In", "S1"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, _security("region", "In", "S2"))])
AFFINITY3 = affinity(preferred=[
    weighted(8, term(req("security", "NotIn", "S1"), req("security", "In", "S2"),
                     topology="region")),
    weighted(2, term(req("security", "Exists"), req("wrongkey", "DoesNotExist"),
                     topology="region"))])
HARD_AFFINITY = affinity([
    _security("region", "In", "S1", "value2"),
    term(req("security", "Exists"), req("wrongkey", "DoesNotExist"), topology="region")])
AWAY_FROM_S1_IN_AZ = affinity(preferred_anti=[weighted(5, _security("az", "In", "S1"))])
AWAY_FROM_S2_IN_AZ = affinity(preferred_anti=[weighted(5, _security("az", "In", "S2"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[weighted(8, _security("region", "In", "S1"))],
    preferred_anti=[weighted(5, _security("az", "In", "S2"))])
_NS_TERM = term(req("security", "In", "S1"), topology="region", namespaces=["subteam2.team2"],
                ns_selector=TEAM1)
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[weighted(5, _NS_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(preferred_anti=[weighted(5, _NS_TERM)])
INVALID_AFFINITY_LABELS = affinity(preferred=[
    weighted(8, _security("region", "In", "{{.bad-value.}}"))])
INVALID_ANTI_AFFINITY_LABELS = affinity(preferred_anti=[
    weighted(5, _security("az", "In", "{{.bad-value.}}"))])

SKIP = (Code.SKIP, "")
BAD_VALUE = 'Invalid value: "{{.bad-value.}}"'


def _on(node: str, labels: dict[str, str] | None = None, spec_affinity: api.Affinity | None = None,
        ns: str = "") -> api.Pod:
    return pod(labels=labels, node=node, spec_affinity=spec_affinity, ns=ns)


def _incoming(labels: dict[str, str] | None = None, spec_affinity: api.Affinity | None = None,
              ns: str = "") -> api.Pod:
    return pod(labels=labels, spec_affinity=spec_affinity, ns=ns)


def run_scores(incoming: api.Pod, pods: list[api.Pod], nodes: dict[str, dict[str, str]],
               *, release: int = NEWEST_RELEASE, **args: object) -> list[int] | tuple[Code, str]:
    """Normalised scores per node in `nodes` order, or PreScore's outcome if not Success."""
    snapshot = cluster(nodes, pods)
    instance = plugin(snapshot, release=release, **args)
    state = CycleState()
    info = PodInfo.of(incoming)
    infos = [snapshot.by_name[name] for name in nodes]
    status = instance.pre_score(state, info, infos)
    if not status.ok:
        got = outcome(status)
        assert got is not None
        return got
    scores = []
    for node in infos:
        value, status = instance.score(state, info, node)
        assert status.ok, status
        scores.append(NodeScore(node.name, value))
    assert instance.normalize_score(state, info, scores).ok
    return [entry.score for entry in scores]


PREFERRED_CASES = [
    pytest.param(_incoming(S1), [], {"node1": CHINA, "node2": INDIA, "node3": AZ1}, SKIP,
                 id="all nodes are same priority as Affinity is nil"),
    pytest.param(_incoming(S1, STAY_WITH_S1_IN_REGION),
                 [_on("node1", S1), _on("node2", S2), _on("node3", S1)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [100, 0, 0],
                 id="affinity: matching topology key and pods scores high"),
    pytest.param(_incoming(None, STAY_WITH_S1_IN_REGION), [_on("node1", S1)],
                 {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA}, [100, 100, 0],
                 id="nodes sharing the matching pod's topology value score the same"),
    pytest.param(_incoming(S1, STAY_WITH_S2_IN_REGION),
                 [_on("node1", S2), _on("node1", S2), _on("node2", S2), _on("node3", S2),
                  _on("node4", S2), _on("node5", S2)],
                 {"node1": CHINA, "node2": INDIA, "node3": CHINA, "node4": CHINA,
                  "node5": INDIA}, [100, 0, 100, 100, 0],
                 id="the region with more matching pods scores high"),
    pytest.param(_incoming(S1, AFFINITY3),
                 [_on("node1", S1), _on("node2", S2), _on("node3", S1)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [20, 100, 0],
                 id="different operators and values, including some match failures"),
    pytest.param(_incoming(S2),
                 [_on("node1", S1, STAY_WITH_S1_IN_REGION),
                  _on("node2", S2, STAY_WITH_S2_IN_REGION)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [0, 100, 0],
                 id="affinity symmetry: existing pods' preferred affinity"),
    pytest.param(_incoming(S1, ns="subteam1.team1"),
                 [_on("node1", S1, AFFINITY_NAMESPACE_SELECTOR),
                  _on("node2", S2, STAY_WITH_S2_IN_REGION)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [100, 0, 0],
                 id="affinity symmetry with namespace selector"),
    pytest.param(_incoming(S1, ns="subteam1.team1"),
                 [_on("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR),
                  _on("node2", S2, STAY_WITH_S2_IN_REGION)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [0, 100, 100],
                 id="anti-affinity symmetry with namespace selector"),
    pytest.param(_incoming(S1),
                 [_on("node1", S1, HARD_AFFINITY), _on("node2", S2, HARD_AFFINITY)],
                 {"node1": CHINA, "node2": INDIA, "node3": AZ1}, [100, 100, 0],
                 id="affinity symmetry: existing pods' required affinity"),
    pytest.param(_incoming(S1, AWAY_FROM_S1_IN_AZ), [_on("node1", S1), _on("node2", S2)],
                 {"node1": AZ1, "node2": CHINA}, [0, 100],
                 id="anti-affinity: node without matching pods scores high"),
    pytest.param(_incoming(S1, AWAY_FROM_S1_IN_AZ), [_on("node1", S1), _on("node2", S1)],
                 {"node1": AZ1, "node2": CHINA}, [0, 100],
                 id="anti-affinity: node without the topology key scores high"),
    pytest.param(_incoming(S1, AWAY_FROM_S1_IN_AZ),
                 [_on("node1", S1), _on("node1", S1), _on("node2", S2)],
                 {"node1": AZ1, "node2": INDIA}, [0, 100],
                 id="anti-affinity: node with more matching pods scores low"),
    pytest.param(_incoming(S2),
                 [_on("node1", S1, AWAY_FROM_S2_IN_AZ), _on("node2", S2, AWAY_FROM_S1_IN_AZ)],
                 {"node1": AZ1, "node2": AZ2}, [0, 100],
                 id="anti-affinity symmetry: existing pods' preferred anti-affinity"),
    pytest.param(_incoming(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                 [_on("node1", S1), _on("node2", S1)], {"node1": CHINA, "node2": AZ1},
                 [100, 0], id="affinity and anti-affinity"),
    pytest.param(_incoming(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                 [_on("node1", S1), _on("node1", S1), _on("node2", S1), _on("node3", S1),
                  _on("node3", S1), _on("node4", S1), _on("node5", S1)],
                 {"node1": CHINA_AZ1, "node2": INDIA, "node3": CHINA, "node4": CHINA,
                  "node5": INDIA}, [100, 0, 100, 100, 0],
                 id="affinity and anti-affinity with pods of the same labels"),
    pytest.param(_incoming(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                 [_on("node1", S1), _on("node2", S2),
                  _on("node3", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                  _on("node4", None, AWAY_FROM_S1_IN_AZ)],
                 {"node1": CHINA, "node2": AZ1, "node3": INDIA, "node4": AZ2},
                 [100, 0, 100, 0], id="affinity, anti-affinity and symmetry together"),
    pytest.param(_incoming(S1),
                 [_on("node1", S1), _on("node2", None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
                 {"node1": CHINA, "node2": CHINA}, [0, 0],
                 id="nodes of a topology without pods with affinity (issue 82796)"),
    pytest.param(_incoming(None, INVALID_AFFINITY_LABELS), [], {"node1": CHINA, "node2": CHINA},
                 (Code.ERROR, BAD_VALUE), id="invalid affinity fails PreScore"),
    pytest.param(_incoming(None, INVALID_ANTI_AFFINITY_LABELS), [],
                 {"node1": CHINA, "node2": CHINA}, (Code.ERROR, BAD_VALUE),
                 id="invalid anti-affinity fails PreScore"),
    pytest.param(_incoming(S1, AFFINITY_NAMESPACE_SELECTOR, "subteam1.team1"),
                 [_on("node1", S1, ns="subteam1.team1"), _on("node1", S1, ns="subteam1.team1"),
                  _on("node1", S1, ns="subteam1.team2"), _on("node2", S1, ns="subteam2.team1")],
                 {"node1": CHINA, "node2": INDIA}, [100, 0],
                 id="affinity with pods matching namespaceSelector"),
    pytest.param(_incoming(S1, AFFINITY_NAMESPACE_SELECTOR, "subteam1.team1"),
                 [_on("node1", S1, ns="subteam1.team1"), _on("node1", S1, ns="subteam1.team1"),
                  _on("node1", S1, ns="subteam2.team2"), _on("node2", S1, ns="subteam2.team1")],
                 {"node1": CHINA, "node2": INDIA}, [100, 0],
                 id="affinity with pods matching namespaceSelector and namespaces"),
    pytest.param(_incoming(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, "subteam1.team1"),
                 [_on("node1", S1, ns="subteam1.team1"), _on("node1", S1, ns="subteam1.team1"),
                  _on("node1", S1, ns="subteam1.team2"), _on("node2", S1, ns="subteam2.team1")],
                 {"node1": CHINA, "node2": INDIA}, [0, 100],
                 id="anti-affinity with pods matching namespaceSelector"),
    pytest.param(_incoming(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, "subteam1.team1"),
                 [_on("node1", S1, ns="subteam1.team1"), _on("node1", S1, ns="subteam1.team1"),
                  _on("node1", S1, ns="subteam2.team2"), _on("node2", S1, ns="subteam2.team1")],
                 {"node1": CHINA, "node2": INDIA}, [0, 100],
                 id="anti-affinity with pods matching namespaceSelector and namespaces"),
    pytest.param(_incoming(S2),
                 [_on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
                  _on("node2", S2, STAY_WITH_S2_IN_REGION)],
                 {"node1": CHINA, "node2": INDIA}, [0, 100],
                 id="do not ignore preferred terms of existing pods"),
    pytest.param(_incoming(S2), [], {}, SKIP, id="no nodes to score"),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "expected"), PREFERRED_CASES)
def test_preferred_affinity(incoming: api.Pod, pods: list[api.Pod],
                            nodes: dict[str, dict[str, str]],
                            expected: list[int] | tuple[Code, str]) -> None:
    got = run_scores(incoming, pods, nodes, hardPodAffinityWeight=1)
    if isinstance(expected, tuple) and expected[0] == Code.ERROR:
        assert isinstance(got, tuple) and got[0] == Code.ERROR and expected[1] in got[1]
    else:
        assert got == expected


def test_ignore_preferred_terms_of_existing_pods() -> None:
    pods = [_on("node1", S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            _on("node2", S2, STAY_WITH_S2_IN_REGION)]
    nodes = {"node1": CHINA, "node2": INDIA}
    assert run_scores(_incoming(S2), pods, nodes,
                      ignorePreferredTermsOfExistingPods=True) == SKIP


def test_ignore_flag_still_counts_existing_pods_when_the_pod_has_preferred_terms() -> None:
    """Upstream only skips PreScore with the flag; existing pods' terms still count."""
    pods = [_on("node1", S1), _on("node2", S1, STAY_WITH_S2_IN_REGION)]
    incoming = _incoming(S2, AWAY_FROM_S2_IN_AZ)
    nodes = {"node1": CHINA, "node2": INDIA}
    assert run_scores(incoming, pods, nodes, ignorePreferredTermsOfExistingPods=True) == [0, 100]


def test_invalid_affinity_message() -> None:
    got = run_scores(_incoming(None, INVALID_AFFINITY_LABELS), [], {"node1": CHINA})
    assert got == (Code.ERROR, (
        'failed to parse pod: preferredAffinityTerms: values[0][security]: Invalid value: '
        '"{{.bad-value.}}": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"))


# --- TestPreferredAffinityWithHardPodAffinitySymmetricWeight -------------------------

HARD_POD_AFFINITY = affinity([term(req("service", "In", "S1"), topology="region",
                                   namespaces=["", "subteam2.team2"], ns_selector=TEAM1)])
SERVICE_S1 = {"service": "S1"}
HARD_NODES = {"node1": CHINA, "node2": INDIA, "node3": AZ1}
HARD_PODS = [_on("node1", None, HARD_POD_AFFINITY), _on("node2", None, HARD_POD_AFFINITY)]

HARD_WEIGHT_CASES = [
    pytest.param(_incoming(SERVICE_S1), 1, [100, 100, 0], id="with default weight"),
    pytest.param(_incoming(SERVICE_S1), 0, SKIP, id="with zero weight"),
    pytest.param(_incoming(SERVICE_S1, ns="subteam1.team2"), 1, SKIP,
                 id="with no matching namespace"),
    pytest.param(_incoming(SERVICE_S1, ns="subteam1.team1"), 1, [100, 100, 0],
                 id="with matching namespaceSelector"),
    pytest.param(_incoming(SERVICE_S1, ns="subteam2.team2"), 1, [100, 100, 0],
                 id="with matching namespaces"),
]


@pytest.mark.parametrize(("incoming", "weight", "expected"), HARD_WEIGHT_CASES)
def test_hard_pod_affinity_weight(incoming: api.Pod, weight: int,
                                  expected: list[int] | tuple[Code, str]) -> None:
    assert run_scores(incoming, HARD_PODS, HARD_NODES, hardPodAffinityWeight=weight) == expected


def test_hard_weight_scales_against_preferred_terms() -> None:
    """Raw scores: hardPodAffinityWeight 10 in China against a preferred weight of 6."""
    pods = [_on("node1", None, HARD_POD_AFFINITY), _on("node2", S2)]
    snapshot = cluster({"node1": CHINA, "node2": INDIA}, pods)
    instance = plugin(snapshot, hardPodAffinityWeight=10)
    state = CycleState()
    info = PodInfo.of(_incoming({**SERVICE_S1, **S1}, STAY_WITH_S2_IN_REGION))
    assert instance.pre_score(state, info, snapshot.node_infos).ok
    raw = [instance.score(state, info, node)[0] for node in snapshot.node_infos]
    assert raw == [10, 6]


# --- Score / NormalizeScore -----------------------------------------------------------

@pytest.mark.parametrize(("raw", "normalized"), [
    pytest.param([8, -5, 8, -5], [100, 0, 100, 0], id="negative minimum"),
    pytest.param([0, 2, 3], [0, 66, 100], id="float result truncated, not rounded"),
    pytest.param([0, 29, 100], [0, 28, 100], id="float64 arithmetic as upstream (28.999...)"),
    pytest.param([-3, -2, -1], [0, 50, 100], id="all negative"),
    pytest.param([7, 7, 7], [0, 0, 0], id="all equal scores become 0"),
    pytest.param([2, 1], [100, 0], id="two nodes"),
    pytest.param([], [], id="no nodes"),
])
def test_normalize(raw: list[int], normalized: list[int]) -> None:
    scores = [NodeScore(f"n{i}", value) for i, value in enumerate(raw)]
    scoring.normalize(scores)
    assert [entry.score for entry in scores] == normalized


def test_normalize_leaves_scores_alone_without_topology_scores() -> None:
    instance = plugin(cluster({}))
    state = CycleState()
    state.write("PreScoreInterPodAffinity", scoring.PreScoreState({}))
    scores = [NodeScore("a", 3), NodeScore("b", 5)]
    assert instance.normalize_score(state, PodInfo.of(pod()), scores).ok
    assert [entry.score for entry in scores] == [3, 5]


def test_score_without_pre_score_is_an_error() -> None:
    instance = plugin(cluster({"node1": CHINA}))
    info = PodInfo.of(pod())
    _, status = instance.score(CycleState(), info, instance._handle.snapshot.node_infos[0])
    assert (status.code, status.message()) == (
        Code.ERROR, 'failed to read "PreScoreInterPodAffinity" from cycleState: not found')
    status = instance.normalize_score(CycleState(), info, [])
    assert status.code == Code.ERROR


def test_pre_score_counts_every_node_not_only_the_feasible_ones() -> None:
    """Upstream scores from the whole snapshot; `nodes` (the feasible ones) is not used."""
    snapshot = cluster({"node1": CHINA, "node2": CHINA, "node3": INDIA}, [_on("node1", S1)])
    instance = plugin(snapshot)
    state = CycleState()
    info = PodInfo.of(_incoming(None, STAY_WITH_S1_IN_REGION))
    feasible = [snapshot.by_name["node2"], snapshot.by_name["node3"]]
    assert instance.pre_score(state, info, feasible).ok
    assert [instance.score(state, info, node)[0] for node in feasible] == [5, 0]
