"""KpyschedProcess.log_events reads kpysched's JSON log incrementally: what was appended
since the last call, up to the last complete line (a line being written is left for the
next call), other lines skipped."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.cluster.kpysched_process import KpyschedProcess


def _process(tmp_path: Path) -> KpyschedProcess:
    state: Any = SimpleNamespace(dir=str(tmp_path), kubeconfig=str(tmp_path / "kubeconfig"))
    return KpyschedProcess(state)


def test_events_appended_between_calls_are_added_and_a_partial_line_waits(
        tmp_path: Path) -> None:
    kp = _process(tmp_path)
    assert kp.log_events() == []  # no log yet
    with kp.log_path.open("ab") as log:
        log.write(b'{"event": "a"}\nnot json\n{"event": "b", "pod": "ns/p\xc3')
    assert [e["event"] for e in kp.log_events()] == ["a"]
    with kp.log_path.open("ab") as log:
        log.write(b'\xa9"}\n{"event": "c"}\n')
    events = kp.log_events()
    assert [e["event"] for e in events] == ["a", "b", "c"]
    assert events[1]["pod"] == "ns/p\u00e9"
    events.clear()  # a caller's copy
    assert len(kp.log_events()) == 3
