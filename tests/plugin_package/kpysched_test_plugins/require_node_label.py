"""A Filter plugin: only nodes carrying a given label key pass."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kpysched.cache.node_info import NodeInfo
from kpysched.framework import cluster_events as ev
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import FilterPlugin, Handle
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "RequireNodeLabel"


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labelKey: str  # noqa: N815 - the YAML field name


class RequireNodeLabel(FilterPlugin):
    NAME = NAME

    def __init__(self, args: Args) -> None:
        self._key = args.labelKey

    def events_to_register(self) -> Sequence[ev.ClusterEvent]:
        return (ev.ClusterEvent(ev.Resource.NODE, ev.ActionType.ADD | ev.ActionType.UPDATE),)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if self._key in node.labels:
            return SUCCESS
        return Status.unresolvable(f"node(s) lacked label {self._key}")


def new(args: Args, handle: Handle) -> RequireNodeLabel:
    return RequireNodeLabel(args)


SPEC = PluginSpec(NAME, RequireNodeLabel, new, Args)
