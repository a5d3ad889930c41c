"""DefaultPreemption through a real Framework of in-tree plugins, with cases from
upstream's defaultpreemption/default_preemption_test.go (v1.36.4): TestPostFilter,
TestDryRunPreemption, TestSelectBestCandidate, TestCustomSelection,
TestCustomOrdering, TestPodEligibleToPreemptOthers and TestPreempt.

Left out: the extender, pod-group and async-API-dispatcher variants (kpysched has
none of them). Upstream seeds Go's rand with 4 for the offset tests (offsets 4, 1, 3
over five nodes); here a fixed sequence stands in for it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.config.features import Features
from kpysched.framework.cluster_events import ASSIGNED_POD_DELETE, ClusterEvent, QueueingHint
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.interfaces import (
    FilterPlugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.metrics import NoMetrics
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from kpysched.plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from kpysched.plugins.default_preemption import plugin as dp
from kpysched.plugins.default_preemption.selection import Candidate, pod_start_nanos
from tests.unit.builders import (
    FakeHandle,
    PodBuilder,
    label_selector,
    make_node,
    make_pod,
    make_snapshot,
)
from tests.unit.plugins.hints import hint_for, registered

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
MAX_INT32 = 2**31 - 1
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FIT = "NodeResourcesFit"


# --- builders --------------------------------------------------------------------

def pod(name: str, priority: int | None = None, node: str = "", *,
        res: Mapping[str, str] | None = None, start: int | None = None,
        labels: Mapping[str, str] | None = None, namespace: str = "default") -> PodBuilder:
    """upstream's st.MakePod().Name(n).UID(n)...; `start` is nanoseconds after the epoch."""
    built = make_pod(name, namespace).uid(name)
    if priority is not None:
        built.priority(priority)
    if node:
        built.node(node)
    if res is not None:
        built.req(dict(res))
    for key, value in (labels or {}).items():
        built.label(key, value)
    if start is not None:
        built.obj().status.start_time = f"1970-01-01T00:00:00.{start:09d}Z"
    return built


def anti_affinity_exists(built: PodBuilder, key: str, topology: str) -> PodBuilder:
    built.obj().spec.affinity = api.Affinity(pod_anti_affinity=api.PodAffinity(
        required_during_scheduling_ignored_during_execution=[api.PodAffinityTerm(
            topology_key=topology, label_selector=label_selector(exists=[key]))]))
    return built


def spread_zone_and_host(built: PodBuilder) -> PodBuilder:
    return (built.spread(1, "zone", selector=label_selector(exists=["foo"]))
            .spread(1, "hostname", selector=label_selector(exists=["foo"])))


def pdb(labels: Mapping[str, str], allowed: int = 0, disrupted: Iterable[str] = (), *,
        name: str = "", namespace: str = "default",
        selector: api.LabelSelector | None = None) -> api.PodDisruptionBudget:
    return api.PodDisruptionBudget(
        metadata=api.ObjectMeta(name=name, namespace=namespace),
        spec=api.PodDisruptionBudgetSpec(
            selector=selector if selector is not None else api.LabelSelector(
                match_labels=dict(labels))),
        status=api.PodDisruptionBudgetStatus(
            disruptions_allowed=allowed,
            disrupted_pods={p: "2024-01-01T00:00:00Z" for p in disrupted}))


def cluster(node_names: Sequence[str], pods: Iterable[PodBuilder],
            capacity: Mapping[str, str] = VERY_LARGE,
            per_node: Mapping[str, Mapping[str, str]] | None = None) -> list[NodeInfo]:
    """Nodes as upstream's tests make them: "name/zone/region" becomes the name and the
    hostname/zone/region labels; capacity includes 32 pods unless it says otherwise."""
    placed: dict[str, list[PodBuilder]] = {}
    for built in pods:
        placed.setdefault(built.obj().spec.node_name, []).append(built)
    infos = []
    for path in node_names:
        parts = path.split("/")
        resources = {"pods": "32", **(per_node or {}).get(parts[0], capacity)}
        node = make_node(parts[0]).capacity(resources)
        node.labels(dict(zip(("hostname", "zone", "region"), parts, strict=False)))
        infos.append(node.info(*placed.get(parts[0], ())))
    return infos


class FixedOffsets(random.Random):
    """Hands out the given offsets in turn (upstream seeds Go's rand instead)."""

    def __init__(self, *offsets: int) -> None:
        super().__init__(0)
        self._offsets = list(offsets)

    def randrange(self, *args: Any, **kwargs: Any) -> int:
        return self._offsets.pop(0)


# --- upstream's fake plugins -----------------------------------------------------------

@dataclass
class FakeFilter(FilterPlugin):
    """Counts Filter calls; fails nodes whose code is not Success (tf.FakeFilterPlugin)."""

    NAME: ClassVar[str] = "FakeFilter"
    codes: dict[str, Code] = field(default_factory=dict)
    calls: int = 0

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self.calls += 1
        code = self.codes.get(node.name, Code.SUCCESS)
        if code == Code.SUCCESS:
            return SUCCESS
        return Status(code, [f"injecting failure for pod {pod.name}"])


class FalseFilter(FilterPlugin):
    NAME: ClassVar[str] = "FalseFilter"

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status.unschedulable("Nodes failed the fake plugin")


class TrueFilter(FalseFilter):
    NAME: ClassVar[str] = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS


class MatchFilter(FalseFilter):
    """Passes only the node named like the pod."""

    NAME: ClassVar[str] = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS if pod.name == node.name else super().filter(state, pod, node)


class ErrorOnLabel(PreFilterPlugin, PreFilterExtensions):
    """upstream's TestPlugin: AddPod/RemovePod fail on nodes labelled error=true."""

    NAME: ClassVar[str] = "test-plugin"

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo,
                node: NodeInfo) -> Status:
        if node.labels.get("error") == "true":
            return Status.error(f"failed to add pod: {pod.name}")
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo,
                   node: NodeInfo) -> Status:
        if node.labels.get("error") == "true":
            return Status.error(f"failed to remove pod: {pod.name}")
        return SUCCESS


def _spec(cls: type[Any]) -> PluginSpec:
    return PluginSpec(cls.NAME, cls, lambda args, handle: cls(), None)


