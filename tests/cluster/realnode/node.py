"""Start and stop the real node: containerd, the images, the kubelet, and the host bits.

`start` saves `node/state.json` before it creates anything on the host, so `stop`
(run by the cluster's `down`) can undo a start that failed half way.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.cluster.cluster import ClusterError, ClusterState, free_port, log_tail
from tests.cluster.processes import alive
from tests.cluster.realnode import api, build, config, host, images, pki, processes
from tests.cluster.realnode.layout import NODE_NAME, NodeLayout

CONTAINERD_TIMEOUT_SECONDS = 60.0
NODE_READY_TIMEOUT_SECONDS = 120.0
CONTAINERD_NAMESPACE = "k8s.io"  # the namespace containerd's CRI plugin works in


@dataclass(slots=True)
class NodeState:
    root: str
    node_name: str
    kubelet_port: int
    kubelet_healthz_port: int
    saved_sysctls: dict[str, str]
    created_host_dirs: list[str]
    containerd_pid: int = 0
    kubelet_pid: int = 0
    containerd_command: list[str] = field(default_factory=list)
    kubelet_command: list[str] = field(default_factory=list)

    @property
    def layout(self) -> NodeLayout:
        return NodeLayout(Path(self.root))

    def save(self) -> None:
        self.layout.state_file.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, layout: NodeLayout) -> NodeState | None:
        if not layout.state_file.is_file():
            return None
        return cls(**json.loads(layout.state_file.read_text()))


def ctr(layout: NodeLayout, *args: str, timeout: float = 60.0) -> str:
    """Run our `ctr` against this node's containerd, in the CRI namespace."""
    command = [str(build.program_path("ctr")), "--address", str(layout.containerd_socket),
               "--namespace", CONTAINERD_NAMESPACE, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise ClusterError(f"`{' '.join(command)}` failed: {result.stderr.strip()}")
    return result.stdout


def sandboxes(layout: NodeLayout) -> list[dict[str, Any]]:
    """The CRI pod sandboxes containerd holds (id, name, namespace, uid, state)."""
    command = [str(build.program_path("cri-sandboxes")), "-endpoint", layout.endpoint, "list"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=90)
    if result.returncode != 0:
        raise ClusterError(f"`{' '.join(command)}` failed: {result.stderr.strip()}")
    listed: list[dict[str, Any]] = json.loads(result.stdout)
    return listed


def diagnosis(layout: NodeLayout) -> str:
    """The kubelet's and containerd's last log lines, for a failure message."""
    return (f"last lines of {layout.kubelet_log}:\n{log_tail(layout.kubelet_log)}\n"
            f"last lines of {layout.containerd_log}:\n{log_tail(layout.containerd_log)}")


def _start_containerd(node: NodeState) -> None:
    layout = node.layout
    # containerd finds its shim on PATH; runc and the CNI plugins are named in its config.
    shim_dir = build.program_path("containerd-shim-runc-v2").parent
    env = dict(os.environ, PATH=f"{shim_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    node.containerd_command = [str(build.program_path("containerd")),
                               "--config", str(layout.containerd_config)]
    node.containerd_pid = processes.spawn(node.containerd_command, layout.containerd_log, env)
    node.save()
    deadline = time.monotonic() + CONTAINERD_TIMEOUT_SECONDS
    while True:
        if not alive(node.containerd_pid):
            raise ClusterError(f"containerd exited during start-up; {diagnosis(layout)}")
        if layout.containerd_socket.exists():
            try:
                ctr(layout, "version", timeout=10)
                return
            except (ClusterError, subprocess.TimeoutExpired):
                pass
        if time.monotonic() > deadline:
            raise ClusterError(f"containerd did not answer on {layout.containerd_socket} within "
                               f"{CONTAINERD_TIMEOUT_SECONDS:.0f}s; {diagnosis(layout)}")
        time.sleep(0.2)


def _import_images(layout: NodeLayout) -> None:
    for image in images.IMAGES:
        ctr(layout, "images", "import", "--snapshotter", "overlayfs", str(image.archive))
    listed = ctr(layout, "images", "list", "--quiet").split()
    missing = [i.name for i in images.IMAGES if i.name not in listed]
    if missing:
        raise ClusterError(f"images {missing} not in containerd after import (have {listed})")


def _start_kubelet(node: NodeState, cluster: ClusterState) -> None:
    layout = node.layout
    node.kubelet_command = [
        str(build.program_path("kubelet")),
        f"--config={layout.kubelet_config}",
        f"--kubeconfig={layout.kubelet_kubeconfig}",
        f"--root-dir={layout.kubelet_root}",
        # Unused (the serving cert is given) but its default is under /var/lib/kubelet.
        f"--cert-dir={layout.pki}",
        f"--hostname-override={node.node_name}",
        # kubelet refuses a loopback node IP; the bridge's address is on this machine
        # only, unlike the VM's own (which the kubelet would pick by default).
        f"--node-ip={layout.gateway}",
        "--v=2",
    ]
    node.kubelet_pid = processes.spawn(node.kubelet_command, layout.kubelet_log)
    node.save()
    deadline = time.monotonic() + NODE_READY_TIMEOUT_SECONDS
    last = "the Node object does not exist yet"
    while True:
        if not alive(node.kubelet_pid):
            raise ClusterError(f"kubelet exited during start-up; {diagnosis(layout)}")
        try:
            body = api.get_node(cluster, node.node_name)
            if body is not None and api.is_ready(body):
                api.lift_not_ready_taint(cluster, body)
                return
            if body is not None:
                last = f"Node conditions: {body.get('status', {}).get('conditions')}"
        except (urllib.error.URLError, OSError) as error:
            last = f"API error: {error}"
        if time.monotonic() > deadline:
            raise ClusterError(f"Node {node.node_name} not Ready within "
                               f"{NODE_READY_TIMEOUT_SECONDS:.0f}s ({last}); {diagnosis(layout)}")
        time.sleep(0.5)


def start(cluster: ClusterState) -> NodeState:
    """Bring the node up against a running cluster; return once the Node is Ready."""
    build.ensure_built()
    layout = NodeLayout.for_cluster(Path(cluster.dir))
    if layout.state_file.exists():
        raise ClusterError(f"{layout.root} already holds a node: run `down` first")
    host.preflight()
    # A unix socket path holds at most 107 bytes, and containerd adds ".ttrpc".
    if len(str(layout.containerd_socket)) + len(".ttrpc") > 107:
        raise ClusterError(f"{layout.containerd_socket} is too long for a unix socket; "
                           "use a shorter cluster --dir")
    layout.root.mkdir(parents=True, exist_ok=True)
    node = NodeState(
        root=str(layout.root), node_name=NODE_NAME, kubelet_port=free_port(),
        kubelet_healthz_port=free_port(), saved_sysctls=host.read_sysctls(),
        created_host_dirs=host.missing_host_dirs(),
    )
    node.save()
    try:
        pki.generate(layout.pki, Path(cluster.dir) / "pki", node.node_name, layout.gateway)
        pki.write_kubeconfig(layout.kubelet_kubeconfig, cluster.server, layout.pki)
        for directory in (layout.containerd_root, layout.containerd_state, layout.kubelet_root,
                          layout.pod_logs, layout.cni_ipam_dir):
            directory.mkdir(parents=True, exist_ok=True)
        config.write_all(layout, port=node.kubelet_port, healthz_port=node.kubelet_healthz_port)
        host.create_cgroup_root(layout.cgroup_root)
        host.create_bridge(layout.bridge, layout.gateway, layout.pod_subnet)
        _start_containerd(node)
        _import_images(layout)
        _start_kubelet(node, cluster)
    except BaseException as error:
        problems = stop(Path(cluster.dir))
        if problems and isinstance(error, ClusterError | host.HostError):
            raise ClusterError(f"{error}\ncleaning up also hit: {'; '.join(problems)}") from error
        raise
    return node


def stop(cluster_dir: Path) -> list[str]:
    """Stop the node and remove everything it made on the host; return what went wrong.

    Safe to call when no node was started (does nothing) and after a failed start.
    """
    layout = NodeLayout.for_cluster(cluster_dir)
    node = NodeState.load(layout)
    if node is None:
        return []
    problems: list[str] = []
    if node.kubelet_pid:
        processes.stop(node.kubelet_pid)  # first, or it would restart what we remove
    if node.containerd_pid and alive(node.containerd_pid):
        # Through the CRI, so each pod's CNI DEL runs (veth gone, IP released).
        command = [str(build.program_path("cri-sandboxes")), "-endpoint", layout.endpoint,
                   "-timeout", "60s", "remove-all"]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=90)
            if result.returncode != 0:
                problems.append(f"removing pod sandboxes: {result.stderr.strip()}")
        except subprocess.TimeoutExpired:
            problems.append("removing pod sandboxes timed out")
    if node.containerd_pid:
        processes.stop(node.containerd_pid)
    processes.kill_recorded(layout.containerd_state)
    for shim in processes.shims_of(layout.containerd_socket):
        # SIGTERM first: a shim removes its socket under /run/containerd/s on the way out.
        processes.stop(shim, timeout=5, group=False)
    problems += host.remove_shim_sockets(layout.containerd_state)
    problems += host.remove_cgroup_root(layout.cgroup_root)
    problems += host.unmount_under(layout.root)
    problems += host.delete_bridge(layout.bridge)
    problems += host.restore_sysctls(node.saved_sysctls)
    host.remove_host_traces(layout.pod_logs, node.created_host_dirs)
    layout.state_file.unlink()
    return problems
