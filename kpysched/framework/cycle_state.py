"""CycleState: per-scheduling-cycle data that plugins hand from one point to the next."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kpysched.cache.pod_groups import PodGroupState
    from kpysched.decisions.record import Decision


class CycleState:
    """A plain keyed store; each plugin uses its own key (usually its NAME + suffix)."""

    __slots__ = ("_data", "decision", "filter_calls", "placement", "plugin_seconds",
                 "pod_group", "record_plugin_metrics", "skip_filter_plugins",
                 "skip_score_plugins")

    def __init__(self, record_plugin_metrics: bool = False) -> None:
        self._data: dict[str, Any] = {}
        # Sampled cycles time every plugin call (upstream samples 10 % of cycles).
        self.record_plugin_metrics = record_plugin_metrics
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # The cycle's decision record while recording is on (kpysched.decisions); the
        # algorithm, the framework and PostFilter plugins add what they decide.
        self.decision: Decision | None = None
        # In a pod-group scheduling cycle: the cycle's copy of the group's members, where
        # those tried so far are assumed (upstream's IsPodGroupSchedulingCycle).
        self.pod_group: PodGroupState | None = None
        # In a topology-aware pod-group cycle: the names of the nodes of the placement
        # the group is being tried in (upstream's placement assumed in the snapshot).
        # The algorithm looks only among them; None: every node.
        self.placement: tuple[str, ...] | None = None
        # Seconds each (plugin, extension point) took in this cycle, clones included:
        # a slow cycle is reported with the plugin that took the most of it. Per-node
        # Filter calls are timed one in FILTER_TIMING_STRIDE (scaled up) outside
        # sampled cycles, as timing every call would cost more than many filters do.
        self.plugin_seconds: dict[tuple[str, str], float] = {}
        self.filter_calls = 0

    def add_plugin_seconds(self, plugin: str, point: str, seconds: float) -> None:
        key = (plugin, point)
        self.plugin_seconds[key] = self.plugin_seconds.get(key, 0.0) + seconds

    def slowest_plugin(self) -> tuple[str, str, float]:
        """(plugin, extension point, seconds) that took the most of this cycle;
        ("", "", 0.0) when nothing was timed."""
        if not self.plugin_seconds:
            return "", "", 0.0
        (plugin, point), seconds = max(self.plugin_seconds.items(), key=lambda kv: kv[1])
        return plugin, point, seconds

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value stored under `key`; KeyError when PreFilter/PreScore did not run."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def clone(self) -> CycleState:
        copy = CycleState(self.record_plugin_metrics)
        copy._data = dict(self._data)
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        copy.pod_group = self.pod_group
        copy.placement = self.placement
        # The same cycle's time: a clone's plugins (preemption's dry run) count too.
        copy.plugin_seconds = self.plugin_seconds
        return copy
