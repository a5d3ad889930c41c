"""Cluster events that can make a rejected pod schedulable (upstream's ClusterEvent),
how a pod update reads as such events (upstream's PodSchedulingPropertiesChange), and
the queueing hints plugins attach to the events they register (ClusterEventWithHint)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum, Flag, auto
from typing import TypeVar, cast

from kpysched.objects.pod import PodInfo


class Resource(Enum):
    POD = "Pod"
    # A registration for Pod hears all three. v1.36 emits AssignedPod and UnscheduledPod
    # (its internal assignedPod and unschedulablePod, spelled "UnschedulablePod" in its
    # labels); v1.37 makes them public (plugins may register them, its labels say
    # "UnscheduledPod": see release_label) and adds TargetPod: the pending pod's own
    # update, which UnscheduledPod no longer covers.
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    TARGET_POD = "TargetPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    PDB = "PodDisruptionBudget"
    SERVICE = "Service"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_CLAIM_TEMPLATE = "ResourceClaimTemplate"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    POD_GROUP = "PodGroup"  # scheduling.k8s.io/v1alpha2, with GenericWorkload on
    # scheduling.k8s.io/v1alpha3, with v1.37's CompositePodGroup on.
    COMPOSITE_POD_GROUP = "CompositePodGroup"
    # scheduler-plugins' PodGroup CRD, named as upstream names custom resources' events.
    COSCHEDULING_POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    WILDCARD = "*"


class ActionType(Flag):
    ADD = auto()
    DELETE = auto()
    UPDATE_NODE_ALLOCATABLE = auto()
    UPDATE_NODE_LABEL = auto()
    UPDATE_NODE_TAINT = auto()  # taints, or spec.unschedulable turned off
    UPDATE_NODE_CONDITION = auto()
    UPDATE_NODE_ANNOTATION = auto()
    UPDATE_NODE_DECLARED_FEATURE = auto()
    UPDATE_NODE_PREEMPTION_POLICY = auto()  # v1.37: spec.podPreemptionPolicy changed
    UPDATE_POD_LABEL = auto()
    UPDATE_POD_SCALE_DOWN = auto()
    UPDATE_POD_SCALE_UP = auto()  # v1.37: some resource request grew
    UPDATE_POD_TOLERATIONS = auto()
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = auto()
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = auto()
    # The two v1.37 flags are never emitted as v1.36, so one Update serves both releases.
    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT
              | UPDATE_NODE_CONDITION | UPDATE_NODE_ANNOTATION | UPDATE_NODE_DECLARED_FEATURE
              | UPDATE_NODE_PREEMPTION_POLICY | UPDATE_POD_LABEL | UPDATE_POD_SCALE_DOWN
              | UPDATE_POD_SCALE_UP | UPDATE_POD_TOLERATIONS
              | UPDATE_POD_SCHEDULING_GATES_ELIMINATED | UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    ALL = ADD | DELETE | UPDATE


# Upstream's ActionType.String(), for event labels; other combinations print as "".
_ACTION_NAMES = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_NODE_PREEMPTION_POLICY: "UpdateNodePreemptionPolicy",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCALE_UP: "UpdatePodScaleUp",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: ActionType
    label: str = ""

    @property
    def is_wildcard(self) -> bool:
        """Upstream's ClusterEventIsWildCard: "*" resource and every action."""
        return self.resource is Resource.WILDCARD and self.action == ActionType.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether a registered event (self) covers an event that happened (incoming):
        upstream's MatchClusterEvents. The incoming event must be the same as or more
        specific than the registration, so a generic Update is heard only by those who
        registered every update. (Upstream writes the subset test as an integer `<=`,
        which agrees for every event the scheduler emits: one flag, Update or All.)"""
        if self.is_wildcard:
            return True
        same = (self.resource is Resource.WILDCARD or self.resource is incoming.resource
                or (self.resource is Resource.POD and incoming.resource
                    in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD, Resource.TARGET_POD)))
        return (same and bool(self.action & incoming.action)
                and incoming.action & ~self.action == ActionType(0))

    def queue_label(self) -> str:
        """Upstream's Label(), used for the `event` label of
        scheduler_queue_incoming_pods_total, e.g. NodeAdd or NodeUpdateNodeTaint."""
        return self.label or f"{self.resource.value}{_ACTION_NAMES.get(self.action, '')}"


NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.UPDATE)
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
EVERYTHING = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "*")

# The first release whose event labels spell the pending-pod resource "UnscheduledPod",
# whose pending pod's own update is a TargetPod event and whose pod and node updates
# tell a scale-up and a preemption-policy change apart (v1.37's framework/events.go).
TARGET_POD_RELEASE = 37
_V136_PENDING, _V137_PENDING = "UnschedulablePod", "UnscheduledPod"


def release_label(label: str, release: int) -> str:
    """An event label as kube-scheduler of `release` spells it (metrics' `event` label):
    v1.37 renamed the pending-pod resource, e.g. UnschedulablePodAdd -> UnscheduledPodAdd."""
    if release >= TARGET_POD_RELEASE and label.startswith(_V136_PENDING):
        return _V137_PENDING + label[len(_V136_PENDING):]
    return label


def _scaled_down(old: PodInfo, new: PodInfo) -> bool:
    """Some resource request shrank or went away (upstream's extractPodScaleDown)."""
    before, after = old.requests, new.requests
    if (after.milli_cpu < before.milli_cpu or after.memory < before.memory
            or after.ephemeral_storage < before.ephemeral_storage):
        return True
    return any(name not in after.scalar or after.scalar[name] < amount
               for name, amount in before.scalar.items())


def _scaled_up(old: PodInfo, new: PodInfo) -> bool:
    """Some resource request grew or appeared (v1.37's extractPodScaleUp)."""
    before, after = old.requests, new.requests
    if (after.milli_cpu > before.milli_cpu or after.memory > before.memory
            or after.ephemeral_storage > before.ephemeral_storage):
        return True
    return any(name not in before.scalar or amount > before.scalar[name]
               for name, amount in after.scalar.items())


def pod_update_events(old: PodInfo, new: PodInfo, *, target: bool = False,
                      release: int = 36) -> list[ClusterEvent]:
    """The specific events a pod update amounts to, in upstream's order; a generic Update
    when none applies (heard only by plugins that registered every Pod update).
    `target`: the update is the queued pending pod's own (the queue's Update), which
    v1.37 reports as a TargetPod event rather than an UnscheduledPod one."""
    v137 = release >= TARGET_POD_RELEASE
    if new.pod.spec.node_name:
        resource = Resource.ASSIGNED_POD
    elif target and v137:
        resource = Resource.TARGET_POD
    else:
        resource = Resource.UNSCHEDULED_POD
    actions: list[ActionType] = []
    if old.pod.metadata.labels != new.pod.metadata.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if v137 and _scaled_up(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if old.pod.spec.scheduling_gates and not new.pod.spec.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    # Tolerations can only be added (API validation), so a length change is the news.
    if len(old.pod.spec.tolerations) != len(new.pod.spec.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    # The resourceclaim controller recorded the claims it made from templates (or the
    # scheduler the claim for DRA-backed extended resources).
    if (old.pod.status.resource_claim_statuses != new.pod.status.resource_claim_statuses
            or old.pod.status.extended_resource_claim_status
            != new.pod.status.extended_resource_claim_status):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    return [ClusterEvent(resource, action) for action in actions or [ActionType.UPDATE]]


class QueueingHint(Enum):
    """A plugin's answer to "may this event make the pod I rejected schedulable?"
    (upstream's QueueingHint); the value is the `hint` label of
    scheduler_queueing_hint_execution_duration_seconds."""

    QUEUE_SKIP = "QueueSkip"
    QUEUE = "Queue"


# hint(pod, old, new): `pod` is the rejected pod; `old` and `new` are the object before
# and after the event (None for an add's old and a delete's new). Which objects come with
# which resource is listed on Plugin.events_to_register (framework/interfaces.py). An
# exception counts as Queue, as upstream treats a hint's error: better a needless retry
# than a pod stuck until the 5-minute flush.
QueueingHintFn = Callable[[PodInfo, object, object], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and the hint that decides, pod by pod, whether it helps; no
    hint means always Queue (upstream's defaultQueueingHintFn)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


Registration = ClusterEvent | ClusterEventWithHint


def with_hints(registered: Iterable[Registration]) -> tuple[ClusterEventWithHint, ...]:
    """Plugins may register bare ClusterEvents (the form before queueing hints): those
    always answer Queue."""
    return tuple(r if isinstance(r, ClusterEventWithHint) else ClusterEventWithHint(r)
                 for r in registered)


_T = TypeVar("_T")


def objects_as(kind: type[_T], old: object, new: object) -> tuple[_T | None, _T | None]:
    """The event's objects as `kind` (upstream's util.As); a hint handed anything else
    raises, which the queue counts as Queue."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, kind):
            raise TypeError(f"expected {kind.__name__}, got {type(obj).__name__}")
    return cast(_T | None, old), cast(_T | None, new)
