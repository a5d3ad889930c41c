"""Cluster events that can make a rejected pod schedulable (upstream's ClusterEvent)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, Flag, auto


class Resource(Enum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    NODE = "Node"
    NAMESPACE = "Namespace"
    PDB = "PodDisruptionBudget"
    SERVICE = "Service"
    WILDCARD = "*"


class ActionType(Flag):
    ADD = auto()
    DELETE = auto()
    UPDATE_NODE_ALLOCATABLE = auto()
    UPDATE_NODE_LABEL = auto()
    UPDATE_NODE_TAINT = auto()
    UPDATE_NODE_CONDITION = auto()
    UPDATE_NODE_ANNOTATION = auto()
    UPDATE_POD_LABEL = auto()
    UPDATE_POD_SCALE_DOWN = auto()
    UPDATE_POD_TOLERATIONS = auto()
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = auto()
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = auto()
    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT
              | UPDATE_NODE_CONDITION | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL
              | UPDATE_POD_SCALE_DOWN | UPDATE_POD_TOLERATIONS
              | UPDATE_POD_SCHEDULING_GATES_ELIMINATED | UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: ActionType
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether a registered event (self) covers an event that happened (incoming)."""
        if self.resource is Resource.WILDCARD:
            return True
        same = self.resource is incoming.resource or (
            # A registration for Pod also hears about assigned pods.
            self.resource is Resource.POD and incoming.resource is Resource.ASSIGNED_POD
        )
        return same and bool(self.action & incoming.action)

    def queue_label(self) -> str:
        """The `event` label of scheduler_queue_incoming_pods_total, e.g. NodeAdd."""
        return self.label or f"{self.resource.value}{self.action.name or 'Update'}"


NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVERYTHING = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "*")