# --- a profile around the plugin ---------------------------------------------------------

@dataclass
class Setup:
    framework: Framework
    plugin: DefaultPreemption
    handle: FakeHandle
    fake_filter: FakeFilter

    def state_for(self, preemptor: PodInfo) -> CycleState:
        state = CycleState()
        _, status, _ = self.framework.run_pre_filter(
            state, preemptor, self.handle.snapshot.node_infos)
        assert status.ok, status
        return state


def setup(nodes: Sequence[NodeInfo], filters: Sequence[str] = (FIT,),
          pre_filters: Sequence[str] | None = None, *,
          args: DefaultPreemptionArgs | None = None, rng: random.Random | None = None,
          fake_codes: Mapping[str, Code] | None = None,
          pdbs: Sequence[api.PodDisruptionBudget] = (),
          nominated: Mapping[str, list[PodInfo]] | None = None,
          release: int = 36) -> Setup:
    """A profile with PrioritySort, the given PreFilter/Filter plugins (upstream registers
    the same plugin at both), upstream's counting FakeFilter first when `fake_codes` is
    given, DefaultPreemption and DefaultBinder."""
    fake = FakeFilter(dict(fake_codes or {}))
    registry = {**IN_TREE, **{spec.name: spec for spec in (
        _spec(FalseFilter), _spec(TrueFilter), _spec(MatchFilter), _spec(ErrorOnLabel))}}
    registry[FakeFilter.NAME] = PluginSpec(FakeFilter.NAME, FakeFilter,
                                           lambda args, handle: fake, None)
    registry[dp.NAME] = PluginSpec(
        dp.NAME, DefaultPreemption,
        lambda a, h: DefaultPreemption(a or DefaultPreemptionArgs(), h,
                                       rng=rng or random.Random(4)),
        DefaultPreemptionArgs)
    handle = FakeHandle(snapshot_value=make_snapshot(*nodes), pdb_list=list(pdbs),
                        nominated=dict(nominated or {}),
                        features_value=Features(release=release))
    filter_names = [*([FakeFilter.NAME] if fake_codes is not None else []), *filters]
    if pre_filters is None:
        pre_filters = [name for name in filters if name in (FIT, "InterPodAffinity",
                                                            "PodTopologySpread")]
    profile = ProfileSpec(
        scheduler_name="test",
        plugins={"queueSort": ["PrioritySort"], "preFilter": list(pre_filters),
                 "filter": filter_names, "postFilter": [dp.NAME], "bind": ["DefaultBinder"]},
        args={dp.NAME: args} if args is not None else {})
    framework = Framework(profile, registry, handle, NoMetrics())
    return Setup(framework, framework.plugin(dp.NAME), handle, fake)


def summary(candidates: Sequence[Candidate]) -> dict[str, tuple[list[str], int]]:
    """Candidates by node: victim names sorted, and PDB violations (as upstream compares)."""
    return {c.name: (sorted(v.name for v in c.victims), c.num_pdb_violations)
            for c in candidates}


def unschedulable(*names: str) -> dict[str, Status]:
    return {name: Status(U) for name in names}


# --- TestPostFilter ----------------------------------------------------------------------

