"""The real node's configuration files: containerd, the kubelet and CNI.

Every setting that differs from the upstream default is here because this machine
or this harness needs it; the comment beside it says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cluster.certs import SERVICE_CLUSTER_IP_RANGE
from tests.cluster.realnode import build, images
from tests.cluster.realnode.layout import NodeLayout

NETWORK_NAME = "kpysched-pods"


def _toml_string(value: str | Path) -> str:
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string


def containerd_toml(layout: NodeLayout) -> str:
    s = _toml_string
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    return f"""\
# Written by tests/cluster/realnode/config.py for the harness's real node.
# Version 3 is what every containerd 2.x reads (2.3+ migrates it in memory).
version = 3
# Not the default /etc/containerd/conf.d/*.toml: the host's drop-ins are not ours.
imports = []
# Root, state and socket of our own, so this containerd shares nothing with any
# other containerd on the machine and `down` can remove all of it.
root = {s(layout.containerd_root)}
state = {s(layout.containerd_state)}

[grpc]
  address = {s(layout.containerd_socket)}

[plugins]
  # Pods' network namespaces and CDI specs under our directory instead of the
  # host-wide /var/run/netns and /etc/cdi.
  [{cri_runtime}]
    netns_mounts_under_state_dir = true
    # This VM withholds CAP_SYS_RESOURCE even from root, so no process may lower its
    # oom_score_adj: runc failed every sandbox with "failed to update
    # /proc/self/oom_score_adj: Permission denied" (the kubelet asks -998 for pause).
    # Clamp requested scores to containerd's own instead.
    restrict_oom_score_adj = true
    cdi_spec_dirs = [{s(layout.root / "cdi")}]

  [{cri_runtime}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"

  [{cri_runtime}.containerd.runtimes.runc.options]
    # Our runc, not whatever is on PATH; its state beside ours (default /run/containerd/runc).
    BinaryName = {s(build.program_path("runc"))}
    Root = {s(layout.runc_root)}
    # The kubelet uses the cgroupfs driver (this VM runs no systemd); both must agree.
    SystemdCgroup = false

  [{cri_runtime}.cni]
    bin_dirs = [{s(build.cni_bin_dir())}]
    conf_dir = {s(layout.cni_conf_dir)}

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"

  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    # No registry is reachable: the sandbox image is the one images.py builds and
    # `up` imports. Pinned, so image garbage collection never removes it.
    sandbox = {s(images.PAUSE_IMAGE)}

  [plugins.'io.containerd.grpc.v1.cri']
    # The streaming server (exec, attach, port-forward) listens on loopback only.
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

  [plugins.'io.containerd.internal.v1.opt']
    # Default /opt/containerd: keep even this empty directory out of the host.
    path = {s(layout.root / "opt")}

  [plugins.'io.containerd.nri.v1.nri']
    # NRI would open /var/run/nri/nri.sock on the host; nothing here uses it.
    disable = true
"""


def cni_conflist(layout: NodeLayout) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": NETWORK_NAME,
        "plugins": [{
            "type": "bridge",
            # `up` creates this bridge with the gateway address itself, so the
            # plugin only attaches veths: isGateway false keeps it from enabling
            # net.ipv4.ip_forward on the host.
            "bridge": layout.bridge,
            "isGateway": False,
            "ipMasq": False,
            "ipam": {
                "type": "host-local",
                "ranges": [[{"subnet": layout.pod_subnet, "gateway": layout.gateway}]],
                # No default route: pod traffic stays on the bridge and the host. Only
                # Service IPs go to the host (the gateway), where kube-proxy, when the
                # test runs it (tests/cluster/pod_network.py), DNATs them; this is how
                # in-cluster clients reach the `kubernetes` Service.
                "routes": [{"dst": SERVICE_CLUSTER_IP_RANGE, "gw": layout.gateway}],
                # Default /var/lib/cni/networks: keep the leases under our directory.
                "dataDir": str(layout.cni_ipam_dir),
            },
        }],
    }


def kubelet_configuration(layout: NodeLayout, *, port: int, healthz_port: int) -> dict[str, Any]:
    pki = layout.pki
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # The API server authenticates to us with a cert from the cluster CA; any
        # token is checked with TokenReview and every request with a
        # SubjectAccessReview (kubeadm's choice); nothing anonymous.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        # On the pod bridge's own address (also the Node's InternalIP, see node.py),
        # on a free port: only this machine can reach it, the API server finds it by
        # the Node's address, and a second cluster's node does not collide.
        "address": layout.gateway,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        # A serving cert from the cluster CA instead of one self-signed into the
        # default --cert-dir.
        "tlsCertFile": str(pki / "kubelet.crt"),
        "tlsPrivateKeyFile": str(pki / "kubelet.key"),
        "containerRuntimeEndpoint": layout.endpoint,
        # Upstream's -999 for the kubelet itself needs CAP_SYS_RESOURCE, which this VM
        # withholds (see restrict_oom_score_adj in containerd's config).
        "oomScoreAdj": 0,
        # This VM has a hybrid cgroup layout (v1 controllers, an empty cgroup2 mount).
        # kubelet 1.35+ refuses cgroup v1 unless told otherwise.
        "failCgroupV1": False,
        # No systemd runs here, so no systemd cgroup driver; containerd agrees.
        "cgroupDriver": "cgroupfs",
        # Pods go under a top-level cgroup of our own that `up` creates in every v1
        # hierarchy and `down` removes; existing cgroups are never touched, and
        # kubelet is not asked to move itself or the runtime (kubeletCgroups,
        # systemCgroups stay empty).
        "cgroupRoot": layout.cgroup_root,
        "cgroupsPerQOS": True,
        # Swap is neither expected nor managed on this machine; do not refuse to
        # start should a host have some.
        "failSwapOn": False,
        # The node shares a VM with the rest of the test suite: eviction must never
        # kill test pods because the machine is busy or its disk fills up. Tiny
        # thresholds (0 is not accepted) rather than upstream's 100Mi/10%/15%.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%",
                         "nodefs.inodesFree": "1%", "imagefs.available": "1%"},
        # kubelet sets vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1
        # (and checks two keyring limits); `true` would make it refuse to start on
        # this VM's values instead. `up` records the old values, `down` restores them.
        "protectKernelDefaults": False,
        # Images cannot be pulled again once removed (no registry): no image GC.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # Host paths the kubelet would otherwise create or write, kept under ours.
        "podLogsDir": str(layout.pod_logs),
        "volumePluginDir": str(layout.root / "volume-plugins"),
        # kubelet 1.36 does not program iptables; there is no iptables binary here.
        "makeIPTablesUtilChains": False,
        # Quicker node status and pod sync, so tests do not wait on defaults meant
        # for large clusters.
        "nodeStatusUpdateFrequency": "4s",
        "syncFrequency": "10s",
        # No cluster DNS runs in the harness; pods get the host's resolv.conf.
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": False,
    }


def write_all(layout: NodeLayout, *, port: int, healthz_port: int) -> None:
    layout.containerd_config.write_text(containerd_toml(layout))
    layout.cni_conf_dir.mkdir(parents=True, exist_ok=True)
    (layout.cni_conf_dir / "10-kpysched.conflist").write_text(
        json.dumps(cni_conflist(layout), indent=2))
    layout.kubelet_config.write_text(json.dumps(
        kubelet_configuration(layout, port=port, healthz_port=healthz_port), indent=2))
