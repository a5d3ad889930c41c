"""PodTopologySpread PreFilter/Filter and PreFilterExtensions, with cases from upstream's
filtering_test.go (v1.36.4).

Upstream runs some cases with NodeInclusionPolicyInPodTopologySpread or
MatchLabelKeysInPodTopologySpread switched off; both gates are locked on in
v1.36, so those cases are taken with the gates on (the results coincide
wherever the constraint uses the default policies).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import Code, Status
from kpysched.metrics import NoMetrics
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.plugins import pod_topology_spread as pts
from kpysched.plugins.pod_topology_spread.filtering import MAX_MATCH_NUM, PreFilterState
from tests.unit.builders import (
    FakeHandle,
    NodeBuilder,
    PodBuilder,
    expr,
    label_selector,
    make_cluster,
    make_node,
    make_pod,
    make_snapshot,
    term,
)

FOO = label_selector(exists=["foo"])
BAR = label_selector(exists=["bar"])
ANYWAY = "ScheduleAnyway"
IGNORE = "Ignore"
HONOR = "Honor"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
LIST_ARGS = pts.PodTopologySpreadArgs.model_validate({"defaultingType": "List"})


def node(name: str, labels: dict[str, str] | None = None, /, **named: str) -> NodeBuilder:
    return make_node(name).labels({**(labels or {}), **named})


def zn(name: str, zone: str, /, **named: str) -> NodeBuilder:
    """A node labelled zone=<zone>, node=<name> (upstream's usual test node)."""
    return node(name, zone=zone, node=name, **named)


def tainted(builder: NodeBuilder) -> NodeBuilder:
    return builder.taint(UNSCHEDULABLE_TAINT)


def pod(name: str, on: str, *keys: str, ns: str = "default", **valued: str) -> PodBuilder:
    """A pod bound to `on` with labels `key=""` for each key, plus `key=value`."""
    builder = make_pod(name, ns).node(on)
    for key in keys:
        builder.label(key)
    for key, value in valued.items():
        builder.label(key, value)
    return builder


def incoming(*keys: str, **valued: str) -> PodBuilder:
    builder = make_pod("p")
    for key in keys:
        builder.label(key)
    for key, value in valued.items():
        builder.label(key, value)
    return builder


def four_nodes() -> list[NodeBuilder]:
    return [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"),
            zn("node-y", "zone2")]


def plugin(infos: Sequence[NodeInfo], args: pts.PodTopologySpreadArgs = LIST_ARGS,
           handle: FakeHandle | None = None) -> pts.PodTopologySpread:
    handle = handle or FakeHandle()
    handle.snapshot_value = make_snapshot(*infos)
    return pts.new(args, handle)


def pre_filtered(pod_: PodBuilder, infos: Sequence[NodeInfo],
                 handle: FakeHandle | None = None,
                 args: pts.PodTopologySpreadArgs = LIST_ARGS,
                 ) -> tuple[pts.PodTopologySpread, CycleState, Status]:
    spread = plugin(infos, args, handle)
    state = CycleState()
    _, status = spread.pre_filter(state, pod_.info(), infos)
    return spread, state, status


def _tie_sorted(first: tuple[str, int], second: tuple[str, int]
                ) -> tuple[tuple[str, int], tuple[str, int]]:
    """Tied paths with their values in order, as upstream's test comparer sorts them."""
    if first[1] == second[1] and first[0] > second[0]:
        return (second[0], first[1]), (first[0], second[1])
    return first, second


def paths_of(state: PreFilterState) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    return [_tie_sorted((p.first.topology_value, p.first.match_num),
                        (p.second.topology_value, p.second.match_num))
            for p in state.critical_paths]


def _sorted_paths(*paths: tuple[tuple[str, int], tuple[str, int]]
                  ) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    return [_tie_sorted(first, second) for first, second in paths]


NONE = ("", MAX_MATCH_NUM)

# --- PreFilter state (TestPreFilterState) ------------------------------------------

PRE_FILTER_CASES = [
    pytest.param(
        incoming("foo").spread(5, "zone", selector=label_selector({"foo": "bar"})),
        four_nodes(), [],
        [{"zone1": 0, "zone2": 0}], [(("zone1", 0), ("zone2", 0))],
        id="clean cluster with one spreadConstraint"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO), four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
         pod("p-y2", "node-y", "foo")],
        [{"zone1": 3, "zone2": 2}], [(("zone2", 2), ("zone1", 3))],
        id="normal case with one spreadConstraint"),
    pytest.param(
        incoming("foo").spread(1, "zone"), four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
         pod("p-y2", "node-y", "foo")],
        [{"zone1": 0, "zone2": 0}], [(("zone1", 0), ("zone2", 0))],
        id="normal case with null label selector"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO),
        [*four_nodes(), zn("node-o", "zone3"), zn("node-p", "zone3")],
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
         pod("p-y2", "node-y", "foo")],
        [{"zone1": 3, "zone2": 2, "zone3": 0}], [(("zone3", 0), ("zone2", 2))],
        id="normal case with one spreadConstraint, on a 3-zone cluster"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO), four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo", ns="ns1"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo", ns="ns2"),
         pod("p-y2", "node-y", "foo")],
        [{"zone1": 2, "zone2": 1}], [(("zone2", 1), ("zone1", 2))],
        id="namespace mismatch doesn't count"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO).spread(1, "node", selector=FOO),
        four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), *(pod(f"p-y{i}", "node-y", "foo") for i in range(4))],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        [(("zone1", 3), ("zone2", 4)), (("node-x", 0), ("node-b", 1))],
        id="normal case with two spreadConstraints"),
    pytest.param(
        incoming("foo").spread(1, "zone", ANYWAY, FOO).spread(1, "zone", selector=FOO)
        .spread(1, "node", ANYWAY, FOO).spread(1, "node", selector=FOO),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), *(pod(f"p-y{i}", "node-y", "foo") for i in range(4))],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
        id="soft spreadConstraints should be bypassed"),
    pytest.param(
        incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [pod("p-a", "node-a", "foo"), pod("p-b", "node-b", "bar")],
        [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
        [(("zone2", 0), ("zone1", 1)), (("node-a", 0), ("node-y", 0))],
        id="different labelSelectors - simple version"),
    pytest.param(
        incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "node", selector=BAR),
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")],
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo", "bar"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
         pod("p-y2", "node-y", "foo", "bar"), pod("p-y3", "node-y", "foo"),
         pod("p-y4", "node-y", "foo", "bar")],
        [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        [(("zone1", 3), ("zone2", 4)), (("node-b", 0), ("node-a", 1))],
        id="different labelSelectors - complex pods"),
    pytest.param(
        incoming("foo").required(term(expr("node", "NotIn", "node-x")))
        .spread(1, "zone", selector=FOO).spread(1, "node", selector=FOO),
        four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-b1", "node-b", "foo"), *(pod(f"p-y{i}", "node-y", "foo") for i in range(4))],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [(("zone1", 3), ("zone2", 4)), (("node-b", 1), ("node-a", 2))],
        id="two spreadConstraints, and with podAffinity"),
    pytest.param(
        incoming("foo").node_selector(foo="").spread(1, "node", selector=BAR),
        [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
         node("node-c", node="node-c", bar="")],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2}], [(("node-a", 1), ("node-b", 2))],
        id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(
        incoming("foo").node_selector(foo="").spread(1, "node", selector=BAR,
                                                     affinity_policy=IGNORE),
        [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
         node("node-c", node="node-c", bar="")],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}], [(("node-c", 0), ("node-a", 1))],
        id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(
        incoming("foo").required(term(expr("foo", "In", ""))).spread(1, "node", selector=BAR),
        [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
         node("node-c", node="node-c", bar="")],
        [pod("p-a", "node-a", "bar"), pod("p-c", "node-b", "bar"), pod("p-d", "node-b", "bar"),
         pod("p-e", "node-c")],
        [{"node-a": 1, "node-b": 2}], [(("node-a", 1), ("node-b", 2))],
        id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param(
        incoming("foo").required(term(expr("foo", "In", "")))
        .spread(1, "node", selector=BAR, affinity_policy=IGNORE),
        [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
         node("node-c", node="node-c", bar="")],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}], [(("node-c", 0), ("node-a", 1))],
        id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(
        incoming("foo").spread(1, "node", selector=BAR),
        [node("node-a", node="node-a"), node("node-b", node="node-b"),
         tainted(node("node-c", node="node-c", bar=""))],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}], [(("node-c", 0), ("node-a", 1))],
        id="NodeTaintsPolicy ignored"),
    pytest.param(
        incoming("foo").spread(1, "node", selector=BAR, taints_policy=HONOR),
        [node("node-a", node="node-a"), node("node-b", node="node-b"),
         tainted(node("node-c", node="node-c", bar=""))],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2}], [(("node-a", 1), ("node-b", 2))],
        id="NodeTaintsPolicy honored"),
    pytest.param(
        incoming("foo").toleration(UNSCHEDULABLE_TAINT, operator="Exists")
        .spread(1, "node", selector=BAR, taints_policy=HONOR),
        [node("node-a", node="node-a"), node("node-b", node="node-b"),
         tainted(node("node-c", node="node-c", bar=""))],
        [pod("p-a", "node-a", "bar"), pod("p-b", "node-b", "bar"), pod("p-c", "node-b", "bar"),
         pod("p-d", "node-c")],
        [{"node-a": 1, "node-b": 2, "node-c": 0}], [(("node-c", 0), ("node-a", 1))],
        id="NodeTaintsPolicy honored with tolerated taints"),
    pytest.param(
        incoming("foo").node_selector(foo="").spread(1, "zone", selector=FOO)
        .spread(1, "node", selector=FOO, affinity_policy=IGNORE),
        [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo=""),
         zn("node-y", "zone2")],
        [pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
         pod("p-x1", "node-x", "foo")],
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1, "node-y": 0}],
        [(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-y", 0))],
        id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO, taints_policy=HONOR)
        .spread(1, "node", selector=FOO),
        [zn("node-a", "zone1", foo=""), tainted(zn("node-b", "zone1")),
         zn("node-x", "zone2", foo="")],
        [pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
         pod("p-x1", "node-x", "foo")],
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        [(("zone1", 0), ("zone2", 1)), (("node-a", 0), ("node-x", 1))],
        id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore"),
    pytest.param(
        incoming("foo").node_selector(foo="").spread(1, "zone", selector=FOO)
        .spread(1, "node", selector=FOO),
        [zn("node-a", "zone1"), tainted(zn("node-b", "zone1", foo="")),
         zn("node-x", "zone2", foo=""), zn("node-y", "zone2")],
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")],
        [{"zone1": 0, "zone2": 1}, {"node-b": 0, "node-x": 1}],
        [(("zone1", 0), ("zone2", 1)), (("node-b", 0), ("node-x", 1))],
        id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore"),
    pytest.param(
        incoming("foo").node_selector(foo="").spread(1, "zone", selector=FOO,
                                                     affinity_policy=IGNORE)
        .spread(1, "node", selector=FOO, taints_policy=HONOR),
        [zn("node-a", "zone1"), tainted(zn("node-b", "zone1", foo="")),
         zn("node-x", "zone2", foo=""), zn("node-y", "zone2", foo="")],
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
         pod("p-x1", "node-x", "foo"), pod("p-x2", "node-x", "foo"),
         pod("p-y1", "node-y", "foo")],
        [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        [(("zone1", 2), ("zone2", 3)), (("node-y", 1), ("node-x", 2))],
        id="two node inclusion Constraints, zone: ignore/ignore, node: honor/honor"),
    pytest.param(
        incoming("foo", bar="a").spread(1, "zone", selector=FOO, match_label_keys=["bar"]),
        four_nodes(),
        [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo", bar="a"),
         pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo", bar="a"),
         pod("p-y2", "node-y", "bar")],
        [{"zone1": 1, "zone2": 1}], [(("zone1", 1), ("zone2", 1))],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty"),
    pytest.param(
        incoming(foo="a").spread(1, "zone", selector=label_selector(), match_label_keys=["foo"]),
        four_nodes(), [pod(n, on, foo="a") for n, on in (
            ("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"),
            ("p-y2", "node-y"))],
        [{"zone1": 3, "zone2": 2}], [(("zone2", 2), ("zone1", 3))],
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"),
    pytest.param(
        incoming("foo").spread(1, "zone", match_label_keys=["bar"]),
        four_nodes(), [pod(n, on, foo="a") for n, on in (
            ("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"),
            ("p-y2", "node-y"))],
        [{"zone1": 0, "zone2": 0}], [(("zone1", 0), ("zone2", 0))],
        id="key in matchLabelKeys is ignored when LabelSelector is nil"),
    pytest.param(
        incoming("foo").spread(1, "zone", selector=FOO, match_label_keys=["bar"]),
        four_nodes(), [pod(n, on, foo="a") for n, on in (
            ("p-a1", "node-a"), ("p-a2", "node-a"), ("p-b1", "node-b"), ("p-y1", "node-y"),
            ("p-y2", "node-y"))],
        [{"zone1": 3, "zone2": 2}], [(("zone2", 2), ("zone1", 3))],
        id="key in matchLabelKeys is ignored when it isn't exist in pod.labels"),
    pytest.param(
        incoming("foo", "bar").spread(1, "zone", selector=FOO).spread(1, "zone", selector=BAR),
        four_nodes(),
        [pod("p-a1", "node-a", "foo", "bar"), pod("p-b1", "node-b", "foo"),
         pod("p-x1", "node-x", "bar"), pod("p-y1", "node-y", "foo", "bar"),
         pod("p-y2", "node-y", "bar")],
        [{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
        [(("zone2", 1), ("zone1", 2)), (("zone1", 1), ("zone2", 3))],
        id="two spreadConstraints with the same topologyKey"),
    pytest.param(
        incoming("foo").spread(1, "node", selector=FOO).spread(1, "zone", selector=FOO),
        [zn("node-a", "zone1"), node("node-b", node="node-b"), node("node-c", zone="zone2")],
        [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
         pod("p-c1", "node-c", "foo")],
        [{"node-a": 1}, {"zone1": 1}], [(("node-a", 1), NONE), (("zone1", 1), NONE)],
        id="nodes missing any topology key are left out of every constraint"),
    pytest.param(
        incoming("foo").spread(1, "node", selector=FOO), [zn("node-a", "zone1")],
        [pod("p-a1", "node-a", "foo").terminating(), pod("p-a2", "node-a", "foo")],
        [{"node-a": 1}], [(("node-a", 1), NONE)],
        id="terminating pods do not count"),
]


@pytest.mark.parametrize(("pod_", "nodes", "pods", "counts", "paths"), PRE_FILTER_CASES)
def test_pre_filter_state(pod_: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder],
                          counts: list[dict[str, int]],
                          paths: list[tuple[tuple[str, int], tuple[str, int]]]) -> None:
    _, state, status = pre_filtered(pod_, make_cluster(nodes, pods))
    assert status.ok, status
    computed: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    assert list(computed.match_counts) == counts
    assert paths_of(computed) == _sorted_paths(*paths)


def test_pre_filter_state_constraints() -> None:
    pod_ = (incoming("foo", bar="a")
            .spread(2, "zone", selector=FOO, min_domains=3, match_label_keys=["bar"])
            .spread(1, "node", ANYWAY, FOO)
            .spread(1, "rack", affinity_policy=IGNORE, taints_policy=HONOR))
    _, state, _ = pre_filtered(pod_, [])
    computed: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    zone, rack = computed.constraints
    assert (zone.max_skew, zone.topology_key, zone.min_domains, zone.node_affinity_policy,
            zone.node_taints_policy) == (2, "zone", 3, HONOR, IGNORE)
    assert zone.selector.matches({"foo": "", "bar": "a"})
    assert not zone.selector.matches({"foo": "", "bar": "b"})
    assert (rack.topology_key, rack.min_domains, rack.node_affinity_policy,
            rack.node_taints_policy) == ("rack", 1, IGNORE, HONOR)
    assert rack.selector.nothing
    assert (computed.match_counts, paths_of(computed)) == (({}, {}), [(NONE, NONE)] * 2)


DEFAULT_LIST = pts.PodTopologySpreadArgs.model_validate({
    "defaultingType": "List",
    "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
    ]})


def _service_handle(pod_: PodBuilder, selector: api.LabelSelector | None) -> FakeHandle:
    handle = FakeHandle()
    if selector is not None:
        obj = pod_.obj()
        handle.spread_selectors[f"{obj.metadata.namespace}/{obj.metadata.name}"] = selector
    return handle


def test_default_constraints_and_a_service() -> None:
    pod_ = incoming(foo="bar", baz="kar")
    handle = _service_handle(pod_, label_selector({"foo": "bar"}))
    _, state, status = pre_filtered(pod_, [], handle, DEFAULT_LIST)
    assert status.ok
    computed: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    assert [(c.max_skew, c.topology_key) for c in computed.constraints] == [(3, "node"),
                                                                           (5, "rack")]
    for constraint in computed.constraints:
        assert constraint.selector.matches({"foo": "bar"})
        assert not constraint.selector.matches({"foo": "baz"})
    assert (computed.match_counts, paths_of(computed)) == (({}, {}), [(NONE, NONE)] * 2)


@pytest.mark.parametrize(("pod_", "selector", "args"), [
    pytest.param(incoming(foo="bar"), None, DEFAULT_LIST,
                 id="default constraints and a service that doesn't match"),
    pytest.param(incoming(foo="bar"), label_selector(), DEFAULT_LIST,
                 id="an empty deduced selector means no default constraints"),
    pytest.param(incoming(foo="bar"), label_selector({"foo": "bar"}),
                 pts.PodTopologySpreadArgs.model_validate({
                     "defaultingType": "List", "defaultConstraints": [
                         {"maxSkew": 2, "topologyKey": "node",
                          "whenUnsatisfiable": "ScheduleAnyway"}]}),
                 id="default soft constraints and a service"),
    pytest.param(incoming(foo="bar"), label_selector({"foo": "bar"}), pts.PodTopologySpreadArgs(),
                 id="system defaults are only soft"),
    pytest.param(incoming("foo"), None, LIST_ARGS, id="skip if not specified"),
])
def test_pre_filter_skips(pod_: PodBuilder, selector: api.LabelSelector | None,
                          args: pts.PodTopologySpreadArgs) -> None:
    infos = make_cluster([zn("node-a", "zone1")])
    spread, state, status = pre_filtered(pod_, infos, _service_handle(pod_, selector), args)
    assert status.code == Code.SKIP
    # A skipped plugin leaves a harmless empty state for AddPod/RemovePod.
    assert spread.add_pod(state, pod_.info(), pod("q", "node-a", "foo").info(), infos[0]).ok
    assert spread.filter(state, pod_.info(), infos[0]).ok


def test_pod_constraints_win_over_defaults() -> None:
    pod_ = (incoming(foo="bar", baz="tar")
            .spread(1, "zone", selector=label_selector({"baz": "tar"}))
            .spread(2, "planet", ANYWAY, label_selector({"fot": "rok"})))
    args = pts.PodTopologySpreadArgs.model_validate({
        "defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}]})
    handle = _service_handle(pod_, label_selector({"foo": "bar"}))
    _, state, status = pre_filtered(pod_, [], handle, args)
    assert status.ok
    computed: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    (constraint,) = computed.constraints
    assert (constraint.max_skew, constraint.topology_key) == (1, "zone")
    assert constraint.selector.matches({"baz": "tar"}) and not constraint.selector.matches({})


@pytest.mark.parametrize(("selector", "message"), [
    pytest.param(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="foo", operator="Gt", values=["1"])]),
        "'Gt' is not a valid label selector operator", id="operator"),
    pytest.param(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="foo", operator="In")]),
        "values set can't be empty", id="In without values"),
    pytest.param(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="foo", operator="Exists", values=["x"])]),
        "values set must be empty", id="Exists with values"),
    pytest.param(label_selector({"a b": "x"}), "name part must consist", id="bad key"),
])
def test_pre_filter_rejects_a_bad_selector(selector: api.LabelSelector, message: str) -> None:
    _, _, status = pre_filtered(incoming("foo").spread(1, "zone", selector=selector), [])
    assert status.code == Code.ERROR
    assert status.message().startswith(
        "get constraints from pod: obtaining pod's hard topology spread constraints: ")
    assert message in status.message()


