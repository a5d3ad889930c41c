"""PodTopologySpread PreScore/Score/NormalizeScore, with cases from upstream's
scoring_test.go (v1.36.4). Upstream's "matchLabelKeys ignored when feature gate
disabled" case is left out: the gate is locked on in v1.36.
"""

from __future__ import annotations

import math

import pytest

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.plugins import pod_topology_spread as pts
from kpysched.plugins.pod_topology_spread import scoring
from kpysched.plugins.pod_topology_spread.scoring import PreScoreState
from tests.unit.builders import (
    FakeHandle,
    NodeBuilder,
    PodBuilder,
    expr,
    label_selector,
    make_cluster,
    make_pod,
    make_snapshot,
    term,
)
from tests.unit.plugins.pod_topology_spread.test_plugin import (
    ANYWAY,
    BAR,
    FOO,
    HONOR,
    IGNORE,
    LIST_ARGS,
    incoming,
    node,
    pod,
    tainted,
)

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_ARGS = pts.PodTopologySpreadArgs()


def weight(size: int) -> float:
    return math.log(size + 2)


def host(name: str, /, **labels: str) -> NodeBuilder:
    return node(name, {HOST: name}, **labels)


def zh(name: str, zone: str) -> NodeBuilder:
    return node(name, {HOST: name}, zone=zone)


def handle_for(pod_: PodBuilder, selector: api.LabelSelector | None) -> FakeHandle:
    handle = FakeHandle()
    if selector is not None:
        obj = pod_.obj()
        handle.spread_selectors[f"{obj.metadata.namespace}/{obj.metadata.name}"] = selector
    return handle


def run_pre_score(pod_: PodBuilder, nodes: list[NodeBuilder], args: pts.PodTopologySpreadArgs,
                  selector: api.LabelSelector | None = None,
                  ) -> tuple[pts.PodTopologySpread, CycleState, Code]:
    infos = make_cluster(nodes)
    handle = handle_for(pod_, selector)
    handle.snapshot_value = make_snapshot(*infos)
    spread = pts.new(args, handle)
    state = CycleState()
    return spread, state, spread.pre_score(state, pod_.info(), infos).code


RS_DEFAULT = pts.PodTopologySpreadArgs.model_validate({"defaultingType": "List",
                                                       "defaultConstraints": [
    {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}]})


@pytest.mark.parametrize(("pod_", "nodes", "args", "selector"), [
    pytest.param(make_pod("p"), [host("node-a"), host("node-b")], LIST_ARGS, None,
                 id="the pod doesn't have soft topology spread Constraints"),
    pytest.param(make_pod("p").label("foo", "bar").label("baz", "sup").owner("ReplicaSet", "rs2"),
                 [node("node-a", planet="mars")], RS_DEFAULT, None,
                 id="default constraints and a replicaset that doesn't match"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, FOO), [], LIST_ARGS, None,
                 id="no nodes at all"),
])
def test_pre_score_skips(pod_: PodBuilder, nodes: list[NodeBuilder],
                         args: pts.PodTopologySpreadArgs,
                         selector: api.LabelSelector | None) -> None:
    assert run_pre_score(pod_, nodes, args, selector)[2] == Code.SKIP


def _list(*constraints: dict[str, object]) -> pts.PodTopologySpreadArgs:
    return pts.PodTopologySpreadArgs.model_validate({"defaultingType": "List",
                                                     "defaultConstraints": list(constraints)})


