"""The mixed run's checks (pending with room, quota held, Karpenter's nodes), on
made-up observations (no cluster)."""

from __future__ import annotations

from typing import Any

from kpysched.objects.quantity import milli_value
from tests.soak.churn import KIND_LABEL, KPYSCHED
from tests.soak.mixed_checks import (
    ROOM_GRACE_SECONDS,
    Capacity,
    NodeFacts,
    PodNeeds,
    QuotaLedger,
    RoomClock,
    Waiting,
    has_room,
    node_facts,
    tolerates,
)
from tests.soak.mixed_observer import MixedObserver
from tests.soak.mixed_plan import MixedPlan
from tests.soak.observer import Observer
from tests.soak.plan import ALL_FAULTS, PLANS

POOL_LABEL = "karpenter.sh/nodepool"
TAINT = {"key": "burst", "value": "true", "effect": "NoSchedule"}
TOLERATION = {"key": "burst", "operator": "Exists", "effect": "NoSchedule"}
GiB = 2**30


def facts(*, labels: dict[str, str] | None = None, taints: tuple[dict[str, str], ...] = (),
          ready: bool = True, unschedulable: bool = False) -> NodeFacts:
    return NodeFacts(labels or {}, taints, ready, unschedulable)


def needs(cpu: int = 1000, *, selector: dict[str, str] | None = None,
          tolerations: tuple[dict[str, str], ...] = ()) -> PodNeeds:
    return PodNeeds(cpu, GiB, selector or {}, tolerations)


FOUR_CPUS = Capacity(4000, 16 * GiB, 110)


def test_a_node_has_room_only_when_ready_matching_tolerated_and_free() -> None:
    assert has_room(needs(), facts(), FOUR_CPUS, Capacity())
    assert not has_room(needs(), facts(ready=False), FOUR_CPUS, Capacity())
    assert not has_room(needs(), facts(unschedulable=True), FOUR_CPUS, Capacity())
    assert not has_room(needs(), facts(), FOUR_CPUS, Capacity(3500, 0, 1))  # CPU taken
    assert not has_room(needs(), facts(), Capacity(4000, 16 * GiB, 1), Capacity(0, 0, 1))
    pooled = needs(selector={"pool": "burst"})
    assert not has_room(pooled, facts(), FOUR_CPUS, Capacity())
    assert has_room(pooled, facts(labels={"pool": "burst"}), FOUR_CPUS, Capacity())
    assert not has_room(needs(), facts(taints=(TAINT,)), FOUR_CPUS, Capacity())
    assert has_room(needs(tolerations=(TOLERATION,)), facts(taints=(TAINT,)), FOUR_CPUS,
                    Capacity())


def test_tolerations_follow_the_core_rules() -> None:
    assert tolerates([{"operator": "Exists"}], TAINT)
    assert tolerates([{"key": "burst", "value": "true"}], TAINT)
    assert not tolerates([{"key": "burst", "value": "false"}], TAINT)
    assert not tolerates([{"key": "burst", "operator": "Exists", "effect": "NoExecute"}], TAINT)
    assert not tolerates([], TAINT)