# --- AddPod / RemovePod (TestPreFilterStateAddPod, TestPreFilterStateRemovePod) -----

def _two_nodes() -> list[NodeBuilder]:
    return [zn("node-a", "zone1"), zn("node-b", "zone1")]


def _three_nodes() -> list[NodeBuilder]:
    return [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")]


def _policy_nodes() -> list[NodeBuilder]:
    return [zn("node-a", "zone1", foo="bar"), zn("node-b", "zone2", foo="")]


def _taint_nodes() -> list[NodeBuilder]:
    return [tainted(zn("node-a", "zone1")), zn("node-b", "zone2")]


NODE_FOO = incoming("foo").spread(1, "node", selector=FOO)
ZONE_FOO = incoming("foo").spread(1, "zone", selector=FOO)
ZONE_NODE_FOO = incoming("foo").spread(1, "zone", selector=FOO).spread(1, "node", selector=FOO)

ADD_POD_CASES = [
    pytest.param(NODE_FOO, pod("p-a1", "node-a", "foo"), [], 0, _two_nodes(),
                 [{"node-a": 1, "node-b": 0}], [(("node-b", 0), ("node-a", 1))],
                 id="node a and b both impact current min match"),
    pytest.param(NODE_FOO, pod("p-a1", "node-a", "foo"), [pod("p-b1", "node-b", "foo")], 0,
                 _two_nodes(), [{"node-a": 1, "node-b": 1}], [(("node-a", 1), ("node-b", 1))],
                 id="only node a impacts current min match"),
    pytest.param(NODE_FOO, pod("p-a1", "node-a", "foo", ns="ns1"),
                 [pod("p-b1", "node-b", "foo")], 0, _two_nodes(),
                 [{"node-a": 0, "node-b": 1}], [(("node-a", 0), ("node-b", 1))],
                 id="add a pod in a different namespace doesn't change topologyKeyToMinPodsMap"),
    pytest.param(NODE_FOO, pod("p-b2", "node-b", "foo"), [pod("p-b1", "node-b", "foo")], 1,
                 _two_nodes(), [{"node-a": 0, "node-b": 2}], [(("node-a", 0), ("node-b", 2))],
                 id="add pod on non-critical node won't trigger re-calculation"),
    pytest.param(ZONE_NODE_FOO, pod("p-a1", "node-a", "foo"), [], 0,
                 [zn("node-a", "zone1"), zn("node-x", "zone2")],
                 [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
                 [(("zone2", 0), ("zone1", 1)), (("node-x", 0), ("node-a", 1))],
                 id="node a and x both impact topologyKeyToMinPodsMap on zone and node"),
    pytest.param(ZONE_NODE_FOO, pod("p-a1", "node-a", "foo"), [pod("p-x1", "node-x", "foo")], 0,
                 [zn("node-a", "zone1"), zn("node-x", "zone2")],
                 [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
                 [(("zone1", 1), ("zone2", 1)), (("node-a", 1), ("node-x", 1))],
                 id="only node a impacts topologyKeyToMinPodsMap on zone and node"),
    pytest.param(ZONE_NODE_FOO, pod("p-a1", "node-a", "foo"),
                 [pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-x1", "node-x", "foo")], 0, _three_nodes(),
                 [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
                 [(("zone2", 1), ("zone1", 3)), (("node-a", 1), ("node-x", 1))],
                 id="node a impacts topologyKeyToMinPodsMap on node, node x impacts "
                 "topologyKeyToMinPodsMap on zone"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), pod("p-a1", "node-a", "foo"),
                 [pod("p-b1", "node-b", "foo", "bar"), pod("p-x1", "node-x", "foo", "bar"),
                  pod("p-x2", "node-x", "bar")], 0, _three_nodes(),
                 [{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
                 [(("zone2", 1), ("zone1", 2)), (("node-a", 0), ("node-b", 1))],
                 id="Constraints hold different labelSelectors, node a impacts "
                 "topologyKeyToMinPodsMap on zone"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), pod("p-a1", "node-a", "foo", "bar"),
                 [pod("p-b1", "node-b", "bar"), pod("p-x1", "node-x", "foo", "bar"),
                  pod("p-x2", "node-x", "bar")], 0, _three_nodes(),
                 [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
                 [(("zone1", 1), ("zone2", 1)), (("node-a", 1), ("node-b", 1))],
                 id="Constraints hold different labelSelectors, node a impacts "
                 "topologyKeyToMinPodsMap on both zone and node"),
    pytest.param(incoming("foo").required(term(expr("foo", "NotIn", "bar")))
                 .spread(1, "zone", selector=FOO),
                 pod("p-a1", "node-a", "foo", zone="zone1"),
                 [pod("p-a2", "node-a", "foo", zone="zone1"),
                  pod("p-b1", "node-b", "foo", zone="zone2")], 0, _policy_nodes(),
                 [{"zone2": 1}], [(("zone2", 1), NONE)],
                 id="add a pod when scheduling node affinity unmatched pod"),
    pytest.param(ZONE_FOO, pod("p-b1", "node-b", "foo", zone="zone2"),
                 [pod("p-a1", "node-a", "foo", zone="zone1"),
                  pod("p-b2", "node-b", "foo", zone="zone2")], 1, _policy_nodes(),
                 [{"zone1": 1, "zone2": 2}], [(("zone1", 1), ("zone2", 2))],
                 id="add a pod when scheduling node affinity matched pod"),
    pytest.param(ZONE_FOO, pod("p-b1", "node-b", zone="zone2"),
                 [pod("p-a1", "node-a", "foo", zone="zone1"),
                  pod("p-b2", "node-b", "foo", zone="zone2")], 1, _policy_nodes(),
                 [{"zone1": 1, "zone2": 1}], [(("zone1", 1), ("zone2", 1))],
                 id="add a label selector not matched pod"),
    pytest.param(ZONE_FOO, pod("p-b1", "node-b", "foo", zone="zone2"),
                 [pod("p-a1", "node-a", "foo", zone="zone1"),
                  pod("p-b2", "node-b", "foo", zone="zone2")], 1, _taint_nodes(),
                 [{"zone1": 1, "zone2": 2}], [(("zone1", 1), ("zone2", 2))],
                 id="add a pod when scheduling taint untolerated pod"),
    pytest.param(incoming("foo").toleration(UNSCHEDULABLE_TAINT, operator="Exists")
                 .spread(1, "zone", selector=FOO),
                 pod("p-b1", "node-b", "foo", zone="zone2"),
                 [pod("p-a1", "node-a", "foo", zone="zone1"),
                  pod("p-b2", "node-b", "foo", zone="zone2")], 1, _taint_nodes(),
                 [{"zone1": 1, "zone2": 2}], [(("zone1", 1), ("zone2", 2))],
                 id="add a pod when scheduling taint tolerated pod"),
]


@pytest.mark.parametrize(("preemptor", "added", "pods", "node_index", "nodes", "counts",
                          "paths"), ADD_POD_CASES)
def test_add_pod(preemptor: PodBuilder, added: PodBuilder, pods: list[PodBuilder],
                 node_index: int, nodes: list[NodeBuilder], counts: list[dict[str, int]],
                 paths: list[tuple[tuple[str, int], tuple[str, int]]]) -> None:
    infos = make_cluster(nodes, pods)
    spread, state, status = pre_filtered(preemptor, infos)
    assert status.ok
    before: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    snapshot = [dict(counts_) for counts_ in before.match_counts]
    copy = state.clone()
    assert spread.add_pod(state, preemptor.info(), added.info(), infos[node_index]).ok
    after: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    assert list(after.match_counts) == counts
    assert paths_of(after) == _sorted_paths(*paths)
    # Copy on write: a cloned CycleState keeps the counts it had.
    assert list(copy.read(pts.PRE_FILTER_KEY).match_counts) == snapshot


REMOVE_POD_CASES = [
    pytest.param(ZONE_FOO, [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-x1", "node-x", "foo")], 0, None, 0,
                 [{"zone1": 1, "zone2": 1}], [(("zone1", 1), ("zone2", 1))],
                 id="one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged"),
    pytest.param(ZONE_FOO, four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")], 0, None, 0,
                 [{"zone1": 1, "zone2": 2}], [(("zone1", 1), ("zone2", 2))],
                 id="one spreadConstraint on node, topologyKeyToMinPodsMap changed"),
    pytest.param(ZONE_FOO, four_nodes(),
                 [pod("p-a0", "node-a", "bar"), pod("p-a1", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-x1", "node-x", "foo"),
                  pod("p-y1", "node-y", "foo")], 0, None, 0,
                 [{"zone1": 2, "zone2": 2}], [(("zone1", 2), ("zone2", 2))],
                 id="delete an irrelevant pod won't help"),
    pytest.param(ZONE_FOO, four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")], -1,
                 pod("p-a0", "node-a", "bar"), 0,
                 [{"zone1": 2, "zone2": 2}], [(("zone1", 2), ("zone2", 2))],
                 id="delete a non-existing pod won't help"),
    pytest.param(ZONE_NODE_FOO,
                 [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-x1", "node-x", "foo"),
                  pod("p-x2", "node-x", "foo")], 3, None, 2,
                 [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
                 [(("zone2", 1), ("zone1", 3)), (("node-b", 1), ("node-x", 1))],
                 id="two spreadConstraints"),
    pytest.param(incoming("foo").required(term(expr("foo", "NotIn", "bar")))
                 .spread(1, "zone", selector=FOO), _policy_nodes(),
                 [pod("p-a2", "node-a", "foo", zone="zone1"),
                  pod("p-b1", "node-b", "foo", zone="zone2")], -1,
                 pod("p-a1", "node-a", "foo", zone="zone1"), 0,
                 [{"zone2": 1}], [(("zone2", 1), NONE)],
                 id="remove a pod when scheduling node affinity unmatched pod"),
    pytest.param(ZONE_FOO, _policy_nodes(),
                 [pod("p-a1", "node-a", "foo", zone="zone1"),
                  pod("p-b2", "node-b", "foo", zone="zone2")], -1,
                 pod("p-b1", "node-b", "foo", zone="zone2"), 1,
                 [{"zone1": 1, "zone2": 0}], [(("zone2", 0), ("zone1", 1))],
                 id="remove a pod when scheduling node affinity matched pod"),
]


@pytest.mark.parametrize(("preemptor", "nodes", "pods", "deleted_index", "deleted",
                          "node_index", "counts", "paths"), REMOVE_POD_CASES)
def test_remove_pod(preemptor: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder],
                    deleted_index: int, deleted: PodBuilder | None, node_index: int,
                    counts: list[dict[str, int]],
                    paths: list[tuple[tuple[str, int], tuple[str, int]]]) -> None:
    infos = make_cluster(nodes, pods)
    spread, state, status = pre_filtered(preemptor, infos)
    assert status.ok
    victim = pods[deleted_index] if deleted is None else deleted
    assert spread.remove_pod(state, preemptor.info(), victim.info(), infos[node_index]).ok
    after: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    assert list(after.match_counts) == counts
    assert paths_of(after) == _sorted_paths(*paths)


def test_extensions_need_pre_filter_state() -> None:
    infos = make_cluster([zn("node-a", "zone1")])
    spread = plugin(infos)
    status = spread.add_pod(CycleState(), NODE_FOO.info(), pod("q", "node-a").info(), infos[0])
    assert status.code == Code.ERROR
    assert status.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


# --- Filter (TestSingleConstraint, TestMultipleConstraints) --------------------------

S, U, R = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
_CODES = {"S": S, "U": U, "R": R}

SPREAD_2103 = [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
               pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
               pod("p-y2", "node-y", "foo"), pod("p-y3", "node-y", "foo")]


def _policy_cluster(taint_y: bool = False) -> list[NodeBuilder]:
    """node-a/b/x labelled foo; node-y not (or tainted instead)."""
    return [node("node-a", node="node-a", foo=""), node("node-b", node="node-b", foo=""),
            node("node-x", node="node-x", foo=""),
            tainted(node("node-y", node="node-y")) if taint_y else node("node-y", node="node-y")]


POLICY_PODS = [pod("p-b1", "node-a", "foo"), pod("p-b2", "node-b", "foo"),
               pod("p-y1", "node-y", "foo")]

SINGLE_CONSTRAINT_CASES = [
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO), four_nodes(), [], "SSSS",
                 id="no existing pods"),
    pytest.param(incoming("foo").spread(1, "zone", selector=BAR), four_nodes(), [], "SSSS",
                 id="no existing pods, incoming pod doesn't match itself"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO), four_nodes(),
                 [pod("p-a1", "node-a", "foo", ns="ns1"), pod("p-b1", "node-a", "foo", ns="ns2"),
                  pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")], "SSUU",
                 id="existing pods in a different namespace do not count"),
    pytest.param(incoming("foo").spread(1, "zone"), four_nodes(),
                 [pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")], "SSSS",
                 id="existing pods do not match null selector"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO), four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-y1", "node-y", "foo"),
                  pod("p-y2", "node-y", "foo"), pod("p-y3", "node-y", "foo")], "SSSS",
                 id="pods spread across zones as 3/3, all nodes fit"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO),
                 [zn("node-a", "zone1"), node("node-b", zon="zone1", node="node-b"),
                  zn("node-x", "zone2"), zn("node-y", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-x1", "node-x", "foo"), pod("p-y1", "node-y", "foo")], "SRUU",
                 id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b"),
    pytest.param(incoming("foo").spread(1, "rack", selector=FOO),
                 [zn("node-a", "zone1"), zn("node-x", "zone2")], [], "RR",
                 id="pod cannot be scheduled as all nodes don't have label 'rack'"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO), four_nodes(), SPREAD_2103,
                 "UUSU", id="pods spread across nodes as 2/1/0/3, only node-x fits"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO), four_nodes(), SPREAD_2103,
                 "USSU", id="pods spread across nodes as 2/1/0/3, maxSkew is 2, "
                 "node-b and node-x fit"),
    pytest.param(incoming("bar").spread(1, "node", selector=FOO), four_nodes(), SPREAD_2103,
                 "USSU", id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself"),
    pytest.param(incoming("foo").required(term(expr("node", "In", "node-a", "node-y")))
                 .spread(1, "node", selector=FOO), four_nodes(), SPREAD_2103, "SSSU",
                 id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, "
                 "hence node-a fits"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO),
                 [node("node-a", node="node-a"), node("node-b", node="node-b")],
                 [pod("p-a", "node-a", "foo").terminating(), pod("p-b", "node-b", "foo")], "SU",
                 id="terminating Pods should be excluded"),
    pytest.param(incoming("foo").required(term(expr("node", "NotIn", "node-b")))
                 .spread(1, "zone", selector=FOO), four_nodes(),
                 [pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "SSUU",
                 id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO, min_domains=4),
                 [node(n, node=n) for n in ("node-a", "node-b", "node-c")],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-c1", "node-c", "foo")], "UUS",
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of "
                 "domains < minDomains, then the third node fits"),
    pytest.param(incoming("foo").spread(2, "node", selector=FOO, min_domains=2),
                 [node(n, node=n) for n in ("node-a", "node-b", "node-c")],
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-c1", "node-c", "foo")], "SSS",
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of "
                 "domains > minDomains, then the all nodes fit"),
    pytest.param(incoming("foo").spread(2, "zone", selector=FOO, min_domains=3), four_nodes(),
                 [pod("p-b1", "node-a", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "UUSS",
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains "
                 "< minDomains, then the third and fourth nodes fit"),
    pytest.param(incoming("foo").spread(2, "zone", selector=FOO, min_domains=1), four_nodes(),
                 [pod("p-b1", "node-a", "foo"), pod("p-b2", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "SSSS",
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains "
                 "> minDomains, then the all nodes fit"),
    pytest.param(incoming("foo").node_selector(foo="").spread(1, "node", selector=FOO),
                 _policy_cluster(), POLICY_PODS, "UUSS",
                 id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(incoming("foo").node_selector(foo="")
                 .spread(1, "node", selector=FOO, affinity_policy=IGNORE),
                 _policy_cluster(), POLICY_PODS, "UUSU",
                 id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "node", selector=FOO), _policy_cluster(), POLICY_PODS, "UUSS",
                 id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param(incoming("foo").required(term(expr("foo", "In", "")))
                 .spread(1, "node", selector=FOO, affinity_policy=IGNORE),
                 _policy_cluster(), POLICY_PODS, "UUSU",
                 id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO, taints_policy=HONOR),
                 _policy_cluster(taint_y=True), POLICY_PODS, "UUSS",
                 id="NodeTaintsPolicy honored"),
    pytest.param(incoming("foo").spread(1, "node", selector=FOO),
                 _policy_cluster(taint_y=True), POLICY_PODS, "UUSU",
                 id="NodeTaintsPolicy ignored"),
]

MULTIPLE_CONSTRAINT_CASES = [
    pytest.param(ZONE_NODE_FOO, four_nodes(), SPREAD_2103, "UUSU",
                 id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]"),
    pytest.param(ZONE_NODE_FOO, four_nodes(), [*SPREAD_2103, pod("p-y4", "node-y", "foo")],
                 "UUUU", id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-y1", "node-y", "bar")], "UUSU",
                 id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-x1", "node-x", "bar"),
                  pod("p-y1", "node-y", "bar")], "UUUU",
                 id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo", "bar"),
                  pod("p-y1", "node-y", "foo"), pod("p-y2", "node-y", "foo", "bar"),
                  pod("p-y3", "node-y", "foo")], "USUU",
                 id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]"),
    pytest.param(incoming("bar").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=BAR), four_nodes(),
                 [pod("p-a1", "node-a", "foo"), pod("p-x1", "node-x", "bar"),
                  pod("p-y1", "node-y", "bar")], "SSUU",
                 id="Constraints hold different labelSelectors but pod doesn't match itself "
                 "on 'zone' constraint"),
    pytest.param(ZONE_NODE_FOO,
                 [zn("node-a", "zone1"), zn("node-b", "zone1"), node("node-x", zone="zone2"),
                  zn("node-y", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-y3", "node-y", "foo")], "USRU",
                 id="two Constraints on zone and node, absence of label 'node' on node-x, "
                 "spreads = [1/1, 1/0/0/1]"),
    pytest.param(incoming("foo").node_selector(foo="").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO, affinity_policy=IGNORE),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""),
                  zn("node-x", "zone2", foo=""), zn("node-y", "zone2")],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "UUSU",
                 id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"),
    pytest.param(incoming("foo").spread(1, "zone", selector=FOO, taints_policy=HONOR)
                 .spread(1, "node", selector=FOO),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1", foo=""),
                  zn("node-x", "zone2", foo=""), tainted(zn("node-y", "zone2"))],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "UUSU",
                 id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore"),
    pytest.param(incoming("foo").node_selector(foo="").spread(1, "zone", selector=FOO)
                 .spread(1, "node", selector=FOO),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"),
                  zn("node-x", "zone2", foo=""), tainted(zn("node-y", "zone2", foo=""))],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "USSU",
                 id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore"),
    pytest.param(incoming("foo").node_selector(foo="")
                 .spread(1, "zone", selector=FOO, taints_policy=HONOR)
                 .spread(1, "node", selector=FOO, affinity_policy=IGNORE),
                 [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"),
                  zn("node-x", "zone2", foo=""), tainted(zn("node-y", "zone2", foo=""))],
                 [pod("p-a1", "node-a", "foo"), pod("p-b1", "node-b", "foo"),
                  pod("p-y1", "node-y", "foo")], "UUSU",
                 id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=BAR)
                 .spread(1, "zone", selector=FOO), four_nodes(),
                 [pod("p-a1", "node-a", "foo", "bar"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo", "bar"), pod("p-y1", "node-y", "foo"),
                  pod("p-y2", "node-y", "foo", "bar"), pod("p-y3", "node-y", "foo")], "UUSS",
                 id="two Constraints on zone, spreads = [3/3, 2/1]"),
    pytest.param(incoming("foo", "bar").spread(1, "zone", selector=BAR)
                 .spread(1, "zone", selector=FOO), four_nodes(),
                 [pod("p-a1", "node-a", "foo", "bar"), pod("p-a2", "node-a", "foo"),
                  pod("p-b1", "node-b", "foo", "bar"), pod("p-y1", "node-y", "foo"),
                  pod("p-y2", "node-y", "foo", "bar"), pod("p-y3", "node-y", "foo"),
                  pod("p-y4", "node-y", "foo")], "UUUU",
                 id="two Constraints on zone, spreads = [3/4, 2/1]"),
]


@pytest.mark.parametrize(("pod_", "nodes", "pods", "expected"),
                         SINGLE_CONSTRAINT_CASES + MULTIPLE_CONSTRAINT_CASES)
def test_filter(pod_: PodBuilder, nodes: list[NodeBuilder], pods: list[PodBuilder],
                expected: str) -> None:
    infos = make_cluster(nodes, pods)
    spread, state, status = pre_filtered(pod_, infos)
    assert status.ok, status
    got = [spread.filter(state, pod_.info(), info) for info in infos]
    assert "".join(next(k for k, v in _CODES.items() if v == s.code) for s in got) == expected
    for result in got:
        if result.code == U:
            assert (result.reasons, result.plugin) == ([pts.REASON_CONSTRAINTS_NOT_MATCH],
                                                       pts.NAME)
        elif result.code == R:
            assert (result.reasons, result.plugin) == ([pts.REASON_NODE_LABEL_NOT_MATCH],
                                                       pts.NAME)


def test_reason_strings() -> None:
    assert pts.REASON_CONSTRAINTS_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints")
    assert pts.REASON_NODE_LABEL_NOT_MATCH == (
        "node(s) didn't match pod topology spread constraints (missing required label)")


def test_filter_without_pre_filter() -> None:
    """TestPreFilterDisabled."""
    infos = make_cluster([node("n")])
    status = plugin(infos).filter(CycleState(), make_pod().info(), infos[0])
    assert status.code == Code.ERROR
    assert status.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'


def test_empty_selector_counts_nothing_but_matches_itself() -> None:
    """countPodsMatchSelector ignores an empty selector; self-match still applies."""
    infos = make_cluster([node("node-a", node="node-a"), node("node-b", node="node-b")],
                         [pod("p-a1", "node-a", "foo"), pod("p-a2", "node-a", "foo")])
    pod_ = incoming("foo").spread(1, "node", selector=label_selector())
    spread, state, _ = pre_filtered(pod_, infos)
    computed: PreFilterState = state.read(pts.PRE_FILTER_KEY)
    assert computed.match_counts == ({"node-a": 0, "node-b": 0},)
    assert all(spread.filter(state, pod_.info(), info).ok for info in infos)
    # AddPod uses the selector's plain match, so an added pod does count.
    assert spread.add_pod(state, pod_.info(), pod("q", "node-a", "foo").info(), infos[0]).ok
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 1, "node-b": 0},)
    assert spread.filter(state, pod_.info(), infos[0]).code == U


def test_nominated_pods_fill_a_domain() -> None:
    """AddPod as the framework uses it for nominated pods: the node then breaks maxSkew."""
    infos = make_cluster([node("node-a", node="node-a"), node("node-b", node="node-b")])
    pod_ = incoming("foo").spread(1, "node", selector=FOO)
    spread, state, _ = pre_filtered(pod_, infos)
    assert spread.filter(state, pod_.info(), infos[0]).ok
    nominated = make_pod("nominated").label("foo")
    assert spread.add_pod(state, pod_.info(), nominated.info(), infos[0]).ok
    assert spread.filter(state, pod_.info(), infos[0]).code == U
    assert spread.remove_pod(state, pod_.info(), nominated.info(), infos[0]).ok
    assert spread.filter(state, pod_.info(), infos[0]).ok


def test_counts_follow_node_changes_across_cycles() -> None:
    """Counts are reused per NodeInfo object; a replaced or edited node is counted anew."""
    nodes = [node("node-a", node="node-a"), node("node-b", node="node-b")]
    infos = make_cluster(nodes, [pod("p-a1", "node-a", "foo")])
    pod_ = incoming("foo").spread(1, "node", selector=FOO)
    spread, state, _ = pre_filtered(pod_, infos)
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 1, "node-b": 0},)

    # The cache hands the next cycle a fresh NodeInfo for the node that changed.
    replaced = [infos[0], nodes[1].info(pod("p-b1", "node-b", "foo"), pod("p-b2", "node-b", "foo"))]
    state = CycleState()
    spread.pre_filter(state, pod_.info(), replaced)
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 1, "node-b": 2},)

    # A NodeInfo edited in place is noticed by its pod count.
    replaced[0].add_pod(pod("p-a2", "node-a", "foo").info())
    state = CycleState()
    spread.pre_filter(state, pod_.info(), replaced)
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 2, "node-b": 2},)

    # Another namespace or selector never shares counts.
    other = make_pod("p", "other").label("foo").spread(1, "node", selector=FOO)
    state = CycleState()
    spread.pre_filter(state, other.info(), replaced)
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 0, "node-b": 0},)