POST_FILTER = [
    pytest.param(
        pod("p", HIGH), [pod("p1", node="node1")], ["node1"], ONE_POD,
        unschedulable("node1"), (), PostFilterResult("node1"), Code.SUCCESS, "",
        id="pod with higher priority can be made schedulable"),
    pytest.param(
        pod("p"), [pod("p1", node="node1")], ["node1"], ONE_POD,
        unschedulable("node1"), (), PostFilterResult(""), U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        id="pod with tied priority is still unschedulable"),
    pytest.param(
        pod("p", HIGH), [pod("p1", node="node1")], ["node1"], ONE_POD,
        {"node1": Status(UU)}, (), PostFilterResult(""), U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect filteredNodesStatuses"),
    pytest.param(
        pod("p", HIGH), [pod("p1", node="node1")], ["node1"], ONE_POD,
        {}, (), PostFilterResult(""), U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="preemption should respect absent NodeToStatusReader entry meaning "
           "UnschedulableAndUnresolvable"),
    pytest.param(
        pod("p", MID), [pod("p1", HIGH, "node1"), pod("p2", LOW, "node2")],
        ["node1", "node2"], ONE_POD, unschedulable("node1", "node2"), (),
        PostFilterResult("node2"), Code.SUCCESS, "",
        id="pod can be made schedulable on one node"),
    pytest.param(
        pod("p", VERY_HIGH),
        [pod("p1", HIGH, "node1", labels={"violating": "no"}),
         pod("p2", LOW, "node1", labels={"violating": "yes"}),
         pod("p3", MID, "node2", labels={"violating": "yes"})],
        ["node1", "node2"], ONE_POD, unschedulable("node1", "node2"),
        (pdb({"violating": "yes"}, name="violating-pdb"),
         pdb({"violating": "no"}, MAX_INT32, name="non-violating-pdb")),
        PostFilterResult("node2"), Code.SUCCESS, "",
        id="pod can be made schedulable on minHighestPriority node"),
    pytest.param(
        pod("p", HIGH, res=LARGE), [pod("p1", node="node1"), pod("p2", node="node2")],
        ["node1", "node2"], NODE_RES, unschedulable("node1", "node2"), (),
        PostFilterResult(""), U, "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="no candidate nodes found, no enough resource after removing low priority pods"),
    pytest.param(
        pod("p", HIGH, res=LARGE),
        [pod("p1", HIGH, "node1"), pod("p2", node="node2"), pod("p3", HIGH, "node3")],
        ["node1", "node2", "node3"],
        {"node1": ONE_POD, "node2": NODE_RES, "node3": ONE_POD},
        unschedulable("node1", "node2", "node3"), (), PostFilterResult(""), U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough "
           "CPU resource"),
    pytest.param(
        pod("p", HIGH, res=LARGE), [pod("p1", node="node1"), pod("p2", node="node2")],
        ["node1", "node2", "node3", "node4"], NODE_RES,
        {**unschedulable("node1", "node2"), "node4": Status(UU)}, (),
        PostFilterResult(""), U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes "
           "and 2 nodes don't have enough CPU resource"),
]


@pytest.mark.parametrize("release", [36, 37])
@pytest.mark.parametrize(("preemptor", "pods", "node_names", "capacity", "statuses", "pdbs",
                          "want_result", "want_code", "want_message"), POST_FILTER)
def test_post_filter(preemptor: PodBuilder, pods: list[PodBuilder], node_names: list[str],
                     capacity: Mapping[str, Any], statuses: dict[str, Status],
                     pdbs: Sequence[api.PodDisruptionBudget],
                     want_result: PostFilterResult, want_code: Code, want_message: str,
                     release: int) -> None:
    per_node = capacity if all(isinstance(v, Mapping) for v in capacity.values()) else None
    env = setup(cluster(node_names, pods, VERY_LARGE if per_node else capacity, per_node),
                pdbs=pdbs, release=release)
    if want_code == Code.SUCCESS and release >= 37:
        # v1.37's table: a success names its node and victim count (each case has one).
        want_message = (f"preemption: found a potential placement for pod on node "
                        f"{want_result.nominated_node_name}, preempting 1 victims")
    info = preemptor.info()
    result, status = env.plugin.post_filter(env.state_for(info), info, statuses)
    assert (result, status.code, status.message()) == (want_result, want_code, want_message)
    if want_code == Code.SUCCESS:
        ((who, node, _, plugin),) = env.handle.preemptions
        assert (who, node, plugin) == (info.key, want_result.nominated_node_name, dp.NAME)
    else:
        assert env.handle.preemptions == []


def _error_node(name: str, *pods: PodBuilder) -> NodeInfo:
    node = make_node(name).capacity({"pods": "32", **LARGE}).label("error", "true")
    return node.info(*pods)


def test_post_filter_only_one_node_but_failed_with_test_plugin() -> None:
    """upstream: "only one node but failed with TestPlugin"."""
    nodes = [_error_node("node1", pod("p1", node="node1"))]
    env = setup(nodes, pre_filters=[FIT, ErrorOnLabel.NAME])
    info = pod("p", HIGH, res=LARGE).info()
    result, status = env.plugin.post_filter(env.state_for(info), info, unschedulable("node1"))
    assert result is None
    assert (status.code, status.message()) == (
        Code.ERROR, 'preemption: running RemovePod on PreFilter plugin "test-plugin": '
                    "failed to remove pod: p")


def test_post_filter_one_failed_with_test_plugin_and_the_other_pass() -> None:
    """upstream: "one failed with TestPlugin and the other pass"."""
    nodes = [_error_node("node1", pod("p1", node="node1")),
             *cluster(["node2"], [pod("p2", node="node2", res=MEDIUM)], LARGE)]
    env = setup(nodes, pre_filters=[FIT, ErrorOnLabel.NAME])
    info = pod("p", HIGH, res=LARGE).info()
    result, status = env.plugin.post_filter(env.state_for(info), info,
                                            unschedulable("node1", "node2"))
    assert (result, status.code) == (PostFilterResult("node2"), Code.SUCCESS)
    assert env.handle.preemptions == [("default/p", "node2", ["default/p2"], dp.NAME)]


def test_post_filter_preemption_policy_never() -> None:
    nodes = cluster(["node1"], [pod("p1", node="node1")], ONE_POD)
    env = setup(nodes)
    built = pod("p", HIGH)
    built.obj().spec.preemption_policy = "Never"
    info = built.info()
    result, status = env.plugin.post_filter(env.state_for(info), info, unschedulable("node1"))
    assert (result, status.code, status.message()) == (
        None, U, "preemption: not eligible due to preemptionPolicy=Never.")


def test_post_filter_waits_for_victims_terminating_on_nominated_node() -> None:
    victim = pod("p1", LOW, "node1").terminating()
    victim.obj().status.conditions = [api.PodCondition(
        type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    env = setup(cluster(["node1", "node2"], [victim, pod("p2", LOW, "node2")], ONE_POD))
    built = pod("p", HIGH)
    built.obj().status.nominated_node_name = "node1"
    info = built.info()
    result, status = env.plugin.post_filter(env.state_for(info), info,
                                            unschedulable("node1", "node2"))
    assert (result, status.code, status.message()) == (
        None, U, "preemption: not eligible due to a terminating pod on the nominated node.")


def test_dry_run_counts_higher_priority_nominated_pods() -> None:
    """The simulated node also holds nominated pods that outrank the preemptor."""
    nominee = pod("n", VERY_HIGH, res=LARGE).info()
    env = setup(cluster(["node1"], [pod("p1", LOW, "node1", res=LARGE)]),
                nominated={"node1": [nominee]})
    info = pod("p", HIGH, res=LARGE).info()
    result, status = env.plugin.post_filter(env.state_for(info), info, unschedulable("node1"))
    assert (result, status.message()) == (
        PostFilterResult(""), "preemption: 0/1 nodes are available: 1 Insufficient cpu, "
                              "1 Insufficient memory.")


# --- TestDryRunPreemption ------------------------------------------------------------------

@dataclass
class DryRunCase:
    node_names: list[str]
    preemptors: list[PodBuilder]
    pods: list[PodBuilder]
    expected: list[dict[str, tuple[list[str], int]]]
    filter_calls: list[int]
    filters: list[str] = field(default_factory=lambda: [FIT])
    fake_code: Code = Code.SUCCESS
    pdbs: list[api.PodDisruptionBudget] = field(default_factory=list)
    args: DefaultPreemptionArgs | None = None
    offsets: tuple[int, ...] = ()


def _args(percentage: int, absolute: int) -> DefaultPreemptionArgs:
    return DefaultPreemptionArgs(minCandidateNodesPercentage=percentage,
                                 minCandidateNodesAbsolute=absolute)


def _five(*priorities: int, labels: Sequence[Mapping[str, str] | None] = ()) -> list[PodBuilder]:
    return [pod(f"p{i}", priority, f"node{i}", res=LARGE,
                labels=labels[i - 1] if labels else None)
            for i, priority in enumerate(priorities, start=1)]


FIVE_NODES = [f"node{i}" for i in range(1, 6)]
FOO = {"app": "foo"}

DRY_RUN = [
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH)],
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")], [{}], [2], ["FalseFilter"]),
        id="a pod that does not fit on any node"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH)],
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")], [{}], [2], ["TrueFilter"],
        fake_code=U),
        id="a pod that fits with no preemption"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("node1", HIGH)],
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")], [{}], [2], ["MatchFilter"],
        fake_code=U),
        id="a pod that fits on one node with no preemption"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=LARGE)],
        [pod("p1", MID, "node1", res=LARGE), pod("p2", MID, "node2", res=LARGE)],
        [{"node1": (["p1"], 0), "node2": (["p2"], 0)}], [4]),
        id="a pod that fits on both nodes when lower priority pods are preempted"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", LOW, res=LARGE)],
        [pod("p1", MID, "node1", res=LARGE), pod("p2", MID, "node2", res=LARGE)], [{}], [0]),
        id="a pod that would fit on the nodes, but other pods running are higher priority, "
           "no preemption would happen"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=LARGE)],
        [pod("p1.1", LOW, "node1", res=SMALL), pod("p1.2", MID, "node1", res=LARGE),
         pod("p2", MID, "node2", res=LARGE)],
        [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}], [5]),
        id="medium priority pod is preempted, but lower priority one stays as it is small"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=LARGE)],
        [pod("p1.1", MID, "node1", res=SMALL), pod("p1.2", LOW, "node1", res=SMALL),
         pod("p1.3", MID, "node1", res=MEDIUM), pod("p1.4", HIGH, "node1", res=SMALL),
         pod("p2", HIGH, "node2", res=LARGE)],
        [{"node1": (["p1.2", "p1.3"], 0)}], [4]),
        id="mixed priority pods are preempted"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=LARGE)],
        [pod("p1.1", LOW, "node1", res=SMALL, start=5),
         pod("p1.2", LOW, "node1", res=SMALL, start=4),
         pod("p1.3", MID, "node1", res=MEDIUM, start=3),
         pod("p1.4", HIGH, "node1", res=SMALL, start=2),
         pod("p2", HIGH, "node2", res=LARGE, start=1)],
        [{"node1": (["p1.1", "p1.3"], 0)}], [4]),
        id="mixed priority pods are preempted, pick later StartTime one when priorities are "
           "equal"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=SMALL, labels={"foo": ""})],
        [anti_affinity_exists(pod("p1.1", LOW, "node1", res=SMALL, labels={"foo": ""}),
                              "foo", "hostname"),
         pod("p1.2", MID, "node1", res=SMALL), pod("p1.3", HIGH, "node1", res=SMALL),
         pod("p2", HIGH, "node2", res=SMALL)],
        [{"node1": (["p1.1"], 0)}], [3], [FIT, "InterPodAffinity"]),
        id="pod with anti-affinity is preempted"),
    pytest.param(DryRunCase(
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [spread_zone_and_host(pod("p", HIGH, labels={"foo": ""}))],
        [pod("pod-a1", MID, "node-a", labels={"foo": ""}),
         pod("pod-a2", LOW, "node-a", labels={"foo": ""}),
         pod("pod-b1", LOW, "node-b", labels={"foo": ""}),
         pod("pod-x1", HIGH, "node-x", labels={"foo": ""}),
         pod("pod-x2", HIGH, "node-x", labels={"foo": ""})],
        [{"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)}], [5], ["PodTopologySpread"]),
        id="preemption to resolve pod topology spread filter failure"),
    pytest.param(DryRunCase(
        ["node1", "node2"], [pod("p", HIGH, res=LARGE)],
        [pod("p1", MID, "node1", res=LARGE), pod("p2", MID, "node2", res=LARGE)], [{}], [2],
        fake_code=U),
        id="get Unschedulable in the preemption phase when the filter plugins filtering the "
           "nodes"),
    pytest.param(DryRunCase(
        ["node1"], [pod("p", HIGH, res=VERY_LARGE)],
        [pod("p1.1", MID, "node1", res=MEDIUM, labels=FOO),
         pod("p1.2", MID, "node1", res=MEDIUM, labels=FOO)],
        [{"node1": (["p1.1", "p1.2"], 1)}], [3], pdbs=[pdb(FOO, 1)]),
        id="preemption with violation of same pdb"),
    pytest.param(DryRunCase(
        ["node1"], [pod("p", HIGH, res=VERY_LARGE)],
        [pod("p1.1", MID, "node1", res=MEDIUM, labels=FOO),
         pod("p1.2", MID, "node1", res=MEDIUM, labels=FOO)],
        [{"node1": (["p1.1", "p1.2"], 1)}], [3], pdbs=[pdb(FOO, 1, ["p2"])]),
        id="preemption with violation of the pdb with pod whose eviction was processed, the "
           "victim doesn't belong to DisruptedPods"),
    pytest.param(DryRunCase(
        ["node1"], [pod("p", HIGH, res=VERY_LARGE)],
        [pod("p1.1", MID, "node1", res=MEDIUM, labels=FOO),
         pod("p1.2", MID, "node1", res=MEDIUM, labels=FOO)],
        [{"node1": (["p1.1", "p1.2"], 0)}], [3], pdbs=[pdb(FOO, 1, ["p1.2"])]),
        id="preemption with violation of the pdb with pod whose eviction was processed, the "
           "victim belongs to DisruptedPods"),
    pytest.param(DryRunCase(
        ["node1"], [pod("p", HIGH, res=VERY_LARGE)],
        [pod("p1.1", MID, "node1", res=MEDIUM, labels=FOO),
         pod("p1.2", MID, "node1", res=MEDIUM, labels=FOO),
         pod("p1.3", MID, "node1", res=MEDIUM, labels=FOO)],
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}], [4], pdbs=[pdb(FOO, 1, ["p1.3"])]),
        id="preemption with violation of the pdb with pod whose eviction was processed, the "
           "victim which belongs to DisruptedPods is treated as 'nonViolating'"),
    pytest.param(DryRunCase(
        ["node1"], [pod("p", HIGH, res=LARGE)],
        [pod("a", MID, "node1", res=MEDIUM, labels=FOO), pod("b", MID, "node1", res=MEDIUM)],
        [{"node1": (["b"], 0)}], [3], pdbs=[pdb(FOO, 0)]),
        id="kpysched: PDB-violating victims are reprieved first"),
    pytest.param(DryRunCase(
        FIVE_NODES, [pod("p", HIGH, res=LARGE)], _five(MID, MID, MID, MID, MID),
        # offset 4: node5 (yes), node1 (yes)
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}], [4],
        args=_args(40, 1), offsets=(4,)),
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2"),
    pytest.param(DryRunCase(
        FIVE_NODES, [pod("p", HIGH, res=LARGE)], _five(MID, VERY_HIGH, MID, MID, VERY_HIGH),
        # offset 4: node5 (no), node1 (yes), node2 (no), node3 (yes)
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}], [4],
        args=_args(40, 1), offsets=(4,)),
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2"),
    pytest.param(DryRunCase(
        FIVE_NODES,
        [pod("tp1", HIGH, res=LARGE), pod("tp2", HIGH, res=LARGE), pod("tp3", HIGH, res=LARGE)],
        _five(MID, MID, MID, MID, MID),
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)},   # offset 4
         {"node2": (["p2"], 0), "node3": (["p3"], 0)},   # offset 1
         {"node4": (["p4"], 0), "node5": (["p5"], 0)}],  # offset 3
        [4, 4, 4], args=_args(40, 1), offsets=(4, 1, 3)),
        id="preemption offset across multiple scheduling cycles and wrap around"),
    pytest.param(DryRunCase(
        FIVE_NODES, [pod("p", HIGH, res=LARGE)],
        _five(MID, MID, MID, MID, MID, labels=[FOO, FOO, None, None, FOO]),
        # offset 4: node5 (yes, pdb), node1 (yes, pdb), node2 (no, pdb), node3 (yes)
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}], [8],
        pdbs=[pdb(FOO, 0)], args=_args(40, 2), offsets=(4,)),
        id="preemption looks past numCandidates until a non-PDB violating node is found"),
]


