"""`kubectl kpysched explain` through the API server's aggregation layer (issue 31): a
namespace-scoped user explains the pods of their namespace, is refused for another, and
never sends their credential to an address planted on the Lease."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.cluster import aggregated, build, kube, kubeconfig, kubectl
from tests.cluster.cluster import ClusterState, free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = {"kpysched-e2e": "nowhere"}


class Listener:
    """Records every connection made to 127.0.0.1:port (and answers nothing)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.connections: list[tuple[str, int]] = []
        self._socket = socket.create_server(("127.0.0.1", self.port))
        self._socket.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, peer = self._socket.accept()
            except TimeoutError:
                continue
            self.connections.append(peer)
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close()


async def _tenant_kubeconfig(cluster: ClusterState, api: client.ApiClient, namespace: str,
                             directory: Path) -> Path:
    """A ServiceAccount of `namespace` allowed to read decisions there only."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    await core.create_namespaced_service_account(namespace, {"metadata": {"name": "tenant"}})
    await rbac.create_namespaced_role(namespace, {
        "metadata": {"name": "explain"},
        "rules": [{"apiGroups": [aggregated.GROUP], "resources": ["pods"],
                   "verbs": ["get"]}]})
    await rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "tenant-explain"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "explain"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}]})
    token = await core.create_namespaced_service_account_token(
        "tenant", namespace, {"spec": {"expirationSeconds": 3600}})
    return kubeconfig.write(directory / "tenant.kubeconfig", server=cluster.server,
                            ca_file=cluster.ca_file, user="tenant", token=token.status.token)


def _kubectl_kpysched(config: Path, bin_dir: Path, *args: str,
                      ) -> subprocess.CompletedProcess[str]:
    """`kubectl kpysched ARGS` with kubectl-kpysched on the PATH as pip installs it."""
    shim = bin_dir / "kubectl-kpysched"
    shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    "from kpysched.cli import kubectl_plugin\n"
                    "sys.exit(kubectl_plugin())\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return subprocess.run(
        [str(build.binary_path("kubectl")), "kpysched", *args, "--kubeconfig", str(config)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})


async def test_tenant_explains_own_namespace_only_and_never_sends_credential_elsewhere(
    cluster: ClusterState, api: client.ApiClient, namespace: str, tmp_path: Path,
) -> None:
    other = await kube.create_namespace(api, "other")
    listener = Listener()
    try:
        for ns in (namespace, other):
            await kube.create_pod(api, ns, kube.pod_body(
                "stuck", scheduler_name="kpysched", node_selector=NOWHERE))
        tenant = await _tenant_kubeconfig(cluster, api, namespace, tmp_path)
        with aggregated.decisions_api(cluster):
            async def tried() -> bool:
                events = await client.EventsV1Api(api).list_namespaced_event(
                    namespace, field_selector="regarding.name=stuck")
                return any(e.reason == "FailedScheduling" for e in events.items)

            await kube.wait_for(tried, 60, "the pod tried by kpysched")
            # Planted where explain used to look: an address and a pod of the
            # attacker's choosing on the scheduler's Lease.
            kubectl.run(cluster, "annotate", "--overwrite", "-n", "kube-system",
                        "lease/kpysched",
                        f"kpysched.io/serving-address=https://127.0.0.1:{listener.port}",
                        f"kpysched.io/pod={other}/stuck")

            explained = _kubectl_kpysched(tenant, tmp_path, "explain", f"{namespace}/stuck",
                                          "--lease-namespace", "kube-system")
            raw = subprocess.run(
                [str(build.binary_path("kubectl")), "--kubeconfig", str(tenant), "get",
                 "--raw", f"/apis/{aggregated.GROUP}/v1alpha1/namespaces/{namespace}/pods/"
                 "stuck"], capture_output=True, text=True, timeout=60)
            refused = _kubectl_kpysched(tenant, tmp_path, "explain", f"{other}/stuck")
            admin_other = _kubectl_kpysched(Path(cluster.kubeconfig), tmp_path, "explain",
                                            f"{other}/stuck")
            # The registered group must not block the cluster's discovery: a stale group
            # stops namespace deletion (and GC, quota) everywhere.
            kubectl.run(cluster, "create", "namespace", f"{other}-gone")
            gone = kubectl.run(cluster, "delete", "namespace", f"{other}-gone", "--wait=true",
                               "--timeout=60s", check=False)
    finally:
        listener.close()
        await kube.delete_namespace(api, other)

    assert explained.returncode == 0, explained.stderr
    assert "Unschedulable" in explained.stdout, explained.stdout
    assert "no nodes available to schedule pods" in explained.stdout, explained.stdout
    assert "--lease-name/--lease-namespace are ignored" in explained.stderr
    assert raw.returncode == 0, raw.stderr
    body = json.loads(raw.stdout)
    assert body["kind"] == "PodDecisions" and body["pod"] == f"{namespace}/stuck"
    assert body["decisions"]

    assert refused.returncode == 3, refused.stderr
    assert "forbidden" in refused.stderr, refused.stderr
    assert f'in the namespace "{other}"' in refused.stderr, refused.stderr
    # The same pod is there for someone allowed: the refusal is RBAC, not absence.
    assert admin_other.returncode == 0, admin_other.stderr

    assert gone.returncode == 0, gone.stderr
    assert listener.connections == []