def test_framework_counts_nominated_pods() -> None:
    """Through the framework's two-pass filter: a nominated matching pod on node-a fills
    its domain (AddPod on a cloned CycleState), the pass without it is unaffected."""
    infos = make_cluster([node("node-a", node="node-a"), node("node-b", node="node-b")])
    nominated = make_pod("nominated").label("foo").priority(10)
    handle = FakeHandle(snapshot_value=make_snapshot(*infos),
                        nominated={"node-a": [nominated.info()]})
    framework = Framework(ProfileSpec("kpysched", {
        "queueSort": ("PrioritySort",), "preFilter": ("PodTopologySpread",),
        "filter": ("PodTopologySpread",), "bind": ("DefaultBinder",)},
        args={"PodTopologySpread": LIST_ARGS}),
        IN_TREE, handle, NoMetrics())
    pod_ = incoming("foo").spread(1, "node", selector=FOO)
    state = CycleState()
    _, status, _ = framework.run_pre_filter(state, pod_.info(), infos)
    assert status.ok
    verdicts = [framework.run_filter_with_nominated(state, pod_.info(), info) for info in infos]
    assert [(v.code, v.reasons, v.plugin) for v in verdicts] == [
        (U, [pts.REASON_CONSTRAINTS_NOT_MATCH], pts.NAME), (S, [], "")]
    # The cycle's own state was not touched by the nominated pass.
    assert state.read(pts.PRE_FILTER_KEY).match_counts == ({"node-a": 0, "node-b": 0},)
