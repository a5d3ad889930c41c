"""DefaultBinder: bind the pod with the Binding subresource, through the handle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import BindPlugin, Handle
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo

NAME = "DefaultBinder"


class DefaultBinder(BindPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return await self._handle.bind(pod.pod, node_name)


def new(args: None, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)


SPEC = PluginSpec(NAME, DefaultBinder, new, None)