@pytest.mark.parametrize("case", DRY_RUN)
def test_dry_run_preemption(case: DryRunCase) -> None:
    nodes = cluster(case.node_names, case.pods)
    env = setup(nodes, case.filters, args=case.args,
                rng=FixedOffsets(*case.offsets) if case.offsets else None,
                fake_codes={info.name: case.fake_code for info in nodes})
    calls_before = 0
    for cycle, preemptor in enumerate(case.preemptors):
        info = preemptor.info()
        state = env.state_for(info)
        offset, count = env.plugin.offset_and_num_candidates(len(nodes))
        candidates, _, _ = env.plugin.dry_run_preemption(
            state, info, nodes, case.pdbs, offset, count)
        assert summary(candidates) == case.expected[cycle]
        assert env.fake_filter.calls - calls_before == case.filter_calls[cycle]
        calls_before = env.fake_filter.calls


def test_dry_run_leaves_snapshot_and_state_alone() -> None:
    nodes = cluster(["node1"], [pod("p1", MID, "node1", res=LARGE)])
    env = setup(nodes)
    info = pod("p", HIGH, res=LARGE).info()
    state = env.state_for(info)
    before = (list(nodes[0].pods), nodes[0].requested.milli_cpu)
    candidates, _, _ = env.plugin.dry_run_preemption(state, info, nodes, [], 0, 1)
    assert summary(candidates) == {"node1": (["p1"], 0)}
    assert (list(nodes[0].pods), nodes[0].requested.milli_cpu) == before