def test_node_facts_keep_only_blocking_taints_and_readiness() -> None:
    seen = node_facts({"metadata": {"name": "n", "labels": {"a": "b"}},
                       "spec": {"taints": [TAINT, {"key": "soft", "effect": "PreferNoSchedule"}]},
                       "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert seen == NodeFacts({"a": "b"}, (TAINT,), True, False)


def waiting(uid: str = "a") -> list[Waiting]:
    return [Waiting(uid, f"pod-{uid}", needs())]


def test_the_room_clock_runs_only_while_a_node_has_room_without_a_break() -> None:
    clock = RoomClock()
    room = {"n1": (facts(), FOUR_CPUS)}
    full = {"n1": Capacity(4000, 0, 1)}
    clock.observe(0.0, waiting(), room, {}, quiet_since=0.0)
    clock.observe(ROOM_GRACE_SECONDS - 1, waiting(), room, {}, quiet_since=0.0)
    assert not clock.violations
    clock.observe(ROOM_GRACE_SECONDS, waiting(), room, full, quiet_since=0.0)  # the break
    clock.observe(ROOM_GRACE_SECONDS + 1, waiting(), room, {}, quiet_since=0.0)
    clock.observe(2 * ROOM_GRACE_SECONDS, waiting(), room, {}, quiet_since=0.0)
    assert not clock.violations  # ROOM_GRACE_SECONDS - 1 since the break
    clock.observe(2 * ROOM_GRACE_SECONDS + 2, waiting(), room, {}, quiet_since=0.0)
    assert list(clock.violations) == ["a"] and "n1" in clock.violations["a"]


def test_no_clock_runs_while_no_node_has_room_or_during_a_fault() -> None:
    clock = RoomClock()
    tainted = {"n1": (facts(taints=(TAINT,)), FOUR_CPUS)}
    for second in range(0, 200, 2):  # waiting for the autoscaler: its time, not kpysched's
        clock.observe(float(second), waiting(), tainted, {}, quiet_since=0.0)
    assert not clock.violations and clock.longest_seconds == 0.0
    room = {"n1": (facts(), FOUR_CPUS)}
    clock.observe(200.0, waiting(), room, {}, quiet_since=float("inf"))  # a fault is on
    clock.observe(210.0, waiting(), room, {}, quiet_since=205.0)  # it ended at 205
    clock.observe(205.0 + ROOM_GRACE_SECONDS - 1, waiting(), room, {}, quiet_since=205.0)
    assert not clock.violations
    clock.observe(300.0, [], room, {}, quiet_since=205.0)  # placed: its clock goes
    assert not clock.since


def test_the_ledger_counts_only_the_queues_non_terminal_pods() -> None:
    ledger = QuotaLedger(Capacity(2000, 8 * GiB))
    ledger.update("a", Capacity(1000, GiB, 1), active=True)
    ledger.update("b", Capacity(1000, GiB, 1), active=True)
    ledger.check()
    assert not ledger.violations
    ledger.update("c", Capacity(1000, GiB, 1), active=True)
    ledger.check()
    ledger.check()  # still over: the same violation
    assert len(ledger.violations) == 1 and ledger.peak.cpu_milli == 3000
    ledger.update("a", Capacity(1000, GiB, 1), active=False)  # finished
    ledger.check()
    ledger.update("d", Capacity(1000, GiB, 1), active=True)
    ledger.check()
    assert len(ledger.violations) == 2


def job_pod(uid: str, *, node: str = "", phase: str = "Pending", cpu: str = "1",
            selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": f"pod-{uid}", "labels": {KIND_LABEL: "job"}},
            "spec": {"schedulerName": KPYSCHED, "nodeName": node,
                     "nodeSelector": selector or {}, "tolerations": [TOLERATION],
                     "containers": [{"name": "c", "resources": {"requests": {
                         "cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": phase}}


def node(name: str, *, cpu: str = "4", labels: dict[str, str] | None = None,
         taints: tuple[dict[str, str], ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": list(taints)},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def mixed_observer() -> MixedObserver:
    return MixedObserver(frozenset({"job"}), Capacity(2000, 64 * GiB), POOL_LABEL)


def test_quota_is_not_judged_on_a_half_applied_list() -> None:
    seen = mixed_observer()
    seen._on_pod("ADDED", job_pod("a"))
    seen._on_pod("ADDED", job_pod("b"))
    # A watch gap: a and b finished, c and d came. The list shows c before a's end.
    seen._forget_missing("pods", {"a", "b", "c", "d"})
    seen._on_pod("ADDED", job_pod("c"))
    seen._on_pod("ADDED", job_pod("d"))
    seen._on_pod("ADDED", job_pod("a", node="n1", phase="Succeeded"))
    seen._on_pod("ADDED", job_pod("b", node="n1", phase="Succeeded"))
    seen._listed("pods")
    assert seen.quota.violations == []
    seen._on_pod("ADDED", job_pod("e"))  # a watch event over the quota
    assert len(seen.quota.violations) == 1


def test_a_pending_job_pod_with_room_is_reported_and_karpenters_nodes_are_counted() -> None:
    seen = mixed_observer()
    seen.quiet_since = 0.0
    seen._on_node("ADDED", node("static", cpu="2"))
    seen._on_pod("ADDED", job_pod("big", cpu="3"))
    seen.check_pending()
    assert not seen.room.since  # no node can take 3 CPUs: the autoscaler's time
    seen._on_node("ADDED", node("added", labels={POOL_LABEL: "burst"}))
    assert seen.autoscaled_now() == 1 and seen.peak_autoscaled == 1
    seen.check_pending()
    seen.room.since["big"] -= ROOM_GRACE_SECONDS + 1  # as if it had waited that long
    seen.check_pending()
    assert list(seen.room.violations) == ["big"] and "added" in seen.room.violations["big"]
    seen._on_pod("MODIFIED", job_pod("big", node="added", cpu="3"))
    assert len(seen.scale_up_seconds()) == 1
    seen._on_node("DELETED", node("added", labels={POOL_LABEL: "burst"}))
    assert seen.autoscaled_now() == 0 and seen.autoscaled["added"].removed_at is not None


def test_a_finished_pod_leaves_room_for_the_next_one() -> None:
    seen = Observer()
    seen._on_node("ADDED", node("n1", cpu="2"))
    seen._on_pod("ADDED", job_pod("first", node="n1", cpu="2"))
    seen._on_pod("MODIFIED", job_pod("first", node="n1", cpu="2", phase="Succeeded"))
    seen._on_pod("ADDED", job_pod("second", node="n1", cpu="2"))
    assert seen.overcommits == [] and seen.live_pods() == 1


def test_the_mixed_plans_ask_more_than_their_quota_and_ci_stays_plain() -> None:
    assert PLANS["ci"].mixed is None and PLANS["long"].mixed is None
    assert PLANS["mixed"].duration_seconds == 1800 and PLANS["mixed"].faults == ALL_FAULTS
    for name in ("mixed", "mixed-short"):
        plan = PLANS[name].mixed
        assert isinstance(plan, MixedPlan)
        # What a wave's Jobs run at once, on average, is more than the quota admits.
        total = sum(s.weight for s in plan.shapes)
        per_job = sum(s.weight * s.parallelism * milli_value(s.cpu) for s in plan.shapes) / total
        assert plan.jobs_per_wave * per_job > milli_value(plan.quota_cpu), name
        # Some Jobs fit no static node (4 CPUs) or select the autoscaled pool.
        assert any(s.pool_only or milli_value(s.cpu) > 4000 for s in plan.shapes)
