"""The upstream gang workloads follow the run's release (`--release`, which sets
KPYSCHED_TEST_RELEASE before the cluster starts): v1.36's PodGroups are
scheduling.k8s.io/v1alpha2 behind GenericWorkload and GangScheduling, v1.37's v1beta1
behind GenericWorkload alone."""

from __future__ import annotations

import pytest

from benchmarks import gangs, workloads
from tests.cluster import gates, releases


@pytest.mark.parametrize(("release", "version", "feature_gates", "runtime_config"), [
    ("1.36", "scheduling.k8s.io/v1alpha2",
     {"GenericWorkload": True, "GangScheduling": True}, ["scheduling.k8s.io/v1alpha2=true"]),
    ("1.37", "scheduling.k8s.io/v1beta1",
     {"GenericWorkload": True}, ["scheduling.k8s.io/v1beta1=true"]),
], ids=["1.36", "1.37"])
def test_the_gang_workloads_use_the_releases_api_and_gates(
        monkeypatch: pytest.MonkeyPatch, release: str, version: str,
        feature_gates: dict[str, bool], runtime_config: list[str]) -> None:
    monkeypatch.setenv(releases.ENV_VAR, release)
    groups = gangs.UPSTREAM_GANGS_OF_8
    assert groups.path("ns") == f"/apis/{version}/namespaces/ns/podgroups"
    assert groups.pod_group(0)["apiVersion"] == version
    gang_workload = workloads.WORKLOADS["gang"]
    assert dict(gang_workload.gates.feature_gates) == feature_gates
    assert list(gang_workload.gates.runtime_config) == runtime_config
    assert gates.runtime_config_args(gang_workload.gates.runtime_config) == [
        f"--runtime-config={runtime_config[0]}"]


def test_the_coscheduling_api_does_not_depend_on_the_release(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(releases.ENV_VAR, "1.37")
    groups = gangs.COSCHEDULING_GANGS_OF_8
    assert groups.path("ns") == "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"
    assert groups.pod_group(0)["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"


def test_upstreams_own_gang_case_is_1000_gangs_of_3_with_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # scheduler_perf v1.37.2 GangScheduling/5000Nodes_1000Gangs_3000Pods: no initial pods,
    # 3000 pods in PodGroups of 3 with minCount 3.
    monkeypatch.setenv(releases.ENV_VAR, "1.37")
    workload = workloads.WORKLOADS["gang-3"]
    assert workload.default_init_pods(5000) == 0
    assert workload.default_pods(5000) == 3000
    assert workload.gangs is not None
    members = [workload.gangs.join({"metadata": {}, "spec": {}}, index)
               for index in range(3000)]
    groups = {member["spec"]["schedulingGroup"]["podGroupName"] for member in members}
    assert len(groups) == 1000
    assert members[2]["spec"]["schedulingGroup"] == members[0]["spec"]["schedulingGroup"]
    assert members[3]["spec"]["schedulingGroup"] != members[2]["spec"]["schedulingGroup"]
    policy = workload.gangs.pod_group(0)["spec"]["schedulingPolicy"]
    assert policy == {"gang": {"minCount": 3}}