PRE_SCORE_CASES = [
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, FOO).spread(1, HOST, ANYWAY, FOO),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone"), (1, HOST)], set(),
                 [{"zone1": 0, "zone2": 0}, {}], [weight(2), weight(3)], id="normal case"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="null selector"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, FOO).spread(1, HOST, ANYWAY, BAR),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), host("node-x")],
                 LIST_ARGS, None, [(1, "zone"), (1, HOST)], {"node-x"}, [{"zone1": 0}, {}],
                 [weight(1), weight(2)], id="node-x doesn't have label zone"),
    pytest.param(make_pod("p").label("foo", "tar").label("baz", "sup").owner("ReplicaSet", "rs1"),
                 [node("node-a", {HOST: "node-a", ZONE: "mars"}),
                  node("node-b", {HOST: "node-b", ZONE: "mars"}), host("node-c"), host("node-d")],
                 SYSTEM_ARGS, FOO, [(3, HOST), (5, ZONE)], set(), [{}, {"mars": 0, "": 0}],
                 [weight(4), weight(2)], id="system default constraints and a replicaset"),
    pytest.param(make_pod("p").label("foo", "tar").label("baz", "sup").owner("ReplicaSet", "rs1"),
                 [node("node-a", {HOST: "node-a"}, rack="rack1", planet="mars")],
                 _list({"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
                       {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
                       {"maxSkew": 2, "topologyKey": "planet",
                        "whenUnsatisfiable": "ScheduleAnyway"}),
                 FOO, [(1, HOST), (2, "planet")], set(), [{}, {"mars": 0}],
                 [weight(1), weight(1)], id="default constraints and a replicaset"),
    pytest.param(make_pod("p").label("foo", "bar").label("baz", "sup").owner("ReplicaSet", "rs1")
                 .spread(1, "zone", selector=BAR)
                 .spread(2, "planet", ANYWAY, label_selector({"baz": "sup"})),
                 [node("node-a", planet="mars", galaxy="andromeda")],
                 _list({"maxSkew": 2, "topologyKey": "galaxy",
                        "whenUnsatisfiable": "ScheduleAnyway"}),
                 FOO, [(2, "planet")], set(), [{"mars": 0}], [weight(1)],
                 id="default constraints and a replicaset, but pod has constraints"),
    pytest.param(incoming("foo").node_selector(foo="").spread(1, "zone", ANYWAY, BAR),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(incoming("foo").node_selector(foo="")
                 .spread(1, "zone", ANYWAY, BAR, affinity_policy=IGNORE),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "zone", ANYWAY, BAR),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "zone", ANYWAY, BAR, affinity_policy=IGNORE),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""), zh("node-x", "zone2")],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, BAR),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""),
                  tainted(zh("node-x", "zone2"))],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeTaintsPolicy ignored"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, BAR, taints_policy=HONOR),
                 [node("node-a", {HOST: "node-a"}, zone="zone1", foo=""),
                  node("node-b", {HOST: "node-b"}, zone="zone1", foo=""),
                  tainted(zh("node-x", "zone2"))],
                 LIST_ARGS, None, [(1, "zone")], set(), [{"zone1": 0, "zone2": 0}],
                 [weight(2)], id="NodeTaintsPolicy honored"),
]


@pytest.mark.parametrize(("pod_", "nodes", "args", "selector", "constraints", "ignored",
                          "counts", "weights"), PRE_SCORE_CASES)
def test_pre_score_state(pod_: PodBuilder, nodes: list[NodeBuilder],
                         args: pts.PodTopologySpreadArgs, selector: api.LabelSelector | None,
                         constraints: list[tuple[int, str]], ignored: set[str],
                         counts: list[dict[str, int]], weights: list[float]) -> None:
    _, state, code = run_pre_score(pod_, nodes, args, selector)
    assert code == Code.SUCCESS
    computed: PreScoreState = state.read(pts.PRE_SCORE_KEY)
    assert [(c.max_skew, c.topology_key) for c in computed.constraints] == constraints
    assert computed.ignored_nodes == ignored
    assert list(computed.pod_counts) == counts
    assert list(computed.weights) == weights


SPREAD_2103 = [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
               pod("p-b1", "node-b", "foo"), pod("p-d1", "node-d", "foo"),
               pod("p-d2", "node-d", "foo"), pod("p-d3", "node-d", "foo")]
SPREAD_4321 = [*(pod(f"p-a{i}", "node-a", "foo") for i in range(4)),
               *(pod(f"p-b{i}", "node-b", "foo") for i in range(3)),
               *(pod(f"p-c{i}", "node-c", "foo") for i in range(2)), pod("p-d1", "node-d", "foo")]
