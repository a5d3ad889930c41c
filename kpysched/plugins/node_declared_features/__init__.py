"""NodeDeclaredFeatures: a pod that uses a feature some nodes lack (a container restart
rule that restarts all containers, a user namespace on the host network) goes only to
nodes that declare it in `status.declaredFeatures`.

PreFilter infers the pod's needs from its spec (`features`) and skips the plugin when
there are none, which is nearly always. Filter rejects a node missing any of them as
UnschedulableAndUnresolvable: preempting pods never gives a node a feature. Feature
names a node declares that the registry does not know are ignored, as upstream does.

The NodeDeclaredFeatures gate is beta and on in v1.36, and kpysched refuses to start
with a gate off its default, so the plugin is always enabled. Queueing hints and
upstream's pod signing (OpportunisticBatching) are not carried over: the registered
events alone decide when a rejected pod is retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_declared_features.features import (
    REGISTRY,
    Feature,
    Version,
    required_for_scheduling,
)

NAME = "NodeDeclaredFeatures"

REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

PRE_FILTER_KEY = "PreFilter" + NAME

# The release whose decisions kpysched reproduces: upstream infers for its own version.
SCHEDULER_VERSION = Version((1, 36, 4))

_EVENTS = (
    # A new node, or one whose declared features changed, may now have what was missing.
    ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
    # Upstream's hint queues only when the rejected pod's own needs changed.
    ClusterEvent(Resource.POD, ActionType.UPDATE),
)


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, registry: Sequence[Feature] = REGISTRY,
                 version: Version = SCHEDULER_VERSION) -> None:
        self._registry = registry
        self._version = version

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return _EVENTS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        required = required_for_scheduling(pod.pod.spec, self._version, self._registry)
        if not required:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, required)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        required: frozenset[str] | None = state.get(PRE_FILTER_KEY)
        if required is None:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found',
                                plugin=NAME)
        declared = node.node.status.declared_features if node.node is not None else ()
        if required.issubset(declared):
            return SUCCESS
        return Status.unresolvable(REASON_UNSATISFIED_REQUIREMENTS, plugin=NAME)


def new(args: None, handle: Handle) -> NodeDeclaredFeatures:
    return NodeDeclaredFeatures()


SPEC = PluginSpec(NAME, NodeDeclaredFeatures, new, None)
