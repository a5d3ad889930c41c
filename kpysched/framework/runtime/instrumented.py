"""What every extension-point runner shares: the profile's plugins by point, and the
timing of points and plugins for the metrics.

Framework (framework.py) builds the plugins; SchedulingPoints (scheduling_points.py)
and BindingPoints (binding_points.py) run them, each over these attributes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.runtime.waiting import PodInPreBind, WaitingPod
from kpysched.framework.status import Status


class MetricsSink(Protocol):
    """Where the framework reports durations (kpysched.metrics.SchedulerMetrics)."""

    def extension_point_duration(self, extension_point: str, status: str, profile: str,
                                 seconds: float) -> None: ...

    def plugin_duration(self, plugin: str, extension_point: str, status: str,
                        seconds: float) -> None: ...

    def plugin_evaluated(self, plugin: str, extension_point: str, profile: str,
                         count: int = 1) -> None: ...

    def permit_wait(self, result: str, seconds: float) -> None: ...


class Instrumented:
    """The state the runners read (set by Framework.__init__) and their timers."""

    profile_name: str
    percentage_of_nodes_to_score: int | None
    shared: fw.SharedHandle
    metrics: MetricsSink
    waiting_pods: dict[str, WaitingPod]
    pods_in_pre_bind: dict[str, PodInPreBind]
    weights: dict[str, int]
    pre_filter_plugins: list[fw.PreFilterPlugin]
    pre_filter_extension_plugins: list[fw.PreFilterPlugin]
    filter_plugins: list[fw.FilterPlugin]
    # Filter plugins preemption's dry run may ask without a clone of the node.
    node_only_filter_names: frozenset[str]
    pod_totals_filter_names: frozenset[str]
    vector_filter_plugins: list[fw.VectorFilterPlugin]
    post_filter_plugins: list[fw.PostFilterPlugin]
    pre_score_plugins: list[fw.PreScorePlugin]
    score_plugins: list[fw.ScorePlugin]
    reserve_plugins: list[fw.ReservePlugin]
    permit_plugins: list[fw.PermitPlugin]
    pre_bind_plugins: list[fw.PreBindPlugin]
    bind_plugins: list[fw.BindPlugin]
    post_bind_plugins: list[fw.PostBindPlugin]

    def observe(self, point: str, status: Status, started: float) -> None:
        """Record an extension point's duration (scheduler_framework_extension_point_...)."""
        self.metrics.extension_point_duration(point, status.code.label, self.profile_name,
                                              time.perf_counter() - started)

    def _plugin_timed(self, state: CycleState, plugin: str, point: str, status: Status,
                      started: float, scale: int = 1) -> None:
        """A plugin call that began at `started`: into the plugin metrics in sampled
        cycles, and into the cycle's own account (`scale` times, for a call standing in
        for that many untimed ones)."""
        seconds = time.perf_counter() - started
        state.add_plugin_seconds(plugin, point, seconds * scale)
        if state.record_plugin_metrics:
            self.metrics.plugin_duration(plugin, point, status.code.label, seconds)

    def evaluated(self, state: CycleState, point: str, plugins: Sequence[fw.Plugin],
                  count: int = 1) -> None:
        """scheduler_plugin_evaluation_total for the plugins that ran (not skipped)."""
        if count <= 0:
            return
        skipped = (state.skip_filter_plugins if point in ("PreFilter", "Filter")
                   else state.skip_score_plugins)
        for plugin in plugins:
            if plugin.NAME not in skipped:
                self.metrics.plugin_evaluated(plugin.NAME, point, self.profile_name, count)
