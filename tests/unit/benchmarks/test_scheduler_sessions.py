"""The benchmarks start kpysched in a session of its own, as kube-scheduler and the
cluster's components are started (with autogroup scheduling each session is a group the
kernel shares the CPU between, so both schedulers are treated alike); the e2e harness
keeps it in the caller's session unless asked."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks import schedulers
from tests.cluster.kpysched_process import KpyschedProcess

# Stands in for `kpysched run`: says it started, then waits to be stopped.
_STAND_IN = ("import json, time; print(json.dumps({'event': 'scheduler.started'}), "
             "flush=True); time.sleep(60)")


def _state(tmp_path: Path) -> Any:
    return SimpleNamespace(dir=str(tmp_path), kubeconfig=str(tmp_path / "kubeconfig"))


@pytest.mark.parametrize("new_session", [True, False])
def test_kpysched_runs_in_its_own_session_only_when_asked(tmp_path: Path,
                                                          new_session: bool) -> None:
    kp = KpyschedProcess(_state(tmp_path), new_session=new_session)
    kp.command = [sys.executable, "-c", _STAND_IN]
    with kp:
        assert kp.process is not None
        pid = kp.process.pid
        if new_session:
            assert os.getsid(pid) == pid != os.getsid(0)
        else:
            assert os.getsid(pid) == os.getsid(0)


def test_the_benchmarked_kpysched_asks_for_its_own_session(tmp_path: Path) -> None:
    config = schedulers.scheduler_config(schedulers.KPYSCHED, None, None)
    kpysched = schedulers.Kpysched(_state(tmp_path), config)
    assert kpysched._process.new_session
