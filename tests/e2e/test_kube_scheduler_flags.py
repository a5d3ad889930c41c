"""kpysched started as kube-scheduler is: the flags kubeadm writes into kube-scheduler's
static-pod manifest (cmd/kubeadm/app/phases/controlplane/manifests.go,
getSchedulerCommand, v1.36.4) with only the binary name changed, serving HTTPS with
delegated authentication and authorization; --write-config-to; refusals.

One addition to kubeadm's flags: --secure-port on a free port, since the machine is
shared and 10259 may be taken; everything else is what kubeadm passes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from kpysched.api.client import RawApi
from kpysched.config import load_config
from kpysched.config.features import Features
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.cluster import kube, releases
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess

pytestmark = pytest.mark.e2e

KPYSCHED = str(Path(sys.executable).parent / "kpysched")


def kubeadm_flags(kubeconfig: str) -> list[str]:
    """kubeadm's defaultArguments for kube-scheduler, in its order."""
    return ["--bind-address=127.0.0.1", "--leader-elect=true", f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}"]


class AsKubeScheduler(KpyschedProcess):
    """The kpysched console script with kubeadm's flags and nothing of the runner's."""

    def __init__(self, state: ClusterState, *flags: str) -> None:
        super().__init__(state, secure=True)
        self.command = [KPYSCHED, *kubeadm_flags(state.kubeconfig),
                        f"--secure-port={self.port}", *flags]
        self.env.pop("KPYSCHED_KUBECONFIG")  # --kubeconfig must do it


async def _post(raw: RawApi, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await raw.request("POST", path, body, throttle=False)
    assert response.ok, f"POST {path}: HTTP {response.status}: {response.message()}"
    created: dict[str, Any] = json.loads(response.body)
    return created


@pytest.fixture
async def scraper_role(api: client.ApiClient) -> AsyncIterator[str]:
    """The ClusterRole the chart documents for a scraper."""
    raw = RawApi(api, qps=0)
    name = kube.unique_name("kpysched-scraper")
    await _post(raw, "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    yield name
    for kind in ("clusterrolebindings", "clusterroles"):
        await raw.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}",
                          throttle=False)


