"""SchedulingGates: a pod with spec.schedulingGates waits outside the active queue.

Queueing hint: only the gated pod's own update that removes its last gate releases it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.framework.cluster_events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    objects_as,
)
from kpysched.framework.interfaces import Handle, PreEnqueuePlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

NAME = "SchedulingGates"

# Followed by the gate names as Go prints a []string: "[a b]".
REASON_PREFIX = "waiting for scheduling gates: "


def schedulable_after_gates_eliminated(pod: PodInfo, old: object,
                                       new: object) -> QueueingHint:
    _, modified = objects_as(PodInfo, old, new)
    if modified is None or modified.uid != pod.uid:
        return QueueingHint.QUEUE_SKIP  # another pod's gates are none of this pod's business
    return QueueingHint.QUEUE


_EVENTS = (
    ClusterEventWithHint(
        ClusterEvent(Resource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
        schedulable_after_gates_eliminated),
)


class SchedulingGates(PreEnqueuePlugin):
    NAME: ClassVar[str] = NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return _EVENTS

    def pre_enqueue(self, pod: PodInfo) -> Status:
        gates = pod.pod.spec.scheduling_gates
        if not gates:
            return SUCCESS
        names = " ".join(gate.name for gate in gates)
        return Status.unresolvable(f"{REASON_PREFIX}[{names}]", plugin=NAME)


def new(args: None, handle: Handle) -> SchedulingGates:
    return SchedulingGates()


SPEC = PluginSpec(NAME, SchedulingGates, new, None)
