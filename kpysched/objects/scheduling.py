"""Wire shapes of upstream's PodGroups (GenericWorkload, off by default): served as
scheduling.k8s.io/v1alpha2 by v1.36 (alpha) and as scheduling.k8s.io/v1beta1 by v1.37
(beta), read only when the gate is on: the API server serves them only then. The
fields scheduling reads are the same in both versions but one: v1beta1 adds a parent
composite group (parentCompositePodGroupName, kept by the API server only with the
alpha CompositePodGroup gate on; the tree is objects/composite_pod_groups.py's), a
workloadRef, which kpysched does not act on, a disruptionMode, which v1.37's
preemption reads, and a preemptionPolicy, read with PodGroupPreemptionPolicy on.
Decoded with msgspec like objects/api.py, only the fields scheduling uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from kpysched.objects.api import ListMeta, ObjectMeta

# The PodGroup API version each release serves (by minor), and the condition its
# kube-scheduler writes after each pod-group scheduling cycle (v1.37 renamed it).
API_VERSIONS: Final[Mapping[int, str]] = {36: "scheduling.k8s.io/v1alpha2",
                                          37: "scheduling.k8s.io/v1beta1"}
CONDITION_TYPES: Final[Mapping[int, str]] = {36: "PodGroupScheduled",
                                             37: "PodGroupInitiallyScheduled"}
NEWEST_API_RELEASE: Final = max(API_VERSIONS)


def api_version(release: int) -> str:
    """The PodGroup apiVersion served by release 1.`release`."""
    return API_VERSIONS[release]


def scheduled_condition_type(release: int) -> str:
    """The condition kube-scheduler of 1.`release` writes on a PodGroup it tried."""
    return CONDITION_TYPES[release]


# The condition's reasons when False.
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


class AllDisruptionMode(_Wire):
    pass


class DisruptionMode(_Wire):
    """v1beta1: whether preemption may take the group's members one by one (single) or
    only all together (all)."""

    all: AllDisruptionMode | None = None


class PodGroupResourceClaim(_Wire):
    """A claim the group's members share: by name, or made from a template by the
    resourceclaim controller (its name then in status.resourceClaimStatuses)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodGroupResourceClaimStatus(_Wire):
    name: str = ""
    # None: the controller decided no claim was needed.
    resource_claim_name: str | None = None


class PodGroupSpec(_Wire):
    # v1beta1: the CompositePodGroup (same namespace) this group is a child of; None
    # for the root of a workload's tree. Read only with CompositePodGroup on.
    parent_composite_pod_group_name: str | None = None
    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy)
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    priority_class_name: str = ""
    priority: int | None = None
    # v1beta1's is an object ({"all": {}}); v1alpha2 (v1.36) has a string ("Single",
    # "All"), which v1.36's scheduling does not read.
    disruption_mode: DisruptionMode | str | None = None
    # v1beta1, kept by the API server only with PodGroupPreemptionPolicy (alpha) on:
    # "PreemptLowerPriority" or "Never"; read only with that gate on.
    preemption_policy: str | None = None
    # v1beta1, DRAWorkloadResourceClaims.
    resource_claims: list[PodGroupResourceClaim] = []


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
    resource_claim_statuses: list[PodGroupResourceClaimStatus] = []


class PodGroup(_Wire):
    metadata: PodGroupMeta = msgspec.field(default_factory=PodGroupMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class PodGroupList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodGroup] = []
