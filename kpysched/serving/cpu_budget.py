"""A ceiling on the CPU the serving thread may take from the scheduling loop.

Why: kube-scheduler's HTTP server runs on goroutines that other cores pick up, so a
flood on the secure port costs the scheduling loop nothing. Here the server's thread
shares one GIL with the loop. Unauthenticated clients can keep it busy without
limit: TLS handshakes, header parsing, 401s while the reviews wait for their rate
limiter. Each time the thread wants the GIL back after a syscall, the loop must drop
it; in the repro (`../shared/repros/serving/gil.py`, both pinned to one core) the thread
took 10% of the core at 190 requests/s and the loop lost 25% of its throughput.

The ceiling is a token bucket of CPU seconds, measured with the thread's own CPU
clock: it refills at SHARE of one core and holds at most BURST seconds, so a large
/metrics scrape or a burst of handshakes passes untouched. When it runs dry, the
serving thread sleeps (holding no GIL) until the bucket is back at zero. The secure
port then answers more slowly under a flood, scrapes included. This bounds the loss; it
does not remove it as another core would (the GIL hand-offs cost the loop about twice
the thread's own CPU). Every second slept is counted in
kpysched_serving_throttled_seconds_total.

With TLS the port's TLS and authentication now run in a process of their own
(kpysched.serving.front), so unauthenticated clients no longer reach this thread; the
budget stays for the authorized ones (a large scrape, a busy /debug client), and for
--insecure-serving, where the thread still serves the port itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

# In steady state the port takes ~1% of a core (a scrape every 15 s, probes every
# 10 s); a tenth leaves scrapes alone and bounds what a flood takes.
SHARE: Final = 0.1
BURST_SECONDS: Final = 0.5
# How often the serving loop looks at its own CPU clock. Between looks the thread may
# overdraw by at most this much CPU, which the next pause pays back.
CHECK_INTERVAL_SECONDS: Final = 0.1


class CpuBudget:
    """Token bucket of thread CPU seconds. `charge()` says how long to sleep now."""

    def __init__(self, share: float = SHARE, burst: float = BURST_SECONDS, *,
                 cpu_clock: Callable[[], float] = time.thread_time,
                 wall_clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self._share = share
        self._burst = burst
        self._cpu_clock = cpu_clock
        self._wall_clock = wall_clock
        self._tokens = burst
        self._last_cpu = cpu_clock()
        self._last_wall = wall_clock()

    def charge(self) -> float:
        """Takes the CPU used since the last call from the bucket, adds what the wall
        time since then earned, and returns the seconds of sleep that bring the bucket
        back to zero (0.0 while it holds tokens)."""
        cpu, wall = self._cpu_clock(), self._wall_clock()
        earned = (wall - self._last_wall) * self._share
        self._tokens = min(self._burst, self._tokens + earned) - (cpu - self._last_cpu)
        self._last_cpu, self._last_wall = cpu, wall
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self._share


async def enforce(budget: CpuBudget, on_throttle: Callable[[float], None],
                  interval: float = CHECK_INTERVAL_SECONDS) -> None:
    """Runs on the serving thread's own loop until cancelled. The sleep blocks that
    whole loop on purpose: the point is that none of its callbacks run meanwhile."""
    while True:
        await asyncio.sleep(interval)
        pause = budget.charge()
        if pause > 0:
            time.sleep(pause)  # noqa: ASYNC251 - blocking this loop is the point
            on_throttle(pause)
