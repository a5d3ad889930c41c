"""Wire shapes of scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), the API of
its Coscheduling plugin: a CRD, installed on the cluster (deploy/crds/), read only when
a profile enables Coscheduling. Decoded with msgspec like objects/api.py, only the
fields scheduling and the group's status use."""

from __future__ import annotations

import msgspec

from kpysched.objects.api import ListMeta, ObjectMeta

GROUP = "scheduling.x-k8s.io"
API_VERSION = f"{GROUP}/v1alpha1"
KIND = "PodGroup"
# A pod joins the PodGroup of this name in its own namespace.
POD_GROUP_LABEL = f"{GROUP}/pod-group"

# status.phase, as scheduler-plugins' PodGroup controller writes it (plus Scheduled,
# which its scheduler wrote before the controller moved out of it).
PENDING = "Pending"
SCHEDULING = "Scheduling"
SCHEDULED = "Scheduled"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
# Phases a group never leaves (the controller stops reconciling them).
FINAL_PHASES = frozenset({FINISHED, FAILED})


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Same base as objects/api.py's, declared here so linters see a msgspec Struct."""


class PodGroupSpec(_Wire):
    min_member: int = 0
    # Quantities as the API server stores them: strings, or bare integers.
    min_resources: dict[str, str | int] | None = None
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(_Wire):
    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str | None = None


class PodGroup(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


class PodGroupList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodGroup] = []
