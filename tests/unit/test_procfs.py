"""The harness's /proc readers: a live process's state and memory, nothing for one that
is gone, and a zombie not alive."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.cluster import processes, procfs


def test_a_live_process_has_a_state_cpu_counters_and_memory() -> None:
    fields = procfs.stat_fields(os.getpid())
    assert fields is not None and fields[0] in "RS"
    assert int(fields[11]) + int(fields[12]) >= 0  # utime, stime
    rss, peak = procfs.status_kib(os.getpid(), "VmRSS"), procfs.status_kib(os.getpid(), "VmHWM")
    assert rss is not None and peak is not None and 0 < rss <= peak
    assert procfs.status_kib(os.getpid(), "NoSuchField") is None


def test_a_process_that_is_gone_has_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert procfs.stat_fields(child.pid) is None
    assert procfs.status_kib(child.pid, "VmRSS") is None
    assert not processes.alive(child.pid)


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while (fields := procfs.stat_fields(child.pid)) is not None and fields[0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    assert procfs.status_kib(child.pid, "VmRSS") is None  # a zombie holds no memory
    assert not processes.alive(child.pid)  # reaps it: our own child
    child.wait()


def test_the_machine_cpu_ticks_grow_and_idle_is_part_of_them() -> None:
    idle, total = procfs.machine_cpu_ticks()
    assert 0 <= idle <= total
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        pass  # on a CPU for a while: the machine's ticks move on
    later_idle, later_total = procfs.machine_cpu_ticks()
    assert later_total > total and later_idle >= idle
    assert later_total - total >= later_idle - idle
