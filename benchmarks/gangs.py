"""Pods in gangs for the gang workloads (issue 18): PodGroups and their members.

Two APIs: upstream's v1.36 PodGroup (scheduling.k8s.io/v1alpha2, `spec.schedulingPolicy.
gang.minCount`, pods name it in `spec.schedulingGroup.podGroupName`), served only
with the GenericWorkload gate and the alpha version on; and scheduler-plugins'
Coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1, `spec.minMember`, pods carry the
label `scheduling.x-k8s.io/pod-group`), a CRD read by kpysched's Coscheduling plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

GangApi = Literal["upstream", "coscheduling"]
UPSTREAM_PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2"
COSCHEDULING_PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_CRD = Path(__file__).resolve().parents[1] / "deploy" / "crds" / (
    "scheduling.x-k8s.io_podgroups.yaml")
# kpysched's profile with scheduler-plugins' Coscheduling, as docs/gang.md configures it.
COSCHEDULING_PLUGINS: Mapping[str, Any] = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
}


@dataclass(frozen=True, slots=True)
class Gangs:
    """Pods in groups: pod i belongs to group i // size, whose PodGroup (minimum
    `min_count` members) is created before any pod."""

    api: GangApi
    size: int
    min_count: int
    prefix: str = "gang"

    def count(self, pods: int) -> int:
        return -(-pods // self.size)

    def name(self, group: int) -> str:
        return f"{self.prefix}-{group}"

    def path(self, namespace: str) -> str:
        base = UPSTREAM_PODGROUPS if self.api == "upstream" else COSCHEDULING_PODGROUPS
        return f"{base}/namespaces/{namespace}/podgroups"

    def pod_group(self, group: int) -> dict[str, Any]:
        if self.api == "upstream":
            return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                    "metadata": {"name": self.name(group)},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": self.min_count}}}}
        return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": self.name(group)},
                "spec": {"minMember": self.min_count}}

    def join(self, pod: dict[str, Any], index: int) -> dict[str, Any]:
        """Pod body `pod` (the index-th of its kind) made a member of its group."""
        group = self.name(index // self.size)
        if self.api == "upstream":
            pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        else:
            pod["metadata"].setdefault("labels", {})[COSCHEDULING_LABEL] = group
        return pod


UPSTREAM_GANGS_OF_8 = Gangs("upstream", size=8, min_count=8)
COSCHEDULING_GANGS_OF_8 = Gangs("coscheduling", size=8, min_count=8)
UPSTREAM_NEVER_FITTING_GANG = Gangs("upstream", size=16, min_count=16, prefix="never-fits")
COSCHEDULING_NEVER_FITTING_GANG = Gangs("coscheduling", size=16, min_count=16,
                                        prefix="never-fits")