# --- TestSelectBestCandidate ---------------------------------------------------------------

def _victims(*specs: tuple[str, int, Mapping[str, str], int]) -> list[PodBuilder]:
    """(name, priority, requests, start) with the node taken from the name ("p2.1": node2)."""
    return [pod(name, priority, f"node{name[1]}", res=res, start=start)
            for name, priority, res, start in specs]


SELECT_BEST = [
    pytest.param(["node1", "node2"], pod("p", HIGH, res=LARGE),
                 _victims(("p1", MID, LARGE, 0), ("p2", MID, LARGE, 0)), {"node1", "node2"},
                 id="a pod that fits on both nodes when lower priority pods are preempted"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, MEDIUM, 0), ("p1.2", MID, LARGE, 0),
                          ("p2.1", MID, MEDIUM, 0), ("p2.2", LOW, MEDIUM, 0),
                          ("p3.1", LOW, MEDIUM, 0), ("p3.2", LOW, MEDIUM, 0)), {"node3"},
                 id="node with min highest priority pod is picked"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, MEDIUM, 0), ("p1.2", MID, LARGE, 0),
                          ("p2.1", MID, LARGE, 0), ("p2.2", LOW, MEDIUM, 0),
                          ("p3.1", MID, MEDIUM, 0), ("p3.2", MID, MEDIUM, 0)), {"node2"},
                 id="when highest priorities are the same, minimum sum of priorities is picked"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, SMALL, 0), ("p1.2", NEG, SMALL, 0),
                          ("p1.3", MID, SMALL, 0), ("p1.4", NEG, SMALL, 0),
                          ("p2.1", MID, LARGE, 0), ("p2.2", NEG, MEDIUM, 0),
                          ("p3.1", MID, MEDIUM, 0), ("p3.2", NEG, SMALL, 0),
                          ("p3.3", LOW, SMALL, 0)), {"node2"},
                 id="when highest priority and sum are the same, minimum number of pods is "
                    "picked"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, SMALL, 0), ("p1.2", NEG, SMALL, 0),
                          ("p1.3", NEG, SMALL, 0), ("p2.1", MID, LARGE, 0),
                          ("p2.2", NEG, MEDIUM, 0), ("p3.1", MID, MEDIUM, 0),
                          ("p3.2", NEG, SMALL, 0), ("p3.3", LOW, SMALL, 0)), {"node2"},
                 id="sum of adjusted priorities is considered"),
    pytest.param(["node1", "node2", "node3", "node4"], pod("p", VERY_HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, SMALL, 0), ("p1.2", LOW, SMALL, 0),
                          ("p1.3", LOW, SMALL, 0), ("p2.1", HIGH, LARGE, 0),
                          ("p3.1", MID, MEDIUM, 0), ("p3.2", LOW, SMALL, 0),
                          ("p3.3", LOW, SMALL, 0), ("p3.4", LOW, MEDIUM, 0),
                          ("p4.1", MID, MEDIUM, 0), ("p4.2", MID, SMALL, 0),
                          ("p4.3", MID, SMALL, 0), ("p4.4", NEG, SMALL, 0)), {"node1"},
                 id="non-overlapping lowest high priority, sum priorities, and number of pods"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, MEDIUM, 2), ("p1.2", MID, MEDIUM, 2),
                          ("p2.1", MID, MEDIUM, 3), ("p2.2", MID, MEDIUM, 3),
                          ("p3.1", MID, MEDIUM, 1), ("p3.2", MID, MEDIUM, 1)), {"node2"},
                 id="same priority, same number of victims, different start time for each "
                    "node's pod"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", MID, MEDIUM, 4), ("p1.2", MID, MEDIUM, 2),
                          ("p2.1", MID, MEDIUM, 5), ("p2.2", MID, MEDIUM, 1),
                          ("p3.1", MID, MEDIUM, 3), ("p3.2", MID, MEDIUM, 6)), {"node3"},
                 id="same priority, same number of victims, different start time for all pods"),
    pytest.param(["node1", "node2", "node3"], pod("p", HIGH, res=VERY_LARGE),
                 _victims(("p1.1", LOW, MEDIUM, 4), ("p1.2", MID, MEDIUM, 2),
                          ("p2.1", MID, MEDIUM, 6), ("p2.2", LOW, MEDIUM, 1),
                          ("p3.1", LOW, MEDIUM, 3), ("p3.2", MID, MEDIUM, 5)), {"node2"},
                 id="different priority, same number of victims, different start time for all "
                    "pods"),
]


