"""PrioritySort: the queue pops higher-priority pods first, then the earliest queued."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import Handle, QueuedPodInfo, QueueSortPlugin
from kpysched.framework.registry import PluginSpec

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    NAME: ClassVar[str] = NAME

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = a.pod_info.priority, b.pod_info.priority
        return first > second or (first == second and a.timestamp < b.timestamp)


def new(args: None, handle: Handle) -> PrioritySort:
    return PrioritySort()


SPEC = PluginSpec(NAME, PrioritySort, new, None)
