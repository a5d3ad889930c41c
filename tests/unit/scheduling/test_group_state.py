"""group_state_of: a pod group as explain shows it for one of its members."""

from __future__ import annotations

from kpysched.explain.group_render import render_group
from kpysched.scheduling.group_state import group_state_of
from tests.unit.scheduler_harness import node
from tests.unit.scheduling.test_pod_group_cycle import make_harness


async def test_a_gang_below_quorum_then_its_failed_cycle() -> None:
    harness = make_harness(node("n1", "2"))
    harness.group("g", 3)
    a = harness.member("a", "g")
    harness.member("b", "g")
    await harness.schedule_all()
    state = group_state_of(harness.scheduler, a)
    assert state is not None
    assert state["name"] == "default/g" and state["api"] == "scheduling.k8s.io"
    assert state["minCount"] == 3 and state["exists"] is True
    assert state["pending"] == {"count": 2, "pods": ["a", "b"]}
    assert state["bound"]["count"] == 0 and "lastCycle" not in state  # never tried
    harness.member("c", "g")  # quorum: tried, but only two fit on n1
    await harness.schedule_all()
    state = group_state_of(harness.scheduler, a)
    assert state is not None
    assert state["lastCycle"]["result"] == "unschedulable"
    assert state["lastCycle"]["message"] == "pod group is unschedulable"
    text = render_group(state)
    assert text[0] == "Pod group default/g (scheduling.k8s.io, minCount 3)"
    assert "  pending: 3: a, b, c" in text
    assert any(line.startswith("  last group cycle at ") and line.endswith(
        ": unschedulable: pod group is unschedulable") for line in text)


async def test_a_pod_in_no_group_has_no_group_state() -> None:
    harness = make_harness(node("n1", "2"))
    plain = harness.member("a", "g")
    plain.spec.scheduling_group = None
    assert group_state_of(harness.scheduler, plain) is None
