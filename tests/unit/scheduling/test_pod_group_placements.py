"""A pod group's cycle with TopologyAwareWorkloadScheduling on (v1.37 alpha, with
GenericWorkload): the group is tried inside each placement its PodGroup's topology
constraint gives (one per rack here), the placements where it fits are ranked by
PlacementScore (NodeResourcesFit's MostAllocated over the placement, PodGroupPodsCount),
and the best is taken; when it fits in none, the first placement's words are the
group's (upstream's podGroupSchedulingPlacementAlgorithm; the same scenarios run
against kube-scheduler v1.37.2 in
tests/e2e/differential/test_topology_aware_differential.py)."""

from __future__ import annotations

from kpysched.config.features import Features
from kpysched.config.profiles import default_multi_point
from kpysched.informers.listers import Listers
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api, scheduling
from tests.unit.builders import make_node, make_pod, make_pod_group
from tests.unit.scheduler_harness import SchedulerHarness, build_harness

GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
TOPOLOGY_AWARE = Features.from_gates(GATES, release=37)
GANG_ONLY = Features.from_gates({"GenericWorkload": True}, release=37)
RACK = "example.com/rack"
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
CONDITION = "PodGroupInitiallyScheduled"


def rack_node(name: str, rack: str, cpu: str) -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).label(RACK, rack).obj()


class Harness(SchedulerHarness):
    def group(self, name: str, min_count: int | None, topology_key: str | None = RACK) -> None:
        assert self.listers.workloads is not None
        group = make_pod_group(name, min_count)
        if topology_key is not None:
            group.spec.scheduling_constraints = scheduling.PodGroupSchedulingConstraints(
                topology=[scheduling.TopologyConstraint(key=topology_key)])
        self.listers.workloads.pod_groups.on_add(group)

    def member(self, name: str, group: str, cpu: str = "1") -> api.Pod:
        pod = make_pod(name).group(group).req(cpu=cpu).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    def bound_pod(self, name: str, node_name: str, cpu: str) -> None:
        pod = make_pod(name).req(cpu=cpu).node(node_name).obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)

    def conditions(self) -> list[tuple[str, str, str]]:
        return [(c["status"], c["reason"], c["message"])
                for body in self.api.sent("PATCH", "/status") if isinstance(body, dict)
                for c in body.get("status", {}).get("conditions", [])
                if c.get("type") == CONDITION]


def make_harness(*nodes: api.Node, features: Features = TOPOLOGY_AWARE) -> Harness:
    built = build_harness({"schedulerName": "kpysched"}, features,
                          Listers(generic_workload=True, release=37), *nodes)
    return Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)


def test_the_gate_adds_upstreams_placement_plugins_to_the_default_profile() -> None:
    names = [name for name, _ in default_multi_point(TOPOLOGY_AWARE)]
    assert names[-3:] == ["GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"]
    assert dict(default_multi_point(TOPOLOGY_AWARE))["PodGroupPodsCount"] == 1
    assert "TopologyPlacementGenerator" not in dict(default_multi_point(GANG_ONLY))


def test_the_profile_runs_the_placement_points() -> None:
    harness = make_harness()
    framework = harness.scheduler.context.frameworks["kpysched"]
    assert [p.NAME for p in framework.placement_generate_plugins] == [
        "TopologyPlacementGenerator"]
    assert [p.NAME for p in framework.placement_score_plugins] == [
        "NodeResourcesFit", "PodGroupPodsCount"]
    assert framework.placement_weights == {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}


