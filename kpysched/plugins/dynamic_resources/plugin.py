"""DynamicResources, for pods without resource claims only.

kpysched does not implement dynamic resource allocation. Upstream's default
profile runs this plugin, and for a pod without claims it skips PreFilter and
answers PostFilter with "no new claims to deallocate" (which is part of every
FailedScheduling message users see), or with an Error "not found" when an earlier
PreFilter plugin rejected the pod before this one's PreFilter ran. This module
reproduces exactly that, and rejects pods that do carry resource claims with a
reason that says why, rather than placing them without their devices.
"""

from __future__ import annotations

from collections.abc import Sequence

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    FilterPlugin,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "DynamicResources"
_STATE_KEY = "PreFilter" + NAME
# CycleState's "no such key" error text, which upstream's PostFilter returns as an
# Error when its PreFilter never ran (an earlier PreFilter plugin rejected the pod);
# it then ends every FailedScheduling message of such a pod.
STATE_NOT_FOUND = "not found"
# Upstream's PostFilter answer for a pod without claims.
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
CLAIMS_UNSUPPORTED = (
    "kpysched does not support dynamic resource allocation (pod has resourceClaims)")


class DynamicResources(PreFilterPlugin, FilterPlugin, PostFilterPlugin):
    NAME = NAME

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        # Written before any verdict, as upstream does: PostFilter tells "PreFilter ran
        # and found no claims" from "PreFilter never ran" by this key.
        state.write(_STATE_KEY, True)
        if pod.pod.spec.resource_claims:
            return None, Status.unresolvable(CLAIMS_UNSUPPORTED)
        return None, Status.skip()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS  # only reached for pods without claims, which need nothing here

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: dict[str, Status]) -> tuple[PostFilterResult | None, Status]:
        if state.get(_STATE_KEY) is None:
            return None, Status.error(STATE_NOT_FOUND)
        return None, Status.unschedulable(NO_CLAIMS_TO_DEALLOCATE)


def new(args: None, handle: Handle) -> DynamicResources:
    return DynamicResources()


SPEC = PluginSpec(NAME, DynamicResources, new)
