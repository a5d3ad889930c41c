"""Preemption's dry run without clones (framework/runtime/node_simulation.py's TotalsNode) must
pick the same victims as upstream's way with a cloned node, and must be used only
when every Filter still running allows it."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime import Framework
from kpysched.framework.runtime.node_simulation import (
    ClonedNode,
    TotalsChain,
    TotalsNode,
    can_use_totals,
)
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption import plugin as dp
from tests.unit.plugins.default_preemption.test_plugin import FIT, cluster, pdb, pod, setup

PRIORITIES = (-100, 0, 100, 1000)
CPU = st.sampled_from(("0", "50m", "100m", "200m", "300m"))
MEMORY = st.sampled_from(("0", "100", "200", "400"))


class UpstreamClone:
    """The reference: a cloned node and upstream's two-pass filter, written out here
    with clones only (the framework's own first pass may use totals)."""

    def __init__(self, framework: Framework, state: CycleState, pod: PodInfo,
                 node: NodeInfo) -> None:
        self._framework, self._state, self._pod = framework, state.clone(), pod
        self._node = node.clone()

    def remove_pod(self, victim: PodInfo) -> Status:
        self._node.remove_pod(victim.uid)
        return self._framework.run_pre_filter_extension_remove_pod(
            self._state, self._pod, victim, self._node)

    def add_pod(self, victim: PodInfo) -> Status:
        self._node.add_pod(victim)
        return self._framework.run_pre_filter_extension_add_pod(
            self._state, self._pod, victim, self._node)

    def filter(self, node_only_passed: bool = False) -> Status:
        framework, pod = self._framework, self._pod
        blockers = framework.nominated_blockers(pod, self._node.name)
        if blockers:
            with_nominated = self._node.clone()
            for other in blockers:
                with_nominated.add_pod(other)
            status = framework.run_filter(self._state.clone(), pod, with_nominated)
            if not status.ok:
                return status
        return framework.run_filter(self._state, pod, self._node)


@st.composite
def cases(draw: st.DrawFn) -> dict[str, object]:
    node_count = draw(st.integers(1, 6))
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
    assert can_use_totals(env.framework, state)
    framework, pdbs = env.framework, env.handle.pdbs()
    chain = TotalsChain(framework, state, preemptor)
    for node in env.handle.snapshot.node_infos:
        before = (dict(node.pods), node.requested.clone())
        by_clone = env.plugin.select_victims_on_node(
            state, preemptor, node, pdbs, lambda n: UpstreamClone(framework, state, preemptor, n))
        by_delta = env.plugin.select_victims_on_node(
            state, preemptor, node, pdbs, lambda n: TotalsNode(chain, n))
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
    simulated = env.framework.node_simulator(state, preemptor).node(nodes[0])
    assert isinstance(simulated, TotalsNode)
    victims, _, status = env.plugin.select_victims_on_node(state, preemptor, nodes[0], [])
    assert status.ok and [v.name for v in victims] == ["low"]


def test_a_filter_without_the_delta_form_keeps_the_clones() -> None:
    nodes = cluster(["node-a"], [pod("low", 0, "node-a", res={"cpu": "400m"})])
    env = setup(nodes, filters=("TrueFilter", FIT))
    preemptor = pod("preemptor", 100, res={"cpu": "300m"}).info()
    state = env.state_for(preemptor)
    assert not can_use_totals(env.framework, state)
    assert isinstance(env.framework.node_simulator(state, preemptor).node(nodes[0]), ClonedNode)


@settings(derandomize=True, deadline=None, database=None, max_examples=200,
          suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_the_nominated_pass_by_totals_matches_the_clone(case: dict[str, object]) -> None:
    """Algorithm's nominated nodes: run_filter_with_nominated's first pass by totals."""
    nodes = cluster(case["names"], case["placed"], per_node=case["capacity"])  # type: ignore[arg-type]
    env = setup(nodes, filters=("TaintToleration", FIT),
                nominated=case["nominated"])  # type: ignore[arg-type]
    preemptor = case["preemptor"].info()  # type: ignore[attr-defined]
    state = env.state_for(preemptor)
    for node in env.handle.snapshot.node_infos:
        got = env.framework.run_filter_with_nominated(state, preemptor, node)
        want = UpstreamClone(env.framework, state, preemptor, node).filter()
        assert (got.code, got.reasons, got.plugin) == (want.code, want.reasons, want.plugin)


def test_host_ports_keep_the_clones_and_an_active_extension_too() -> None:
    nodes = cluster(["node-a"], [pod("low", 0, "node-a", res={"cpu": "400m"})])
    env = setup(nodes, filters=("NodePorts", FIT), pre_filters=("NodePorts", FIT))
    plain = pod("plain", 100, res={"cpu": "300m"}).info()
    assert can_use_totals(env.framework, env.state_for(plain))  # NodePorts skips it
    with_port = pod("with-port", 100, res={"cpu": "300m"}).host_port(8080).info()
    assert not can_use_totals(env.framework, env.state_for(with_port))

    anti = setup(nodes, filters=("InterPodAffinity", FIT))
    from tests.unit.plugins.default_preemption.test_plugin import anti_affinity_exists
    guarded = anti_affinity_exists(pod("guarded", 100, res={"cpu": "300m"}), "app",
                                   "hostname").info()
    assert not can_use_totals(anti.framework, anti.state_for(guarded))


class UpstreamOnly:
    """A NodeSimulator of UpstreamClone nodes and no batches: the reference dry run."""

    def __init__(self, framework: Framework, state: CycleState, pod: PodInfo) -> None:
        self._args = (framework, state, pod)

    def node(self, node: NodeInfo) -> UpstreamClone:
        return UpstreamClone(*self._args, node)

    def batch(self, nodes: object) -> None:
        return None


def _dry_run(env: Any, state: CycleState, preemptor: PodInfo, offset: int,
             count: int) -> tuple[object, ...]:
    nodes = env.handle.snapshot.node_infos
    candidates, statuses, errors = env.plugin.dry_run_preemption(
        state, preemptor, nodes, env.handle.pdbs(), offset % len(nodes), count)
    return ([(c.name, [v.uid for v in c.victims], c.num_pdb_violations) for c in candidates],
            {name: (s.code, s.reasons, s.plugin) for name, s in statuses.items()}, errors)


@settings(derandomize=True, deadline=None, database=None, max_examples=300,
          suppress_health_check=list(HealthCheck))
@given(case=cases(), offset=st.integers(0, 5), count=st.integers(1, 6),
       chunk=st.sampled_from((1, 2, 64)))
def test_the_batched_dry_run_matches_upstreams_node_by_node(
        case: dict[str, object], offset: int, count: int, chunk: int) -> None:
    nodes = cluster(case["names"], case["placed"], per_node=case["capacity"])  # type: ignore[arg-type]
    env = setup(nodes, filters=("TaintToleration", FIT), pdbs=case["pdbs"],  # type: ignore[arg-type]
                nominated=case["nominated"])  # type: ignore[arg-type]
    preemptor = case["preemptor"].info()  # type: ignore[attr-defined]
    state = env.state_for(preemptor)
    handle = env.plugin._handle
    assert env.framework.node_simulator(state, preemptor).batch(
        env.handle.snapshot.node_infos) is not None
    saved = dp._MIN_CHUNK
    dp._MIN_CHUNK = chunk
    try:
        batched = _dry_run(env, state, preemptor, offset, count)
        handle.node_simulator = lambda s, p: UpstreamOnly(env.framework, s, p)
        reference = _dry_run(env, state, preemptor, offset, count)
    finally:
        dp._MIN_CHUNK = saved
        del handle.node_simulator
    assert batched == reference
