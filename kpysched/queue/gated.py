"""The pods PreEnqueue turned away, by uid and by what gates them.

Only an event its gating plugin registered for (or a wildcard) can release a gated
pod, so a cluster event needs to look at the groups whose plugin hears it, not at
every gated pod. With 10,000 pods behind a scheduling gate (as Kueue holds them),
looking at each one cost every victim's deletion ~10 ms; kube-scheduler's added cost
per preemption was a tenth of kpysched's (docs/benchmarks.md, issue 32).
"""

from __future__ import annotations

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.queue.pods_by_plugin import Hears, PluginKey, PodsByPlugin


class GatedPods(PodsByPlugin):
    """Each pod under (its profile, the plugin gating it now: set before it is put)."""

    def _keys(self, info: QueuedPodInfo) -> tuple[PluginKey, ...]:
        return ((info.pod_info.pod.spec.scheduler_name, info.gating_plugin),)

    def hearing(self, event: ClusterEvent, hears: Hears) -> list[QueuedPodInfo]:
        """The gated pods `event` may release: all of them for a wildcard, else those
        whose gating plugin registered for it."""
        if event.is_wildcard:
            return list(self._by_uid.values())
        return [info for group in self._groups_hearing(event, hears) for info in group.values()]
