"""A PreBind plugin that holds each binding for a while, so tests can act while a
bind is in flight (delete the pod, or bind it elsewhere first)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kpysched.framework import cluster_events as ev
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle, PreBindPlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "SlowPreBind"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delaySeconds: float = 3.0  # noqa: N815 - the YAML field name


class SlowPreBind(PreBindPlugin):
    NAME = NAME

    def __init__(self, args: Args) -> None:
        self._delay = args.delaySeconds

    def events_to_register(self) -> Sequence[ev.ClusterEvent]:
        return ()

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        await asyncio.sleep(self._delay)
        return SUCCESS


def new(args: Args, handle: Handle) -> SlowPreBind:
    return SlowPreBind(args)


SPEC = PluginSpec(NAME, SlowPreBind, new, Args)
