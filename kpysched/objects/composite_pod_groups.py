"""Wire shape of v1.37's CompositePodGroup (scheduling.k8s.io/v1alpha3, alpha gate
CompositePodGroup, which needs GenericWorkload and TopologyAwareWorkloadScheduling): a
group of pod groups. PodGroups and other CompositePodGroups name it as their parent
(spec.parentCompositePodGroupName, same namespace), so a workload becomes a tree whose
leaves are PodGroups. Its policy counts child groups, not pods: a gang needs
minGroupCount children placed; a basic policy needs one. Decoded with msgspec like
objects/scheduling.py, only the fields scheduling uses.
"""

from __future__ import annotations

from typing import Final

import msgspec

from kpysched.objects.api import ListMeta
from kpysched.objects.scheduling import (
    Condition,
    PodGroupMeta,
    PodGroupSchedulingConstraints,
)

API_VERSION: Final = "scheduling.k8s.io/v1alpha3"


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Same base as objects/api.py's, declared here so linters see a msgspec Struct."""


class CompositeGangSchedulingPolicy(_Wire):
    min_group_count: int = 0


class CompositeBasicSchedulingPolicy(_Wire):
    pass


class CompositePodGroupSchedulingPolicy(_Wire):
    basic: CompositeBasicSchedulingPolicy | None = None
    gang: CompositeGangSchedulingPolicy | None = None


class AllCompositeDisruptionMode(_Wire):
    pass


class CompositeDisruptionMode(_Wire):
    all: AllCompositeDisruptionMode | None = None


class CompositePodGroupSpec(_Wire):
    parent_composite_pod_group_name: str | None = None
    scheduling_policy: CompositePodGroupSchedulingPolicy = msgspec.field(
        default_factory=CompositePodGroupSchedulingPolicy)
    # Same shape as a PodGroup's: topology keys the whole subtree must share.
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    disruption_mode: CompositeDisruptionMode | None = None
    priority_class_name: str = ""
    priority: int | None = None
    preemption_policy: str | None = None


class CompositePodGroupStatus(_Wire):
    conditions: list[Condition] = []


class CompositePodGroup(_Wire):
    metadata: PodGroupMeta = msgspec.field(default_factory=PodGroupMeta)
    spec: CompositePodGroupSpec = msgspec.field(default_factory=CompositePodGroupSpec)
    status: CompositePodGroupStatus = msgspec.field(default_factory=CompositePodGroupStatus)


class CompositePodGroupList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[CompositePodGroup] = []


def min_group_count(group: CompositePodGroup) -> int:
    """The children a composite group needs placed: its gang's minGroupCount, 1 for a
    basic policy (upstream's getMinCount for a composite group)."""
    gang = group.spec.scheduling_policy.gang
    return 1 if gang is None else gang.min_group_count