@pytest.mark.parametrize(("node_names", "preemptor", "pods", "expected"), SELECT_BEST)
def test_select_best_candidate(node_names: list[str], preemptor: PodBuilder,
                               pods: list[PodBuilder], expected: set[str]) -> None:
    nodes = cluster(node_names, pods)
    env = setup(nodes)
    info = preemptor.info()
    offset, count = env.plugin.offset_and_num_candidates(len(nodes))
    candidates, _, _ = env.plugin.dry_run_preemption(
        env.state_for(info), info, nodes, [], offset, count)
    assert env.plugin.select_candidate(candidates).name in expected


# --- TestCustomSelection / TestCustomOrdering -------------------------------------------

Eligible = Callable[[NodeInfo, PodInfo, PodInfo], bool]


def label_is(key: str, value: str) -> Eligible:
    return lambda node, victim, preemptor: victim.pod.metadata.labels.get(key) == value


def node_is(name: str) -> Eligible:
    return lambda node, victim, preemptor: node.name == name


def preemptor_at_least(priority: int) -> Eligible:
    return lambda node, victim, preemptor: preemptor.priority >= priority


def victim_at_most(priority: int) -> Eligible:
    return lambda node, victim, preemptor: victim.priority <= priority


def _labelled_victims() -> list[PodBuilder]:
    return [pod("v1", MID, "node1", res=LARGE, start=0, labels={"preemptible": "no"}),
            pod("v2", MID, "node2", res=LARGE, start=0, labels={"preemptible": "yes"}),
            pod("v3", LOW, "node3", res=LARGE, start=0, labels={"preemptible": "yes"}),
            pod("v4", LOW, "node4", res=LARGE, start=0)]


def _node1_victims(v1_res: Mapping[str, str]) -> list[PodBuilder]:
    return [pod("v1", HIGH, "node1", res=v1_res, start=0),
            pod("v2", MID, "node1", res=SMALL, start=0),
            pod("v3", LOW, "node1", res=SMALL, start=0),
            pod("v4", MID, "node2", res=LARGE, start=0),
            pod("v5", LOW, "node3", res=LARGE, start=0)]


def _one_per_node() -> list[PodBuilder]:
    return [pod("v1", HIGH, "node1", res=LARGE, start=0),
            pod("v2", MID, "node2", res=LARGE, start=0),
            pod("v3", LOW, "node3", res=LARGE, start=0)]


FOUR_NODES = ["node1", "node2", "node3", "node4"]
THREE_NODES = ["node1", "node2", "node3"]

CUSTOM_SELECTION = [
    pytest.param(label_is("preemptible", "yes"), FOUR_NODES, pod("p1", HIGH, res=LARGE),
                 _labelled_victims(), {"node2": ["v2"], "node3": ["v3"]},
                 id="filter for matching pod label: high priority"),
    pytest.param(label_is("preemptible", "yes"), FOUR_NODES, pod("p2", MID, res=LARGE),
                 _labelled_victims(), {"node3": ["v3"]},
                 id="filter for matching pod label: mid priority"),
    pytest.param(label_is("preemptible", "yes"), FOUR_NODES, pod("p3", LOW, res=LARGE),
                 _labelled_victims(), {}, id="filter for matching pod label: low priority"),
    pytest.param(node_is("node1"), THREE_NODES, pod("p3", HIGH, res=LARGE),
                 _node1_victims(MEDIUM), {"node1": ["v2", "v3"]},
                 id="filter for matching victim node: high priority"),
    pytest.param(node_is("node1"), THREE_NODES, pod("p3", MID, res=LARGE),
                 _node1_victims(SMALL), {"node1": ["v3"]},
                 id="filter for matching victim node: mid priority"),
    pytest.param(node_is("node1"), THREE_NODES, pod("p3", LOW, res=LARGE),
                 _node1_victims(SMALL), {}, id="filter for matching victim node: low priority"),
    pytest.param(preemptor_at_least(HIGH), THREE_NODES, pod("p1", HIGH, res=LARGE),
                 _one_per_node(), {"node2": ["v2"], "node3": ["v3"]},
                 id="only pods at or above specified priority can preempted: high priority"),
    pytest.param(preemptor_at_least(HIGH), THREE_NODES, pod("p2", MID, res=LARGE),
                 _one_per_node(), {},
                 id="only pods at or above specified priority can preempted: mid priority"),
    pytest.param(victim_at_most(MID), THREE_NODES, pod("p1", HIGH, res=LARGE),
                 _one_per_node(), {"node2": ["v2"], "node3": ["v3"]},
                 id="only pods at or below specified priority can be preempted: high priority"),
]


@pytest.mark.parametrize(("eligible", "node_names", "preemptor", "pods", "expected"),
                         CUSTOM_SELECTION)
