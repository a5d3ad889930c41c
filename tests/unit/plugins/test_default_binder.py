"""DefaultBinder: binds through the handle and passes its status on."""

from __future__ import annotations

import pytest

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Status
from kpysched.plugins import default_binder as db
from tests.unit.builders import FakeHandle, make_pod


@pytest.mark.parametrize("outcome", [
    pytest.param(Status(), id="bound"),
    pytest.param(Status.error("pods \"p\" not found"), id="api error"),
])
async def test_bind(outcome: Status) -> None:
    handle = FakeHandle(bind_status=outcome)
    status = await db.new(None, handle).bind(CycleState(), make_pod("p", "ns").info(), "node-1")
    assert status is outcome
    assert handle.bound == [("ns/p", "node-1")]


def test_spec() -> None:
    assert db.SPEC.extension_points() == ["bind"]
    assert db.SPEC.args_model is None
    assert db.new(None, FakeHandle()).events_to_register() == ()
