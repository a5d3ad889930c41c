"""NodeDeclaredFeatures: a pod that uses a feature some nodes lack (a container restart
rule that restarts all containers, a user namespace on the host network) goes only to
nodes that declare it in `status.declaredFeatures`.

PreFilter infers the pod's needs from its spec (`features`) and skips the plugin when
there are none, which is nearly always. Filter rejects a node missing any of them as
UnschedulableAndUnresolvable: preempting pods never gives a node a feature. Feature
names a node declares that the registry does not know are ignored, as upstream does.

The NodeDeclaredFeatures gate is beta and on in v1.36, and kpysched refuses to start
with a gate off its default, so the plugin is always enabled. Queueing hints: a new
node, or one whose declared features changed, may now have what was missing; an update
of the rejected pod itself helps only if it changed what the pod needs. Upstream's pod
signing (OpportunisticBatching) is not carried over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import (
    Handle,
    NodeOnlyFilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod
from kpysched.plugins.node_declared_features.features import (
    REGISTRIES,
    REGISTRY,
    Feature,
    Version,
    required_for_scheduling,
)

NAME = "NodeDeclaredFeatures"

REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"

PRE_FILTER_KEY = "PreFilter" + NAME

# v1.36.4, the default of a plugin built without a release (new() passes the handle's
# release's registry and version: upstream infers for its own version).
SCHEDULER_VERSION = Version((1, 36, 4))


def schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A new node, or a change in the features a node declares (in order, as upstream
    compares them)."""
    before, after = objects_as(api.Node, old, new)
    if after is None:
        raise ValueError("a node event without the new node")
    if before is not None and before.status.declared_features == after.status.declared_features:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


class NodeDeclaredFeatures(PreFilterPlugin, NodeOnlyFilterPlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, registry: Sequence[Feature] = REGISTRY,
                 version: Version = SCHEDULER_VERSION, *, deferred_resize: bool = False) -> None:
        self._registry = registry
        self._version = version
        self._deferred_resize = deferred_resize  # InPlacePodVerticalScalingSchedulerPreemption

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE,
                             ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE),
                                 self.schedulable_after_pod_update),
        )

    def schedulable_after_pod_update(self, pod: PodInfo, old: object,
                                     new: object) -> QueueingHint:
        """Only the rejected pod's own update, and only if it changed what the pod needs."""
        before, after = objects_as(PodInfo, old, new)
        if before is None or after is None:
            raise ValueError("a pod update without both pods")
        if after.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        needed_before = required_for_scheduling(before.pod.spec, self._version, self._registry)
        needed_after = required_for_scheduling(after.pod.spec, self._version, self._registry)
        if needed_before == needed_after:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return None, Status.skip()  # a deferred resize stays where it runs
        required = required_for_scheduling(pod.pod.spec, self._version, self._registry)
        if not required:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, required)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS
        required: frozenset[str] | None = state.get(PRE_FILTER_KEY)
        if required is None:
            return Status.error(f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found',
                                plugin=NAME)
        declared = node.node.status.declared_features if node.node is not None else ()
        if required.issubset(declared):
            return SUCCESS
        return Status.unresolvable(REASON_UNSATISFIED_REQUIREMENTS, plugin=NAME)


def new(args: None, handle: Handle) -> NodeDeclaredFeatures:
    registry, version = REGISTRIES[handle.features.release]
    return NodeDeclaredFeatures(
        registry, version,
        deferred_resize=handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, NodeDeclaredFeatures, new, None)
