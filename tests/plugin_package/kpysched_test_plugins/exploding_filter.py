"""A Filter plugin with a bug: it raises for pods labelled `explode: "true"`.

Stands for the out-of-tree plugin that one day meets a pod it did not expect: the
e2e tests check that such a pod fails alone (with an event naming the plugin) and
that no replica of the scheduler dies of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kpysched.cache.node_info import NodeInfo
from kpysched.framework import cluster_events as ev
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import FilterPlugin, Handle
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "ExplodingFilter"
TRIGGER_LABEL = "explode"


class ExplodingFilter(FilterPlugin):
    NAME = NAME

    def events_to_register(self) -> Sequence[ev.ClusterEvent]:
        return (ev.ClusterEvent(ev.Resource.NODE, ev.ActionType.ADD),)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if pod.pod.metadata.labels.get(TRIGGER_LABEL) == "true":
            raise ZeroDivisionError("division by zero while judging " + node.name)
        return SUCCESS


def new(args: None, handle: Handle) -> ExplodingFilter:
    return ExplodingFilter()


SPEC = PluginSpec(NAME, ExplodingFilter, new, None)
