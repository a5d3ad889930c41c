"""Steady state: scheduler_perf's createPods with steadyState (its executor.go,
createPodsSteadily), for the runner's steady-state workloads.

A fixed number of measured pods is kept pending: that many are created at once, and
each one the watch sees bound is deleted (grace period 0, background propagation) and
replaced by a new pod, until the configured duration is over. The cluster stays at the
utilisation it started with (the resourceclaim controller frees a deleted pod's
device), so every scheduling cycle sees roughly the same state. Pods scheduled per
second are sampled on 1 s ticks as for the other workloads (stats.throughput_samples),
over the window only.

Unlike upstream's single loop (delete, then create, one pod at a time), each
replacement runs as its own task, at most `concurrency` in flight: the benchmark's
client must not be what limits a fast scheduler. The run is bounded in time (the
duration) and in pods (`Keeper.max_pods`): reaching that many creates ends the window
early, which the result says.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchmarks.kubeapi import BenchApi, encode
from benchmarks.workloads import PodShape

# Upstream's duration for every steady-state workload (10s in its DRA config).
DEFAULT_SECONDS = 10.0
# The creates a window may make per second of its duration, beyond the pods kept: far
# above what either scheduler reaches on this machine, so it only stops a runaway.
MAX_PODS_PER_SECOND = 2000
# After the window: how long replacements still in flight may take to finish.
DRAIN_SECONDS = 10.0
DELETE_NOW = encode({"gracePeriodSeconds": 0, "propagationPolicy": "Background"})


def max_pods(kept: int, seconds: float) -> int:
    """The most pods a window of `seconds` keeping `kept` pending may create."""
    if kept < 1 or not seconds > 0:
        raise ValueError(f"steady state needs at least 1 pod kept and a positive "
                         f"duration; got {kept} pods, {seconds} s")
    return kept + math.ceil(seconds * MAX_PODS_PER_SECOND)


@dataclass(slots=True)
class Keeper:
    """Which pods to create and which bound ones to replace (no I/O).

    Pods are named `<prefix>-<n>`, n counting up from 0 over the whole window. A bound
    pod is replaced once, only if it is one of ours, only while the window is open, and
    only while fewer than `max_pods` pods have been created."""

    prefix: str
    kept: int
    max_pods: int
    created: int = 0
    replaced: set[str] = field(default_factory=set)
    closed: bool = False
    exhausted: bool = False

    def seed(self) -> list[str]:
        """The pods to create when the window opens: `kept` of them."""
        if self.created:
            raise RuntimeError("the window's pods were seeded already")
        return [self._next() for _ in range(min(self.kept, self.max_pods))]

    def on_bound(self, name: str) -> str | None:
        """`name` was seen bound: the pod to create in its place (after deleting
        it), or None when it is not to be replaced."""
        if self.closed or name in self.replaced or not self._ours(name):
            return None
        if self.created >= self.max_pods:
            self.exhausted = True
            return None
        self.replaced.add(name)
        return self._next()

    def close(self) -> None:
        """The window is over: nothing more is replaced."""
        self.closed = True

    def _next(self) -> str:
        name = f"{self.prefix}-{self.created}"
        self.created += 1
        return name

    def _ours(self, name: str) -> bool:
        head, _, number = name.rpartition("-")
        return head == self.prefix and number.isdigit() and int(number) < self.created




@dataclass(slots=True)
class Window:
    """What one steady-state window did."""

    started: float  # time.monotonic() when the first seed pod was sent
    ended: float  # when the window closed (its duration, or max_pods reached)
    created: int
    replaced: int
    exhausted: bool  # max_pods reached before the duration was over
    # Each created pod's create reply (time.monotonic()), by name.
    acked: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def binds_in_window(bound_at: Mapping[str, float], window: Window) -> dict[str, float]:
    """The pods bound within the window, by name: a bind after its end (a pod still
    pending when it closed) is not measured."""
    return {name: moment for name, moment in bound_at.items()
            if window.started <= moment <= window.ended}


def acked_in_order(window: Window, prefix: str) -> list[float]:
    """Each created pod's create reply, indexed by its number (NaN when it never
    came back), as the runner's latency figures read them."""
    return [window.acked.get(f"{prefix}-{index}", math.nan)
            for index in range(window.created)]


class SteadyDriver:
    """Runs one window against the API server: seeds the kept pods, then replaces
    each one reported bound (`bound(name)`, called from the watch) until the window
    is over. The measured namespace holds only the window's pods."""

    def __init__(self, api: BenchApi, namespace: str, shape: PodShape,
                 scheduler_name: str, kept: int, seconds: float,
                 concurrency: int) -> None:
        self._api = api
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._shape = shape
        self._scheduler_name = scheduler_name
        self._seconds = seconds
        self.keeper = Keeper(shape.prefix, kept, max_pods(kept, seconds))
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._exhausted = asyncio.Event()
        self._acked: dict[str, float] = {}
        self._failure: BaseException | None = None

    def bound(self, name: str) -> None:
        """The watch saw `name` bound: replace it (in the background)."""
        replacement = self.keeper.on_bound(name)
        if self.keeper.exhausted:
            self._exhausted.set()
        if replacement is None:
            return
        task = asyncio.create_task(self._replace(name, replacement))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    async def run(self) -> Window:
        """Seed, keep the pods replaced for the duration, then close (drain() lets
        the replacements in flight finish)."""
        started = time.monotonic()
        seeds = self.keeper.seed()
        await self._api.create_all(
            ((self._path, self._body(name)) for name in seeds),
            lambda index, moment: self._acked.__setitem__(seeds[index], moment))
        remaining = self._seconds - (time.monotonic() - started)
        with contextlib.suppress(TimeoutError):  # the duration is over
            await asyncio.wait_for(self._exhausted.wait(), max(0.0, remaining))
        ended = time.monotonic()
        self.keeper.close()
        if self._failure is not None:
            raise self._failure
        return Window(started, ended, self.keeper.created, len(self.keeper.replaced),
                      self.keeper.exhausted, dict(self._acked))

    async def drain(self) -> None:
        """After the window: let the replacements still in flight finish (bounded),
        so the cluster is not torn down under them."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=DRAIN_SECONDS)
        for task in set(self._tasks):
            task.cancel()

    async def _replace(self, bound: str, replacement: str) -> None:
        async with self._slots:
            status, reply = await self._api.request(
                "DELETE", f"{self._path}/{bound}", DELETE_NOW)
            if not (200 <= status < 300 or status == 404):
                raise RuntimeError(f"deleting {bound} answered {status}: {reply[:300]!r}")
            await self._api.must("POST", self._path, self._body(replacement))
            self._acked[replacement] = time.monotonic()

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self._failure is None:
            self._failure = task.exception()
            self._exhausted.set()  # end the window: the run failed

    def _body(self, name: str) -> bytes:
        return encode(self._shape.body(name, self._scheduler_name))