SPREAD_4213 = [*(pod(f"p-a{i}", "node-a", "foo") for i in range(4)),
               pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
               pod("p-x1", "node-x", "foo"),
               *(pod(f"p-y{i}", "node-y", "foo") for i in range(3))]
ABCD = [host("node-a"), host("node-b"), host("node-c"), host("node-d")]
HOST_FOO = incoming("foo").spread(1, HOST, ANYWAY, FOO)
POLICY_PODS = [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
               pod("p-b1", "node-b", "foo"), pod("p-c1", "node-c", "foo")]


def _policy_nodes() -> list[NodeBuilder]:
    return [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
            node("node-c", node="node-c")]


def _taint_nodes() -> list[NodeBuilder]:
    return [node("node-a", node="node-a"), node("node-b", node="node-b"),
            tainted(node("node-c", node="node-c"))]


def _zoned4() -> list[NodeBuilder]:
    return [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2"),
            zh("node-y", "zone2")]


SCORE_CASES = [
    pytest.param(HOST_FOO, [host("node-a"), host("node-b")], [], [], None, [100, 100],
                 id="one constraint on node, no existing pods"),
    pytest.param(HOST_FOO, [host("node-a")], [host("node-b")],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo")], None, [100],
                 id="one constraint on node, only one node is candidate"),
    pytest.param(HOST_FOO, [host("node-a"), host("node-b")], [],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo")], None, [100, 100],
                 id="one constraint on node, all nodes have the same number of matching pods"),
    pytest.param(HOST_FOO, ABCD, [], SPREAD_2103, None, [20, 60, 100, 0],
                 id="one constraint on node, all 4 nodes are candidates"),
    pytest.param(incoming("foo").spread(1, HOST, ANYWAY), ABCD, [], SPREAD_2103, None,
                 [100, 100, 100, 100], id="one constraint on node, null selector"),
    pytest.param(incoming("foo").spread(2, HOST, ANYWAY, FOO), ABCD, [], SPREAD_2103, None,
                 [33, 66, 100, 16], id="one constraint on node, all 4 nodes are candidates, "
                 "maxSkew=2"),
    pytest.param(incoming("foo").spread(3, HOST, ANYWAY, FOO), ABCD, [], SPREAD_4321, None,
                 [44, 66, 77, 100], id="one constraint on node, all 4 nodes are candidates, "
                 "maxSkew=3"),
    pytest.param(incoming("foo"), ABCD, [], SPREAD_4321, label_selector({"foo": ""}),
                 [44, 66, 77, 100],
                 id="system defaulting, nodes don't have zone, pods match service"),
    pytest.param(HOST_FOO, [host("node-a"), host("node-b"), host("node-x")], [host("node-y")],
                 SPREAD_4213, None, [33, 83, 100],
                 id="one constraint on node, 3 out of 4 nodes are candidates"),
    pytest.param(HOST_FOO, [host("node-a"), node("node-b", n="node-b"), host("node-x")],
                 [host("node-y")], SPREAD_4213, None, [16, 0, 100],
                 id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't "
                 "match topology key"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, FOO),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
                 [zh("node-y", "zone2")], SPREAD_4213, None, [75, 75, 100],
                 id="one constraint on zone, 3 out of 4 nodes are candidates"),
    pytest.param(incoming("foo").spread(1, "zone", ANYWAY, FOO).spread(1, HOST, ANYWAY, FOO),
                 [zh("node-a", "zone1"), zh("node-x", "zone2")],
                 [zh("node-b", "zone1"), zh("node-y", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-x1", "node-x", "foo"),
                  pod("p-x2", "node-x", "foo"), *(pod(f"p-y{i}", "node-y", "foo")
                                                  for i in range(4))], None, [100, 63],
                 id="two Constraints on zone and node, 2 out of 4 nodes are candidates"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", ANYWAY, FOO)
                 .spread(1, "zone", ANYWAY, BAR),
                 [node("node-a", zone="zone1"), node("node-x", zone="zone2")],
                 [node("node-b", zone="zone1"), node("node-y", zone="zone2")],
                 [pod("p-a1", "node-a", "foo", "bar"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo", "bar"), pod("p-y1", "node-y", "foo"),
                  pod("p-y2", "node-y", "foo", "bar"), pod("p-y3", "node-y", "foo")], None,
                 [85, 100], id="two Constraints on zone, 2 out of 4 nodes are candidates"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", ANYWAY, FOO)
                 .spread(1, HOST, ANYWAY, BAR), _zoned4(), [],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo", "bar"),
                  pod("p-y1", "node-y", "foo"), pod("p-y2", "node-y", "bar")], None,
                 [60, 20, 100, 60],
                 id="two Constraints on zone and node, with different labelSelectors"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", ANYWAY, FOO)
                 .spread(1, HOST, ANYWAY, BAR), _zoned4(), [],
                 [pod("p-b1", "node-b", "bar"), pod("p-x1", "node-x", "foo"),
                  pod("p-y1", "node-y", "foo", "bar")], None, [100, 60, 40, 0],
                 id="two Constraints on zone and node, with different labelSelectors, some "
                 "nodes have 0 pods"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", ANYWAY, FOO)
                 .spread(1, HOST, ANYWAY, BAR),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-x", "zone2")],
                 [zh("node-y", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo", "bar"),
                  pod("p-y1", "node-y", "foo"), pod("p-y2", "node-y", "bar")], None,
                 [50, 25, 100],
                 id="two Constraints on zone and node, with different labelSelectors, 3 out of "
                 "4 nodes are candidates"),
    pytest.param(HOST_FOO, [host("node-a"), host("node-b")], [],
                 [pod("p-a1", "node-a", "foo", ns="ns1"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo")], None, [100, 33],
                 id="existing pods in a different namespace do not count"),
    pytest.param(HOST_FOO, [host("node-a"), host("node-b")], [],
                 [pod("p-a", "node-a", "foo").terminating(), pod("p-b", "node-b", "foo")], None,
                 [100, 0], id="terminating Pods should be excluded"),
    pytest.param(incoming("foo").spread(2, "node", ANYWAY, FOO, min_domains=10),
                 [node(n, node=n) for n in ("node-a", "node-b", "node-c")], [],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-c1", "node-c", "foo")], None, [75, 75, 100],
                 id="minDomains has no effect when ScheduleAnyway"),
    pytest.param(incoming("foo").node_selector(foo="").spread(1, "node", ANYWAY, FOO),
                 _policy_nodes(), [], POLICY_PODS, None, [0, 33, 100],
                 id="NodeAffinityPolicy honoed with labelSelectors"),
    pytest.param(incoming("foo").node_selector(foo="")
                 .spread(1, "node", ANYWAY, FOO, affinity_policy=IGNORE),
                 _policy_nodes(), [], POLICY_PODS, None, [66, 100, 100],
                 id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "node", ANYWAY, FOO), _policy_nodes(), [], POLICY_PODS, None,
                 [0, 33, 100], id="NodeAffinityPolicy honoed with nodeAffinity"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "node", ANYWAY, FOO, affinity_policy=IGNORE),
                 _policy_nodes(), [], POLICY_PODS, None, [66, 100, 100],
                 id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(incoming("foo").spread(1, "node", ANYWAY, FOO, taints_policy=HONOR),
                 _taint_nodes(), [], POLICY_PODS, None, [0, 33, 100],
                 id="NodeTaintsPolicy honored"),
    pytest.param(incoming("foo").spread(1, "node", ANYWAY, FOO), _taint_nodes(), [],
                 POLICY_PODS, None, [66, 100, 100], id="NodeTaintsPolicy ignored"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", ANYWAY, label_selector(),
                                               match_label_keys=["foo"])
                 .spread(1, HOST, ANYWAY, label_selector(), match_label_keys=["bar"]),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"),
                  zh("node-d", "zone2")], [],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo", "bar"),
                  pod("p-y1", "node-c", "foo"), pod("p-y2", "node-c", "bar")], None,
                 [60, 20, 60, 100],
                 id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"),
    pytest.param(incoming("foo", "bar", "baz").spread(1, "zone", ANYWAY, FOO)
                 .spread(1, HOST, ANYWAY, BAR, match_label_keys=["baz"]),
                 [zh("node-a", "zone1"), zh("node-b", "zone1"), zh("node-c", "zone2"),
                  zh("node-d", "zone2")], [],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo", "bar", "baz"),
                  pod("p-c1", "node-c", "foo"), pod("p-c2", "node-c", "bar"),
                  pod("p-d3", "node-c", "bar", "baz")], None, [60, 20, 60, 100],
                 id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty"),
]


