"""kpysched's decisions API (decisions.kpysched.io) registered with the loopback
cluster's aggregation layer, for a kpysched run as a process on this host.

The aggregator reaches an APIService through its Service's endpoints
(--enable-aggregator-routing, set by cluster.py). Endpoints may not be loopback
addresses, so kpysched binds the host's own non-loopback address and a selector-less
Service points there by hand-written Endpoints and EndpointSlice, as a Service for an
external backend does. The serving certificate names the Service (the aggregator
verifies it against the APIService's caBundle); the front-proxy configuration is read by
kpysched from configmap kube-system/extension-apiserver-authentication, as in a cluster.
"""

from __future__ import annotations

import base64
import json
import socket
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


def host_address() -> str:
    """This host's IPv4 address on its default route: not loopback, so Endpoints
    validation accepts it; no packet is sent (UDP connect only picks the route)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.254", 9))
        address: str = probe.getsockname()[0]
    if address.startswith("127."):
        raise ClusterError("no non-loopback IPv4 address to publish kpysched's endpoint at")
    return address


def serving_pair(directory: Path) -> tuple[Path, Path]:
    from kpysched.serving.certs import self_signed_pair

    service_dns = f"{SERVICE}.{NAMESPACE}.svc"
    certificate, key = self_signed_pair(service_dns, alternate_dns=(SERVICE,))
    cert_file, key_file = directory / "decisions.crt", directory / "decisions.key"
    cert_file.write_bytes(certificate)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key)
    return cert_file, key_file


def _objects(address: str, port: int, ca_bundle: bytes) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": "kpysched-test-decisions"}
    endpoint_port = {"name": "https", "port": port, "protocol": "TCP"}
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": labels},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": labels},
         "subsets": [{"addresses": [{"ip": address}], "ports": [endpoint_port]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": SERVICE, "namespace": NAMESPACE,
                      "labels": {**labels, "kubernetes.io/service-name": SERVICE,
                                 "endpointslice.kubernetes.io/managed-by":
                                     "kpysched-test-harness"}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
         "ports": [endpoint_port]},
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
    address = host_address()
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