async def _service_account_token(raw: RawApi, namespace: str, name: str) -> str:
    await _post(raw, f"/api/v1/namespaces/{namespace}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    review = await _post(raw, f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                          "spec": {"expirationSeconds": 3600}})
    token: str = review["status"]["token"]
    return token


async def _get(kp: KpyschedProcess, path: str, token: str | None = None) -> tuple[int, str]:
    return await asyncio.to_thread(kp.get, path, token)


async def test_kubeadm_s_manifest_flags_start_it_and_guard_metrics(
    cluster: ClusterState, api: client.ApiClient, namespace: str, scraper_role: str,
) -> None:
    raw = RawApi(api, qps=0)
    denied = await _service_account_token(raw, namespace, "no-grant")
    allowed = await _service_account_token(raw, namespace, "scraper")
    await _post(raw, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": scraper_role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": scraper_role},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}]})

    with AsKubeScheduler(cluster) as kp:
        assert kp.url.startswith("https://")
        assert await _get(kp, "/healthz") == (200, "ok")
        assert (await _get(kp, "/readyz"))[0] == 200
        status, body = await _get(kp, "/metrics")
        assert status == 403, body
        assert json.loads(body)["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/metrics"')
        assert (await _get(kp, "/metrics", "not-a-token"))[0] == 401
        status, body = await _get(kp, "/metrics", cluster.token)  # system:masters
        assert status == 200
        assert "scheduler_schedule_attempts_total" in body
        status, body = await _get(kp, "/metrics", denied)
        assert status == 403, body
        assert f'User "system:serviceaccount:{namespace}:no-grant"' in json.loads(body)["message"]
        # RBAC learns of the new binding through a watch: allow it a moment.
        deadline = asyncio.get_running_loop().time() + 10
        while (status := (await _get(kp, "/metrics", allowed))[0]) != 200:
            assert asyncio.get_running_loop().time() < deadline, status
            await asyncio.sleep(0.5)
        events = kp.log_events()
    listening = next(e for e in events if e.get("event") == "server.listening")
    assert listening["tls"] is True and listening["authentication"] is True
    # The client CA was looked up in kube-system/extension-apiserver-authentication.
    assert listening["client_certificates"] is True
    assert not [e for e in events if e.get("event") == "flag.ignored"]


def test_write_config_to_writes_the_effective_configuration_which_loads_back(
    cluster: ClusterState, tmp_path: Path,
) -> None:
    source = tmp_path / "source.yaml"
    source.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: kpysched\n"
        "  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n"
        "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        type: MostAllocated\n- schedulerName: kpysched-two\n")
    written = tmp_path / "written.yaml"
    # With --config, --kubeconfig is ignored and the file names no cluster, so nothing
    # says which release the file is for: the flag does (else it would be the newest,
    # whose defaulted args a v1.36 cluster's kpysched refuses, as kube-scheduler would).
    result = subprocess.run(
        [KPYSCHED, *kubeadm_flags(cluster.kubeconfig), f"--config={source}",
         f"--emulated-version={cluster.release}",
         "--leader-elect-lease-duration=1m30s", f"--write-config-to={written}"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # As upstream: with --config, --kubeconfig is ignored (and said so); --leader-elect*
    # still apply.
    ignored = [json.loads(line) for line in result.stderr.splitlines()
               if '"flag.ignored"' in line]
    assert [e["flag"] for e in ignored] == ["--kubeconfig"]
    text = written.read_text()
    assert "leaseDuration: 1m30s" in text
    registry = full_registry(IN_TREE)
    features = Features(release=releases.get(cluster.release).minor)
    config, profiles = load_config(written, registry, features=features)
    _, expected = load_config(source, registry,
                              {"leaderElection": {"leaseDuration": "90s"}}, features)
    assert profiles == expected
    assert config.leader_election.lease_duration == 90.0
    assert config.percentage_of_nodes_to_score == 30

    # And kpysched runs from it.
    kp = KpyschedProcess(cluster, wait_for="scheduler.informers_synced")
    kp.command += ["--config", str(written)]
    with kp:
        assert kp.get("/healthz") == (200, "ok")


@pytest.mark.parametrize(("flag", "named"), [
    ("--profiling=true", "--profiling"),
    ("--profiling", "--profiling"),
    ("--tls-cipher-suites=TLS_AES_128_GCM_SHA256", "--tls-cipher-suites"),
    ("--tls-sni-cert-key=/etc/a.crt,/etc/a.key", "--tls-sni-cert-key"),
    ("--feature-gates=SchedulerAsyncAPICalls=true", "SchedulerAsyncAPICalls"),
    ("--feature-gates=NoSuchGate=true", "NoSuchGate"),
    ("--leader-elect-resource-lock=endpointsleases", "--leader-elect-resource-lock"),
    ("--vmodule=scheduler*=5", "--vmodule"),
    ("--emulated-version=1.35", "--emulated-version"),
    ("--no-such-flag", "--no-such-flag"),
], ids=["profiling-true", "profiling-bare", "tls-cipher-suites", "tls-sni-cert-key",
        "gate-changed", "gate-unknown", "resource-lock", "vmodule", "emulated-version",
        "unknown-flag"])
def test_a_flag_it_cannot_honour_exits_2_naming_it(flag: str, named: str,
                                                   tmp_path: Path) -> None:
    # The kubeconfig does not exist: start-up must stop at the flags, before connecting.
    result = subprocess.run([KPYSCHED, *kubeadm_flags(str(tmp_path / "absent")), flag],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr


@pytest.mark.parametrize(("argv", "expected"), [
    (["--version"], "kpysched "),
    (["run", "--version=raw"], "kube-scheduler v1.37.2 flags"),
    (["run", "--emulated-version=1.36", "--version=raw"], "kube-scheduler v1.36.4 flags"),
    (["version"], "kpysched "),
    (["--help"], "--authorization-always-allow-paths"),
    (["-h"], "--insecure-serving"),
], ids=["version", "version-raw", "version-raw-v1.36", "version-command", "help",
        "help-shorthand"])
def test_version_and_help_exit_0(argv: list[str], expected: str) -> None:
    result = subprocess.run([KPYSCHED, *argv], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
