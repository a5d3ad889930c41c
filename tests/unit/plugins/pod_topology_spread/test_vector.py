"""PodTopologySpread's vector PreFilter and Filter agree with the per-node forms.

Hypothesis draws nodes (zone/rack/hostname labels, some missing, some tainted), pods
already placed on them (with labels the constraints may select, in this namespace or
another), and an incoming pod with one or two DoNotSchedule constraints (maxSkew,
minDomains, both inclusion policies, a selector that may or may not match the pod
itself, and a required node affinity for nodeAffinityPolicy to honour). The verdicts
must be the same on every row, also after PreFilter's AddPod changed the counts (as
for a nominated pod), and PreFilter's state over the label columns must equal the one
counted node by node, critical paths included.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.plugins import pod_topology_spread as pts
from kpysched.plugins.pod_topology_spread import filtering
from kpysched.plugins.pod_topology_spread.common import MatchCounter
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

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=200,
                     suppress_health_check=[HealthCheck.too_slow])
LIST_ARGS = pts.PodTopologySpreadArgs.model_validate({"defaultingType": "List"})
KEYS = ("zone", "rack", "kubernetes.io/hostname")


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeBuilder]:
    built = []
    for index in range(draw(st.integers(1, 8))):
        name = f"n{index}"
        labels = {"kubernetes.io/hostname": name}
        if draw(st.integers(0, 5)):
            labels["zone"] = draw(st.sampled_from(("z1", "z2", "z3")))
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(("r1", "r2")))
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        if not draw(st.integers(0, 6)):
            del labels["kubernetes.io/hostname"]
        builder = make_node(name).labels(labels)
        if not draw(st.integers(0, 4)):
            builder.taint("dedicated", "x")
        built.append(builder)
    return built


@st.composite
def placed_pods(draw: st.DrawFn, node_names: list[str]) -> list[PodBuilder]:
    pods = []
    for index in range(draw(st.integers(0, 16))):
        namespace = draw(st.sampled_from(("default", "default", "other")))
        builder = make_pod(f"e{index}", namespace).node(draw(st.sampled_from(node_names)))
        builder.label("app", draw(st.sampled_from(("a", "b"))))
        pods.append(builder)
    return pods


@st.composite
def incoming(draw: st.DrawFn) -> PodBuilder:
    builder = make_pod("p").label("app", draw(st.sampled_from(("a", "b"))))
    for _ in range(draw(st.integers(1, 2))):
        builder.spread(
            draw(st.integers(1, 3)), draw(st.sampled_from(KEYS)),
            selector=label_selector({"app": draw(st.sampled_from(("a", "b")))}),
            min_domains=draw(st.sampled_from((None, None, 2, 4))),
            affinity_policy=draw(st.sampled_from((None, "Honor", "Ignore"))),
            taints_policy=draw(st.sampled_from((None, "Honor", "Ignore"))))
    if draw(st.booleans()):
        builder.required(term(expr("disk", "In", "ssd")))
    return builder


def per_node(spread: pts.PodTopologySpread, state: CycleState, pod: PodBuilder,
             snapshot: Snapshot) -> list[bool]:
    return [spread.filter(state, pod.info(), info).ok for info in snapshot.node_infos]


@_SETTINGS
@given(data=st.data())
def test_the_vector_filter_is_the_per_node_filter_on_every_row(data: st.DataObject) -> None:
    node_builders = data.draw(nodes())
    names = [n.obj().metadata.name for n in node_builders]
    infos = make_cluster(node_builders, data.draw(placed_pods(names)))
    snapshot = make_snapshot(*infos)
    handle = FakeHandle()
    handle.snapshot_value = snapshot
    spread = pts.new(LIST_ARGS, handle)
    pod = data.draw(incoming())
    state = CycleState()
    _, status = spread.pre_filter(state, pod.info(), snapshot.node_infos)
    assert status.ok
    constraints = spread.constraints(pod.obj(), "DoNotSchedule")
    by_node = filtering.compute_state(pod.obj(), constraints, list(snapshot.node_infos),
                                      MatchCounter())
    assert state.get(pts.PRE_FILTER_KEY) == by_node

    mask = spread.filter_vector(state, pod.info(), snapshot)
    assert mask is not None
    assert mask.tolist() == per_node(spread, state, pod, snapshot)

    # A matching pod added on some node (PreFilter's AddPod, as for a nominated pod):
    # the vector form reads the updated counts too.
    row = data.draw(st.integers(0, len(infos) - 1))
    added = make_pod("nominated").label("app", "a").node(names[row]).info()
    assert spread.add_pod(state, pod.info(), added, snapshot.node_infos[row]).ok
    mask = spread.filter_vector(state, pod.info(), snapshot)
    assert mask is not None
    assert mask.tolist() == per_node(spread, state, pod, snapshot)


def test_a_pod_without_constraints_passes_every_row() -> None:
    infos = make_cluster([make_node("n0").labels({"zone": "z1"}), make_node("n1")])
    snapshot = make_snapshot(*infos)
    handle = FakeHandle()
    handle.snapshot_value = snapshot
    spread = pts.new(LIST_ARGS, handle)
    state = CycleState()
    spread.pre_filter(state, make_pod("p").info(), snapshot.node_infos)
    mask = spread.filter_vector(state, make_pod("p").info(), snapshot)
    assert mask is not None and mask.tolist() == [True, True]


def test_missing_prefilter_state_falls_back_to_the_per_node_error() -> None:
    infos = make_cluster([make_node("n0").labels({"zone": "z1"})])
    snapshot = make_snapshot(*infos)
    spread = pts.new(LIST_ARGS, FakeHandle())
    pod = make_pod("p").spread(1, "zone", selector=label_selector({"app": "a"}))
    assert spread.filter_vector(CycleState(), pod.info(), snapshot) is None
