"""What a running test cluster is: the record `down` and `restart-apiserver` work from.

`state.json` in the cluster directory holds the pids, ports, command lines and log
paths of etcd and kube-apiserver, and one `Component` entry for every process
started beside them (kube-controller-manager, KWOK, ...). The feature gates and
runtime-config the control plane runs with (`gates.py`) are kept too, so a scheduler
started later against the cluster can be given the same gates.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.cluster.processes import ClusterError


@dataclass(slots=True)
class Component:
    """A process started after kube-apiserver; it talks to the cluster through its API."""

    name: str
    pid: int
    command: list[str]
    log: str
    # Where the component answers "ok" once ready ("" when it has no such endpoint).
    health_url: str = ""


@dataclass(slots=True)
class ClusterState:
    dir: str
    etcd_pid: int
    etcd_client_port: int
    etcd_peer_port: int
    etcd_log: str
    etcd_command: list[str]
    apiserver_pid: int
    apiserver_port: int
    apiserver_log: str
    apiserver_command: list[str]
    token: str
    kubeconfig: str
    ca_file: str
    kubernetes_version: str
    components: list[Component] = field(default_factory=list)
    # Passed to kube-apiserver and kube-controller-manager (their commands above
    # already hold them, so restarts keep them); empty means upstream's defaults.
    feature_gates: dict[str, bool] = field(default_factory=dict)
    runtime_config: list[str] = field(default_factory=list)

    @property
    def release(self) -> str:
        """The harness's name of the control plane's release ("1.37" for v1.37.2)."""
        return ".".join(self.kubernetes_version.lstrip("v").split(".")[:2])

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def pki(self) -> Path:
        return Path(self.dir) / "pki"

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def save(self) -> None:
        Path(self.dir, "state.json").write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, directory: Path) -> ClusterState:
        path = directory / "state.json"
        if not path.is_file():
            raise ClusterError(
                f"no cluster state at {path}: run `python -m tests.cluster up` first")
        fields: dict[str, Any] = json.loads(path.read_text())
        fields["components"] = [Component(**c) for c in fields.get("components", [])]
        return cls(**fields)
