"""The scenarios run as one batch: the stateless core, affinity and preemption table
(tests/e2e/differential/scenarios.py) and more of the same kind, written for the batch.

Each must have one right outcome: where two nodes are feasible, their loads or sizes
differ so that kube-scheduler's best score is not shared (the batch fails a scenario
whose upstream scores tie)."""

from __future__ import annotations

from typing import Any

from tests.e2e.differential.batch.node_features import DECLARED, NODE_FEATURES
from tests.e2e.differential.model import PodSpec, Scenario
from tests.e2e.differential.scenarios import (
    ALL,
    HOST,
    TAINT_GPU,
    THREE_ZONES,
    ZONE,
    N,
    P,
    _load,
    _pod_affinity,
    _preferred,
    _required,
    _spread,
)

PAUSE = "registry.k8s.io/pause:3.10"


def _container(name: str, cpu: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": PAUSE, "resources": {"requests": {"cpu": cpu}}, **extra}


def _ports(port: int, protocol: str = "TCP", host_ip: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"containerPort": 80, "hostPort": port, "protocol": protocol}
    if host_ip is not None:
        entry["hostIP"] = host_ip
    return {"ports": [entry]}


def _taint(key: str, effect: str = "NoSchedule", value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def _web(role: str, node: str, **labels: str) -> PodSpec:
    return P(role, node=node, labels={"app": "web", **labels})


RESOURCES: list[Scenario] = [
    Scenario("fit-memory-picks-the-emptiest", (N("n0"), N("n1"), N("n2")), P(memory="1Gi"),
             existing=(P("m0", node="n0", memory="8Gi"), P("m1", node="n1", memory="2Gi"),
                       P("m2", node="n2", memory="12Gi")), expect_node="n1"),
    Scenario("fit-bigger-node-wins", (N("n0", cpu="2", memory="8Gi"), N("n1", cpu="8"),
                                      N("n2", cpu="16", memory="64Gi")), P(cpu="1"),
             expect_node="n2"),
    Scenario("fit-init-container-counts-its-peak", (N("n0", cpu="2"), N("n1", cpu="4")),
             P(spec={"initContainers": [_container("init", "3")]}), expect_node="n1"),
    Scenario("fit-sidecar-adds-to-the-sum", (N("n0", cpu="2"), N("n1", cpu="3")),
             P(cpu="1", spec={"initContainers": [
                 _container("sidecar", "1500m", restartPolicy="Always")]}),
             expect_node="n1"),
    Scenario("fit-requests-default-to-limits", (N("n0", cpu="2"), N("n1", cpu="4")),
             P(cpu=None, memory=None, container={"resources": {"limits": {"cpu": "3"}}}),
             expect_node="n1"),
    Scenario("fit-ephemeral-storage-insufficient",
             (N("n0", extra={"ephemeral-storage": "10Gi"}),
              N("n1", extra={"ephemeral-storage": "5Gi"})),
             P(container={"resources": {"requests": {"ephemeral-storage": "20Gi"}}}),
             expect="pending", expect_reason="Insufficient ephemeral-storage"),
    Scenario("fit-ephemeral-storage-fits-one",
             (N("n0", extra={"ephemeral-storage": "10Gi"}),
              N("n1", cpu="8", extra={"ephemeral-storage": "5Gi"})),
             P(container={"resources": {"requests": {"ephemeral-storage": "8Gi"}}}),
             expect_node="n0"),
    Scenario("fit-cpu-and-memory-both-short", (N("n0", cpu="1", memory="1Gi"),
                                               N("n1", cpu="1", memory="1Gi")),
             P(cpu="2", memory="2Gi"), expect="pending",
             expect_reason="2 Insufficient cpu, 2 Insufficient memory"),
    Scenario("fit-pod-count-full-on-one", (N("n0", pods=1, cpu="16"), N("n1", pods=3)), P(),
             existing=(P("a", node="n0"),), expect_node="n1"),
    Scenario("fit-existing-requests-fill-a-node", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1"), existing=_load("n0", 3) + _load("n1", 2, cpu="400m"),
             expect_node="n1"),
    Scenario("fit-extended-resource-fits-the-larger",
             (N("n0", extra={"example.com/gpu": "1"}), N("n1", extra={"example.com/gpu": "4"})),
             P(container={"resources": {"requests": {"cpu": "100m", "example.com/gpu": "2"},
                                        "limits": {"example.com/gpu": "2"}}}),
             expect_node="n1"),
    Scenario("balanced-allocation-memory-heavy-pod",
             (N("n0", cpu="4", memory="8Gi"), N("n1", cpu="4", memory="8Gi"),
              N("n2", cpu="4", memory="8Gi")),
             P(cpu="100m", memory="2Gi"),
             existing=(P("c0", node="n0", cpu="1500m", memory="512Mi"),
                       P("c1", node="n1", cpu="500m", memory="1500Mi"),
                       P("c2", node="n2", cpu="2", memory="3Gi"))),
    Scenario("best-effort-on-a-crowded-cluster", (N("n0"), N("n1"), N("n2")),
             P(cpu=None, memory=None),
             existing=_load("n0", 2, cpu="100m") + _load("n1", 1, cpu="100m")
             + _load("n2", 3, cpu="100m")),
]

NODE_AFFINITY: list[Scenario] = [
    Scenario("required-affinity-exists", (N("n0"), N("n1", labels={"gpu": "a100"}), N("n2")),
             P(spec=_required({"key": "gpu", "operator": "Exists"})), expect_node="n1"),
    Scenario("required-affinity-does-not-exist",
             (N("n0", labels={"spot": "1"}), N("n1", labels={"spot": "1"}), N("n2")),
             P(spec=_required({"key": "spot", "operator": "DoesNotExist"})),
             expect_node="n2"),
    Scenario("required-affinity-lt", (N("n0", labels={"gen": "3"}), N("n1", labels={"gen": "7"}),
                                      N("n2", labels={"gen": "9"})),
             P(spec=_required({"key": "gen", "operator": "Lt", "values": ["4"]})),
             expect_node="n0"),
    Scenario("required-affinity-terms-are-ored",
             (N("n0", labels={ZONE: "b"}), N("n1", labels={ZONE: "a"}),
              N("n2", labels={"disk": "ssd"})),
             P(spec={"affinity": {"nodeAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                     {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]},
                     {"matchExpressions": [{"key": "disk", "operator": "In",
                                            "values": ["ssd"]}]}]}}}}),
             existing=_load("n1", 2), expect_node="n2"),
    Scenario("required-affinity-expressions-are-anded",
             (N("n0", labels={ZONE: "a"}), N("n1", labels={ZONE: "a", "disk": "ssd"}),
              N("n2", labels={"disk": "ssd"})),
             P(spec=_required({"key": ZONE, "operator": "In", "values": ["a"]},
                              {"key": "disk", "operator": "In", "values": ["ssd"]})),
             expect_node="n1"),
    Scenario("node-selector-and-affinity-both-apply",
             (N("n0", labels={"disk": "ssd", ZONE: "a"}),
              N("n1", labels={"disk": "ssd", ZONE: "b"}),
              N("n2", labels={ZONE: "b"})),
             P(spec={"nodeSelector": {"disk": "ssd"},
                     **_required({"key": ZONE, "operator": "In", "values": ["b"]})}),
             expect_node="n1"),
    Scenario("node-selector-matches-nothing", (N("n0", labels={"disk": "hdd"}), N("n1")),
             P(spec={"nodeSelector": {"disk": "ssd"}}), expect="pending",
             expect_reason="didn't match Pod's node affinity/selector"),
    Scenario("preferred-affinity-weights-add-up",
             (N("n0", labels={ZONE: "a"}), N("n1", labels={"disk": "ssd"}),
              N("n2", labels={ZONE: "a", "disk": "ssd"})),
             P(spec={"affinity": {"nodeAffinity": {
                 "preferredDuringSchedulingIgnoredDuringExecution": [
                     {"weight": 20, "preference": {"matchExpressions": [
                         {"key": ZONE, "operator": "In", "values": ["a"]}]}},
                     {"weight": 70, "preference": {"matchExpressions": [
                         {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}}),
             existing=_load("n2", 3), expect_node="n2"),
    Scenario("preferred-affinity-outweighs-load", THREE_ZONES,
             P(spec=_preferred(100, {"key": ZONE, "operator": "In", "values": ["a"]})),
             existing=_load("n0", 4), expect_node="n0"),
]

TAINTS: list[Scenario] = [
    Scenario("toleration-exists-operator", (N("n0", taints=(TAINT_GPU,)), N("n1", cpu="1")),
             P(cpu="2", spec={"tolerations": [{"key": "gpu", "operator": "Exists"}]}),
             expect_node="n0"),
    Scenario("toleration-of-another-effect", (N("n0", taints=(TAINT_GPU,)),
                                              N("n1", taints=(TAINT_GPU,))),
             P(spec={"tolerations": [{"key": "gpu", "operator": "Exists",
                                      "effect": "NoExecute"}]}),
             expect="pending", expect_reason="untolerated taint"),
    Scenario("one-of-two-taints-tolerated",
             (N("n0", taints=(TAINT_GPU, _taint("team", value="a"))), N("n1", taints=(TAINT_GPU,))),
             P(spec={"tolerations": [{"key": "gpu", "operator": "Exists"}]}),
             expect_node="n1"),
    Scenario("control-plane-taint-counted",
             (N("n0", taints=(_taint("node-role.kubernetes.io/control-plane"),)),
              N("n1", cpu="1")), P(cpu="2"), expect="pending",
             expect_reason="1 node(s) had untolerated taint(s)"),
    Scenario("prefer-no-schedule-tolerated-on-the-big-node",
             (N("n0", cpu="16", memory="64Gi",
                taints=(_taint("k", "PreferNoSchedule", "v"),)), N("n1")),
             P(spec={"tolerations": [{"key": "k", "operator": "Exists"}]}), expect_node="n0"),
    Scenario("prefer-no-schedule-fewest-intolerable",
             (N("n0", taints=(_taint("a", "PreferNoSchedule"), _taint("b", "PreferNoSchedule"))),
              N("n1", taints=(_taint("a", "PreferNoSchedule"),)),
              N("n2", taints=(_taint("a", "PreferNoSchedule"), _taint("b", "PreferNoSchedule"),
                              _taint("c", "PreferNoSchedule")))), P(), expect_node="n1"),
    Scenario("no-execute-tolerated", (N("n0", taints=(_taint("k", "NoExecute", "v"),)),
                                      N("n1", cpu="1")),
             P(cpu="2", spec={"tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                               "effect": "NoExecute"}]}), expect_node="n0"),
    Scenario("unschedulable-tolerated", (N("n0", unschedulable=True, cpu="8"), N("n1", cpu="1")),
             P(cpu="2", spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                               "operator": "Exists", "effect": "NoSchedule"}]}),
             expect_node="n0"),
    Scenario("unschedulable-and-insufficient-text", (N("n0", unschedulable=True),
                                                     N("n1", cpu="1")),
             P(cpu="2"), expect="pending", expect_reason="were unschedulable"),
]

PORTS: list[Scenario] = [
    Scenario("host-port-other-protocol-shares", (N("n0", cpu="8"), N("n1")),
             P(container=_ports(8080, "UDP")),
             existing=(P("holder", node="n0", container=_ports(8080)),), expect_node="n0"),
    Scenario("host-port-other-host-ip-shares", (N("n0", cpu="8"), N("n1")),
             P(container=_ports(8080, host_ip="127.0.0.2")),
             existing=(P("holder", node="n0", container=_ports(8080, host_ip="127.0.0.1")),),
             expect_node="n0"),
    Scenario("host-port-any-ip-conflicts-with-one-ip", (N("n0", cpu="8"), N("n1")),
             P(container=_ports(8080)),
             existing=(P("holder", node="n0", container=_ports(8080, host_ip="127.0.0.1")),),
             expect_node="n1"),
    Scenario("host-port-conflict-text", (N("n0"), N("n1", cpu="1")),
             P(cpu="2", container=_ports(9090)),
             existing=(P("holder", node="n0", container=_ports(9090)),), expect="pending",
             expect_reason="didn't have free ports for the requested pod ports"),
]

SPREAD: list[Scenario] = [
    Scenario("spread-max-skew-two", (N("n0"), N("n1"), N("n2")),
             P(labels={"app": "web"}, spec=_spread(HOST, skew=2)),
             existing=(_web("w0", "n0"), _web("w1", "n0"), _web("w2", "n0"), _web("w3", "n2")),
             expect_node="n1"),
    Scenario("spread-two-constraints",
             tuple(N(f"n{i}", labels={ZONE: "aabb"[i]}) for i in range(4)),
             P(labels={"app": "web"}, spec={"topologySpreadConstraints": [
                 *_spread(ZONE)["topologySpreadConstraints"],
                 *_spread(HOST)["topologySpreadConstraints"]]}),
             existing=(_web("w0", "n0"), _web("w1", "n1"), _web("w2", "n2"))),
    Scenario("spread-match-label-keys",
             (N("n0"), N("n1"), N("n2")),
             P(labels={"app": "web", "rev": "2"},
               spec=_spread(HOST, matchLabelKeys=["rev"])),
             existing=(_web("old0", "n0", rev="1"), _web("old1", "n0", rev="1"),
                       _web("new1", "n1", rev="2"), _web("new0", "n0", rev="2"),
                       _web("old2", "n2", rev="1"), _web("new2", "n2", rev="2"),
                       _web("new2b", "n2", rev="2")),
             expect_node="n1"),
    Scenario("spread-node-taints-policy-honor",
             (N("n0", labels={ZONE: "a"}), N("n1", labels={ZONE: "b"}),
              N("n2", labels={ZONE: "c"}, taints=(TAINT_GPU,))),
             P(labels={"app": "web"}, spec=_spread(ZONE, nodeTaintsPolicy="Honor")),
             existing=(_web("w0", "n0"), _web("w1", "n1"), _web("w1b", "n1")),
             expect_node="n0"),
    Scenario("spread-match-expressions",
             (N("n0"), N("n1"), N("n2")),
             P(labels={"tier": "front"}, spec={"topologySpreadConstraints": [{
                 "maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchExpressions": [
                     {"key": "tier", "operator": "In", "values": ["front", "edge"]}]}}]}),
             existing=(P("f0", node="n0", labels={"tier": "front"}),
                       P("e1", node="n1", labels={"tier": "edge"}),
                       P("b2", node="n2", labels={"tier": "back"})),
             expect_node="n2"),
    Scenario("spread-schedule-anyway-zone", THREE_ZONES,
             P(labels={"app": "web"}, spec=_spread(ZONE, when="ScheduleAnyway")),
             existing=(_web("w0", "n0"), _web("w0b", "n0"), _web("w2", "n2"))),
    Scenario("spread-text-when-skew-exceeded", (N("n0"), N("n1", cpu="1")),
             P(labels={"app": "web"}, cpu="2", spec=_spread(HOST)),
             existing=(_web("w0", "n0"),), expect="pending",
             expect_reason="didn't match pod topology spread constraints"),
]

POD_AFFINITY: list[Scenario] = [
    Scenario("anti-affinity-zone-required", THREE_ZONES,
             P(labels={"app": "web"}, spec=_pod_affinity("podAntiAffinity", "web", ZONE)),
             existing=(_web("w0", "n0"), _web("w1", "n1")), expect_node="n2"),
    Scenario("pod-affinity-match-expressions", (N("n0"), N("n1"), N("n2")),
             P(spec={"affinity": {"podAffinity": {
                 "requiredDuringSchedulingIgnoredDuringExecution": [{
                     "labelSelector": {"matchExpressions": [
                         {"key": "app", "operator": "In", "values": ["db", "cache"]}]},
                     "topologyKey": HOST}]}}}),
             existing=(P("db", node="n1", labels={"app": "db"}),
                       P("q", node="n2", labels={"app": "queue"})), expect_node="n1"),
    Scenario("anti-affinity-self-first-replica", (N("n0"), N("n1", cpu="32", memory="128Gi")),
             P(labels={"app": "web"}, spec=_pod_affinity("podAntiAffinity", "web")),
             expect_node="n1"),
    Scenario("existing-preferred-affinity-pulls", (N("n0"), N("n1"), N("n2")),
             P(labels={"app": "web"}),
             existing=(P("lover", node="n2", labels={"app": "lover"},
                         spec=_pod_affinity("podAffinity", "web", preferred=100)),),
             expect_node="n2"),
    Scenario("preferred-anti-affinity-weights",
             (N("n0"), N("n1"), N("n2")),
             P(spec={"affinity": {"podAntiAffinity": {
                 "preferredDuringSchedulingIgnoredDuringExecution": [
                     {"weight": 30, "podAffinityTerm": {
                         "labelSelector": {"matchLabels": {"app": "noisy"}},
                         "topologyKey": HOST}},
                     {"weight": 90, "podAffinityTerm": {
                         "labelSelector": {"matchLabels": {"app": "loud"}},
                         "topologyKey": HOST}}]}}}),
             existing=(P("noisy", node="n0", labels={"app": "noisy"}),
                       P("loud", node="n1", labels={"app": "loud"}),
                       P("both-a", node="n2", labels={"app": "noisy"}),
                       P("other", node="n0", labels={"app": "calm"})),
             expect_node="n2"),
    Scenario("affinity-and-anti-affinity-together", THREE_ZONES,
             P(labels={"app": "web"}, spec={"affinity": {
                 **_pod_affinity("podAffinity", "db", ZONE)["affinity"],
                 **_pod_affinity("podAntiAffinity", "web")["affinity"]}}),
             existing=(P("db", node="n1", labels={"app": "db"}), _web("w1", "n1")),
             expect="pending", expect_reason="didn't match pod anti-affinity rules"),
]

IMAGES: list[Scenario] = [
    Scenario("image-locality-two-containers",
             (N("n0", images=(("registry.example/a:1", 400_000_000),)),
              N("n1", images=(("registry.example/a:1", 400_000_000),
                              ("registry.example/b:1", 500_000_000))),
              N("n2", images=(("registry.example/b:1", 500_000_000),))),
             P(spec={"containers": [
                 {"name": "a", "image": "registry.example/a:1",
                  "resources": {"requests": {"cpu": "100m"}}},
                 {"name": "b", "image": "registry.example/b:1",
                  "resources": {"requests": {"cpu": "100m"}}}]}),
             expect_node="n1"),
    Scenario("image-below-threshold-scores-nothing",
             (N("n0"), N("n1", images=(("registry.example/tiny:1", 10_000_000),))),
             P(container={"image": "registry.example/tiny:1"}), existing=_load("n1", 1),
             expect_node="n0"),
]

MESSAGES: list[Scenario] = [
    Scenario("message-five-reasons",
             (N("n0", cpu="1"), N("n1", taints=(TAINT_GPU,)), N("n2", unschedulable=True),
              N("n3", labels={"disk": "hdd"}), N("n4", pods=1)),
             P(cpu="2", spec=_required({"key": "disk", "operator": "NotIn",
                                        "values": ["hdd"]})),
             existing=(P("full", node="n4", cpu="100m"),), expect="pending"),
    Scenario("message-anti-affinity-of-existing",
             (N("n0"), N("n1")), P(labels={"app": "web"}),
             existing=(P("hater0", node="n0", labels={"app": "h"},
                         spec=_pod_affinity("podAntiAffinity", "web")),
                       P("hater1", node="n1", labels={"app": "h"},
                         spec=_pod_affinity("podAntiAffinity", "web"))),
             expect="pending", expect_reason="didn't satisfy existing pods anti-affinity rules"),
    Scenario("message-no-nodes-of-the-scenario-fit-and-preemption-cannot-help",
             (N("n0", cpu="1"),), P(cpu="2", priority_class="high"), expect="pending",
             expect_reason="preemption"),
]

# Victims are on the copy's own nodes: the pin leaves every other node unresolvable.
PREEMPTION: list[Scenario] = [
    Scenario("preempt-within-the-pods-node-affinity",
             (N("n0", cpu="2", labels={ZONE: "a"}), N("n1", cpu="2", labels={ZONE: "b"})),
             P(cpu="1500m", priority_class="high",
               spec=_required({"key": ZONE, "operator": "In", "values": ["b"]})),
             existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),
                       P("mid-1", node="n1", cpu="1500m", priority_class="mid")),
             expect="preempted", expect_node="n1"),
    Scenario("preempt-the-host-port-holder", (N("n0"), N("n1")),
             P(priority_class="high", container=_ports(8080)),
             existing=(P("low-holder", node="n0", priority_class="low",
                         container=_ports(8080)),
                       P("mid-holder", node="n1", priority_class="mid",
                         container=_ports(8080))),
             expect="preempted", expect_node="n0"),
    Scenario("preempt-equal-priority-is-no-victim", (N("n0", cpu="2"),),
             P(cpu="1500m", priority_class="mid"),
             existing=(P("mid-0", node="n0", cpu="1", priority_class="mid"),
                       P("low-0", node="n0", cpu="500m", priority_class="low")),
             expect="pending"),
]

EXTRA: list[Scenario] = (RESOURCES + NODE_AFFINITY + TAINTS + PORTS + SPREAD + POD_AFFINITY
                         + IMAGES + MESSAGES + PREEMPTION)
BATCH: list[Scenario] = [*ALL, *EXTRA, *NODE_FEATURES]
# Scenario name -> node role -> status.declaredFeatures.
DECLARED_FEATURES = DECLARED
