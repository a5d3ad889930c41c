"""The PodGroup informer follows the release: v1.36 watches scheduling.k8s.io/v1alpha2,
v1.37 scheduling.k8s.io/v1beta1, as each kube-scheduler does; both decode into the
same wire shape."""

from __future__ import annotations

import msgspec
import pytest

from kpysched.informers.listers import Listers, WorkloadListers
from kpysched.objects import scheduling


@pytest.mark.parametrize(("release", "path"), [
    (36, "/apis/scheduling.k8s.io/v1alpha2/podgroups"),
    (37, "/apis/scheduling.k8s.io/v1beta1/podgroups"),
], ids=["1.36", "1.37"])
def test_the_pod_group_informer_watches_the_releases_version(release: int, path: str) -> None:
    listers = Listers(generic_workload=True, release=release)
    assert listers.workloads is not None
    [(watched, kind, _, _, resource)] = listers.workloads.specs()
    assert (watched, kind, resource) == (path, scheduling.PodGroup, "podgroups")
    assert any(spec[0] == path for spec in listers.specs())


def test_without_generic_workload_no_pod_group_is_watched() -> None:
    assert Listers(release=37).workloads is None
    assert not any("podgroups" in spec[0] for spec in Listers(release=37).specs())


def test_a_v1beta1_pod_group_decodes_the_fields_scheduling_reads() -> None:
    """v1beta1's extra fields (parent composite group, workloadRef, preemptionPolicy)
    are skipped; the gang's minCount and the priority read as in v1alpha2."""
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "d", "uid": "u", "generation": 2},
            "spec": {"workloadRef": {"name": "w", "templateName": "t"},
                     "schedulingPolicy": {"gang": {"minCount": 4}},
                     "disruptionMode": {"all": {}}, "priority": 7,
                     "preemptionPolicy": "Never"},
            "status": {"conditions": [{"type": "PodGroupInitiallyScheduled",
                                       "status": "True", "reason": "Scheduled",
                                       "message": "", "observedGeneration": 2,
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    group = msgspec.json.decode(msgspec.json.encode(body), type=scheduling.PodGroup)
    assert group.spec.scheduling_policy.gang == scheduling.GangSchedulingPolicy(min_count=4)
    assert group.spec.priority == 7
    assert group.status.conditions[0].type == scheduling.scheduled_condition_type(37)


def test_the_default_is_the_newest_release() -> None:
    assert WorkloadListers().api_version == scheduling.api_version(37)
