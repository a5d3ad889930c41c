"""The leader's pod label that steers the decisions Service (kpysched.writes.leader_label)."""

from __future__ import annotations

from typing import cast

from structlog.testing import capture_logs

from kpysched.api.client import RawApi
from kpysched.api.response import ApiResponse
from kpysched.writes.leader_label import LABEL, LeaderLabel
from tests.unit.api_double import RecordingApi

POD = "/api/v1/namespaces/kpysched/pods/kpysched-7d9f-abcde"


def label(api: RecordingApi) -> LeaderLabel:
    made = LeaderLabel.of(cast(RawApi, api), "kpysched", "kpysched-7d9f-abcde")
    assert made is not None
    return made


async def test_leading_sets_the_label_and_stopping_removes_it_with_merge_patches() -> None:
    api = RecordingApi()
    assert await label(api).mark(True)
    assert await label(api).mark(False)
    assert api.sent("PATCH", POD) == [{"metadata": {"labels": {LABEL: "true"}}},
                                      {"metadata": {"labels": {LABEL: None}}}]


def test_outside_a_pod_there_is_nothing_to_label() -> None:
    api = cast(RawApi, RecordingApi())
    assert LeaderLabel.of(api, None, "p") is None
    assert LeaderLabel.of(api, "ns", "") is None


async def test_a_refused_write_is_logged_and_never_raises() -> None:
    api = RecordingApi(answers={("PATCH", POD): ApiResponse(
        403, b'{"kind":"Status","message":"pods \\"kpysched-7d9f-abcde\\" is forbidden"}')})
    with capture_logs() as logs:
        assert not await label(api).mark(True)
    (failed,) = [e for e in logs if e["event"] == "leader_label.failed"]
    assert failed["status"] == 403 and "forbidden" in failed["reason"]
