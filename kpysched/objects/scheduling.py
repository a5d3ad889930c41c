"""Wire shapes of scheduling.k8s.io/v1alpha2 PodGroups (GenericWorkload, alpha and off
by default in v1.36), read only when the gate is on: the API server serves them only
then. Decoded with msgspec like objects/api.py, only the fields scheduling uses."""

from __future__ import annotations

import msgspec

from kpysched.objects.api import ListMeta, ObjectMeta

API_VERSION = "scheduling.k8s.io/v1alpha2"

# The PodGroup condition kube-scheduler writes after each pod-group scheduling cycle,
# and its reasons when False.
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Same base as objects/api.py's, declared here so linters see a msgspec Struct."""


class GangSchedulingPolicy(_Wire):
    min_count: int = 0


class BasicSchedulingPolicy(_Wire):
    pass


class PodGroupSchedulingPolicy(_Wire):
    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(_Wire):
    key: str = ""


class PodGroupSchedulingConstraints(_Wire):
    topology: list[TopologyConstraint] = []


class PodGroupSpec(_Wire):
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str = ""
    priority: int | None = None


class Condition(_Wire):
    """metav1.Condition."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    observed_generation: int = 0
    last_transition_time: str | None = None


class PodGroupMeta(ObjectMeta):
    generation: int = 0


class PodGroupStatus(_Wire):
    conditions: list[Condition] = []


class PodGroup(_Wire):
    metadata: PodGroupMeta = msgspec.field(default_factory=PodGroupMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class PodGroupList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodGroup] = []
