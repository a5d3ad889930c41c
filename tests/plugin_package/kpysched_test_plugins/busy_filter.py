"""A Filter plugin that blocks the event loop, as a CPU-bound or buggy plugin would,
so tests can see /livez report the stalled scheduling loop."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kpysched.cache.node_info import NodeInfo
from kpysched.framework import cluster_events as ev
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import FilterPlugin, Handle
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "BusyFilter"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    blockSeconds: float = 5.0  # noqa: N815 - the YAML field name


class BusyFilter(FilterPlugin):
    NAME = NAME

    def __init__(self, args: Args) -> None:
        self._seconds = args.blockSeconds

    def events_to_register(self) -> Sequence[ev.ClusterEvent]:
        return ()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        time.sleep(self._seconds)  # deliberately blocks the whole event loop
        return SUCCESS


def new(args: Args, handle: Handle) -> BusyFilter:
    return BusyFilter(args)


SPEC = PluginSpec(NAME, BusyFilter, new, Args)
