"""What a cluster event means for one rejected pod: upstream's isPodWorthRequeuing.

Only the plugins that rejected the pod are asked, and only through the hints they
attached to registrations matching the event. A Pending plugin answering Queue sends
the pod straight to activeQ (it was only waiting for something to happen); an
Unschedulable one sends it through backoff; all answering QueueSkip leave it where it
is. A pod no plugin rejected (an error, an API hiccup) always goes back after backoff,
and so does every pod on a wildcard event (the 5-minute flush).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from enum import IntEnum

import structlog

from kpysched.framework.cluster_events import (
    EVERYTHING,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.objects.pod import PodInfo

log = structlog.get_logger(__name__)

# scheduler_queueing_hint_execution_duration_seconds's `hint` label for a hint that raised.
HINT_ERROR = "Error"

# (plugin, event label, hint label, seconds), for the execution-duration histogram.
HintObserver = Callable[[str, str, str, float], None]
# profile (scheduler name) -> plugin -> the events (with hints) it registered.
HintMap = Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]]

_ANYTHING = (ClusterEventWithHint(EVERYTHING),)


class Strategy(IntEnum):
    """Upstream's queueingStrategy, weakest first."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def rejectors(info: QueuedPodInfo) -> AbstractSet[str]:
    """The plugins whose hints speak for the pod: those that rejected its last attempt and
    the PreEnqueue plugin holding it back now (upstream adds the latter to
    UnschedulablePlugins). Read-only: usually the pod's own set, not a copy, because
    every event asks this of every waiting pod."""
    if not info.pending_plugins and not (info.gated and info.gating_plugin):
        return info.unschedulable_plugins
    found = info.unschedulable_plugins | info.pending_plugins
    if info.gated and info.gating_plugin:
        found = found | {info.gating_plugin}
    return found


class QueueingHints:
    def __init__(self, by_profile: HintMap, *, observe: HintObserver | None = None) -> None:
        self._by_profile = {profile: {plugin: tuple(registered)
                                      for plugin, registered in plugins.items()}
                            for profile, plugins in by_profile.items()}
        self.observe = observe
        # Registrations are fixed at start-up, so these answers are too; every assigned-pod
        # and node event asks them, for every unschedulable pod.
        self._interest: dict[ClusterEvent, bool] = {}
        self._matching: dict[tuple[str, str, ClusterEvent], tuple[ClusterEventWithHint, ...]] = {}

    def interested(self, event: ClusterEvent) -> bool:
        """Whether any plugin of any profile registered for the event (upstream's
        isEventOfInterest); no one listening, the queue need not even look."""
        answer = self._interest.get(event)
        if answer is None:
            answer = event.is_wildcard or any(
                registration.event.matches(event)
                for plugins in self._by_profile.values()
                for registered in plugins.values() for registration in registered)
            self._interest[event] = answer
        return answer

    def _matching_registrations(self, profile: str, plugin: str,
                                event: ClusterEvent) -> tuple[ClusterEventWithHint, ...]:
        key = (profile, plugin, event)
        found = self._matching.get(key)
        if found is None:
            # A plugin the profile does not list (a removed profile's) wakes on anything.
            found = tuple(r for r in self.registered(profile, plugin) if r.event.matches(event))
            self._matching[key] = found
        return found

    def registered(self, profile: str, plugin: str) -> tuple[ClusterEventWithHint, ...]:
        """What `plugin` of `profile` registered (anything, for a plugin it does not list)."""
        return self._by_profile.get(profile, {}).get(plugin, _ANYTHING)

    def hears(self, profile: str, plugin: str, event: ClusterEvent) -> bool:
        """Whether `plugin` registered for the event at all (no hint asked)."""
        return bool(self._matching_registrations(profile, plugin, event))

    def strategy(self, info: QueuedPodInfo, event: ClusterEvent, old: object,
                 new: object) -> Strategy:
        """Where the event sends the pod (upstream's isPodWorthRequeuing)."""
        plugins = rejectors(info)
        if not plugins:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard:
            # A wildcard carrying a pod (ForceActivate) is for that pod alone.
            if new is not None and not (isinstance(new, PodInfo)
                                        and new.uid == info.pod_info.uid):
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        profile = info.pod_info.pod.spec.scheduler_name
        if profile not in self._by_profile:
            return Strategy.AFTER_BACKOFF  # no hints known for it: do not strand the pod
        pending = info.pending_plugins
        result = Strategy.SKIP
        for plugin in plugins:
            for registration in self._matching_registrations(profile, plugin, event):
                if self._ask(plugin, registration, info, event, old, new) \
                        is QueueingHint.QUEUE_SKIP:
                    continue
                if plugin in pending:
                    return Strategy.IMMEDIATELY
                if not pending:
                    return Strategy.AFTER_BACKOFF
                # A Pending plugin may still say Queue, which would skip the backoff.
                result = Strategy.AFTER_BACKOFF
        return result

    def _ask(self, plugin: str, registration: ClusterEventWithHint, info: QueuedPodInfo,
             event: ClusterEvent, old: object, new: object) -> QueueingHint:
        started = time.perf_counter()
        if registration.hint is None:
            answer, label = QueueingHint.QUEUE, QueueingHint.QUEUE.value
        else:
            try:
                answer = registration.hint(info.pod_info, old, new)
                label = answer.value
            except Exception as error:
                # Upstream counts a hint's error as Queue: a needless retry is better
                # than a pod stranded until the 5-minute flush.
                log.warning("queueing_hint.failed", plugin=plugin,
                            cluster_event=event.queue_label(), pod=info.pod_info.key,
                            error=f"{type(error).__name__}: {error}")
                answer, label = QueueingHint.QUEUE, HINT_ERROR
        if self.observe is not None:
            self.observe(plugin, event.queue_label(), label, time.perf_counter() - started)
        return answer
