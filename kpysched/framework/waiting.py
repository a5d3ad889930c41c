"""Pods waiting at Permit, and Go-style duration text for their timeout messages."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it (20ms, 1.5s, 2m0s), for messages."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_trim(nanos / 1e3)}\u00b5s"
    if nanos < 1_000_000_000:
        return f"{sign}{_trim(nanos / 1e6)}ms"
    total_seconds = nanos / 1e9
    hours, rest = divmod(total_seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{_trim(secs)}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return sign + text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


@dataclass(slots=True)
class WaitingPod:
    """A pod that Permit plugins asked to wait; each plugin allows it or its own timer
    runs out (upstream gives every waiting plugin a separate timer)."""

    pod: PodInfo
    pending: set[str]
    future: asyncio.Future[Status]
    timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if (timer := self.timers.pop(plugin, None)) is not None:
            timer.cancel()
        if not self.pending and not self.future.done():
            self.future.set_result(SUCCESS)

    def reject(self, plugin: str, reason: str) -> None:
        if not self.future.done():
            self.future.set_result(Status.unschedulable(reason, plugin=plugin))
        self.cancel_timers()

    def preempt(self, plugin: str, reason: str) -> bool:
        """Preemption chose this pod as a victim: it leaves Permit with an Error (so it
        goes to backoff) and is never deleted, as upstream's waitingPod.Preempt. False
        when its wait had already ended."""
        if self.future.done():
            return False
        self.future.set_result(Status.error(reason, plugin))
        self.cancel_timers()
        return True

    def cancel_timers(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()
