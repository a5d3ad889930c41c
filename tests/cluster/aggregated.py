"""kpysched's decisions API (decisions.kpysched.io) registered with the loopback
cluster's aggregation layer, for a kpysched run as a process on this host.

The aggregator reaches an APIService through its Service's endpoints
(--enable-aggregator-routing, set by cluster.py). Endpoints may not be loopback
addresses, so kpysched binds an address on a bridge the harness adds for the
purpose (as it adds the real node's pod bridge), and a selector-less Service points
there by hand-written Endpoints and EndpointSlice, as a Service for an external backend
does. The serving certificate names the Service (the aggregator
verifies it against the APIService's caBundle); the front-proxy configuration is read by
kpysched from configmap kube-system/extension-apiserver-authentication, as in a cluster.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.cluster import kubectl
from tests.cluster.cluster import ClusterError, ClusterState
from tests.cluster.kpysched_process import KpyschedProcess

GROUP = "decisions.kpysched.io"
APISERVICE = f"v1alpha1.{GROUP}"
SERVICE = "kpysched-decisions"
NAMESPACE = "kube-system"
AVAILABLE_TIMEOUT_SECONDS = 60.0


@contextmanager
def endpoint_address(state: ClusterState) -> Iterator[str]:
    """An address of the harness's own for kpysched's endpoint, while the block runs.

    Endpoints may not be loopback addresses, and the tests send nothing to the host's
    other interfaces: the harness adds a bridge of its own (no ports; the kernel here
    has no dummy interfaces) holding one address of a /30 named after the cluster's
    directory (two clusters of one run get two), as it creates the real node's pod
    bridge, and removes it afterwards. The API server reaches it on this host; no
    packet leaves the machine."""
    digest = hashlib.sha256(str(Path(state.dir).resolve()).encode()).hexdigest()
    name = f"kpa{digest[:8]}"  # interface names hold at most 15 characters
    block = int(digest[8:12], 16) % 16384  # one of the /30s of 10.90.0.0/16
    address = str(ipaddress.IPv4Address("10.90.0.0") + block * 4 + 1)
    _delete_interface(name)  # left by a run that was killed
    _ip("link", "add", "name", name, "type", "bridge")
    try:
        _ip("addr", "add", f"{address}/30", "dev", name)
        _ip("link", "set", name, "up")
        yield address
    finally:
        _delete_interface(name)


def _ip(*arguments: str) -> None:
    result = subprocess.run(("ip", *arguments), capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise ClusterError(f"`ip {' '.join(arguments)}` failed: {result.stderr.strip()}")


def _delete_interface(name: str) -> None:
    if subprocess.run(("ip", "link", "show", name), capture_output=True,
                      timeout=30).returncode == 0:
        _ip("link", "del", name)


def serving_pair(directory: Path) -> tuple[Path, Path]:
    from kpysched.serving.certs import self_signed_pair

    service_dns = f"{SERVICE}.{NAMESPACE}.svc"
    certificate, key = self_signed_pair(service_dns, alternate_dns=(SERVICE,))
    cert_file, key_file = directory / "decisions.crt", directory / "decisions.key"
    cert_file.write_bytes(certificate)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    return cert_file, key_file


def service_to_address(name: str, namespace: str, address: str, port: int,
                       labels: dict[str, str]) -> list[dict[str, Any]]:
    """A Service with no selector whose Endpoints and EndpointSlice point at a process
    the harness runs on the host (`address`:`port`), on service port 443 (https): how
    kube-apiserver reaches an aggregated API or a webhook served outside the cluster."""
    endpoint_port = {"name": "https", "port": port, "protocol": "TCP"}
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": name, "namespace": namespace, "labels": labels},
         "subsets": [{"addresses": [{"ip": address}], "ports": [endpoint_port]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": name, "namespace": namespace,
                      "labels": {**labels, "kubernetes.io/service-name": name,
                                 "endpointslice.kubernetes.io/managed-by":
                                     "kpysched-test-harness"}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
         "ports": [endpoint_port]},
    ]


def _objects(address: str, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": "kpysched-test-decisions"}
    return [
        *service_to_address(SERVICE, NAMESPACE, address, port, labels),
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": APISERVICE, "labels": labels},
         "spec": {"group": GROUP, "version": "v1alpha1",
                  "service": {"namespace": NAMESPACE, "name": SERVICE, "port": 443},
                  "caBundle": base64.b64encode(ca_bundle).decode(),
                  "groupPriorityMinimum": 100, "versionPriority": 100}},
    ]


def _available(state: ClusterState) -> tuple[bool, str]:
    service = kubectl.get_json(state, "apiservice", APISERVICE)
    for condition in service.get("status", {}).get("conditions", []):
        if condition.get("type") == "Available":
            return condition.get("status") == "True", str(condition.get("message", ""))
    return False, "no Available condition yet"


@contextmanager
def decisions_api(state: ClusterState, config: dict[str, Any] | None = None,
                  log_level: str = "info") -> Iterator[KpyschedProcess]:
    """A leading kpysched serving its decisions, reachable through the API server at
    /apis/decisions.kpysched.io/v1alpha1 until the block ends."""
    with endpoint_address(state) as address:
        yield from _serving_at(state, address, config, log_level)


def _serving_at(state: ClusterState, address: str, config: dict[str, Any] | None,
                log_level: str) -> Iterator[KpyschedProcess]:
    directory = Path(state.dir) / "decisions-api"
    directory.mkdir(exist_ok=True)
    cert_file, key_file = serving_pair(directory)
    process = KpyschedProcess(
        state, config, log_level=log_level, secure=True, extra_args=(
            f"--bind-address={address}", f"--tls-cert-file={cert_file}",
            f"--tls-private-key-file={key_file}",
            f"--authentication-kubeconfig={state.kubeconfig}",
            f"--authorization-kubeconfig={state.kubeconfig}",
            "--enable-decision-endpoint"))
    manifest = directory / "objects.json"
    manifest.write_text(json.dumps(
        {"apiVersion": "v1", "kind": "List",
         "items": _objects(address, process.port, cert_file.read_bytes())}))
    with process:
        kubectl.run(state, "apply", "-f", str(manifest))
        try:
            deadline = time.monotonic() + AVAILABLE_TIMEOUT_SECONDS
            available, why = _available(state)
            while not available and time.monotonic() < deadline:
                time.sleep(0.5)
                available, why = _available(state)
            if not available:
                raise ClusterError(f"APIService {APISERVICE} not available after "
                                   f"{AVAILABLE_TIMEOUT_SECONDS:.0f}s: {why}")
            yield process
        finally:
            kubectl.run(state, "delete", "--ignore-not-found", "-f", str(manifest))
