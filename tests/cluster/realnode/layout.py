"""Where the real node keeps its state and which host names it claims.

Everything lives under `<cluster dir>/node/`; the host resources that cannot (the
bridge, the cgroup parent, the pod subnet) get names derived from that directory,
so two clusters on one machine do not collide and `down` knows exactly what is
its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

NODE_NAME = "kpysched-node"


@dataclass(frozen=True, slots=True)
class NodeLayout:
    root: Path  # <cluster dir>/node

    @classmethod
    def for_cluster(cls, cluster_dir: Path) -> NodeLayout:
        return cls(cluster_dir.resolve() / "node")

    @property
    def _tag(self) -> str:
        return hashlib.sha256(str(self.root).encode()).hexdigest()[:6]

    # Host resources, named after this node's directory.
    @property
    def bridge(self) -> str:
        return f"kpy{self._tag}"  # within Linux's 15-character interface names

    @property
    def cgroup_root(self) -> str:
        """The kubelet's cgroupRoot: a top-level cgroup of our own in every hierarchy."""
        return f"/kpysched-node-{self._tag}"

    @property
    def subnet_octet(self) -> int:
        return 100 + int(self._tag[:2], 16) % 100

    @property
    def pod_subnet(self) -> str:
        return f"10.88.{self.subnet_octet}.0/24"

    @property
    def gateway(self) -> str:
        """The bridge's own address: the host reaches pods through it."""
        return f"10.88.{self.subnet_octet}.1"

    # containerd
    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.root / "containerd" / "runc"

    # CNI
    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.root / "cni" / "ipam"

    # kubelet
    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet-config.json"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    # Logs and what `down` needs.
    @property
    def containerd_log(self) -> Path:
        return self.root / "containerd.log"

    @property
    def kubelet_log(self) -> Path:
        return self.root / "kubelet.log"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.containerd_socket}"
