"""The pods PreEnqueue turned away, by uid and by what gates them.

Only an event its gating plugin registered for (or a wildcard) can release a gated
pod, so a cluster event needs to look at the groups whose plugin hears it, not at
every gated pod. With 10,000 pods behind a scheduling gate (as Kueue holds them),
looking at each one cost every victim's deletion ~10 ms; kube-scheduler's added cost
per preemption was a tenth of kpysched's (docs/benchmarks.md, issue 32).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo

# (profile, gating plugin): a plugin's registrations are per profile.
GateKey = tuple[str, str]
Hears = Callable[[str, str, ClusterEvent], bool]


class GatedPods:
    def __init__(self) -> None:
        self._by_uid: dict[str, QueuedPodInfo] = {}
        self._key_of: dict[str, GateKey] = {}
        self._groups: dict[GateKey, dict[str, QueuedPodInfo]] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self._by_uid

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._by_uid.get(uid)

    def values(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self._by_uid.values()))

    def put(self, info: QueuedPodInfo) -> None:
        """Keep the pod under its current gating plugin (set before it is put)."""
        uid = info.pod_info.uid
        self.pop(uid)
        key = (info.pod_info.pod.spec.scheduler_name, info.gating_plugin)
        self._by_uid[uid] = info
        self._key_of[uid] = key
        self._groups.setdefault(key, {})[uid] = info

    def pop(self, uid: str) -> QueuedPodInfo | None:
        info = self._by_uid.pop(uid, None)
        if info is None:
            return None
        key = self._key_of.pop(uid)
        group = self._groups[key]
        del group[uid]
        if not group:
            del self._groups[key]
        return info

    def hearing(self, event: ClusterEvent, hears: Hears) -> list[QueuedPodInfo]:
        """The gated pods `event` may release: all of them for a wildcard, else those
        whose gating plugin registered for it."""
        if event.is_wildcard:
            return list(self._by_uid.values())
        return [info for (profile, plugin), group in self._groups.items()
                if hears(profile, plugin, event) for info in group.values()]
