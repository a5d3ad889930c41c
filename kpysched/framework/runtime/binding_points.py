"""The extension points after a node is chosen: Reserve/Unreserve and Permit in the
scheduling cycle, then WaitOnPermit, PreBind, Bind and PostBind in the binding
cycle. A plugin that raises is an Error status naming it (guard.py); Unreserve and
PostBind cannot fail, so a raise there is logged and the other plugins still run.
"""

from __future__ import annotations

import asyncio
import time
from typing import cast

from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime.guard import plugin_raised
from kpysched.framework.runtime.instrumented import Instrumented
from kpysched.framework.runtime.waiting import PodInPreBind, WaitingPod
from kpysched.framework.status import SUCCESS, Code, Status
from kpysched.objects.durations import go_duration
from kpysched.objects.pod import PodInfo

# Added to the Wait status Permit returns (upstream's RunPermitPlugins).
WAIT_REASON = "one or more plugins asked to wait and no plugin rejected pod"
# Upstream caps every Permit wait at 15 minutes, whatever a plugin asks for.
MAX_PERMIT_WAIT_SECONDS = 15 * 60.0


class BindingPoints(Instrumented):
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        started = time.perf_counter()
        outcome = self._run_reserve(state, pod, node_name)
        self.observe("Reserve", outcome, started)
        return outcome

    def _run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.reserve_plugins:
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "Reserve", error)
            if not status.ok:
                if status.code == Code.ERROR:
                    return Status.error(
                        f'running Reserve plugin "{plugin.NAME}": {status.message()}', plugin.NAME)
                return status.with_plugin(plugin.NAME)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        started = time.perf_counter()
        self._run_unreserve(state, pod, node_name)
        self.observe("Unreserve", SUCCESS, started)

    def _run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Reverse order, as upstream: undo in the opposite order of reserving.
        for plugin in reversed(self.reserve_plugins):
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception as error:
                # Unreserve cannot fail upstream either: the others still undo theirs.
                plugin_raised(plugin.NAME, "Unreserve", error)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str, *,
                   hold: bool = True) -> Status:
        """Success, a rejection, or Wait; with `hold` a pod told to wait is kept among
        the waiting pods (with its timers) for its binding cycle to wait on. A pod-group
        scheduling cycle only asks (hold=False): nothing binds from it directly."""
        started = time.perf_counter()
        outcome = self._run_permit(state, pod, node_name, hold)
        self.observe("Permit", outcome, started)
        return outcome

    def _run_permit(self, state: CycleState, pod: PodInfo, node_name: str,
                    hold: bool) -> Status:
        waiting_on: dict[str, float] = {}
        reasons: list[str] = []
        for plugin in self.permit_plugins:
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as error:
                status, timeout = plugin_raised(plugin.NAME, "Permit", error), 0.0
            if status.code == Code.WAIT:
                waiting_on[plugin.NAME] = min(timeout, MAX_PERMIT_WAIT_SECONDS)
                reasons = list(status.reasons)  # upstream keeps the last waiting plugin's
            elif not status.ok:
                if status.code == Code.ERROR:
                    return Status.error(
                        f'running Permit plugin "{plugin.NAME}": {status.message()}', plugin.NAME)
                return status.with_plugin(plugin.NAME)
        if not waiting_on:
            return SUCCESS
        if not hold:
            return Status(Code.WAIT, [*reasons, WAIT_REASON])
        loop = asyncio.get_running_loop()
        waiting = WaitingPod(pod, set(waiting_on), loop.create_future())
        for name, timeout in waiting_on.items():
            message = (f"rejected due to timeout after waiting {go_duration(timeout)} at plugin "
                       f"{name}")
            waiting.timers[name] = loop.call_later(timeout, waiting.reject, name, message)
        self.waiting_pods[pod.uid] = waiting
        return Status(Code.WAIT, [*reasons, WAIT_REASON])

    async def wait_on_permit(self, pod: PodInfo) -> Status:
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return SUCCESS
        started = time.perf_counter()
        try:
            status = await waiting.future
        finally:
            waiting.cancel_timers()
            self.waiting_pods.pop(pod.uid, None)
        self.metrics.permit_wait(status.code.label, time.perf_counter() - started)
        if status.code == Code.ERROR:  # e.g. preempted while waiting
            return Status.error(f"waiting on permit for pod: {status.message()}", status.plugin)
        return status

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo,
                                 node_name: str) -> Status:
        """Upstream's RunPreBindPreFlights: Success when some PreBind plugin has work,
        Skip when none has, Error as soon as one fails or answers something else."""
        started = time.perf_counter()
        outcome = self._run_pre_bind_pre_flights(state, pod, node_name)
        self.observe("PreBindPreFlight", outcome, started)
        return outcome

    def _run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo,
                                  node_name: str) -> Status:
        outcome = Status.skip()
        for plugin in self.pre_bind_plugins:
            if fw.PreBindPreFlightPlugin not in type(plugin).__mro__:
                continue  # upstream's default answer for plugins without one: Skip
            try:
                status = cast(fw.PreBindPreFlightPlugin, plugin).pre_bind_pre_flight(
                    state, pod, node_name)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "PreBindPreFlight", error)
            if status.code == Code.ERROR:
                return Status.error(
                    f'running PreBindPreFlight "{plugin.NAME}": {status.message()}',
                    plugin.NAME)
            if status.ok:
                outcome = SUCCESS
            elif status.code != Code.SKIP:
                return Status.error(
                    f'PreBindPreFlight {plugin.NAME} returned "{status.code.label}", which '
                    "is unsupported. It is supposed to return Success, Skip, or Error status",
                    plugin.NAME)
        return outcome

    def will_wait_on_permit(self, pod: PodInfo) -> bool:
        return pod.uid in self.waiting_pods

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str, *,
                           cancellable: bool = False) -> Status:
        """With `cancellable` (some PreBind plugin has work to do: upstream lists the pod
        in PreBind only then) preemption may cancel the binding until PreBind is over,
        which ends it with an Error: the pod goes back to the queue, never deleted."""
        if not cancellable:
            return await self._observed_pre_bind(state, pod, node_name)
        entry = PodInPreBind()
        self.pods_in_pre_bind[pod.uid] = entry
        try:
            entry.task = asyncio.get_running_loop().create_task(
                self._observed_pre_bind(state, pod, node_name), name=f"pre-bind {pod.uid}")
            try:
                status = await entry.task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not entry.cause or (current is not None and current.cancelling()):
                    raise  # this binding itself is cancelled (a lost lease): no status
                status = Status.error(entry.cause)
        finally:
            self.pods_in_pre_bind.pop(pod.uid, None)
        # A PreBind that finished before it saw the cancellation still loses the pod,
        # as upstream's MarkPrebound check after RunPreBindPlugins.
        if status.ok and not entry.mark_pre_bound():
            return Status.error(entry.cause)
        return status

    async def _observed_pre_bind(self, state: CycleState, pod: PodInfo,
                                 node_name: str) -> Status:
        started = time.perf_counter()
        outcome = await self._run_pre_bind(state, pod, node_name)
        self.observe("PreBind", outcome, started)
        return outcome

    async def _run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.pre_bind_plugins:
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except asyncio.CancelledError:
                cancelled = self.pods_in_pre_bind.get(pod.uid)
                if cancelled is None or not cancelled.cause:
                    raise  # the binding itself is cancelled (a lost lease)
                # Upstream reports the cancellation's cause in place of the plugin's
                # context.Canceled: 'running PreBind plugin "X": preempted by ...'.
                status = Status.error(cancelled.cause)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "PreBind", error)
            if not status.ok:
                return status.with_plugin(plugin.NAME)
        return SUCCESS

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        started = time.perf_counter()
        outcome = await self._run_bind(state, pod, node_name)
        self.observe("Bind", outcome, started)
        return outcome

    async def _run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.bind_plugins:
            try:
                status = await plugin.bind(state, pod, node_name)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "Bind", error)
            if status.code == Code.SKIP:
                continue
            return status.with_plugin(plugin.NAME) if not status.ok else status
        return Status(Code.SKIP)

    async def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        started = time.perf_counter()
        await self._run_post_bind(state, pod, node_name)
        self.observe("PostBind", SUCCESS, started)

    async def _run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for plugin in self.post_bind_plugins:
            try:
                await plugin.post_bind(state, pod, node_name)
            except Exception as error:
                # The pod is bound whatever PostBind does: log it, run the others.
                plugin_raised(plugin.NAME, "PostBind", error)
