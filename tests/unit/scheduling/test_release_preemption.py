"""A whole scheduling cycle that preempts, as v1.36.4 and as v1.37.2: v1.37's
DefaultPreemption reports where it made room, and the scheduler appends any PostFilter
message to the FailedScheduling text and the PodScheduled condition (PostFilterMsg)."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.config.features import Features
from kpysched.informers.listers import Listers
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import build_harness, node

PROFILE = {"schedulerName": "kpysched"}
INSUFFICIENT = "0/1 nodes are available: 1 Insufficient cpu."


@pytest.mark.parametrize(("release", "message"), [
    (36, INSUFFICIENT),
    (37, f"{INSUFFICIENT} preemption: found a potential placement for pod on node n1, "
         "preempting 1 victims"),
])
async def test_the_preemptors_failed_scheduling_text(release: int, message: str) -> None:
    harness = build_harness(PROFILE, Features(release=release), Listers(), node("n1", "2"))
    low = make_pod("low").req(cpu="2").priority(0).node("n1").obj()
    low.spec.scheduler_name = "kpysched"
    harness.pods.on_add(low)
    high = make_pod("high").req(cpu="2").priority(1000).obj()
    high.spec.scheduler_name = "kpysched"
    harness.pods.on_add(high)
    await harness.schedule_all()

    assert harness.notes("FailedScheduling") == {"high": message}
    assert harness.api.sent("DELETE", "/pods/low")  # the victim goes either way
    patches: list[dict[str, Any]] = [body for body in harness.api.sent("PATCH", "/pods/high/status")
                                     if isinstance(body, dict)]
    conditions = [c for body in patches for c in body.get("status", {}).get("conditions", [])
                  if c.get("type") == "PodScheduled"]
    assert [(c["reason"], c["message"]) for c in conditions] == [("Unschedulable", message)]
    assert any(body.get("status", {}).get("nominatedNodeName") == "n1" for body in patches)
