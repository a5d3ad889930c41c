"""A v1.37 pod group preempts for the whole group (DefaultPreemption's
PodGroupPostFilter, scheduling/pod_group_preemption.py), as kube-scheduler v1.37.2 does.

Cases ported from upstream's test/integration/scheduler/preemption/podgroup
(TestPodGroupPreemption): which pods go, which members are nominated, and what the
members and the PodGroup are told. Then the victims' deletion is fed back and the
group binds where it was nominated.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from kpysched.objects import api, scheduling
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption.plugin import (
    WAITING_FOR_GROUP_PREEMPTION,
    DefaultPreemption,
    DefaultPreemptionArgs,
)
from tests.unit.builders import FakeHandle, label_selector, make_pod, make_pod_group
from tests.unit.scheduler_harness import SchedulerHarness, build_harness, node

GANG_37 = Features.from_gates({"GenericWorkload": True}, release=37)
CONDITION = "PodGroupInitiallyScheduled"


class Harness(SchedulerHarness):
    def group(self, name: str, min_count: int | None, priority: int,
              *, whole: bool = False) -> None:
        assert self.listers.workloads is not None
        group = make_pod_group(name, min_count)
        group.spec.priority = priority
        if whole:
            group.spec.disruption_mode = scheduling.DisruptionMode(
                all=scheduling.AllDisruptionMode())
        self.listers.workloads.pod_groups.on_add(group)

    def pod(self, name: str, cpu: str, priority: int, *, group: str | None = None,
            on: str | None = None, labels: dict[str, str] | None = None) -> api.Pod:
        builder = make_pod(name).req(cpu=cpu).priority(priority)
        if group is not None:
            builder = builder.group(group)
        if on is not None:
            builder = builder.node(on)
        for key, value in (labels or {}).items():
            builder = builder.label(key, value)
        pod = builder.obj()
        pod.spec.scheduler_name = "kpysched"
        self.pods.on_add(pod)
        return pod

    async def after_backoff(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The members' backoff passes (v1.37.2 retries a failed group after its
        backoff, whatever happens meanwhile); then schedule what is active."""
        queue = self.scheduler.queue
        later = time.monotonic() + 60
        monkeypatch.setattr(queue, "_clock", lambda: later)
        queue.flush_backoff_completed()
        await self.schedule_all()

    def deleted(self) -> list[str]:
        return sorted(path.rsplit("/", 1)[-1] for method, path, _ in self.api.requests
                      if method == "DELETE" and "/pods/" in path)

    def nominated(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for method, path, body in self.api.requests:
            if method == "PATCH" and path.endswith("/status") and "/pods/" in path \
                    and isinstance(body, dict):
                node_name = body.get("status", {}).get("nominatedNodeName")
                if node_name:
                    found[path.split("/")[-2]] = node_name
        return found

    def conditions(self) -> list[tuple[str, str, str]]:
        return [(c["status"], c["reason"], c["message"])
                for body in self.api.sent("PATCH", "/status") if isinstance(body, dict)
                for c in body.get("status", {}).get("conditions", [])
                if c.get("type") == CONDITION]

    def events_about(self, name: str, reason: str) -> list[dict[str, Any]]:
        return [body for body in self.api.sent("POST", "/events")
                if body["reason"] == reason and body["regarding"]["name"] == name]


def make_harness(*nodes: api.Node) -> Harness:
    built = build_harness({"schedulerName": "kpysched"}, GANG_37,
                          Listers(generic_workload=True, release=37), *nodes)
    return Harness(built.scheduler, built.api, built.listers, built.pods, built.nodes)


def found_placement(victims: int) -> str:
    return f"pod group preemption: found a placement for podgroup, preempting {victims} victims"


# nodes (name, cpu), groups (name, minCount, priority, whole), initial pods (name,
# cpu, priority, group, node), the members of pg1 (1 CPU each), the victims, and the
# members the dry run places (None: all of them), nominated and then bound.
CASES = [
    pytest.param([("n1", "3")], [("pg1", 3, 100, False)],
                 [("low-1", "1", 10, None, "n1"), ("low-2", "1", 10, None, "n1"),
                  ("low-3", "1", 10, None, "n1")],
                 ["high-1", "high-2", "high-3"], ["low-1", "low-2", "low-3"], None,
                 id="full-pod-group-preemption"),
    pytest.param([("n1", "3")], [("pg1", None, 100, False)],
                 [("low-1", "1", 10, None, "n1"), ("low-2", "1", 10, None, "n1"),
                  ("low-3", "1", 10, None, "n1")],
                 ["high-1", "high-2", "high-3"], ["low-1", "low-2", "low-3"], None,
                 id="full-preemption-for-basic-policy"),
    pytest.param([("n1", "2"), ("n2", "2")], [("pg1", 4, 100, False)],
                 [("low-1", "1", 10, None, "n1"), ("low-2", "1", 10, None, "n1"),
                  ("low-3", "1", 10, None, "n2"), ("low-4", "1", 10, None, "n2")],
                 ["high-1", "high-2", "high-3", "high-4"],
                 ["low-1", "low-2", "low-3", "low-4"], None, id="multi-node-preemption"),
    pytest.param([("n1", "3")], [("pg1", 2, 100, False)],
                 [("mid-1", "1", 50, None, "n1"), ("low-1", "1", 10, None, "n1"),
                  ("low-2", "1", 10, None, "n1")],
                 ["high-1", "high-2"], ["low-1", "low-2"], None,
                 id="priority-based-victim-selection"),
    pytest.param([("n1", "3")], [("pg1", 1, 100, False), ("pg2", 3, 10, True)],
                 [("low-1", "1", 10, "pg2", "n1"), ("low-2", "1", 10, "pg2", "n1"),
                  ("low-3", "1", 10, "pg2", "n1")],
                 ["high-1"], ["low-1", "low-2", "low-3"], None,
                 id="preempt-the-whole-pod-group-even-if-one-pod-would-do"),
    pytest.param([("n1", "3")], [("pg1", 1, 100, False), ("pg2", 3, 10, False)],
                 [("low-1", "1", 10, "pg2", "n1"), ("low-2", "1", 10, "pg2", "n1"),
                  ("low-3", "1", 10, "pg2", "n1")],
                 ["high-1"], ["low-3"], None,
                 id="single-disruption-mode-takes-one-member"),
    pytest.param([("n1", "1"), ("n2", "1"), ("n3", "1")],
                 [("victim-pg", 1, 50, True), ("pg1", 3, 100, False)],
                 [("v1", "1", 50, "victim-pg", "n1"), ("v2", "1", 50, "victim-pg", "n2"),
                  ("v3", "1", 10, None, "n3")],
                 ["p-a", "p-b", "p-c"], ["v1", "v2", "v3"], None,
                 id="gang-does-not-reprieve-a-lower-priority-victim-group"),
    pytest.param([("n1", "1"), ("n2", "1"), ("n3", "1"), ("n4", "1")],
                 [("pg1", 1, 100, False)],
                 [("p1", "1", 10, None, "n1"), ("p2", "1", 10, None, "n2"),
                  ("p3", "1", 200, None, "n3"), ("p4", "1", 200, None, "n4")],
                 ["p-a", "p-b", "p-c"], ["p1", "p2"], ["p-a", "p-b"],
                 id="as-many-as-possible-without-preempting-higher-priority-pods"),
]


@pytest.mark.parametrize(("nodes", "groups", "initial", "preemptors", "victims",
                          "dry_run_places"),
                         CASES)
async def test_the_group_preempts_what_upstream_preempts_and_then_binds(
        nodes: list[tuple[str, str]], groups: list[tuple[str, int | None, int, bool]],
        initial: list[tuple[str, str, int, str | None, str]], preemptors: list[str],
        victims: list[str], dry_run_places: list[str] | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    harness = make_harness(*(node(name, cpu) for name, cpu in nodes))
    for name, min_count, priority, whole in groups:
        harness.group(name, min_count, priority, whole=whole)
    placed = {name: harness.pod(name, cpu, priority, group=group, on=on)
              for name, cpu, priority, group, on in initial}
    await harness.schedule_all()
    for name in preemptors:
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()

    assert harness.deleted() == victims
    assert harness.bound() == {}
    # Every member the dry run placed is nominated; the group waits for its victims.
    placed_members = preemptors if dry_run_places is None else dry_run_places
    assert sorted(harness.nominated()) == placed_members
    status, reason, message = harness.conditions()[-1]
    assert (status, reason) == ("False", "Unschedulable")
    assert message.endswith(found_placement(len(victims)))
    # The victims go in the PodGroup's name, on upstream's "cluster" candidate.
    for victim in victims:
        [event] = harness.events_about(victim, "Preempted")
        assert event["note"] == "Preempted by podgroup uid-pg-pg1 on node cluster"
        assert event["related"]["kind"] == "PodGroup"

    for victim in victims:
        harness.pods.on_delete(placed[victim])
    await harness.after_backoff(monkeypatch)
    assert sorted(harness.bound()) == placed_members


async def test_a_pdb_violating_victim_is_reprieved_first() -> None:
    # Upstream's "PDB Violation Handling (Reprieve)": low-1 and low-2 are covered by a
    # budget that allows no disruption; half a CPU each for two members needs one
    # pod to go, and low-3 (no budget) is the one.
    harness = make_harness(node("n1", "3"))
    harness.group("pg1", 2, 100)
    for name in ("low-1", "low-2"):
        harness.pod(name, "1", 10, on="n1", labels={"app": "foo"})
    harness.pod("low-3", "1", 10, on="n1")
    budget = api.PodDisruptionBudget(
        metadata=api.ObjectMeta(name="foo-pdb", namespace="default"),
        spec=api.PodDisruptionBudgetSpec(selector=label_selector({"app": "foo"})),
        status=api.PodDisruptionBudgetStatus(disruptions_allowed=0))
    harness.listers.pdbs.on_add(budget)
    await harness.schedule_all()
    for name in ("high-1", "high-2"):
        harness.pod(name, "500m", 100, group="pg1")
    await harness.schedule_all()
    assert harness.deleted() == ["low-3"]


async def test_not_enough_lower_priority_room_preempts_nobody() -> None:
    # Upstream's "Insufficient Resources (No Preemption)": taking both low pods off
    # still leaves the gang of three one CPU short, so the dry run's group status is
    # the answer and nothing is deleted.
    harness = make_harness(node("n1", "3"))
    harness.group("pg1", 3, 100)
    harness.pod("mid-1", "1", 500, on="n1")
    harness.pod("low-1", "1", 10, on="n1")
    harness.pod("low-2", "1", 10, on="n1")
    await harness.schedule_all()
    for name in ("high-1", "high-2", "high-3"):
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()
    assert harness.deleted() == []
    assert harness.nominated() == {}
    short = "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"
    assert harness.conditions()[-1] == (
        "False", "Unschedulable",
        f"{short}, deallocation and deletion of ResourceClaims completed, "
        f"pod group preemption: minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")


async def _group_that_must_evict_low() -> Harness:
    """pg1 (minCount 2, priority 100) whose two 1-CPU members fit n1 only once the
    2-CPU priority-10 pod `low` there goes; both scheduled until nothing is left to do."""
    harness = make_harness(node("n1", "2"))
    harness.group("pg1", 2, 100)
    harness.pod("low", "2", 10, on="n1")
    await harness.schedule_all()
    for name in ("a", "b"):
        harness.pod(name, "1", 100, group="pg1")
    await harness.schedule_all()
    return harness


async def test_the_members_are_told_the_groups_words_and_held_while_victims_go() -> None:
    harness = await _group_that_must_evict_low()
    short = "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    # The first fits nowhere (its bare fit error); the second was not tried and has
    # the group's status from before PodGroupPostFilter.
    assert sorted(harness.notes("FailedScheduling").values()) == [
        "0/1 nodes are available: 1 Insufficient cpu.", short]
    assert harness.conditions() == [("False", "Unschedulable",
                                     f"{short}, {found_placement(1)}")]
    assert harness.nominated() == {"a": "n1", "b": "n1"}


@pytest.mark.parametrize(("features", "held"), [
    (GANG_37, True),
    (Features(release=37), False),  # GenericWorkload off: only the pod's own uid counts
    (Features.from_gates({"GenericWorkload": True}, release=36), False),
], ids=["v1.37-generic-workload", "v1.37-gate-off", "v1.36"])
def test_a_member_is_held_at_pre_enqueue_while_its_groups_preemption_runs(
        features: Features, held: bool) -> None:
    handle = FakeHandle(features_value=features)
    handle.pod_groups["default/pg1"] = make_pod_group("pg1", 1)
    plugin = DefaultPreemption(DefaultPreemptionArgs(), handle)
    member = PodInfo.of(make_pod("m").group("pg1").priority(100).obj())
    handle.preempting.add("uid-pg-pg1")  # the group's preemption is under way
    status = plugin.pre_enqueue(member)
    assert (status.message() == WAITING_FOR_GROUP_PREEMPTION) is held
    handle.preempting.clear()
    assert plugin.pre_enqueue(member).ok


# --- a single pod preempting pod groups' members (v1.37, GenericWorkload on) ----------


async def test_a_plain_pod_takes_a_whole_group_whose_disruption_mode_is_all() -> None:
    # One node's room would do, but the victim's group goes whole, on both nodes.
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("v", 2, 10, whole=True)
    harness.pod("v-0", "2", 10, group="v", on="n1")
    harness.pod("v-1", "2", 10, group="v", on="n2")
    await harness.schedule_all()
    harness.pod("high", "2", 1000)
    await harness.schedule_all()
    assert harness.deleted() == ["v-0", "v-1"]
    assert harness.notes("FailedScheduling")["high"].endswith("preempting 2 victims")


async def test_a_group_member_is_kept_over_a_plain_pod_of_the_same_priority() -> None:
    # Equal priority: upstream's MoreImportantVictim ranks a pod group's member above
    # a plain pod, so the member is given back first and the plain pod goes.
    harness = make_harness(node("n1", "2"))
    harness.group("v", 1, 10)
    harness.pod("plain", "1", 10, on="n1")
    harness.pod("member", "1", 10, group="v", on="n1")
    await harness.schedule_all()
    harness.pod("high", "1", 1000)
    await harness.schedule_all()
    assert harness.deleted() == ["plain"]


async def test_a_members_priority_as_a_victim_is_its_groups() -> None:
    # The member's own priority (10) is below the preemptor's, its group's (5000) is not.
    harness = make_harness(node("n1", "2"))
    harness.group("v", 1, 5000)
    harness.pod("member", "2", 10, group="v", on="n1")
    await harness.schedule_all()
    harness.pod("high", "1", 1000)
    await harness.schedule_all()
    assert harness.deleted() == []
    assert "No preemption victims found for incoming pod" in \
        harness.notes("FailedScheduling")["high"]


async def test_a_group_whose_victims_are_still_going_keeps_its_nominations() -> None:
    # Upstream's isOngoingPreemption: a member's nominated node still has a
    # lower-priority pod terminating by preemption, so nobody new is preempted and
    # the members stay nominated where they were.
    harness = make_harness(node("n1", "2"), node("n2", "2"))
    harness.group("pg1", 2, 100)
    going = make_pod("going").req(cpu="2").priority(10).node("n1").terminating().obj()
    going.status.conditions = [api.PodCondition(
        type="DisruptionTarget", status="True", reason="PreemptionByScheduler")]
    going.spec.scheduler_name = "kpysched"
    harness.pods.on_add(going)
    harness.pod("low", "2", 10, on="n2")
    await harness.schedule_all()
    for name in ("a", "b"):
        pod = make_pod(name).group("pg1").req(cpu="1").priority(100).obj()
        pod.spec.scheduler_name = "kpysched"
        pod.status.nominated_node_name = "n1"
        harness.pods.on_add(pod)
    await harness.schedule_all()
    assert harness.deleted() == []
    assert harness.conditions()[-1][2].endswith(
        "pod group preemption: ongoing preemption on nominated nodes")
    assert all(node_name == "n1" for node_name in harness.nominated().values())


async def test_after_its_preemption_the_group_waits_out_its_backoff_on_an_idle_scheduler(
) -> None:
    # Held at PreEnqueue while its victims went, the group comes back as v1.37.2's
    # group entity does: to the backoff an idle scheduler does not pop early.
    harness = await _group_that_must_evict_low()  # its deletion is written
    assert harness.deleted() == ["low"]
    queue = harness.scheduler.queue
    assert queue.pending_counts()["backoff"] == 2
    task = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
