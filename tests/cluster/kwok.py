"""KWOK (sigs.k8s.io/kwok) simulating nodes for the test cluster.

KWOK is the Kubernetes SIG's node simulator: one process plays the kubelet of
every Node it manages. Here it manages the Nodes annotated `kwok.x-k8s.io/node=fake`
(`nodes.py` makes them): it marks them Ready, renews their Leases in
kube-node-lease every 10s (so node lifecycle keeps them healthy, as it would a
kubelet's), and moves the pods bound to them to Running. Nodes without the
annotation are left alone.

KWOK v0.8 takes its behaviour from Stage objects given with `--config` and refuses
to start without any ("no stages found"); `stages()` writes ours, shaped like
KWOK's "fast" node and pod stages plus a slow status heartbeat like a kubelet's
5-minute status report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.cluster import build, processes
from tests.cluster.state import ClusterState, Component

NAME = "kwok"
MANAGED_ANNOTATION = "kwok.x-k8s.io/node"
MANAGED_VALUE = "fake"
# What kubelet uses: a 40s Lease renewed every quarter of it (KWOK renews at 1/4).
LEASE_DURATION_SECONDS = 40
# Pod IPs KWOK writes into pod status. Nothing routes to them; this range only has
# to hold thousands of pods and stay clear of the Service range (10.0.0.0/24).
POD_CIDR = "10.128.0.0/16"
# All simulated nodes report loopback as their InternalIP: there is no real host.
NODE_IP = "127.0.0.1"
READY_TIMEOUT_SECONDS = 60.0
STAGE_API = "kwok.x-k8s.io/v1alpha1"

# Conditions a healthy kubelet reports; node lifecycle taints a Node for any other value.
_NODE_CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kwok is posting ready status"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kwok has sufficient memory"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kwok has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kwok has sufficient PID available"),
)
_POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


# Selectors are JQ expressions over the object, as in KWOK's own stages. (KWOK
# v0.8.0's CEL environment cannot resolve list elements such as v1.NodeCondition
# inside exists(), and its node worker then panics: JQ it is.)
Selector = tuple[str, str, tuple[str, ...]]
_READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status'
_READY: Selector = (_READY_STATUS, "In", ("True",))
_NOT_READY: Selector = (_READY_STATUS, "NotIn", ("True",))
_ALIVE: Selector = (".metadata.deletionTimestamp", "DoesNotExist", ())


def _stage(name: str, kind: str, selectors: list[Selector], *, template: str | None = None,
           delete: bool = False, delay_ms: tuple[int, int] | None = None) -> dict[str, Any]:
    expressions = [{"jq": {"key": key, "operator": operator, **({"values": list(values)}
                                                                 if values else {})}}
                   for key, operator, values in selectors]
    spec: dict[str, Any] = {
        "resourceRef": {"apiGroup": "v1", "kind": kind},
        "selector": {"matchExpressions": expressions},
    }
    if delay_ms is not None:
        spec["delay"] = {"durationMilliseconds": delay_ms[0],
                         "jitterDurationMilliseconds": delay_ms[1]}
    step: dict[str, Any] = {"delete": True} if delete else {
        "patch": {"root": "status", "subresource": "status", "template": template}}
    spec["steps"] = [step]
    return {"apiVersion": STAGE_API, "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def _node_ready_template(kubernetes_version: str) -> str:
    conditions = "".join(
        f"- type: {kind}\n  status: \"{status}\"\n  reason: {reason}\n  message: {message!r}\n"
        "  lastHeartbeatTime: {{ $now }}\n  lastTransitionTime: {{ $now }}\n"
        for kind, status, reason, message in _NODE_CONDITIONS)
    return (
        "{{ $now := Now | Quote }}\n"
        f"conditions:\n{conditions}"
        "addresses:\n"
        "- type: InternalIP\n  address: {{ NodeIP | Quote }}\n"
        "- type: Hostname\n  address: {{ .metadata.name | Quote }}\n"
        "nodeInfo:\n"
        f"  kubeletVersion: {kubernetes_version}\n"
        f"  kubeProxyVersion: {kubernetes_version}\n"
        f"  containerRuntimeVersion: kwok://{build.KWOK_VERSION}\n"
        f"  kernelVersion: kwok-{build.KWOK_VERSION}\n"
        "  operatingSystem: linux\n  architecture: amd64\n"
        "  osImage: KWOK simulated node\n  machineID: \"\"\n  systemUUID: \"\"\n  bootID: \"\"\n"
        "phase: Running\n"
    )


# A strategic-merge patch keyed by condition type: only the heartbeat time moves, so
# status, reason and lastTransitionTime stay as they are.
_NODE_HEARTBEAT_TEMPLATE = """\
conditions:
{{ range .status.conditions }}
- type: {{ .type | Quote }}
  lastHeartbeatTime: {{ Now | Quote }}
{{ end }}
"""

_POD_RUNNING_TEMPLATE = """\
{{ $now := Now | Quote }}
{{ $ip := PodIPWith .spec.nodeName (or .spec.hostNetwork false) (or .metadata.uid "") \
(or .metadata.name "") (or .metadata.namespace "") }}
phase: Running
startTime: {{ $now }}
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
hostIPs:
- ip: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ $ip | Quote }}
podIPs:
- ip: {{ $ip | Quote }}
conditions:
CONDITIONS{{ range .spec.readinessGates }}
- type: {{ .conditionType | Quote }}
  status: "True"
  lastTransitionTime: {{ $now }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  restartCount: 0
{{ if eq (or .restartPolicy "") "Always" }}
  ready: true
  started: true
  state:
    running:
      startedAt: {{ $now }}
{{ else }}
  ready: true
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now }}
      finishedAt: {{ $now }}
{{ end }}
{{ end }}
""".replace("CONDITIONS", "".join(
    f"- type: {kind}\n  status: \"True\"\n  lastTransitionTime: {{{{ $now }}}}\n"
    for kind in _POD_CONDITIONS))

_POD_SUCCEEDED_TEMPLATE = """\
{{ $now := Now | Quote }}
phase: Succeeded
conditions:
- type: Ready
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now }}
- type: ContainersReady
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  imageID: ""
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      reason: Completed
      startedAt: {{ $now }}
      finishedAt: {{ $now }}
{{ end }}
"""

def stages(kubernetes_version: str) -> list[dict[str, Any]]:
    """The Stage objects KWOK plays on the Nodes it manages and the pods bound to them;
    its nodes report `kubernetes_version` (the control plane's) as their kubelet's."""
    return [
        # A new Node (or one node lifecycle marked Unknown) becomes Ready at once.
        _stage("kpysched-node-ready", "Node", [_NOT_READY],
               template=_node_ready_template(kubernetes_version)),
        # Leases carry the liveness; the status itself is refreshed every 4-5 minutes,
        # as a kubelet does when it has a Lease (nodeStatusReportFrequency).
        _stage("kpysched-node-heartbeat", "Node", [_READY],
                  template=_NODE_HEARTBEAT_TEMPLATE, delay_ms=(240_000, 300_000)),
        # A pod bound to a KWOK node starts at once: every container running and ready.
        _stage("kpysched-pod-running", "Pod", [
            _ALIVE, (".status.phase", "In", ("Pending",)), _NOT_READY],
            template=_POD_RUNNING_TEMPLATE),
        # Pods of a Job finish right after they start, so Jobs complete.
        _stage("kpysched-pod-job-succeeded", "Pod", [
            _ALIVE, (".status.phase", "In", ("Running",)),
            (".metadata.ownerReferences.[].kind", "In", ("Job",))],
            template=_POD_SUCCEEDED_TEMPLATE),
        # There is no container to stop: a deleted pod goes away at once (no finalizers
        # left), as it would from a kubelet that had nothing to tear down.
        _stage("kpysched-pod-delete", "Pod", [
            (".metadata.deletionTimestamp", "Exists", ()),
            (".metadata.finalizers", "DoesNotExist", ())], delete=True),
    ]


class _Dumper(yaml.SafeDumper):
    """Writes templates as literal blocks, so the config file reads like KWOK's docs."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value,
                                   style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def write_config(path: Path, kubernetes_version: str) -> Path:
    path.write_text(yaml.dump_all(stages(kubernetes_version), Dumper=_Dumper, sort_keys=False))
    return path


def command(state: ClusterState, config: Path, port: int) -> list[str]:
    return [
        str(build.binary_path(NAME)),
        # The Stages: without them KWOK v0.8 refuses to start ("no stages found").
        f"--config={config}",
        # The admin's: KWOK writes node and pod status, Leases and deletions, and as a
        # system:masters member it is exempt from API priority and fairness, which
        # thousands of Lease renewals a minute would otherwise run into.
        f"--kubeconfig={state.kubeconfig}",
        # Only annotated Nodes: hand-made Nodes and a real kubelet's stay untouched.
        f"--manage-nodes-with-annotation-selector={MANAGED_ANNOTATION}={MANAGED_VALUE}",
        # Off (0) by default in KWOK; node lifecycle needs Leases to see nodes alive.
        f"--node-lease-duration-seconds={LEASE_DURATION_SECONDS}",
        f"--cidr={POD_CIDR}",
        f"--node-ip={NODE_IP}",
        # Only /healthz is used: the harness waits on it before `up` returns.
        f"--server-address=127.0.0.1:{port}",
    ]


def launch(state: ClusterState) -> Component:
    """Start KWOK; `wait_ready` then waits until it serves /healthz."""
    config = write_config(Path(state.dir, "kwok-stages.yaml"), state.kubernetes_version)
    port = processes.free_port()
    log = Path(state.dir, f"{NAME}.log")
    args = command(state, config, port)
    return Component(NAME, processes.spawn(args, log), args, str(log),
                     health_url=f"http://127.0.0.1:{port}/healthz")


def wait_ready(component: Component) -> None:
    processes.wait_until(
        NAME, component.pid, component.log,
        lambda: processes.http_get(component.health_url).strip() == "ok",
        READY_TIMEOUT_SECONDS)
