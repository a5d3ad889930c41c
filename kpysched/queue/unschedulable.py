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

from collections.abc import Callable, Iterable, Iterator
from itertools import count

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo

# (profile, plugin); plugin "" groups the pods no plugin rejected.
RejectorKey = tuple[str, str]
Hears = Callable[[str, str, ClusterEvent], bool]
NO_REJECTOR = ""


class UnschedulablePods:
    def __init__(self, needs_assigned_pods: Callable[[QueuedPodInfo], bool]) -> None:
        """`needs_assigned_pods`: whether an assigned pod's add or update may help the
        pod (asked once, when it is put)."""
        self._needs_assigned_pods = needs_assigned_pods
        self._by_uid: dict[str, QueuedPodInfo] = {}
        self._order: dict[str, int] = {}
        self._keys_of: dict[str, tuple[RejectorKey, ...]] = {}
        self._groups: dict[RejectorKey, dict[str, QueuedPodInfo]] = {}
        self._cross_topology: dict[str, QueuedPodInfo] = {}
        self._counter = count()

    def __len__(self) -> int:
        return len(self._by_uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._by_uid.get(uid)

    def values(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self._by_uid.values()))

    def put(self, info: QueuedPodInfo) -> None:
        uid = info.pod_info.uid
        self.pop(uid)
        profile = info.pod_info.pod.spec.scheduler_name
        plugins = info.unschedulable_plugins | info.pending_plugins
        keys = tuple((profile, plugin) for plugin in plugins) or ((profile, NO_REJECTOR),)
        self._by_uid[uid] = info
        self._order[uid] = next(self._counter)
        self._keys_of[uid] = keys
        for key in keys:
            self._groups.setdefault(key, {})[uid] = info
        if self._needs_assigned_pods(info):
            self._cross_topology[uid] = info

    def pop(self, uid: str) -> QueuedPodInfo | None:
        info = self._by_uid.pop(uid, None)
        if info is None:
            return None
        del self._order[uid]
        for key in self._keys_of.pop(uid):
            group = self._groups[key]
            del group[uid]
            if not group:
                del self._groups[key]
        self._cross_topology.pop(uid, None)
        return info

    def hearing(self, event: ClusterEvent, hears: Hears) -> list[QueuedPodInfo]:
        """The pods `event` may move, oldest first: all for a wildcard; else those a
        plugin that registered for the event rejected, and those none rejected."""
        if event.is_wildcard:
            return list(self._by_uid.values())
        found: dict[str, QueuedPodInfo] = {}
        for (profile, plugin), group in self._groups.items():
            if plugin == NO_REJECTOR or hears(profile, plugin, event):
                found.update(group)
        return self._oldest_first(found.items())

    def needing_assigned_pods(self) -> list[QueuedPodInfo]:
        """The pods an assigned pod's add or update may help, oldest first."""
        return self._oldest_first(self._cross_topology.items())

    def _oldest_first(self, pods: Iterable[tuple[str, QueuedPodInfo]]) -> list[QueuedPodInfo]:
        order = self._order
        return [info for _, info in sorted(pods, key=lambda item: order[item[0]])]
