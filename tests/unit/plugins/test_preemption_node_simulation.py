"""Preemption's dry run without clones (framework/node_simulation.py's DeltaNode) must
pick the same victims as upstream's way with a cloned node (ClonedNode), and must be
used only when every Filter still running allows it."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.framework.node_simulation import ClonedNode, DeltaNode, can_use_delta
from kpysched.objects.pod import PodInfo
from tests.unit.plugins.test_default_preemption import FIT, cluster, pdb, pod, setup

PRIORITIES = (-100, 0, 100, 1000)
CPU = st.sampled_from(("0", "50m", "100m", "200m", "300m"))
MEMORY = st.sampled_from(("0", "100", "200", "400"))


@st.composite
def cases(draw: st.DrawFn) -> dict[str, object]:
    node_count = draw(st.integers(1, 4))
    names = [f"node-{i}" for i in range(node_count)]
    capacity = {name: {"cpu": draw(st.sampled_from(("300m", "500m", "1"))),
                       "memory": draw(st.sampled_from(("400", "800"))),
                       "pods": draw(st.sampled_from(("2", "4", "32")))} for name in names}
    placed = []
    for index in range(draw(st.integers(0, 10))):
        placed.append(pod(
            f"p{index}", draw(st.sampled_from(PRIORITIES)), draw(st.sampled_from(names)),
            res={"cpu": draw(CPU), "memory": draw(MEMORY)}, start=draw(st.integers(1, 5)),
            labels={"app": draw(st.sampled_from(("a", "b")))}))
    preemptor = pod("preemptor", draw(st.sampled_from(PRIORITIES[1:])),
                    res={"cpu": draw(CPU), "memory": draw(MEMORY)})
    budgets = ([pdb({"app": "a"}, allowed=draw(st.integers(0, 1)))]
               if draw(st.booleans()) else [])
    nominated: dict[str, list[PodInfo]] = {}
    if draw(st.booleans()):
        nominated[draw(st.sampled_from(names))] = [
            pod("nominated", draw(st.sampled_from(PRIORITIES)),
                res={"cpu": draw(CPU), "memory": draw(MEMORY)}).info()]
    return {"names": names, "capacity": capacity, "placed": placed,
            "preemptor": preemptor, "pdbs": budgets, "nominated": nominated}


@settings(derandomize=True, deadline=None, database=None, max_examples=300,
          suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_delta_and_clone_pick_the_same_victims(case: dict[str, object]) -> None:
    names, capacity = case["names"], case["capacity"]
    nodes = cluster(names, case["placed"], per_node=capacity)  # type: ignore[arg-type]
    env = setup(nodes, filters=("TaintToleration", FIT), pdbs=case["pdbs"],  # type: ignore[arg-type]
                nominated=case["nominated"])  # type: ignore[arg-type]
    preemptor = case["preemptor"].info()  # type: ignore[attr-defined]
    state = env.state_for(preemptor)
    assert can_use_delta(env.framework, state)
    framework, pdbs = env.framework, env.handle.pdbs()
    for node in env.handle.snapshot.node_infos:
        before = (dict(node.pods), node.requested.clone())
        by_clone = env.plugin.select_victims_on_node(
            state, preemptor, node, pdbs, lambda n: ClonedNode(framework, state, preemptor, n))
        by_delta = env.plugin.select_victims_on_node(
            state, preemptor, node, pdbs, lambda n: DeltaNode(framework, state, preemptor, n))
        assert [v.uid for v in by_delta[0]] == [v.uid for v in by_clone[0]]
        assert by_delta[1] == by_clone[1]
        assert (by_delta[2].code, by_delta[2].reasons, by_delta[2].plugin) == \
            (by_clone[2].code, by_clone[2].reasons, by_clone[2].plugin)
        assert (dict(node.pods), node.requested) == before


def test_the_handle_simulates_without_clones_when_the_filters_allow() -> None:
    nodes = cluster(["node-a"], [pod("low", 0, "node-a", res={"cpu": "400m"})])
    env = setup(nodes, filters=("TaintToleration", FIT))
    preemptor = pod("preemptor", 100, res={"cpu": "300m"}).info()
    state = env.state_for(preemptor)
    simulated = env.framework.node_simulator(state, preemptor)(nodes[0])
    assert isinstance(simulated, DeltaNode)
    victims, _, status = env.plugin.select_victims_on_node(state, preemptor, nodes[0], [])
    assert status.ok and [v.name for v in victims] == ["low"]


def test_a_filter_without_the_delta_form_keeps_the_clones() -> None:
    nodes = cluster(["node-a"], [pod("low", 0, "node-a", res={"cpu": "400m"})])
    env = setup(nodes, filters=("TrueFilter", FIT))
    preemptor = pod("preemptor", 100, res={"cpu": "300m"}).info()
    state = env.state_for(preemptor)
    assert not can_use_delta(env.framework, state)
    assert isinstance(env.framework.node_simulator(state, preemptor)(nodes[0]), ClonedNode)


def test_host_ports_keep_the_clones_and_an_active_extension_too() -> None:
    nodes = cluster(["node-a"], [pod("low", 0, "node-a", res={"cpu": "400m"})])
    env = setup(nodes, filters=("NodePorts", FIT), pre_filters=("NodePorts", FIT))
    plain = pod("plain", 100, res={"cpu": "300m"}).info()
    assert can_use_delta(env.framework, env.state_for(plain))  # NodePorts skips it
    with_port = pod("with-port", 100, res={"cpu": "300m"}).host_port(8080).info()
    assert not can_use_delta(env.framework, env.state_for(with_port))

    anti = setup(nodes, filters=("InterPodAffinity", FIT))
    from tests.unit.plugins.test_default_preemption import anti_affinity_exists
    guarded = anti_affinity_exists(pod("guarded", 100, res={"cpu": "300m"}), "app",
                                   "hostname").info()
    assert not can_use_delta(anti.framework, anti.state_for(guarded))
