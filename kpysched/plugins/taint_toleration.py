"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Filter rejects a node with a NoSchedule or NoExecute taint the pod does not
tolerate. Score counts the PreferNoSchedule taints the pod does not tolerate;
NormalizeScore reverses it so the node with the fewest scores 100.

Upstream v1.36's Filter reason does not name the taint ("node(s) had untolerated
taint(s)"); older releases printed "node(s) had untolerated taint {key: value}".
Toleration operators Lt/Gt are alpha (TaintTolerationComparisonOperators, off
by default) and tolerate nothing here.

Queueing hints: a node added or retainted helps only if it had an untolerated
NoSchedule/NoExecute taint (or is new) and has none now; a toleration added helps
only the pod that got it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
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
    NodeScore,
    PreScorePlugin,
    ScoreExtensions,
    VectorFilterPlugin,
    VectorNormalizePlugin,
    VectorScorePlugin,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.taints import PREFER_NO_SCHEDULE, find_untolerated_taint, tolerates
from kpysched.plugins._shared.go_math import default_normalize_score, default_normalize_vector
from kpysched.plugins._shared.resize import IN_PLACE_RESIZE_PREEMPTION_GATE, skips_deferred_pod

NAME = "TaintToleration"

REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

_PRE_SCORE_KEY = "PreScore" + NAME


def schedulable_after_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """A node added or retainted: did a taint the pod does not tolerate go away?"""
    original, modified = objects_as(api.Node, old, new)
    if modified is None:
        raise ValueError("a node event without the node")
    tolerations = pod.pod.spec.tolerations
    was_untolerated = (original is None
                       or find_untolerated_taint(original.spec.taints, tolerations) is not None)
    is_untolerated = find_untolerated_taint(modified.spec.taints, tolerations) is not None
    if was_untolerated and not is_untolerated:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def schedulable_after_pod_toleration_change(pod: PodInfo, old: object,
                                            new: object) -> QueueingHint:
    """Tolerations only ever grow, so the rejected pod's own new toleration may help; any
    other pod's does not."""
    _, modified = objects_as(PodInfo, old, new)
    if modified is not None and modified.uid == pod.uid:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


_EVENTS = (
    ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                         schedulable_after_node_change),
    ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                         schedulable_after_pod_toleration_change),
)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    # Tolerations that can tolerate a PreferNoSchedule taint (that effect, or any).
    tolerations: tuple[api.Toleration, ...]


def _prefer_no_schedule_tolerations(pod: api.Pod) -> tuple[api.Toleration, ...]:
    return tuple(t for t in pod.spec.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def _taints(node: NodeInfo) -> list[api.Taint]:
    return node.node.spec.taints if node.node is not None else []


class TaintToleration(VectorFilterPlugin, NodeOnlyFilterPlugin, PreScorePlugin,
                      VectorScorePlugin, ScoreExtensions, VectorNormalizePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, *, deferred_resize: bool = False) -> None:
        # InPlacePodVerticalScalingSchedulerPreemption: upstream's PreFilter skips a
        # deferred resize; passing it at Filter has the same outcome.
        self._deferred_resize = deferred_resize

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return SUCCESS  # a deferred resize stays where it runs
        taints = _taints(node)
        if not taints or find_untolerated_taint(taints, pod.pod.spec.tolerations) is None:
            return SUCCESS
        return Status.unresolvable(REASON_UNTOLERATED, plugin=NAME)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        state.write(_PRE_SCORE_KEY, _PreScoreState(_prefer_no_schedule_tolerations(pod.pod)))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if cached is None:
            return 0, Status.error(f"failed to read {_PRE_SCORE_KEY!r} from cycleState",
                                   plugin=NAME)
        count = 0
        for taint in _taints(node):
            if taint.effect == PREFER_NO_SCHEDULE and not any(
                tolerates(toleration, taint) for toleration in cached.tolerations
            ):
                count += 1
        return count, SUCCESS

    def filter_vector(self, state: CycleState, pod: PodInfo,
                      snapshot: Snapshot) -> npt.NDArray[np.bool_] | None:
        """Untainted nodes pass outright; only tainted rows take the per-node check."""
        if skips_deferred_pod(self._deferred_resize, pod.pod):
            return np.ones(len(snapshot.node_infos), dtype=np.bool_)
        tainted = snapshot.columns.taint_count > 0
        verdict: npt.NDArray[np.bool_] = ~tainted
        for row in np.flatnonzero(tainted).tolist():
            verdict[row] = self.filter(state, pod, snapshot.node_infos[row]).ok
        return verdict

    def score_vector(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> npt.NDArray[np.int64] | None:
        """Raw counts for every row: 0 on untainted nodes, per-node on the others."""
        counts = np.zeros(len(snapshot.node_infos), dtype=np.int64)
        for row in np.flatnonzero(snapshot.columns.taint_count > 0).tolist():
            value, status = self.score(state, pod, snapshot.node_infos[row])
            if not status.ok:
                return None
            counts[row] = value
        return counts

    def normalize_vector(self, state: CycleState, pod: PodInfo,
                         scores: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return default_normalize_vector(scores, reverse=True)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        default_normalize_score(scores, reverse=True)
        return SUCCESS


def new(args: None, handle: Handle) -> TaintToleration:
    return TaintToleration(
        deferred_resize=handle.features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE))


SPEC = PluginSpec(NAME, TaintToleration, new, None)
