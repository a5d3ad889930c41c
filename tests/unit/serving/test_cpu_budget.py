"""The serving thread's CPU ceiling: a token bucket on its own CPU clock."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kpysched.serving.cpu_budget import CpuBudget, enforce


class Clocks:
    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0


def budget(clocks: Clocks, share: float = 0.1, burst: float = 0.5) -> CpuBudget:
    return CpuBudget(share, burst, cpu_clock=lambda: clocks.cpu, wall_clock=lambda: clocks.wall)


def test_a_burst_within_the_bucket_costs_no_pause() -> None:
    clocks = Clocks()
    cpu = budget(clocks)
    clocks.cpu, clocks.wall = 0.4, 0.4  # a 400 ms scrape, all CPU
    assert cpu.charge() == 0.0


def test_a_sustained_overdraw_pauses_until_the_bucket_is_back_at_zero() -> None:
    clocks = Clocks()
    cpu = budget(clocks)
    clocks.cpu, clocks.wall = 1.0, 1.0  # a flood: a whole core for one second
    # The full bucket (0.5; what the second earned does not fit) - 1.0 used = -0.5
    # tokens: 5 s at a tenth of a core.
    assert cpu.charge() == pytest.approx(5.0)
    clocks.wall += 5.0  # the pause, no CPU used
    assert cpu.charge() == pytest.approx(0.0, abs=1e-9)
    clocks.cpu += 0.05
    clocks.wall += 0.1  # right after: the bucket is empty, so only the share passes
    assert cpu.charge() == pytest.approx(0.4)


def test_the_bucket_never_holds_more_than_its_burst() -> None:
    clocks = Clocks()
    cpu = budget(clocks)
    clocks.wall = 3600.0  # an hour idle
    assert cpu.charge() == 0.0
    clocks.cpu, clocks.wall = 0.7, 3600.7
    assert cpu.charge() > 0


def test_a_share_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="share"):
        CpuBudget(0.0)


def test_enforce_sleeps_the_serving_thread_and_reports_it() -> None:
    """On a real loop on its own thread: CPU burnt there is paid back by a sleep."""
    throttled: list[float] = []

    def serve() -> None:
        loop = asyncio.new_event_loop()
        governor = loop.create_task(enforce(CpuBudget(0.5, 0.01), throttled.append, 0.005))

        async def burn() -> None:
            end = time.thread_time() + 0.05
            while time.thread_time() < end:
                pass
            await asyncio.sleep(0.05)  # the governor's turn
            governor.cancel()

        loop.run_until_complete(burn())
        loop.close()

    thread = threading.Thread(target=serve)
    thread.start()
    thread.join(10)
    assert throttled, "50 ms of CPU against a 10 ms bucket must pause the thread"
    assert sum(throttled) > 0.04
