"""CycleState: per-scheduling-cycle data that plugins hand from one point to the next."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kpysched.cache.pod_groups import PodGroupState
    from kpysched.decisions.record import Decision


class CycleState:
    """A plain keyed store; each plugin uses its own key (usually its NAME + suffix)."""

    __slots__ = ("_data", "decision", "pod_group", "record_plugin_metrics",
                 "skip_filter_plugins", "skip_score_plugins")

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
        return copy
