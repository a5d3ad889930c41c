"""The test cluster is a real kube-apiserver backed by etcd, and the harness works."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube, releases
from tests.cluster.upstream import UpstreamScheduler

REPO_ROOT = Path(__file__).resolve().parents[2]


def _binding(pod: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


async def test_binding_sets_node_name_and_second_binding_conflicts(
    api: client.ApiClient, namespace: str, nodes_to_clean: list[str]
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="bind")
    await kube.create_pod(api, namespace, kube.pod_body("p", scheduler_name="nobody"))
    core = client.CoreV1Api(api)

    # _preload_content=False hands back the raw response: the client's V1Binding model
    # rejects the reply (its target is empty), and errors then arrive as a status code.
    first = await core.create_namespaced_pod_binding(
        "p", namespace, _binding("p", nodes_to_clean[0]), _preload_content=False)
    assert first.status == 201, await first.text()

    pod = await core.read_namespaced_pod("p", namespace)
    assert pod.spec.node_name == nodes_to_clean[0]
    second = await core.create_namespaced_pod_binding(
        "p", namespace, _binding("p", nodes_to_clean[1]), _preload_content=False)
    assert second.status == 409, await second.text()
    assert (await core.read_namespaced_pod("p", namespace)).spec.node_name == nodes_to_clean[0]


async def test_created_node_keeps_its_status(api: client.ApiClient,
                                             nodes_to_clean: list[str]) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="status", cpu="3", memory="5Gi")
    node = await client.CoreV1Api(api).read_node(nodes_to_clean[0])
    assert node.status.allocatable == {"cpu": "3", "memory": "5Gi", "pods": "110"}
    assert node.status.conditions[0].type == "Ready"
    assert not node.spec.taints  # the admission plugin's not-ready taint is lifted


async def test_version_reports_the_pinned_release(api: client.ApiClient) -> None:
    info = await client.VersionApi(api).get_code()
    assert info.git_version == releases.selected().kubernetes_version


async def test_upstream_kube_scheduler_binds_a_default_scheduler_pod(
    cluster: harness.ClusterState, api: client.ApiClient, namespace: str,
    nodes_to_clean: list[str],
) -> None:
    label = kube.unique_name("target")
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="upstream", labels={"pick": label})
    await kube.create_pod(api, namespace, kube.pod_body("web", node_selector={"pick": label}))

    with UpstreamScheduler(cluster):
        bound = await kube.wait_bound(api, namespace, ["web"], timeout=60)

    assert bound == {"web": nodes_to_clean[0]}


async def test_restart_apiserver_keeps_the_data(
    cluster: harness.ClusterState, api: client.ApiClient, namespace: str,
    nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="survivor")
    await kube.create_pod(api, namespace, kube.pod_body("keeper", scheduler_name="nobody"))
    before = cluster.apiserver_pid

    result = subprocess.run(
        [sys.executable, "-m", "tests.cluster", "restart-apiserver", "--dir", cluster.dir],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
    )

    assert result.returncode == 0, result.stderr
    restarted = harness.ClusterState.load(Path(cluster.dir))
    assert restarted.apiserver_pid != before
    cluster.apiserver_pid = restarted.apiserver_pid  # keep the fixture's view current for `down`
    # The controller manager and KWOK rode out the restart instead of being replaced.
    assert [c.pid for c in restarted.components] == [c.pid for c in cluster.components]
    async with kube.api_client(cluster) as fresh:
        core = client.CoreV1Api(fresh)
        assert (await core.read_node(nodes_to_clean[0])).metadata.name == nodes_to_clean[0]
        pod = await core.read_namespaced_pod("keeper", namespace)
        assert pod.spec.scheduler_name == "nobody"
        # ... and went on working: a namespace made now gets its ServiceAccount.
        await kube.delete_namespace(fresh, await kube.create_namespace(fresh, "after-restart"))


def test_cli_up_prints_kubeconfig_and_readyz_answers_ok(tmp_path: Path) -> None:
    directory = tmp_path / "cli-cluster"
    result = subprocess.run(
        [sys.executable, "-m", "tests.cluster", "up", "--dir", str(directory)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )
    try:
        assert result.returncode == 0, result.stderr
        kubeconfig_path = directory.resolve() / "kubeconfig"
        assert f"kubeconfig: {kubeconfig_path}" in result.stdout
        # The default `up` is a whole cluster, not the bare pair.
        assert "(etcd, kube-apiserver, kube-controller-manager, kwok)" in result.stdout
        config = json.loads(kubeconfig_path.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        ca_file = config["clusters"][0]["cluster"]["certificate-authority"]
        token = config["users"][0]["user"]["token"]
        request = urllib.request.Request(f"{server}/readyz",
                                         headers={"Authorization": f"Bearer {token}"})
        context = ssl.create_default_context(cafile=ca_file)
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            assert response.read().decode() == "ok"
    finally:
        down = subprocess.run(
            [sys.executable, "-m", "tests.cluster", "down", "--dir", str(directory)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        )
    assert down.returncode == 0, down.stderr
    assert not directory.exists()


def test_up_fails_with_the_apiserver_log_when_it_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_command = harness._apiserver_command

    def broken_command(directory: Path, etcd_port: int, port: int,
                       **options: Any) -> list[str]:
        return [*real_command(directory, etcd_port, port, **options), "--no-such-flag=1"]

    monkeypatch.setattr(harness, "_apiserver_command", broken_command)
    directory = tmp_path / "broken"
    with pytest.raises(harness.ClusterError) as failure:
        harness.up(directory)
    harness.down(directory)
    message = str(failure.value)
    assert "kube-apiserver exited during start-up" in message
    assert "unknown flag: --no-such-flag" in message