async def test_a_gang_goes_whole_into_the_one_rack_it_fits_in() -> None:
    harness = make_harness(rack_node("a1", "a", "2"), rack_node("a2", "a", "2"),
                           rack_node("b1", "b", "3"), rack_node("b2", "b", "3"))
    harness.group("g", 4)
    for name in ("m1", "m2", "m3", "m4"):
        harness.member(name, "g", cpu="1500m")
    await harness.schedule_all()
    # Rack a's nodes take one member each (1.5 of 2 cpu), rack b's two each: only b
    # holds the whole gang, and all four go there.
    bound = harness.bound()
    assert sorted(bound) == ["m1", "m2", "m3", "m4"]
    assert sorted(bound.values()) == ["b1", "b1", "b2", "b2"]
    assert harness.notes("FailedScheduling") == {}


async def test_the_group_stays_inside_one_rack_though_it_would_fit_spread() -> None:
    harness = make_harness(rack_node("a1", "a", "2"), rack_node("b1", "b", "2"),
                           rack_node("b2", "b", "2"))
    harness.group("g", 3)
    for name in ("m1", "m2", "m3"):
        harness.member(name, "g")
    await harness.schedule_all()
    bound = harness.bound()
    assert sorted(bound) == ["m1", "m2", "m3"]
    assert {node[0] for node in bound.values()} == {"b"}
    assert harness.conditions() == [("True", "Scheduled", "")]


