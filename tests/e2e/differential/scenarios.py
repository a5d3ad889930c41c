"""The differential scenario table: each has exactly one right outcome."""

from __future__ import annotations

from typing import Any

from tests.e2e.differential.model import NodeSpec, PdbSpec, PodSpec, Scenario

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def N(role: str, **kw: Any) -> NodeSpec:  # noqa: N802 - table shorthand
    return NodeSpec(role, **kw)


def P(role: str = "incoming", **kw: Any) -> PodSpec:  # noqa: N802 - table shorthand
    return PodSpec(role, **kw)


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(terms)}]}}}}


def _preferred(weight: int, *terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "preference": {"matchExpressions": list(terms)}}]}}}


def _pod_affinity(kind: str, app: str, key: str = HOST, *, preferred: int = 0) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    if preferred:
        body: dict[str, Any] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": preferred, "podAffinityTerm": term}]}
    else:
        body = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return {"affinity": {kind: body}}


def _spread(key: str, skew: int = 1, when: str = "DoNotSchedule", app: str = "web",
            **extra: Any) -> dict[str, Any]:
    return {"topologySpreadConstraints": [{
        "maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}}, **extra}]}


def _load(node: str, count: int, cpu: str = "500m", **kw: Any) -> tuple[PodSpec, ...]:
    return tuple(P(f"load-{node}-{i}", node=node, cpu=cpu, **kw) for i in range(count))


TAINT_GPU = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
TOLERATE_GPU = {"tolerations": [{"key": "gpu", "operator": "Equal", "value": "true",
                                 "effect": "NoSchedule"}]}
THREE_ZONES = tuple(N(f"n{i}", labels={ZONE: "abc"[i]}) for i in range(3))

CORE: list[Scenario] = [
    Scenario("least-allocated-picks-the-emptiest", (N("n0"), N("n1"), N("n2")), P(cpu="200m"),
             existing=_load("n0", 4) + _load("n1", 2)),
    Scenario("insufficient-cpu-everywhere", (N("n0", cpu="1"), N("n1", cpu="1")),
             P(cpu="2"), expect="pending"),
    Scenario("insufficient-memory-everywhere", (N("n0", memory="1Gi"), N("n1", memory="1Gi")),
             P(memory="2Gi"), expect="pending"),
    Scenario("too-many-pods", (N("n0", pods=1), N("n1", pods=1)), P(),
             existing=(P("a", node="n0"), P("b", node="n1")), expect="pending"),
    Scenario("mixed-reasons-histogram",
             (N("n0", cpu="1"), N("n1", taints=(TAINT_GPU,)), N("n2", labels={"disk": "hdd"}),
              N("n3", labels={"disk": "hdd"})),
             P(cpu="2", spec={"nodeSelector": {"disk": "ssd"}}), expect="pending"),
    Scenario("node-selector-picks-the-labelled", (N("n0"), N("n1", labels={"disk": "ssd"}),
                                                  N("n2")),
             P(spec={"nodeSelector": {"disk": "ssd"}})),
    Scenario("hostname-selector", (N("n0"), N("n1"), N("n2")),
             P(spec=_required({"key": "kpysched.test/role", "operator": "In",
                               "values": ["n2"]}))),
    Scenario("required-affinity-in-zone", THREE_ZONES,
             P(spec=_required({"key": ZONE, "operator": "In", "values": ["b"]}))),
    Scenario("required-affinity-not-in", THREE_ZONES,
             P(spec=_required({"key": ZONE, "operator": "NotIn", "values": ["a", "c"]}))),
    Scenario("required-affinity-gt", (N("n0", labels={"gen": "3"}), N("n1", labels={"gen": "7"}),
                                      N("n2", labels={"gen": "5"})),
             P(spec=_required({"key": "gen", "operator": "Gt", "values": ["6"]}))),
    Scenario("required-affinity-matches-nothing", THREE_ZONES,
             P(spec=_required({"key": ZONE, "operator": "In", "values": ["z"]})),
             expect="pending"),
    Scenario("preferred-affinity-wins", THREE_ZONES,
             P(spec=_preferred(80, {"key": ZONE, "operator": "In", "values": ["c"]}))),
    Scenario("untolerated-taint-avoided", (N("n0", taints=(TAINT_GPU,)), N("n1"),
                                           N("n2", taints=(TAINT_GPU,))), P()),
    Scenario("tolerated-taint-used-when-others-full",
             (N("n0", taints=(TAINT_GPU,)), N("n1", cpu="1")), P(cpu="2", spec=TOLERATE_GPU)),
    Scenario("untolerated-taint-everywhere", (N("n0", taints=(TAINT_GPU,)),
                                              N("n1", taints=(TAINT_GPU,))),
             P(), expect="pending"),
    Scenario("no-execute-taint", (N("n0", taints=({"key": "k", "value": "v",
                                                   "effect": "NoExecute"},)),),
             P(), expect="pending"),
    Scenario("prefer-no-schedule-avoided",
             (N("n0", taints=({"key": "k", "value": "v", "effect": "PreferNoSchedule"},)),
              N("n1", taints=({"key": "k", "value": "v", "effect": "PreferNoSchedule"},)),
              N("n2")), P()),
    Scenario("unschedulable-node", (N("n0", unschedulable=True), N("n1", unschedulable=True)),
             P(), expect="pending"),
    Scenario("unschedulable-node-skipped", (N("n0", unschedulable=True), N("n1")), P()),
    Scenario("host-port-conflict-avoided", (N("n0"), N("n1")),
             P(container={"ports": [{"containerPort": 80, "hostPort": 8080}]}),
             existing=(P("holder", node="n0",
                         container={"ports": [{"containerPort": 80, "hostPort": 8080}]}),)),
    Scenario("host-port-conflict-everywhere", (N("n0"), N("n1")),
             P(container={"ports": [{"containerPort": 80, "hostPort": 8080}]}),
             existing=tuple(P(f"holder-{n}", node=n,
                              container={"ports": [{"containerPort": 80, "hostPort": 8080}]})
                            for n in ("n0", "n1")), expect="pending"),
    Scenario("image-locality", (N("n0"), N("n1", images=(("registry.example/big:1", 900_000_000),)),
                                N("n2")),
             P(container={"image": "registry.example/big:1"})),
    Scenario("extended-resource-only-on-one", (N("n0"), N("n1", extra={"example.com/gpu": "2"}),
                                               N("n2")),
             P(container={"resources": {"requests": {"cpu": "100m",
                                                     "example.com/gpu": "1"},
                                        "limits": {"example.com/gpu": "1"}}})),
    Scenario("extended-resource-insufficient", (N("n0"), N("n1", extra={"example.com/gpu": "1"})),
             P(container={"resources": {"requests": {"example.com/gpu": "2"},
                                        "limits": {"example.com/gpu": "2"}}}), expect="pending"),
    Scenario("best-effort-spreads-by-default-requests", (N("n0"), N("n1")),
             P(cpu=None, memory=None), existing=_load("n0", 1, cpu="100m")),
    # LeastAllocated ties at 53 on both nodes; only the balance of cpu and memory differs.
    Scenario("balanced-allocation-breaks-the-tie",
             (N("n0", cpu="4", memory="8Gi"), N("n1", cpu="4", memory="8Gi")),
             P(cpu="100m", memory="3Gi"),
             existing=(P("cpu-heavy", node="n0", cpu="2", memory="256Mi"),
                       P("memory-heavy", node="n1", cpu="100m", memory="4Gi"))),
    # Fit and BalancedAllocation score only the feasible rows (kpysched's score_rows):
    # the best-scoring node is tainted and one is too small, so the winner is picked
    # among a subset of the rows, not all of them.
    Scenario("scores-only-the-feasible-rows",
             (N("n0", cpu="16", memory="64Gi", taints=(TAINT_GPU,)), N("n1", cpu="1"),
              N("n2"), N("n3", cpu="8")),
             P(cpu="1500m", memory="1Gi"), existing=_load("n2", 2), expect_node="n3"),
]

AFFINITY: list[Scenario] = [
    Scenario("pod-affinity-required", (N("n0"), N("n1"), N("n2")),
             P(spec=_pod_affinity("podAffinity", "db")),
             existing=(P("db", node="n1", labels={"app": "db"}),)),
    Scenario("pod-affinity-required-zone", THREE_ZONES,
             P(spec=_pod_affinity("podAffinity", "db", ZONE)),
             existing=(P("db", node="n2", labels={"app": "db"}),)),
    Scenario("pod-affinity-unsatisfied", (N("n0"), N("n1")),
             P(labels={"app": "web"}, spec=_pod_affinity("podAffinity", "db")),
             existing=(P("other", node="n1", labels={"app": "cache"}),), expect="pending"),
    # n1 must win on LeastAllocated by a whole point: with cpu=8 both nodes scored 98
    # (integer division) and kube-scheduler broke the tie at random.
    Scenario("pod-affinity-first-of-group", (N("n0"), N("n1", cpu="32", memory="128Gi")),
             P(labels={"app": "web"}, spec=_pod_affinity("podAffinity", "web"))),
    Scenario("anti-affinity-avoids", (N("n0"), N("n1")),
             P(labels={"app": "web"}, spec=_pod_affinity("podAntiAffinity", "web")),
             existing=(P("web-0", node="n0", labels={"app": "web"}),)),
    Scenario("anti-affinity-all-taken", (N("n0"), N("n1")),
             P(labels={"app": "web"}, spec=_pod_affinity("podAntiAffinity", "web")),
             existing=(P("web-0", node="n0", labels={"app": "web"}),
                       P("web-1", node="n1", labels={"app": "web"})), expect="pending"),
    Scenario("existing-anti-affinity-symmetry", (N("n0"), N("n1", cpu="2")),
             P(labels={"app": "web"}),
             existing=(P("loner", node="n0", labels={"app": "loner"},
                         spec=_pod_affinity("podAntiAffinity", "web")),)),
    # Replicas share one parsed term: InterPodAffinity judges it once and sums the rows
    # holding it (inter_pod_affinity/existing_terms.py); the answer must not change.
    Scenario("existing-anti-affinity-replicas-share-a-term",
             tuple(N(f"n{i}") for i in range(4)), P(labels={"app": "web"}),
             existing=tuple(P(f"db-{i}", node=f"n{i}", labels={"app": "db"},
                              spec=_pod_affinity("podAntiAffinity", "web"))
                            for i in range(3))),
    # One node only gets the hard weight (hostname key): a zone key would tie two
    # nodes, and kube-scheduler breaks ties at random.
    Scenario("existing-required-affinity-adds-hard-weight",
             tuple(N(f"n{i}") for i in range(4)), P(labels={"app": "web"}),
             existing=(P("cache-0", node="n1", labels={"app": "cache"},
                         spec=_pod_affinity("podAffinity", "web")),
                       P("cache-1", node="n3", labels={"app": "cache"}))),
    Scenario("existing-preferred-anti-affinity-replicas",
             tuple(N(f"n{i}", labels={ZONE: "abc"[i % 3]}) for i in range(3)),
             P(labels={"app": "web"}),
             existing=tuple(P(f"q-{i}", node=f"n{i}", labels={"app": "q"},
                              spec=_pod_affinity("podAntiAffinity", "web", ZONE,
                                                 preferred=50 + 25 * i))
                            for i in range(2))),
    Scenario("preferred-pod-affinity", (N("n0"), N("n1"), N("n2")),
             P(spec=_pod_affinity("podAffinity", "db", preferred=100)),
             existing=(P("db", node="n0", labels={"app": "db"}),
                       P("other", node="n1", labels={"app": "cache"}),
                       P("other2", node="n2", labels={"app": "cache"}))),
    Scenario("preferred-anti-affinity", (N("n0"), N("n1")),
             P(spec=_pod_affinity("podAntiAffinity", "noisy", preferred=100)),
             existing=(P("noisy", node="n0", labels={"app": "noisy"}),
                       P("quiet", node="n1", labels={"app": "quiet"}))),
    Scenario("spread-hostname", (N("n0"), N("n1"), N("n2")),
             P(labels={"app": "web"}, spec=_spread(HOST)),
             existing=(P("w0", node="n0", labels={"app": "web"}),
                       P("w1", node="n1", labels={"app": "web"}))),
    Scenario("spread-zone", THREE_ZONES, P(labels={"app": "web"}, spec=_spread(ZONE)),
             existing=(P("w0", node="n0", labels={"app": "web"}),
                       P("w1", node="n2", labels={"app": "web"}))),
    Scenario("spread-unsatisfiable", (N("n0", labels={ZONE: "a"}), N("n1", labels={ZONE: "b"},
                                                                     cpu="1")),
             P(labels={"app": "web"}, cpu="2", spec=_spread(ZONE)),
             existing=(P("w0", node="n0", labels={"app": "web"}),), expect="pending"),
    Scenario("spread-schedule-anyway", (N("n0"), N("n1")),
             P(labels={"app": "web"}, spec=_spread(HOST, when="ScheduleAnyway")),
             existing=(P("w0", node="n0", labels={"app": "web"}),)),
    Scenario("spread-missing-topology-label", (N("n0"), N("n1")),
             P(labels={"app": "web"}, spec=_spread(ZONE)), expect="pending"),
    Scenario("spread-min-domains", (N("n0", labels={ZONE: "a"}), N("n1", labels={ZONE: "b"})),
             P(labels={"app": "web"}, spec=_spread(ZONE, minDomains=3)),
             existing=(P("w0", node="n0", labels={"app": "web"}),
                       P("w1", node="n1", labels={"app": "web"})), expect="pending"),
    Scenario("spread-node-affinity-policy", THREE_ZONES,
             P(labels={"app": "web"},
               spec={**_spread(ZONE), **_required({"key": ZONE, "operator": "In",
                                                  "values": ["a", "b"]})}),
             existing=(P("w0", node="n0", labels={"app": "web"}),
                       P("w2", node="n2", labels={"app": "web"}),
                       P("w2b", node="n2", labels={"app": "web"}))),
]

PREEMPTION: list[Scenario] = [
    Scenario("preempt-the-lowest", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", priority_class="high"),
             existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),
                       P("mid-1", node="n1", cpu="1500m", priority_class="mid")),
             expect="preempted"),
    Scenario("preempt-fewest-victims", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", priority_class="high"),
             existing=(P("a0", node="n0", cpu="700m", priority_class="low"),
                       P("a1", node="n0", cpu="700m", priority_class="low"),
                       P("b0", node="n1", cpu="1500m", priority_class="low")),
             expect="preempted"),
    # Tolerated taints on the candidates: the dry run judges them once per node and,
    # giving victims back, asks only the Filters that read the node's pods
    # (NodeOnlyFilterPlugin). n0 (one low victim) must win as upstream picks it.
    Scenario("preempt-only-where-the-taint-is-tolerated",
             (N("n0", cpu="2", taints=(TAINT_GPU,)), N("n1", cpu="2", taints=(TAINT_GPU,)),
              N("n2", cpu="2")),
             P(cpu="1500m", priority_class="high", spec=TOLERATE_GPU),
             existing=(P("low-0", node="n0", cpu="1500m", priority_class="low",
                         spec=TOLERATE_GPU),
                       P("low-1", node="n1", cpu="700m", priority_class="low",
                         spec=TOLERATE_GPU),
                       P("low-1b", node="n1", cpu="700m", priority_class="low",
                         spec=TOLERATE_GPU),
                       P("mid-2", node="n2", cpu="1500m", priority_class="mid")),
             expect="preempted"),
    # The batched dry run: every node gives its victims back in the same step. n0 keeps
    # its mid pod and loses the low one; n1 must lose its mid pod; n2 keeps its mid pod
    # and loses both lows. n0 wins on the lowest highest victim priority, then on the
    # smallest priority sum, with no tie left for the random offset to decide.
    Scenario("preempt-reprieves-the-more-important",
             (N("n0", cpu="2"), N("n1", cpu="2"), N("n2", cpu="2")),
             P(cpu="1", priority_class="high"),
             existing=(P("mid-0", node="n0", cpu="800m", priority_class="mid"),
                       P("low-0", node="n0", cpu="800m", priority_class="low"),
                       P("mid-1", node="n1", cpu="1200m", priority_class="mid"),
                       P("low-1", node="n1", cpu="300m", priority_class="low"),
                       P("mid-2", node="n2", cpu="400m", priority_class="mid"),
                       P("low-2a", node="n2", cpu="800m", priority_class="low"),
                       P("low-2b", node="n2", cpu="800m", priority_class="low")),
             expect="preempted"),
    Scenario("preempt-respects-pdb", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", priority_class="high"),
             existing=(P("guarded", node="n0", cpu="1500m", priority_class="low",
                         labels={"app": "guarded"}),
                       P("free", node="n1", cpu="1500m", priority_class="low",
                         labels={"app": "free"})),
             pdbs=(PdbSpec("guard", {"app": "guarded"}),), expect="preempted"),
    Scenario("preemption-policy-never", (N("n0", cpu="2"),),
             P(cpu="1500m", priority_class="high-nonpreempting"),
             existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),),
             expect="pending"),
    Scenario("no-lower-priority-victims", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", priority_class="low"),
             existing=(P("mid-0", node="n0", cpu="1500m", priority_class="mid"),
                       P("mid-1", node="n1", cpu="1500m", priority_class="mid")),
             expect="pending"),
    Scenario("preemption-not-helpful", (N("n0", cpu="1"),), P(cpu="2", priority_class="high"),
             existing=(P("low-0", node="n0", cpu="500m", priority_class="low"),),
             expect="pending"),
]

ALL: list[Scenario] = CORE + AFFINITY + PREEMPTION
