"""The harness's port allocator: outside the ephemeral range, never the same port to two
live processes, and a dead holder's port taken over."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import processes


@pytest.fixture
def reservations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(processes, "PORT_RESERVATIONS", tmp_path / "ports")
    return tmp_path / "ports"


def test_ports_are_below_the_ephemeral_range_and_recorded_for_this_process(
        reservations: Path) -> None:
    ports = {processes.free_port() for _ in range(20)}
    assert len(ports) == 20
    assert all(processes.PORT_FLOOR <= p < processes._ephemeral_floor() for p in ports)
    for port in ports:
        assert (reservations / str(port)).read_text() == str(os.getpid())


def test_a_port_held_by_a_live_process_is_not_handed_out_and_a_dead_ones_is(
        reservations: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reservations.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        (reservations / "20000").write_text(str(sleeper.pid))
        (reservations / "20001").write_text(str(dead.pid))
        choices = iter([20000, 20001])
        monkeypatch.setattr(processes.random.SystemRandom, "randrange",
                            lambda self, low, high: next(choices))
        assert processes.free_port() == 20001
    finally:
        sleeper.kill()
        sleeper.wait()


def test_wait_listenable_waits_for_a_held_port_and_not_for_a_free_one() -> None:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        with pytest.raises(processes.ClusterError, match=f"port {port} still in use"):
            processes.wait_listenable([port], timeout=0.3)
    finally:
        holder.close()
    processes.wait_listenable([port], timeout=5)  # free again: returns at once