def test_custom_selection(eligible: Eligible, node_names: list[str], preemptor: PodBuilder,
                          pods: list[PodBuilder], expected: dict[str, list[str]]) -> None:
    nodes = cluster(node_names, pods)
    env = setup(nodes)
    env.plugin.is_eligible_pod = eligible  # type: ignore[method-assign]
    info = preemptor.info()
    offset, count = env.plugin.offset_and_num_candidates(len(nodes))
    candidates, _, _ = env.plugin.dry_run_preemption(
        env.state_for(info), info, nodes, [], offset, count)
    assert len(candidates) == len(expected)
    while candidates:
        selected = env.plugin.select_candidate(candidates)
        assert [v.name for v in selected.victims] == expected[selected.name]
        candidates = [c for c in candidates if c.name != selected.name]


def _oldest_first(first: PodInfo, second: PodInfo) -> bool:
    return pod_start_nanos(first, 0) < pod_start_nanos(second, 0)


def _by_name(first: PodInfo, second: PodInfo) -> bool:
    return first.name < second.name


CUSTOM_ORDERING = [
    pytest.param(_oldest_first,
                 [pod("v1", LOW, "node1", res=MEDIUM, start=2),
                  pod("v2", LOW, "node1", res=MEDIUM, start=0),
                  pod("v3", MID, "node1", res=MEDIUM, start=1)], ["v3", "v1"],
                 id="select newest pods"),
    pytest.param(_by_name,
                 [pod("foo", LOW, "node1", res=MEDIUM, start=0).uid("v1"),
                  pod("bar", LOW, "node1", res=MEDIUM, start=0).uid("v2"),
                  pod("baz", MID, "node1", res=MEDIUM, start=0).uid("v3")], ["baz", "foo"],
                 id="select alphabetically-last pods"),
]


@pytest.mark.parametrize(("order", "pods", "expected"), CUSTOM_ORDERING)
def test_custom_ordering(order: Callable[[PodInfo, PodInfo], bool], pods: list[PodBuilder],
                         expected: list[str]) -> None:
    nodes = cluster(["node1"], pods)
    env = setup(nodes)
    env.plugin.more_important_pod = order  # type: ignore[method-assign]
    info = pod("p2", HIGH, res=LARGE).info()
    offset, count = env.plugin.offset_and_num_candidates(len(nodes))
    candidates, _, _ = env.plugin.dry_run_preemption(
        env.state_for(info), info, nodes, [], offset, count)
    assert [[v.name for v in c.victims] for c in candidates] == [expected]


# --- TestPodEligibleToPreemptOthers --------------------------------------------------------

def _nominated(built: PodBuilder, node: str) -> PodBuilder:
    built.obj().status.nominated_node_name = node
    return built


