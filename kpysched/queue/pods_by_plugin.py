"""Waiting pods by uid, and by the (profile, plugin) pairs that decide which cluster
events can move them.

The gated pods (keyed by the plugin whose PreEnqueue turned them away) and the
unschedulable ones (keyed by the plugins that rejected them) are both asked the same
question on every cluster event: which of you may this event help? Keeping each pod
under its plugins lets an event look only at the groups whose plugin registered for
it, instead of at every waiting pod (with 10,000 waiting, that look cost the loop
7-60 ms an event; docs/benchmarks.md, issue 32).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo

# (profile, plugin): a plugin's event registrations are per profile.
PluginKey = tuple[str, str]
Hears = Callable[[str, str, ClusterEvent], bool]


class PodsByPlugin:
    """A subclass says which keys a pod goes under (`_keys`), and may keep more about
    it in `_kept` and `_dropped`."""

    def __init__(self) -> None:
        self._by_uid: dict[str, QueuedPodInfo] = {}
        self._keys_of: dict[str, tuple[PluginKey, ...]] = {}
        self._groups: dict[PluginKey, dict[str, QueuedPodInfo]] = {}

    def _keys(self, info: QueuedPodInfo) -> tuple[PluginKey, ...]:
        raise NotImplementedError

    def _kept(self, info: QueuedPodInfo) -> None:
        """Called after `info` is put."""

    def _dropped(self, uid: str) -> None:
        """Called after the pod `uid` is popped."""

    def __len__(self) -> int:
        return len(self._by_uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._by_uid.get(uid)

    def values(self) -> Iterator[QueuedPodInfo]:
        """A snapshot: the caller may put and pop while it iterates."""
        return iter(list(self._by_uid.values()))

    def holds_as_is(self, info: QueuedPodInfo) -> bool:
        """Whether this very `info` is kept here under the keys `put` would give it now:
        putting it again would change nothing (but its place in iteration order)."""
        uid = info.pod_info.uid
        return self._by_uid.get(uid) is info and self._keys_of[uid] == self._keys(info)

    def put(self, info: QueuedPodInfo) -> None:
        """Keep the pod under its keys as they are now; a pod put again is indexed again."""
        uid = info.pod_info.uid
        self.pop(uid)
        keys = self._keys(info)
        self._by_uid[uid] = info
        self._keys_of[uid] = keys
        for key in keys:
            self._groups.setdefault(key, {})[uid] = info
        self._kept(info)

    def pop(self, uid: str) -> QueuedPodInfo | None:
        info = self._by_uid.pop(uid, None)
        if info is None:
            return None
        for key in self._keys_of.pop(uid):
            group = self._groups[key]
            del group[uid]
            if not group:
                del self._groups[key]
        self._dropped(uid)
        return info

    def _groups_hearing(self, event: ClusterEvent, hears: Hears,
                        always: str | None = None) -> Iterator[dict[str, QueuedPodInfo]]:
        """The groups whose plugin hears `event` (and the group of plugin `always`)."""
        for (profile, plugin), group in self._groups.items():
            if plugin == always or hears(profile, plugin, event):
                yield group
