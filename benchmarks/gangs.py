"""Pods in gangs for the gang workloads (issue 18): PodGroups and their members.

Two APIs: upstream's PodGroup (`spec.schedulingPolicy.gang.minCount`, pods name it in
`spec.schedulingGroup.podGroupName`), served as scheduling.k8s.io/v1alpha2 by v1.36
(GenericWorkload and GangScheduling gates, alpha version on) and as v1beta1 by v1.37
(GenericWorkload gate, beta version on): the version and gates are those of the
release the run uses (`--release`, read when the cluster starts); and
scheduler-plugins' Coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1,
`spec.minMember`, pods carry the label `scheduling.x-k8s.io/pod-group`), a CRD read by
kpysched's Coscheduling plugin.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

from tests.cluster import gates, releases

GangApi = Literal["upstream", "coscheduling"]
# Upstream's PodGroup API version by release.
UPSTREAM_VERSIONS: Mapping[str, str] = {"1.36": "scheduling.k8s.io/v1alpha2",
                                        "1.37": "scheduling.k8s.io/v1beta1"}
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
        base = (f"/apis/{upstream_version()}" if self.api == "upstream"
                else COSCHEDULING_PODGROUPS)
        return f"{base}/namespaces/{namespace}/podgroups"

    def pod_group(self, group: int) -> dict[str, Any]:
        if self.api == "upstream":
            return {"apiVersion": upstream_version(), "kind": "PodGroup",
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
# Upstream scheduler_perf GangScheduling's performance cases: podsPerGroup 3, minCount 3.
UPSTREAM_GANGS_OF_3 = Gangs("upstream", size=3, min_count=3)
COSCHEDULING_GANGS_OF_8 = Gangs("coscheduling", size=8, min_count=8)
UPSTREAM_NEVER_FITTING_GANG = Gangs("upstream", size=16, min_count=16, prefix="never-fits")
COSCHEDULING_NEVER_FITTING_GANG = Gangs("coscheduling", size=16, min_count=16,
                                        prefix="never-fits")


def upstream_version() -> str:
    """Upstream's PodGroup apiVersion on the release the run uses."""
    return UPSTREAM_VERSIONS[releases.selected().name]


class _ReleaseFeatureGates(Mapping[str, bool]):
    """The gang feature gates of the release the run uses, looked up when read: the
    workloads are defined at import, before `--release` is known."""

    def _gates(self) -> Mapping[str, bool]:
        return gates.gang(releases.selected().name).feature_gates

    def __getitem__(self, name: str) -> bool:
        return self._gates()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._gates())

    def __len__(self) -> int:
        return len(self._gates())


class _ReleaseRuntimeConfig(Sequence[str]):
    """The release's runtime-config for upstream's PodGroups, looked up when read."""

    def _entries(self) -> Sequence[str]:
        return gates.gang(releases.selected().name).runtime_config

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._entries()[index]

    def __len__(self) -> int:
        return len(self._entries())


# What the upstream gang workloads run with: the selected release's gates.
UPSTREAM_GANG_GATES = gates.Gates(feature_gates=_ReleaseFeatureGates(),
                                  runtime_config=_ReleaseRuntimeConfig())
