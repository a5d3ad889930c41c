"""PreemptionExecutor.is_running (what DefaultPreemption's PreEnqueue asks): a
preemptor with several victim removals under way is held until the last one ends, not
released by the first (issue 32 item 10)."""

from __future__ import annotations

import asyncio
from typing import cast

from kpysched.api.client import RawApi
from kpysched.queue.nominator import Nominator
from kpysched.writes.event_recorder import EventRecorder
from kpysched.writes.pod_status import PodStatusWriter
from kpysched.writes.preemption import PreemptionExecutor
from tests.unit.api_double import RecordingApi
from tests.unit.builders import make_pod


async def test_a_preemptor_is_running_until_its_last_removal_ends() -> None:
    recording = RecordingApi()
    raw = cast(RawApi, recording)
    finished: list[str] = []
    executor = PreemptionExecutor(raw, EventRecorder(raw), PodStatusWriter(raw), Nominator(),
                                  on_finished=lambda: finished.append("done"))
    preemptor = make_pod("preemptor").info()
    gates = {name: asyncio.Event() for name in ("first", "second")}
    for name, gate in gates.items():
        recording.hold[("DELETE", f"/pods/{name}")] = gate
    executor.preempt(preemptor, "n1", [make_pod("first").info()], "DefaultPreemption")
    executor.preempt(preemptor, "n1", [make_pod("second").info()], "DefaultPreemption")
    await asyncio.sleep(0.01)
    assert executor.is_running(preemptor.uid)
    gates["first"].set()
    for _ in range(100):
        await asyncio.sleep(0.001)
        if finished:
            break
    assert finished == ["done"]
    assert executor.is_running(preemptor.uid)  # the second is still deleting
    gates["second"].set()
    await executor.drain(timeout=5)
    assert not executor.is_running(preemptor.uid)
