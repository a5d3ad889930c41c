"""The pods that failed and wait for an event, by uid and by the plugins that rejected
them.

A cluster event can only move a pod whose rejecting plugins registered for it (or a
pod no plugin rejected, which any event moves), so a move looks at the groups whose
plugin hears the event instead of asking every waiting pod. And an assigned pod's add
or update can only help pods a spread constraint held back or with required pod
affinity, which are kept apart too. With 10,000 pods waiting, asking each one cost
every bind ~7.5 ms and every node event ~60 ms of the scheduling loop.

Rejecting plugins are fixed while a pod waits here: the scheduler sets them before the
pod is put back, and a pod put again is indexed again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import count

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.queue.pods_by_plugin import Hears, PluginKey, PodsByPlugin

# The plugin of the group of pods no plugin rejected (any event may move them).
NO_REJECTOR = ""


class UnschedulablePods(PodsByPlugin):
    def __init__(self, needs_assigned_pods: Callable[[QueuedPodInfo], bool]) -> None:
        """`needs_assigned_pods`: whether an assigned pod's add or update may help the
        pod (asked once, when it is put)."""
        super().__init__()
        self._needs_assigned_pods = needs_assigned_pods
        self._order: dict[str, int] = {}
        self._cross_topology: dict[str, QueuedPodInfo] = {}
        self._counter = count()

    def _keys(self, info: QueuedPodInfo) -> tuple[PluginKey, ...]:
        profile = info.pod_info.pod.spec.scheduler_name
        plugins = info.unschedulable_plugins | info.pending_plugins
        return tuple((profile, plugin) for plugin in plugins) or ((profile, NO_REJECTOR),)

    def _kept(self, info: QueuedPodInfo) -> None:
        uid = info.pod_info.uid
        self._order[uid] = next(self._counter)
        if self._needs_assigned_pods(info):
            self._cross_topology[uid] = info

    def _dropped(self, uid: str) -> None:
        del self._order[uid]
        self._cross_topology.pop(uid, None)

    def hearing(self, event: ClusterEvent, hears: Hears) -> list[QueuedPodInfo]:
        """The pods `event` may move, oldest first: all for a wildcard; else those a
        plugin that registered for the event rejected, and those none rejected."""
        if event.is_wildcard:
            return list(self._by_uid.values())
        found: dict[str, QueuedPodInfo] = {}
        for group in self._groups_hearing(event, hears, always=NO_REJECTOR):
            found.update(group)
        return self._oldest_first(found.items())

    def needing_assigned_pods(self) -> list[QueuedPodInfo]:
        """The pods an assigned pod's add or update may help, oldest first."""
        return self._oldest_first(self._cross_topology.items())

    def _oldest_first(self, pods: Iterable[tuple[str, QueuedPodInfo]]) -> list[QueuedPodInfo]:
        order = self._order
        return [info for _, info in sorted(pods, key=lambda item: order[item[0]])]
