"""Kueue (sigs.k8s.io/kueue) beside kpysched on the loopback test cluster.

Kueue decides *when* a Job may start (quota, queues, topology); the pods it lets go
are then placed by the scheduler they name, here kpysched. `running(state)` installs
Kueue as its release manifests do and runs its controller manager until the block
ends:

* the CRDs from the module's config/components/crd/bases, with the conversion-webhook
  patches its kustomization applies (config/components/crd/patches/webhook_in_*);
* its webhook configurations from config/components/webhook/manifests.yaml, renamed
  and pointed at `kueue-webhook-service` in `kueue-system` as kustomize would, keeping
  only the webhooks of Kueue's own resources and of the integrations it is started
  with (the others would call a handler Kueue does not serve, failurePolicy Fail);
* its controller manager (build.py builds it from kueue_tools/go.mod) with a
  Configuration written here.

Webhooks on loopback: the API server reaches a webhook Service through its endpoints
(--enable-aggregator-routing, which kube-apiserver uses for webhooks as for
APIServices), endpoints may not be loopback addresses, so Kueue's webhook server binds
an address on a bridge of the harness's own (aggregated.endpoint_address) and a
selector-less Service points there. Kueue's own certificate management
(internalCertManagement, its default) then works unchanged: it signs a certificate for
kueue-webhook-service.kueue-system.svc, the name the API server verifies, and injects
its CA into the webhook configurations and the CRDs' conversion webhooks.

The Configuration's fields, and why each is set:

* `namespace: kueue-system`: where its Secret and Service live, as in a release install.
* `leaderElection.leaderElect: false`: one instance per cluster; no Lease to wait out.
* `health.healthProbeBindAddress`, `metrics.bindAddress`, `webhook.port` and
  `visibilityServer` (with `--visibility-server-port`, which its main reads): loopback
  (or the bridge) and free ports, so several clusters of one test run can each have a
  Kueue. The visibility API is served but not registered as an APIService.
* `webhook.host`: the bridge address the Service's endpoints name; `webhook.certDir`:
  in the cluster directory (the default /tmp/k8s-webhook-server is shared by all).
  In a cluster the kubelet mounts the Secret Kueue's rotator fills there; here the
  harness copies it into the directory while Kueue starts (`_mount_secret`), and
  Kueue's certificate (valid for years) is not rotated while a test runs.
* `integrations.frameworks`: what the caller asks (default only `batch/job`).
* `clientConnection`: Kueue's release defaults (qps 50, burst 100).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import aggregated, build, kubectl, processes
from tests.cluster.processes import ClusterError
from tests.cluster.state import ClusterState, Component

NAME = "kueue"
NAMESPACE = "kueue-system"
SERVICE = "kueue-webhook-service"
WEBHOOK_SECRET = "kueue-webhook-server-cert"
API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
READY_TIMEOUT_SECONDS = 120.0
# The integrations and the API group and resource their webhooks act on.
FRAMEWORK_RESOURCES: Mapping[str, tuple[str, str]] = {
    "batch/job": ("batch", "jobs"),
    "pod": ("", "pods"),
    "deployment": ("apps", "deployments"),
    "statefulset": ("apps", "statefulsets"),
}
_WEBHOOK_CONFIGURATIONS = {"mutating-webhook-configuration": "kueue-mutating-webhook-configuration",
                           "validating-webhook-configuration":
                               "kueue-validating-webhook-configuration"}
# The kustomization's namespaceSelector: Kueue never manages its own or kube-system's pods.
_EXCLUDED_NAMESPACES = {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                              "operator": "NotIn",
                                              "values": ["kube-system", NAMESPACE]}]}


def source_dir() -> Path:
    """The pinned Kueue module in the Go module cache (downloaded if missing)."""
    result = subprocess.run(
        ["go", "mod", "download", "-json", f"sigs.k8s.io/kueue@{build.KUEUE_VERSION}"],
        cwd=build.KUEUE_TOOLS_DIR, capture_output=True, text=True, timeout=600,
        env={**os.environ, "GOFLAGS": "-mod=readonly"})
    if result.returncode != 0:
        raise ClusterError(f"`go mod download sigs.k8s.io/kueue@{build.KUEUE_VERSION}` "
                           f"failed: {result.stderr.strip()}")
    return Path(json.loads(result.stdout)["Dir"])


def _yaml_documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def custom_resource_definitions(source: Path) -> list[dict[str, Any]]:
    """The release's CRDs, with conversion through Kueue's webhook where its
    kustomization puts it."""
    crd_dir = source / "config" / "components" / "crd"
    kustomization = yaml.safe_load((crd_dir / "kustomization.yaml").read_text())
    definitions = {body["metadata"]["name"]: body
                   for relative in kustomization["resources"]
                   for body in _yaml_documents(crd_dir / relative)}
    for patch in kustomization.get("patches", ()):
        for body in _yaml_documents(crd_dir / patch["path"]):
            conversion = copy.deepcopy(body["spec"]["conversion"])
            conversion["webhook"]["clientConfig"]["service"].update(
                namespace=NAMESPACE, name=SERVICE)
            definitions[body["metadata"]["name"]]["spec"]["conversion"] = conversion
    return list(definitions.values())


def _kept(webhook: Mapping[str, Any], resources: set[tuple[str, str]]) -> bool:
    for rule in webhook.get("rules", ()):
        for group in rule.get("apiGroups", ()):
            if group == "kueue.x-k8s.io":
                return True
            if any((group, resource) in resources for resource in rule.get("resources", ())):
                return True
    return False


def webhook_configurations(source: Path, frameworks: Sequence[str]) -> list[dict[str, Any]]:
    """Kueue's Mutating/ValidatingWebhookConfigurations for its own resources and
    `frameworks`, calling kueue-webhook-service in kueue-system."""
    unknown = sorted(set(frameworks) - FRAMEWORK_RESOURCES.keys())
    if unknown:
        raise ValueError(f"kueue frameworks {unknown}: the harness runs only "
                         f"{sorted(FRAMEWORK_RESOURCES)} (no other integration's CRDs here)")
    resources = {FRAMEWORK_RESOURCES[f] for f in frameworks}
    manifests = source / "config" / "components" / "webhook" / "manifests.yaml"
    configurations = []
    for body in _yaml_documents(manifests):
        body["metadata"]["name"] = _WEBHOOK_CONFIGURATIONS[body["metadata"]["name"]]
        body["webhooks"] = [w for w in body["webhooks"] if _kept(w, resources)]
        for webhook in body["webhooks"]:
            webhook["clientConfig"]["service"].update(namespace=NAMESPACE, name=SERVICE)
            if any(g in ("", "apps") for r in webhook["rules"] for g in r["apiGroups"]):
                webhook["namespaceSelector"] = _EXCLUDED_NAMESPACES
        configurations.append(body)
    return configurations


def configuration(directory: Path, address: str, *, webhook_port: int, health_port: int,
                  metrics_port: int, visibility_port: int, frameworks: Sequence[str],
                  extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2); see the module notes."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "webhook": {"host": address, "port": webhook_port,
                    "certDir": str(directory / "webhook-certs")},
        "visibilityServer": {"bindAddress": "127.0.0.1", "bindPort": visibility_port},
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": list(frameworks)},
        **(extra or {}),
    }


def _service_objects(address: str, port: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        # Empty, as config/components/internalcert/secret.yaml: Kueue's certificate
        # rotator fills it and fails to start when it is missing.
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": WEBHOOK_SECRET, "namespace": NAMESPACE}},
        *aggregated.service_to_address(SERVICE, NAMESPACE, address, port,
                                       {"app.kubernetes.io/name": "kueue"}),
    ]


def _apply(state: ClusterState, path: Path, objects: Sequence[Mapping[str, Any]]) -> None:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    # Server-side: Kueue's Workload CRD is larger than the last-applied annotation allows.
    kubectl.run(state, "apply", "--server-side", "--force-conflicts",
                "--field-manager=kpysched-test-harness", "-f", str(path))


def _admits(state: ClusterState, probe: Path) -> bool:
    """A server-side dry run of a ClusterQueue passes Kueue's mutating and validating
    webhooks: the API server reaches Kueue and trusts its certificate."""
    result = kubectl.run(state, "create", "--dry-run=server", "-f", str(probe), check=False)
    return result.returncode == 0


def _mount_secret(state: ClusterState, cert_dir: Path) -> bool:
    """Write the webhook Secret's keys into `cert_dir`, as the kubelet does for the
    Secret volume of Kueue's pod: Kueue's rotator fills the Secret and then waits for
    the files to appear before its webhook server starts. True once they are there."""
    secret = kubectl.get_json(state, "secret", "-n", NAMESPACE, WEBHOOK_SECRET)
    data = secret.get("data") or {}
    if not all(key in data for key in ("tls.crt", "tls.key", "ca.crt")):
        return False
    cert_dir.mkdir(exist_ok=True)
    for key, value in data.items():
        content = base64.b64decode(value)
        path = cert_dir / key
        if not path.is_file() or path.read_bytes() != content:
            partial = path.with_suffix(".partial")
            partial.write_bytes(content)
            partial.replace(path)
    return True


def _wait_ready(state: ClusterState, component: Component, cert_dir: Path,
                probe: Path) -> None:
    processes.wait_until(
        NAME, component.pid, component.log,
        lambda: (_mount_secret(state, cert_dir)
                 and processes.http_get(component.health_url).strip() == "ok"
                 and _admits(state, probe)),
        READY_TIMEOUT_SECONDS)


@contextmanager
def running(state: ClusterState, *, frameworks: Sequence[str] = ("batch/job",),
            feature_gates: Mapping[str, bool] | None = None,
            extra_configuration: Mapping[str, Any] | None = None) -> Iterator[Component]:
    """Kueue's CRDs, webhooks and controller manager on the cluster until the block ends
    (then the process stops and the webhook configurations go, so nothing calls a
    webhook that is gone)."""
    directory = Path(state.dir) / NAME
    directory.mkdir(exist_ok=True)
    source = source_dir()
    binary = build.binary_path(NAME)
    hooks = webhook_configurations(source, frameworks)
    with aggregated.endpoint_address(state) as address:
        webhook_port, health_port, metrics_port, visibility_port = (
            processes.free_port() for _ in range(4))
        definitions = custom_resource_definitions(source)
        _apply(state, directory / "crds.json", definitions)
        kubectl.wait_established(state, [body["metadata"]["name"] for body in definitions])
        _apply(state, directory / "service.json", _service_objects(address, webhook_port))
        _apply(state, directory / "webhooks.json", hooks)
        config_path = directory / "configuration.yaml"
        config_path.write_text(yaml.safe_dump(configuration(
            directory, address, webhook_port=webhook_port, health_port=health_port,
            metrics_port=metrics_port, visibility_port=visibility_port, frameworks=frameworks,
            extra=extra_configuration)))
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in (feature_gates or {}).items())
        command = [str(binary), f"--config={config_path}", f"--kubeconfig={state.kubeconfig}",
                   f"--visibility-server-port={visibility_port}",
                   *([f"--feature-gates={gates}"] if gates else [])]
        log = directory / "kueue.log"
        component = Component(NAME, processes.spawn(command, log), command, str(log),
                              health_url=f"http://127.0.0.1:{health_port}/readyz")
        state.components.append(component)
        state.save()
        probe = directory / "probe.json"
        probe.write_text(json.dumps({"apiVersion": API_VERSION, "kind": "ClusterQueue",
                                     "metadata": {"name": "harness-probe"}, "spec": {}}))
        try:
            _wait_ready(state, component, directory / "webhook-certs", probe)
            yield component
        finally:
            processes.stop(component.pid)
            state.components.remove(component)
            state.save()
            for body in hooks:
                kubectl.run(state, "delete", "--ignore-not-found", body["kind"].lower(),
                            body["metadata"]["name"], check=False)
