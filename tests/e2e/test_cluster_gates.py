"""The test cluster can run upstream's gang scheduling gates (issue 18).

One cluster for the module, of the selected release (KPYSCHED_TEST_RELEASE, else the
harness's default), started as a person would: `python -m tests.cluster up` with the
gates and runtime-config of `gates.gang(release)` (1.36: GenericWorkload,
GangScheduling and `scheduling.k8s.io/v1alpha2`; 1.37: GenericWorkload and
`scheduling.k8s.io/v1beta1`). Its kube-apiserver then serves that version and keeps a
pod's `spec.schedulingGroup`, its kube-controller-manager lifts the PodGroup
protection finalizer, and upstream kube-scheduler started with the same gates holds a
gang below minCount in PreEnqueue and binds it once the gang is complete. The session
cluster (upstream's defaults) serves none of it, so each check can fail.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import subprocess
import sys
import urllib.error
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import cluster as harness
from tests.cluster import gates, kube, nodes, processes, releases
from tests.cluster.state import ClusterState
from tests.cluster.upstream import UpstreamScheduler

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
# The module's release is the selected one (it carries no release marker).
RELEASE = releases.selected().name
GANG = gates.gang(RELEASE)
# The release's PodGroup API version: what GANG's runtime-config turns on.
GROUP, VERSION = GANG.runtime_config[0].partition("=")[0].split("/")
# The condition kube-scheduler writes on a PodGroup it placed (v1beta1 renames it).
SCHEDULED_CONDITION = {"1.36": "PodGroupScheduled", "1.37": "PodGroupInitiallyScheduled"}[RELEASE]
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
# kube-scheduler's queue metric for pods a PreEnqueue plugin holds back.
GATED_PODS = re.compile(r'^scheduler_pending_pods\{queue="gated"\} (\S+)$', re.MULTILINE)
SCHEDULER_TIMEOUT_SECONDS = 60.0
# How long a held pod is watched for a binding after kube-scheduler first held it.
HELD_OBSERVE_SECONDS = 5.0


def _harness(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.cluster", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def gang_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    directory = tmp_path_factory.mktemp("gang-cluster") / "state"
    try:
        started = _harness("up", "--dir", str(directory), "--release", RELEASE,
                           "--feature-gates",
                           ",".join(f"{name}=true" for name in GANG.feature_gates),
                           "--runtime-config", ",".join(GANG.runtime_config))
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}"
        yield ClusterState.load(directory)
    finally:
        stopped = _harness("down", "--dir", str(directory))
        assert stopped.returncode == 0, stopped.stderr


@pytest.fixture
async def gang_api(gang_cluster: ClusterState) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(gang_cluster) as api_client:
        yield api_client


@pytest.fixture
async def gang_namespace(gang_api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(gang_api, "gang")
    try:
        yield name
    finally:
        await kube.delete_namespace(gang_api, name)


def _get_json(state: ClusterState, path: str) -> dict[str, Any]:
    body = processes.http_get(f"{state.server}{path}", context=processes.ca_tls(state.ca_file),
                              headers={"Authorization": f"Bearer {state.token}"})
    answer: dict[str, Any] = json.loads(body)
    return answer


def _pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def _member(name: str, group: str) -> dict[str, Any]:
    body = kube.pod_body(name)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    return body


async def _create_pod_group(api: client.ApiClient, namespace: str,
                            body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = await client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", body)
    return created


async def _read_pod_group(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", name)
    return found


async def _raw_pod(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    # Raw JSON: what the API server stored, not what the client's model knows of.
    response: Any = await client.CoreV1Api(api).read_namespaced_pod(
        name, namespace, _preload_content=False)
    pod: dict[str, Any] = json.loads(await response.read())
    return pod


def _gated_pods(scheduler: UpstreamScheduler) -> float:
    match = GATED_PODS.search(scheduler.metrics())
    return float(match.group(1)) if match else 0.0


async def _events(api: client.ApiClient, namespace: str, name: str) -> list[tuple[str, str]]:
    listed = await client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}")
    return [(e.reason, e.message) for e in listed.items]


@pytest.mark.parametrize(("text", "expected"), [
    ("", {}),
    ("GenericWorkload=true,GangScheduling=true",
     {"GenericWorkload": True, "GangScheduling": True}),
    ("A=false, B=TRUE,", {"A": False, "B": True}),
], ids=["empty", "gang", "spaces-case-trailing-comma"])
def test_parse_feature_gates(text: str, expected: dict[str, bool]) -> None:
    assert gates.parse_feature_gates(text) == expected


@pytest.mark.parametrize("text", ["GangScheduling", "GangScheduling=yes", "=true"],
                         ids=["no-value", "not-a-bool", "no-name"])
def test_parse_feature_gates_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="--feature-gates"):
        gates.parse_feature_gates(text)


def test_gang_preset_flags() -> None:
    assert gates.feature_gates_args(gates.GANG.feature_gates) == [
        "--feature-gates=GangScheduling=true,GenericWorkload=true"]
    assert gates.runtime_config_args(gates.GANG.runtime_config) == [
        "--runtime-config=scheduling.k8s.io/v1alpha2=true"]
    assert gates.feature_gates_args({}) == gates.runtime_config_args(()) == []
    # 1.37 folds GangScheduling into GenericWorkload and serves the beta version.
    later = gates.gang("1.37")
    assert gates.feature_gates_args(later.feature_gates) == ["--feature-gates=GenericWorkload=true"]
    assert gates.runtime_config_args(later.runtime_config) == [
        "--runtime-config=scheduling.k8s.io/v1beta1=true"]


def test_cli_up_refuses_a_malformed_gate_before_starting(tmp_path: Path) -> None:
    directory = tmp_path / "never"
    result = _harness("up", "--dir", str(directory), "--feature-gates", "GangScheduling=on")
    assert result.returncode == 1
    assert "'GangScheduling=on' is not Name=true or Name=false" in result.stderr
    assert not directory.exists()


def test_gates_reach_state_and_every_control_plane_command(gang_cluster: ClusterState) -> None:
    assert gang_cluster.release == RELEASE
    assert gang_cluster.feature_gates == dict(GANG.feature_gates)
    assert gang_cluster.runtime_config == list(GANG.runtime_config)
    [gate_flag] = gates.feature_gates_args(GANG.feature_gates)
    assert gate_flag in gang_cluster.apiserver_command
    assert f"--runtime-config={GROUP}/{VERSION}=true" in gang_cluster.apiserver_command
    manager = gang_cluster.component("kube-controller-manager")
    assert manager is not None and gate_flag in manager.command


def test_gang_cluster_serves_workloads_and_pod_groups(gang_cluster: ClusterState) -> None:
    resources = _get_json(gang_cluster, f"/apis/{GROUP}/{VERSION}")["resources"]
    assert {"podgroups", "podgroups/status", "workloads"} <= {r["name"] for r in resources}


def test_default_cluster_does_not_serve_them(cluster: ClusterState) -> None:
    with pytest.raises(urllib.error.HTTPError) as answer:
        _get_json(cluster, f"/apis/{GROUP}/{VERSION}")
    assert answer.value.code == 404


async def test_pod_group_and_member_are_stored_and_the_group_can_be_deleted(
    gang_api: client.ApiClient, gang_namespace: str,
) -> None:
    created = await _create_pod_group(gang_api, gang_namespace, _pod_group("gang", 2))
    assert created["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    # kube-apiserver's PodGroupProtection admission (GenericWorkload) stamps it.
    assert created["metadata"]["finalizers"] == [PROTECTION_FINALIZER]

    member = _member("member", "gang")
    member["spec"]["schedulerName"] = "nobody"
    await kube.create_pod(gang_api, gang_namespace, member)
    stored = await _raw_pod(gang_api, gang_namespace, "member")
    assert stored["spec"]["schedulingGroup"] == {"podGroupName": "gang"}

    # With the member gone, kube-controller-manager's podgroup-protection controller
    # (run only with GenericWorkload on) lifts the finalizer and the group goes.
    await client.CoreV1Api(gang_api).delete_namespaced_pod("member", gang_namespace,
                                                           grace_period_seconds=0)
    await client.CustomObjectsApi(gang_api).delete_namespaced_custom_object(
        GROUP, VERSION, gang_namespace, "podgroups", "gang")

    async def group_gone() -> bool:
        try:
            await _read_pod_group(gang_api, gang_namespace, "gang")
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return False

    await kube.wait_for(group_gone, 30, "the PodGroup deleted (protection finalizer lifted)")


async def test_default_cluster_drops_the_scheduling_group(
    api: client.ApiClient, namespace: str,
) -> None:
    member = _member("member", "gang")
    member["spec"]["schedulerName"] = "nobody"
    await kube.create_pod(api, namespace, member)
    assert "schedulingGroup" not in (await _raw_pod(api, namespace, "member"))["spec"]


async def test_upstream_kube_scheduler_holds_a_gang_below_min_count(
    gang_cluster: ClusterState, gang_api: client.ApiClient, gang_namespace: str,
) -> None:
    prefix = kube.unique_name("gang")
    [node] = await nodes.add(gang_api, 1, nodes.NodeShape(zones=0), name_prefix=prefix)
    try:
        await _create_pod_group(gang_api, gang_namespace, _pod_group("gang", 2))
        await kube.create_pod(gang_api, gang_namespace, _member("member-0", "gang"))

        with UpstreamScheduler(gang_cluster, feature_gates=gang_cluster.feature_gates) as sched:
            async def one_gated() -> bool:
                return await asyncio.to_thread(_gated_pods, sched) == 1.0

            await kube.wait_for(one_gated, SCHEDULER_TIMEOUT_SECONDS,
                                "member-0 held in PreEnqueue")
            with pytest.raises(AssertionError, match="not bound"):
                await kube.wait_bound(gang_api, gang_namespace, ["member-0"],
                                      timeout=HELD_OBSERVE_SECONDS)
            held = await _raw_pod(gang_api, gang_namespace, "member-0")
            # Held before any attempt: no condition and no event are written.
            assert "conditions" not in held["status"]
            assert await _events(gang_api, gang_namespace, "member-0") == []

            await kube.create_pod(gang_api, gang_namespace, _member("member-1", "gang"))
            bound = await kube.wait_bound(gang_api, gang_namespace, ["member-0", "member-1"],
                                          timeout=SCHEDULER_TIMEOUT_SECONDS)

            async def scheduled_condition() -> dict[str, Any] | None:
                group = await _read_pod_group(gang_api, gang_namespace, "gang")
                conditions = group.get("status", {}).get("conditions", [])
                return next((c for c in conditions if c["type"] == SCHEDULED_CONDITION), None)

            condition = await kube.wait_for(scheduled_condition, 30,
                                            f"the {SCHEDULED_CONDITION} condition")
            for name in bound:
                # kube-scheduler's event broadcaster writes a moment after the binding.
                events = await kube.wait_for(
                    functools.partial(_events, gang_api, gang_namespace, name), 30,
                    f"an event on {name}")
                assert [reason for reason, _ in events] == ["Scheduled"], (name, events)
        assert bound == {"member-0": node, "member-1": node}
        assert (condition["status"], condition["reason"]) == ("True", "Scheduled")
    finally:
        await nodes.delete(gang_api, name_prefix=prefix)


async def test_upstream_kube_scheduler_without_the_gates_ignores_the_group(
    gang_cluster: ClusterState, gang_api: client.ApiClient, gang_namespace: str,
) -> None:
    prefix = kube.unique_name("plain")
    [node] = await nodes.add(gang_api, 1, nodes.NodeShape(zones=0), name_prefix=prefix)
    try:
        await _create_pod_group(gang_api, gang_namespace, _pod_group("gang", 2))
        await kube.create_pod(gang_api, gang_namespace, _member("member-0", "gang"))
        with UpstreamScheduler(gang_cluster):
            bound = await kube.wait_bound(gang_api, gang_namespace, ["member-0"],
                                          timeout=SCHEDULER_TIMEOUT_SECONDS)
        assert bound == {"member-0": node}
    finally:
        await nodes.delete(gang_api, name_prefix=prefix)


def test_restart_apiserver_keeps_the_gates(gang_cluster: ClusterState) -> None:
    # Last in the module: tests after it would meet clients still reconnecting.
    restarted = harness.restart_apiserver(Path(gang_cluster.dir))
    assert restarted.apiserver_pid != gang_cluster.apiserver_pid
    assert restarted.feature_gates == dict(GANG.feature_gates)
    resources = _get_json(restarted, f"/apis/{GROUP}/{VERSION}")["resources"]
    assert "podgroups" in {r["name"] for r in resources}
