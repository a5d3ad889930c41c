"""Where a pending pod is in the scheduling queue, and what would move it on: the
first thing `kpysched explain` answers, also for a pod never tried (gated) or whose
records were evicted.

The requeue triggers are the events the rejecting plugins registered (their queueing
hints decide, when such an event comes, whether it really helps this pod), named as
upstream names them in scheduler_queue_incoming_pods_total's `event` label (NodeAdd,
AssignedPodDelete, ...) and in words. A pod no plugin rejected (an error) goes back
after its backoff whatever happens; every waiting pod is moved after
podMaxInUnschedulablePodsDuration at the latest.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kpysched.api.times import api_time
from kpysched.framework.cluster_events import ActionType, ClusterEventWithHint, Resource

_RESOURCE_WORDS = {
    Resource.POD: "a pod",
    Resource.ASSIGNED_POD: "a scheduled pod",
    Resource.UNSCHEDULED_POD: "a pending pod",
    Resource.TARGET_POD: "the pod itself",
    Resource.NODE: "a node",
    Resource.NAMESPACE: "a namespace",
    Resource.PDB: "a PodDisruptionBudget",
    Resource.SERVICE: "a Service",
    Resource.PERSISTENT_VOLUME: "a PersistentVolume",
    Resource.PERSISTENT_VOLUME_CLAIM: "a PersistentVolumeClaim",
    Resource.STORAGE_CLASS: "a StorageClass",
    Resource.CSI_NODE: "a CSINode",
    Resource.CSI_DRIVER: "a CSIDriver",
    Resource.CSI_STORAGE_CAPACITY: "a CSIStorageCapacity",
    Resource.VOLUME_ATTACHMENT: "a VolumeAttachment",
    Resource.RESOURCE_CLAIM: "a ResourceClaim",
    Resource.RESOURCE_CLAIM_TEMPLATE: "a ResourceClaimTemplate",
    Resource.RESOURCE_SLICE: "a ResourceSlice",
    Resource.DEVICE_CLASS: "a DeviceClass",
    Resource.POD_GROUP: "a PodGroup",
    Resource.COSCHEDULING_POD_GROUP: "a PodGroup (scheduling.x-k8s.io)",
    Resource.WILDCARD: "anything",
}

# One action each (a registration's flags are split into these), upstream's names.
_ACTIONS: tuple[tuple[ActionType, str, str], ...] = (
    (ActionType.ADD, "Add", "is added"),
    (ActionType.DELETE, "Delete", "is deleted"),
    (ActionType.UPDATE_NODE_ALLOCATABLE, "UpdateNodeAllocatable", "gets more allocatable"),
    (ActionType.UPDATE_NODE_LABEL, "UpdateNodeLabel", "has its labels changed"),
    (ActionType.UPDATE_NODE_TAINT, "UpdateNodeTaint",
     "has its taints changed (or is uncordoned)"),
    (ActionType.UPDATE_NODE_CONDITION, "UpdateNodeCondition", "has its conditions changed"),
    (ActionType.UPDATE_NODE_ANNOTATION, "UpdateNodeAnnotation", "has its annotations changed"),
    (ActionType.UPDATE_NODE_DECLARED_FEATURE, "UpdateNodeDeclaredFeature",
     "has its declared features changed"),
    (ActionType.UPDATE_POD_LABEL, "UpdatePodLabel", "has its labels changed"),
    (ActionType.UPDATE_NODE_PREEMPTION_POLICY, "UpdateNodePreemptionPolicy",
     "has its pod preemption policy changed"),
    (ActionType.UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown", "asks for less"),
    (ActionType.UPDATE_POD_SCALE_UP, "UpdatePodScaleUp", "asks for more"),
    (ActionType.UPDATE_POD_TOLERATIONS, "UpdatePodToleration", "has its tolerations changed"),
    (ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED, "UpdatePodSchedulingGatesEliminated",
     "loses its last scheduling gate"),
    (ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, "UpdatePodGeneratedResourceClaim",
     "has its generated ResourceClaims changed"),
)


@dataclass(frozen=True, slots=True)
class Trigger:
    """An event one rejecting plugin registered for."""

    plugin: str
    event: str  # upstream's label: NodeAdd, AssignedPodDelete, ...
    text: str  # in words: "a node is added"

    def to_json(self) -> dict[str, str]:
        return {"plugin": self.plugin, "event": self.event, "text": self.text}


def triggers(plugin: str, registered: Iterable[ClusterEventWithHint]) -> list[Trigger]:
    """The events in `registered`, one per (resource, single action), in upstream's
    words; a wildcard registration reads as "anything"."""
    found: list[Trigger] = []
    for registration in registered:
        event = registration.event
        if event.is_wildcard:
            found.append(Trigger(plugin, "*", "anything changes"))
            continue
        noun = _RESOURCE_WORDS.get(event.resource, event.resource.value)
        for action, name, words in _ACTIONS:
            if event.action & action:
                found.append(Trigger(plugin, f"{event.resource.value}{name}",
                                     f"{noun} {words}"))
    unique = dict.fromkeys(found)
    return list(unique)


@dataclass(slots=True)
class PodQueueState:
    """One pod's place in the queue, with times as the API writes them (UTC)."""

    queue: str  # active, backoff, unschedulable, gated, inFlight
    attempts: int
    rejected_by: list[str] = field(default_factory=list)
    pending_on: list[str] = field(default_factory=list)
    gated_by: str = ""
    backoff_until: str = ""
    waiting_since: str = ""
    moved_by_flush_at: str = ""  # when podMaxInUnschedulablePodsDuration moves it anyway
    nominated_node: str = ""
    requeue_on: list[Trigger] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"queue": self.queue, "attempts": self.attempts}
        optional = {"rejectedBy": self.rejected_by, "pendingOn": self.pending_on,
                    "gatedBy": self.gated_by, "backoffUntil": self.backoff_until,
                    "waitingSince": self.waiting_since,
                    "movedByFlushAt": self.moved_by_flush_at,
                    "nominatedNode": self.nominated_node}
        body.update({key: value for key, value in optional.items() if value})
        if self.requeue_on:
            body["requeueOn"] = [trigger.to_json() for trigger in self.requeue_on]
        return body


def wall_clock(monotonic_now: float) -> Callable[[float], str]:
    """A monotonic instant as the API's UTC time, taken from the wall clock now."""
    offset = time.time() - monotonic_now

    def convert(instant: float) -> str:
        return api_time(dt.datetime.fromtimestamp(instant + offset, dt.UTC))

    return convert
