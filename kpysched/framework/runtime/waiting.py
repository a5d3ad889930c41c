"""Pods waiting at Permit, and pods in PreBind that preemption may still call back."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo


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


@dataclass(slots=True)
class PodInPreBind:
    """A pod whose PreBind plugins have work to do (upstream's podInPreBind): until it
    is marked pre-bound, preemption may cancel its binding instead of deleting a pod
    that was never bound. Cancelling interrupts the PreBind task at its next await,
    the asyncio form of the cancelled context upstream's plugins watch."""

    task: asyncio.Task[Status] | None = None
    cause: str = ""  # why it was cancelled; "" while it was not
    finished: bool = False

    def cancel_pod(self, message: str) -> bool:
        """False once PreBind is over (the pod is being bound: delete it instead)."""
        if self.finished:
            return False
        if not self.cause:
            self.cause = message
            if self.task is not None:
                self.task.cancel()
        return True

    def mark_pre_bound(self) -> bool:
        """False when preemption cancelled the binding first."""
        if self.cause:
            return False
        self.finished = True
        return True
