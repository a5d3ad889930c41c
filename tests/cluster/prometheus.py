"""A Prometheus server on the host scraping kpysched's pods as the chart's
ServiceMonitor tells prometheus-operator to.

The scrape config is what the operator generates from templates/servicemonitor.yaml:
Kubernetes service discovery of EndpointSlices in the release's namespace, kept when
the Service carries the chart's selector labels and the port is `http-metrics`; job =
the Service's name, namespace/pod/service/endpoint labels as the operator sets them;
HTTPS with a bearer token and insecureSkipVerify. Only the interval is shorter, so a
test sees data within seconds. Discovery reads the API as the cluster admin; the
scrape presents the token it is given (a ServiceAccount's, like an in-cluster
Prometheus), which kpysched checks with TokenReview and SubjectAccessReview.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.cluster import build
from tests.cluster.processes import (
    ClusterError,
    alive,
    free_port,
    http_get,
    log_tail,
    spawn,
)
from tests.cluster.processes import stop as stop_process
from tests.cluster.state import ClusterState

READY_SECONDS = 60.0
SCRAPE_INTERVAL = "5s"


def scrape_config(state: ClusterState, namespace: str, release: str,
                  token_file: Path) -> dict[str, Any]:
    selector = {"app_kubernetes_io_name": "kpysched", "app_kubernetes_io_instance": release}
    keep_labels = [
        {"action": "keep", "source_labels": [f"__meta_kubernetes_service_label_{name}",
                                             f"__meta_kubernetes_service_labelpresent_{name}"],
         "regex": f"({value});true"}
        for name, value in selector.items()
    ]
    return {
        "job_name": f"serviceMonitor/{namespace}/{release}/0",
        "scrape_interval": SCRAPE_INTERVAL,
        "scrape_timeout": "4s",
        "scheme": "https",
        "metrics_path": "/metrics",
        "authorization": {"type": "Bearer", "credentials_file": str(token_file)},
        "tls_config": {"insecure_skip_verify": True},
        "kubernetes_sd_configs": [{
            "role": "endpointslice",
            "api_server": state.server,
            "namespaces": {"names": [namespace]},
            "authorization": {"type": "Bearer", "credentials": state.token},
            "tls_config": {"ca_file": state.ca_file},
        }],
        "relabel_configs": [
            *keep_labels,
            {"action": "keep", "source_labels": ["__meta_kubernetes_endpointslice_port_name"],
             "regex": "http-metrics"},
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            {"source_labels": ["__meta_kubernetes_pod_container_name"],
             "target_label": "container"},
            {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job"},
            {"target_label": "endpoint", "replacement": "http-metrics"},
        ],
    }


@dataclass(slots=True)
class Prometheus:
    pid: int
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        body = json.loads(http_get(f"{self.url}/api/v1/{path}?{query}", timeout=10))
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus {path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def query_range(self, expr: str, start: float, end: float,
                    step: str = "5s") -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api(
            "query_range", query=expr, start=str(start), end=str(end), step=step)["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        active: list[dict[str, Any]] = self.api("targets")["activeTargets"]
        return active

    def stop(self) -> None:
        stop_process(self.pid)


def start(state: ClusterState, directory: Path, namespace: str, release: str,
          token: str) -> Prometheus:
    directory.mkdir(parents=True, exist_ok=True)
    token_file = directory / "token"
    token_file.write_text(token)
    config = directory / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [scrape_config(state, namespace, release, token_file)],
    }))
    port = free_port()
    log = directory / "prometheus.log"
    pid = spawn([str(build.binary_path("prometheus")), f"--config.file={config}",
                 f"--storage.tsdb.path={directory / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}"], log)
    server = Prometheus(pid, port, log)
    deadline = time.monotonic() + READY_SECONDS
    while True:
        if not alive(pid):
            raise ClusterError(f"prometheus exited during start-up:\n{log_tail(log)}")
        try:
            http_get(f"{server.url}/-/ready")
            return server
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ClusterError(f"prometheus not ready within {READY_SECONDS:.0f}s:\n"
                               f"{log_tail(log)}")
        time.sleep(0.5)