@pytest.mark.parametrize(("pod_", "nodes", "failed", "pods", "selector", "expected"),
                         SCORE_CASES)
def test_score(pod_: PodBuilder, nodes: list[NodeBuilder], failed: list[NodeBuilder],
               pods: list[PodBuilder], selector: api.LabelSelector | None,
               expected: list[int]) -> None:
    every = make_cluster([*nodes, *failed], pods)
    candidates = every[:len(nodes)]
    handle = handle_for(pod_, selector)
    handle.snapshot_value = make_snapshot(*every)
    spread = pts.new(SYSTEM_ARGS, handle)
    state = CycleState()
    assert spread.pre_score(state, pod_.info(), candidates).ok
    scores = []
    for info in candidates:
        value, status = spread.score(state, pod_.info(), info)
        assert status.ok
        scores.append(NodeScore(info.name, value))
    assert spread.normalize_score(state, pod_.info(), scores).ok
    assert [entry.score for entry in scores] == expected


def test_raw_scores() -> None:
    """Score is round(count * log(domains + 2) + maxSkew - 1)."""
    nodes = [host("node-a"), host("node-b")]
    every = make_cluster(nodes, [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo")])
    handle = FakeHandle(snapshot_value=make_snapshot(*every))
    spread = pts.new(LIST_ARGS, handle)
    state = CycleState()
    pod_ = incoming("foo").spread(2, HOST, ANYWAY, FOO)
    assert spread.pre_score(state, pod_.info(), every).ok
    raw = [spread.score(state, pod_.info(), info)[0] for info in every]
    assert raw == [round(2 * math.log(4) + 1), 1] == [4, 1]


@pytest.mark.parametrize(("value", "rounded"), [(0.5, 1), (2.5, 3), (2.4999, 2), (0.0, 0)])
def test_go_round_rounds_halves_up(value: float, rounded: int) -> None:
    assert scoring._go_round(value) == rounded


def test_score_needs_pre_score() -> None:
    every = make_cluster([host("node-a")])
    spread = pts.new(LIST_ARGS, FakeHandle(snapshot_value=make_snapshot(*every)))
    _, status = spread.score(CycleState(), make_pod().info(), every[0])
    assert status.code == Code.ERROR
    assert status.message() == (
        'error reading "PreScorePodTopologySpread" from cycleState: not found')
    status = spread.normalize_score(CycleState(), make_pod().info(), [NodeScore("node-a", 1)])
    assert status.code == Code.ERROR


def test_normalize_ignored_nodes_and_all_zero() -> None:
    """Ignored nodes get 0; when every counted raw score is 0 the others get 100."""
    pod_ = incoming("foo").spread(1, "zone", ANYWAY, FOO)
    every = make_cluster([zh("node-a", "zone1"), host("node-b")])
    spread = pts.new(LIST_ARGS, FakeHandle(snapshot_value=make_snapshot(*every)))
    state = CycleState()
    assert spread.pre_score(state, pod_.info(), every).ok
    scores = [NodeScore("node-a", 0), NodeScore("node-b", 0)]
    assert spread.normalize_score(state, pod_.info(), scores).ok
    assert [entry.score for entry in scores] == [100, 0]