async def test_without_the_gate_the_topology_constraint_is_not_read() -> None:
    harness = make_harness(rack_node("a1", "a", "2"), rack_node("b1", "b", "2"),
                           features=GANG_ONLY)
    harness.group("g", 4)
    for name in ("m1", "m2", "m3", "m4"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert {node[0] for node in harness.bound().values()} == {"a", "b"}


async def test_a_gang_that_fits_in_no_single_rack_is_told_the_first_placements_words() -> None:
    harness = make_harness(rack_node("a1", "a", "2"), rack_node("b1", "b", "2"))
    harness.group("g", 4)
    for name in ("m1", "m2", "m3", "m4"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    placements = ("pod group is unschedulable, 0/2 placements are available, first "
                  "placement status: minCount (4) cannot be satisfied: 2 scheduled, 1 remaining")
    group_message = f"{placements}, {NO_VICTIMS}"
    # In the first placement (rack a) two fit and are held back in the group's words,
    # the third fits on none of its one node, the fourth is not tried: it gets the
    # group's status from before PodGroupPostFilter.
    assert sorted(harness.notes("FailedScheduling").values()) == [
        "0/1 nodes are available: 1 Insufficient cpu.",
        placements,
        f"pod group is unschedulable, {group_message}",
        f"pod group is unschedulable, {group_message}"]
    assert harness.conditions() == [("False", "Unschedulable", group_message)]
    assert harness.scheduler.cache.assumed_count() == 0


async def test_a_group_without_a_constraint_has_one_placement_the_whole_cluster() -> None:
    harness = make_harness(rack_node("a1", "a", "1"), rack_node("b1", "b", "1"))
    harness.group("g", 3, topology_key=None)
    for name in ("m1", "m2", "m3"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    placements = ("pod group is unschedulable, 0/1 placements are available, first "
                  "placement status: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    assert harness.conditions() == [("False", "Unschedulable", f"{placements}, {NO_VICTIMS}")]
    assert "0/2 nodes are available: 2 Insufficient cpu." in harness.notes(
        "FailedScheduling").values()


async def test_no_node_with_the_constraints_label_means_no_placement() -> None:
    harness = make_harness(rack_node("a1", "a", "4"))
    harness.group("g", 1, topology_key="example.com/zone")
    harness.member("m1", "g")
    await harness.schedule_all()
    assert harness.bound() == {}
    # DynamicResources' PodGroupPostFilter leaves a constrained group alone, so no
    # member having been tried is no error (it would be without the constraint).
    assert list(harness.notes("FailedScheduling").values()) == ["no feasible placements found"]
    assert harness.conditions() == [
        ("False", "Unschedulable", f"no feasible placements found, {NO_VICTIMS}")]


async def test_the_fuller_rack_wins_when_both_fit_the_whole_group() -> None:
    """NodeResourcesFit scores a placement MostAllocated: with every member placed in
    either rack (PodGroupPodsCount 100 for both), the rack already in use wins."""
    harness = make_harness(rack_node("a1", "a", "4"), rack_node("b1", "b", "4"))
    harness.bound_pod("busy", "b1", cpu="1")
    harness.group("g", 2)
    for name in ("m1", "m2"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {"m1": "b1", "m2": "b1"}


async def test_the_rack_that_takes_more_members_wins_by_pods_count() -> None:
    """minCount 2 of 4 members: rack a takes all four, rack b (fuller) only three.
    PodGroupPodsCount gives 100 and 75; NodeResourcesFit scores both racks alike
    (full cpu)."""
    harness = make_harness(rack_node("a1", "a", "4"), rack_node("b1", "b", "4"))
    harness.bound_pod("busy", "b1", cpu="1")
    harness.group("g", 2)
    for name in ("m1", "m2", "m3", "m4"):
        harness.member(name, "g")
    await harness.schedule_all()
    assert harness.bound() == {"m1": "a1", "m2": "a1", "m3": "a1", "m4": "a1"}


async def test_placements_are_counted_as_upstreams_metrics() -> None:
    metrics = SchedulerMetrics(generic_workload=True, release=37, topology_aware=True)
    built = build_harness({"schedulerName": "kpysched"}, TOPOLOGY_AWARE,
                          Listers(generic_workload=True, release=37),
                          rack_node("a1", "a", "2"), rack_node("b1", "b", "3"),
                          metrics=metrics)
    harness = Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)
    harness.group("g", 3)
    for name in ("m1", "m2", "m3"):
        harness.member(name, "g")
    await harness.schedule_all()
    text = metrics.render().decode()
    assert 'scheduler_generated_placements_total{profile="kpysched"} 2.0' in text
    for result in ("feasible", "infeasible"):
        assert (f'scheduler_placement_evaluations_total{{profile="kpysched",result="{result}"}}'
                " 1.0") in text
        assert (f'scheduler_placement_evaluation_duration_seconds_count{{profile="kpysched",'
                f'result="{result}"}} 1.0') in text
    quiet = SchedulerMetrics(generic_workload=True, release=37).render().decode()
    assert "scheduler_generated_placements_total" not in quiet


async def test_each_members_decision_record_is_the_placement_kept() -> None:
    built = build_harness({"schedulerName": "kpysched"}, TOPOLOGY_AWARE,
                          Listers(generic_workload=True, release=37),
                          rack_node("a1", "a", "1"), rack_node("a2", "a", "1"),
                          rack_node("b1", "b", "3"), decision_records=10)
    harness = Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)
    harness.group("g", 3)
    for name in ("m1", "m2", "m3"):
        harness.member(name, "g")
    await harness.schedule_all()
    store = harness.scheduler.context.decisions
    assert store is not None
    for name in ("m1", "m2", "m3"):
        (record,) = store.for_pod("default", name)
        # Tried in rack b (one node), not in rack a (two), whose trial was dropped.
        assert (record["node"], record["total_nodes"]) == ("b1", 1)


async def test_members_left_over_are_tried_only_in_the_rack_the_group_went_to() -> None:
    """A basic group (minCount 1): rack b takes two members (PodGroupPodsCount 100 to
    50), the third is left over and retried alone, pinned to rack b by the two bound
    there, though rack a has room: it fits on none of b's one node."""
    harness = make_harness(rack_node("a1", "a", "1"), rack_node("b1", "b", "2"))
    harness.group("g", None)
    for name in ("m1", "m2", "m3"):
        harness.member(name, "g")
    await harness.schedule_all()
    bound = harness.bound()
    assert sorted(bound.values()) == ["b1", "b1"]
    [left_over] = {"m1", "m2", "m3"} - set(bound)
    assert harness.notes("FailedScheduling") == {
        left_over: "0/1 nodes are available: 1 Insufficient cpu."}