def _preempted(built: PodBuilder) -> PodBuilder:
    built.terminating().obj().status.conditions = [api.PodCondition(
        type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    return built


def _never(built: PodBuilder) -> PodBuilder:
    built.obj().spec.preemption_policy = "Never"
    return built


ELIGIBLE = [
    pytest.param(_nominated(pod("p_with_nominated_node", HIGH), "node1"),
                 [pod("p1", LOW, "node1").terminating()], ["node1"],
                 Status.unresolvable("node(s) had untolerated taint(s)"), True,
                 id="Pod with nominated node"),
    pytest.param(pod("p_without_nominated_node", HIGH), [], [], SUCCESS, True,
                 id="Pod without nominated node"),
    pytest.param(_never(pod("p_with_preempt_never_policy", HIGH)), [], [], SUCCESS, False,
                 id="Pod with 'PreemptNever' preemption policy"),
    pytest.param(_nominated(pod("p_with_nominated_node", HIGH), "node1"),
                 [_preempted(pod("p1", LOW, "node1"))], ["node1"], SUCCESS, False,
                 id="preemption victim pod terminating, as indicated by the dedicated "
                    "DisruptionTarget condition"),
    pytest.param(_nominated(pod("p_with_nominated_node", HIGH), "node1"),
                 [pod("p1", LOW, "node1").terminating()], ["node1"], SUCCESS, True,
                 id="non-victim Pods terminating"),
]


@pytest.mark.parametrize(("preemptor", "pods", "node_names", "nominated_status", "expected"),
                         ELIGIBLE)
def test_pod_eligible_to_preempt_others(preemptor: PodBuilder, pods: list[PodBuilder],
                                        node_names: list[str], nominated_status: Status,
                                        expected: bool) -> None:
    env = setup(cluster(node_names, pods))
    eligible, _ = env.plugin.pod_eligible_to_preempt_others(preemptor.info(), nominated_status)
    assert eligible is expected


# --- TestPreempt -------------------------------------------------------------------------

PREEMPT = [
    pytest.param(pod("p", HIGH, res=VERY_LARGE),
                 [pod("p1.1", LOW, "node1", res=SMALL), pod("p1.2", LOW, "node1", res=SMALL),
                  pod("p2.1", HIGH, "node2", res=LARGE), pod("p3.1", MID, "node3", res=MEDIUM)],
                 THREE_NODES, [FIT], PostFilterResult("node1"), ["p1.1", "p1.2"],
                 id="basic preemption logic"),
    pytest.param(spread_zone_and_host(pod("p", HIGH, labels={"foo": ""})),
                 [pod("p-a1", HIGH, "node-a", labels={"foo": ""}),
                  pod("p-a2", HIGH, "node-a", labels={"foo": ""}),
                  pod("p-b1", LOW, "node-b", labels={"foo": ""}),
                  pod("p-x1", HIGH, "node-x", labels={"foo": ""}),
                  pod("p-x2", HIGH, "node-x", labels={"foo": ""})],
                 ["node-a/zone1", "node-b/zone1", "node-x/zone2"], ["PodTopologySpread"],
                 PostFilterResult("node-b"), ["p-b1"],
                 id="preemption for topology spread constraints"),
    pytest.param(_never(pod("p", HIGH, res=VERY_LARGE)),
                 [pod("p1.1", LOW, "node1", res=SMALL), pod("p1.2", LOW, "node1", res=SMALL),
                  pod("p2.1", HIGH, "node2", res=LARGE), pod("p3.1", MID, "node3", res=MEDIUM)],
                 THREE_NODES, [FIT], None, None, id="no preempting in pod"),
    pytest.param(pod("p", HIGH, res=VERY_LARGE),
                 [pod("p1.1", LOW, "node1", res=SMALL), pod("p1.2", LOW, "node1", res=SMALL),
                  pod("p2.1", HIGH, "node2", res=LARGE), pod("p3.1", MID, "node3", res=MEDIUM)],
                 THREE_NODES, [FIT], PostFilterResult("node1"), ["p1.1", "p1.2"],
                 id="PreemptionPolicy is nil"),
]


@pytest.mark.parametrize(("preemptor", "pods", "node_names", "filters", "want", "victims"),
                         PREEMPT)
def test_preempt(preemptor: PodBuilder, pods: list[PodBuilder], node_names: list[str],
                 filters: list[str], want: PostFilterResult | None,
                 victims: list[str] | None) -> None:
    nodes = cluster(node_names, pods)
    env = setup(nodes, filters)
    info = preemptor.info()
    result, status = env.plugin.preempt(env.state_for(info), info,
                                        unschedulable(*(n.name for n in nodes)))
    assert status.ok or status.is_rejected
    assert result == want
    if victims is None:
        assert env.handle.preemptions == []
    else:
        ((_, node, keys, _),) = env.handle.preemptions
        assert (node, sorted(keys)) == (want.nominated_node_name if want else "",
                                        [f"default/{name}" for name in victims])


def test_events_to_register() -> None:
    env = setup(cluster(["node1"], []))
    # A held preemptor is re-checked when pods (its victims) are deleted...
    assert [(e.resource.value, e.action.name, hinted)
            for e, hinted in registered(env.plugin)] == [("Pod", "DELETE", True)]
    # ...but this plugin's hint leaves the answer to the plugins that rejected it
    # (upstream's isPodSchedulableAfterPodDeletion).
    victim = pod("victim", LOW, "node1").info()
    hint = hint_for(env.plugin, ASSIGNED_POD_DELETE)
    assert hint(pod("p", HIGH).info(), victim, None) is QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(("running", "held"), [(True, True), (False, False)],
                         ids=["preemption still running: held", "no preemption: admitted"])
def test_pre_enqueue_holds_a_preemptor_while_its_preemption_runs(running: bool,
                                                                 held: bool) -> None:
    env = setup(cluster(["node1"], []))
    info = pod("p", HIGH).info()
    if running:
        env.handle.preempting.add(info.uid)
    status = env.plugin.pre_enqueue(info)
    assert (not status.ok) == held
    if held:
        assert status.reasons == ["waiting for the preemption for this pod to be finished"]


def test_registered_in_tree() -> None:
    spec = IN_TREE[dp.NAME]
    assert (spec.plugin_class, spec.args_model) == (DefaultPreemption, DefaultPreemptionArgs)
    assert spec.extension_points() == ["preEnqueue", "postFilter"]
    plugin = spec.factory(None, setup(cluster(["node1"], [])).framework.handle)
    offset, count = plugin.offset_and_num_candidates(1000)
    assert 0 <= offset < 1000 and count == 100


@pytest.mark.parametrize(("existing_priority", "release", "nominated", "message"), [
    # Upstream keeps the rejecting PostFilter's result: an empty nomination clears any.
    *(pytest.param(HIGH, release, "",
                   "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                   "available: 2 No preemption victims found for incoming pod.",
                   id=f"nothing to preempt (v1.{release})") for release in (36, 37)),
    pytest.param(LOW, 36, "node1", "0/2 nodes are available: 2 Insufficient cpu.",
                 id="preempted: only the Filter summary (v1.36)"),
    # v1.37's Evaluator.Preempt says where it made room, and the scheduler appends it.
    pytest.param(LOW, 37, "node1",
                 "0/2 nodes are available: 2 Insufficient cpu. preemption: found a potential "
                 "placement for pod on node node1, preempting 1 victims",
                 id="preempted: the placement found follows the summary (v1.37)"),
])
def test_failed_scheduling_text_as_kube_scheduler_prints_it(
        existing_priority: int, release: int, nominated: str | None, message: str) -> None:
    """kpysched: the FailedScheduling text composed from the Filter pass and PostFilter."""
    pods = [pod(f"e{i}", existing_priority, f"node{i}", res={"cpu": "800m"}) for i in (1, 2)]
    env = setup(cluster(["node1", "node2"], pods, {"cpu": "1"}), release=release)
    info = pod("p", HIGH if existing_priority == LOW else LOW, res={"cpu": "500m"}).info()
    state = env.state_for(info)
    statuses = {node.name: env.framework.run_filter_with_nominated(state, info, node)
                for node in env.handle.snapshot.node_infos}
    diagnosis = Diagnosis(2, statuses)
    result, _, messages = env.framework.run_post_filter(state, info, statuses)
    diagnosis.post_filter_msg = ", ".join(messages)  # as Attempts.post_filter does
    assert (result.nominated_node_name if result else None, diagnosis.message()) == (
        nominated, message)


@pytest.mark.parametrize(("release", "violations"), [(36, 2), (37, 1)])
def test_victims_pdb_violations_follow_the_releases_accounting(release: int,
                                                               violations: int) -> None:
    """Both victims must go; p1 matches both budgets and p2 only the second. v1.36
    charges p1 to both (p2 then violates too); v1.37 stops at p1's first violated
    budget, leaving p2 within the second."""
    pods = [pod("p1", LOW, "node1", res=MEDIUM, labels={"app": "foo", "tier": "backend"}),
            pod("p2", LOW, "node1", res=MEDIUM, labels={"tier": "backend"})]
    pdbs = [pdb({"app": "foo"}, 0, name="foo"), pdb({"tier": "backend"}, 1, name="backend")]
    env = setup(cluster(["node1"], pods, {"cpu": "400m", "memory": "400"}), pdbs=pdbs,
                release=release)
    info = pod("p", HIGH, res={"cpu": "400m", "memory": "400"}).info()
    [node] = env.handle.snapshot.node_infos
    victims, num_violations, status = env.plugin.select_victims_on_node(
        env.state_for(info), info, node, pdbs)
    assert status.ok
    assert sorted(v.name for v in victims) == ["p1", "p2"]
    assert num_violations == violations
