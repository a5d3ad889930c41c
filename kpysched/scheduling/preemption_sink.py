"""Where a preemption that PostFilter decided goes.

Outside a Coscheduling group's trial, at once (`ImmediatePreemption`): victims waiting
at Permit or inside PreBind are turned back in memory, the others are deleted by the
preemption writer. While a Coscheduling group is tried, `group_preemption.GroupPreemption`
takes the preemptions instead and carries them out only if the whole group goes ahead.
The shared handle hands every plugin's `preempt()` to the context's sink.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kpysched.objects import composite_pod_groups, scheduling
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.writes.preemption import Preemptor

if TYPE_CHECKING:
    from kpysched.framework.runtime import Framework
    from kpysched.metrics import SchedulerMetrics
    from kpysched.writes.preemption import PreemptionExecutor


class PreemptionSink(Protocol):
    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        """Evict `victims` from `node_name` to make room for `preemptor`."""


@dataclass(slots=True)
class DeferredPreemption:
    """A preemption a PostFilter asked for, not carried out yet."""

    preemptor: PodInfo
    node_name: str
    victims: list[PodInfo]
    plugin: str


class ImmediatePreemption:
    """Carries a preemption out at once (upstream's Evaluator.prepareCandidate)."""

    def __init__(self, frameworks: Mapping[str, Framework], executor: PreemptionExecutor,
                 metrics: SchedulerMetrics,
                 activate: Callable[[Sequence[PodInfo]], None]) -> None:
        self._frameworks = frameworks
        self._executor = executor
        self._metrics = metrics
        self._activate = activate

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        self._metrics.preemption_victims(len(victims))
        in_memory, to_delete = self._split(victims, plugin)
        self._executor.preempt(preemptor, node_name, to_delete, plugin, in_memory=in_memory,
                               on_failed=lambda: self._activate([preemptor]),
                               on_done=self._timed("pod"))

    def preempt_for_group(self, group: PodGroup | CompositePodGroup, release: int,
                          members: Sequence[PodInfo], priority: int, node_name: str,
                          victims: Sequence[PodInfo], plugin: str) -> None:
        """A v1.37 pod group's preemption: the victims go in the PodGroup's name (the
        API version `release` serves), or a CompositePodGroup's for a tree of groups,
        and its members are retried if one could not be removed. (Its victims are
        counted where they were chosen, pod_group_preemption.py; the removal's duration
        here, as v1.37's preemption_execution_duration_seconds.)"""
        meta = group.metadata
        if isinstance(group, PodGroup):
            kind, type_, version = "PodGroup", "podgroup", scheduling.api_version(release)
        else:
            kind, type_, version = ("CompositePodGroup", "compositepodgroup",
                                    composite_pod_groups.API_VERSION)
        preemptor = Preemptor(
            meta.uid, f"{meta.namespace}/{meta.name}", members[0].pod.spec.scheduler_name,
            priority, type_,
            {"kind": kind, "apiVersion": version,
             "namespace": meta.namespace, "name": meta.name, "uid": meta.uid})
        in_memory, to_delete = self._split(victims, plugin)
        self._executor.preempt(preemptor, node_name, to_delete, plugin, in_memory=in_memory,
                               on_failed=lambda: self._activate(members),
                               on_done=self._timed("podgroup"))

    def _timed(self, preemptor: str) -> Callable[[bool], None]:
        """v1.37's preemption_execution_duration_seconds, from now until the removals
        end (success when every victim went)."""
        started = time.perf_counter()

        def done(removed: bool) -> None:
            self._metrics.preemption_execution(preemptor, "success" if removed else "error",
                                               time.perf_counter() - started)

        return done

    def _split(self, victims: Sequence[PodInfo], plugin: str
               ) -> tuple[list[PodInfo], list[PodInfo]]:
        """(turned back in memory, to delete)."""
        # A victim still waiting at Permit or still in PreBind was never bound: it
        # leaves its binding cycle with an error and goes to backoff, never deleted
        # (upstream's waitingPod.Preempt and podInPreBind.CancelPod).
        in_memory: list[PodInfo] = []
        to_delete: list[PodInfo] = []
        frameworks = self._frameworks.values()
        for victim in victims:
            uid = victim.uid
            preempted = any(
                waiting.preempt(plugin, "preempted") for framework in frameworks
                if (waiting := framework.waiting_pods.get(uid)) is not None)
            if not preempted:
                preempted = any(
                    binding.cancel_pod(f"preempted by {plugin}") for framework in frameworks
                    if (binding := framework.pods_in_pre_bind.get(uid)) is not None)
            (in_memory if preempted else to_delete).append(victim)
        return in_memory, to_delete
