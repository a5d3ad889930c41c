"""The status of scheduler-plugins' PodGroups (scheduling.x-k8s.io/v1alpha1): merge
patches of podgroups/status, off the loop and coalesced per group (PodStatusWriter's
machinery), drained on stop and dropped when the lease is lost. What the status says
is decided in kpysched/scheduling/coscheduling_groups.py; this only writes it.
"""

from __future__ import annotations

from typing import Any

from kpysched.api.client import RawApi
from kpysched.objects import coscheduling as cs
from kpysched.writes.pod_status import PodStatusWriter


class GroupStatusWriter(PodStatusWriter):
    CONTENT_TYPE = "application/merge-patch+json"

    def __init__(self, raw: RawApi) -> None:
        super().__init__(raw, writers=1)

    def write(self, group: cs.PodGroup, status: dict[str, Any]) -> None:
        meta = group.metadata
        self._queue(meta.uid, meta.namespace, meta.name, status)

    def _path(self, namespace: str, name: str) -> str:
        return f"/apis/{cs.API_VERSION}/namespaces/{namespace}/podgroups/{name}/status"
