"""The extender differential table: the extenders both schedulers are configured
with (one config for the whole module) and the scenarios run against them.

Every extender manages a resource of its own (`ext.kpysched.test/<route>`, ignored by
the scheduler's resource fit but one), so a scenario's pod reaches exactly the
extenders whose resources it requests, and one scheduler start serves every
scenario. Each route is a URL prefix on the test extender (tests/extender), which
answers by node and pod labels (tests/extender/rules.py) and fails, times out or
is slow where the route says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.e2e.differential.model import NodeSpec, PodSpec, Scenario
from tests.extender import rules
from tests.extender.server import Fault, Route

DOMAIN = "ext.kpysched.test"
SCORE_B = f"{DOMAIN}/score-b"
FAILED_TEXT = "the test extender was told to fail"
# Past the 1 s httpTimeout of the timeout routes, short of the 30 s a run waits.
SLOW_SECONDS = 3.0


@dataclass(frozen=True)
class ExtenderRoute:
    """One `extenders:` entry and how the test extender serves its prefix."""

    verbs: tuple[str, ...]
    node_cache_capable: bool = True
    weight: int = 1
    ignorable: bool = False
    http_timeout: str | None = None
    ignored_by_scheduler: bool = True
    https: bool = False
    serve: Route = field(default_factory=Route)

    def config(self, name: str, base: str, ca_file: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "urlPrefix": f"{base}/{name}", "nodeCacheCapable": self.node_cache_capable,
            "ignorable": self.ignorable,
            "managedResources": [{"name": resource(name),
                                  "ignoredByScheduler": self.ignored_by_scheduler}]}
        entry.update({f"{verb}Verb": verb for verb in self.verbs})
        if "prioritize" in self.verbs:
            entry["weight"] = self.weight
        if self.http_timeout is not None:
            entry["httpTimeout"] = self.http_timeout
        if self.https:
            entry["enableHTTPS"] = True
            entry["tlsConfig"] = {"caFile": ca_file}
        return entry


def _failing(verb: str, **fault: Any) -> Route:
    return Route(faults={verb: Fault(**fault)})


ROUTES: dict[str, ExtenderRoute] = {
    "names": ExtenderRoute(("filter", "prioritize")),
    "full": ExtenderRoute(("filter", "prioritize"), node_cache_capable=False),
    "heavy": ExtenderRoute(("prioritize",), weight=5),
    "light": ExtenderRoute(("prioritize",), weight=1, serve=Route(score_label=SCORE_B)),
    "fail-ignorable": ExtenderRoute(("filter",), ignorable=True,
                                    serve=_failing("filter", status=500)),
    "fail": ExtenderRoute(("filter",), serve=_failing("filter", status=500)),
    "error": ExtenderRoute(("filter",), serve=_failing("filter", error=FAILED_TEXT)),
    "timeout": ExtenderRoute(("filter",), http_timeout="1s",
                             serve=_failing("filter", delay=SLOW_SECONDS)),
    "timeout-ignorable": ExtenderRoute(("filter",), http_timeout="1s", ignorable=True,
                                       serve=_failing("filter", delay=SLOW_SECONDS)),
    "prioritize-fail": ExtenderRoute(("prioritize",), serve=_failing("prioritize", status=500)),
    "slow": ExtenderRoute(("filter", "prioritize"), serve=Route(faults={
        "filter": Fault(delay=0.3), "prioritize": Fault(delay=0.3)})),
    "preempt-full": ExtenderRoute(("preempt",), node_cache_capable=False),
    "preempt-names": ExtenderRoute(("preempt",)),
    "preempt-fail": ExtenderRoute(("preempt",), serve=_failing("preempt", status=500)),
    "preempt-fail-ignorable": ExtenderRoute(("preempt",), ignorable=True,
                                            serve=_failing("preempt", status=500)),
    "bind": ExtenderRoute(("filter", "bind")),
    "https": ExtenderRoute(("filter", "prioritize"), https=True),
    "not-ignored": ExtenderRoute(("filter",), ignored_by_scheduler=False),
}


def resource(route: str) -> str:
    return f"{DOMAIN}/{route}"


def extenders_config(http_base: str, https_base: str, ca_file: str) -> list[dict[str, Any]]:
    return [route.config(name, https_base if route.https else http_base, ca_file)
            for name, route in ROUTES.items()]


def serving_routes(https: bool) -> dict[str, Route]:
    return {name: route.serve for name, route in ROUTES.items() if route.https == https}


@dataclass(frozen=True)
class ExtenderScenario:
    scenario: Scenario
    # The (route, verb) pairs kube-scheduler must call, no more: what the scenario
    # is about (checked on upstream's records; kpysched's must then equal them).
    calls: frozenset[tuple[str, str]]

    @property
    def name(self) -> str:
        return self.scenario.name


def N(role: str, **kw: Any) -> NodeSpec:  # noqa: N802 - table shorthand
    return NodeSpec(role, **kw)


def P(role: str = "incoming", *, routes: tuple[str, ...] = (), cpu: str = "100m",  # noqa: N802
      memory: str = "100Mi", count: str = "1", **kw: Any) -> PodSpec:
    """A pod requesting the managed resource of each of `routes` (requests and limits
    alike, as the API requires of extended resources)."""
    requests = {"cpu": cpu, "memory": memory, **{resource(r): count for r in routes}}
    limits = {resource(r): count for r in routes}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return PodSpec(role, cpu=cpu, memory=memory, container={"resources": resources}, **kw)


def S(scenario: Scenario, *calls: tuple[str, str]) -> ExtenderScenario:  # noqa: N802
    return ExtenderScenario(scenario, frozenset(calls))


NO = {rules.ALLOW: "false"}
NEVER = {rules.ALLOW: "never"}
PROTECTED = {rules.PROTECTED: "true"}
SPARE = {rules.SPARE: "true"}


def _score(value: int, label: str = rules.SCORE) -> dict[str, str]:
    return {label: str(value)}


FILTERED_THREE = (N("n0", labels=NO), N("n1", labels=NEVER), N("n2"))


# n0 is the bigger node and so the plugins' choice by several points (a 100m pod
# leaves 97 % of its CPU free against 90 % of n1's), unless something says otherwise.
TWO = (N("n0"), N("n1", cpu="1"))
TWO_REFUSED = (N("n0", labels=NO), N("n1", cpu="1", labels=NO))
LOADED_N0 = (P("load-0", node="n0", cpu="2"),)

# n0 costs one low victim, n1 two.
FULL_OF_LOW = (N("n0", cpu="2"), N("n1", cpu="2"))
LOW_VICTIMS = (P("low-0", node="n0", cpu="1500m", priority_class="low"),
               P("a1", node="n1", cpu="700m", priority_class="low"),
               P("a2", node="n1", cpu="700m", priority_class="low"))

SCENARIOS: list[ExtenderScenario] = [
    S(Scenario("filter-node-names", FILTERED_THREE, P(routes=("names",)),
               expect_node="n2"), ("names", "filter")),
    S(Scenario("filter-full-nodes", FILTERED_THREE, P(routes=("full",)),
               expect_node="n2"), ("full", "filter")),
    # Every node refused, by the extender (one for good) or by a plugin: the extender's
    # reasons are counted in the FailedScheduling text beside the plugins'.
    S(Scenario("filter-failed-nodes-in-the-message",
               (N("n0", labels=NO), N("n1", labels=NEVER), N("n2", labels=NO),
                N("n3", cpu="1")), P(routes=("names",), cpu="2"), expect="pending",
               expect_reason=rules.REFUSED_FOR_GOOD), ("names", "filter")),
    # With full Nodes the extender's answer carries Nodes, and upstream scores the
    # nodes of that answer as they came back (fresh NodeInfos, without their pods):
    # n0's load is not counted, and its size wins by far; counting the load, n1
    # would win as far.
    S(Scenario("filter-full-nodes-then-score", (N("n0", cpu="64"), N("n1", cpu="2")),
               P(routes=("full",), cpu="1"), existing=(P("load-0", node="n0", cpu="60"),),
               expect_node="n0"), ("full", "filter"), ("full", "prioritize")),
    S(Scenario("prioritize-outweighs-load", (N("n0", labels=_score(10)), N("n1")),
               P(routes=("names",)), existing=LOADED_N0, expect_node="n0"),
      ("names", "filter"), ("names", "prioritize")),
    S(Scenario("prioritize-weights", (N("n0", labels={**_score(2), **_score(10, SCORE_B)}),
                                      N("n1", labels={**_score(6), **_score(0, SCORE_B)})),
               P(routes=("heavy", "light")), expect_node="n1"),
      ("heavy", "prioritize"), ("light", "prioritize")),
    S(Scenario("prioritize-full-nodes", (N("n0", labels=_score(10)), N("n1")),
               P(routes=("full",)), existing=LOADED_N0, expect_node="n0"),
      ("full", "filter"), ("full", "prioritize")),
    # A pod without any managed resource reaches no extender: the nodes every
    # extender filter would refuse take it.
    S(Scenario("managed-resources-ignore-the-pod", TWO_REFUSED, P(), expect_node="n0")),
    # No node has the resource; ignoredByScheduler keeps NodeResourcesFit from
    # counting it.
    S(Scenario("ignored-by-scheduler", TWO, P(routes=("names",), count="3"),
               expect_node="n0"), ("names", "filter"), ("names", "prioritize")),
    # Not ignored: NodeResourcesFit refuses every node and no extender is called.
    S(Scenario("managed-resource-not-ignored", TWO, P(routes=("not-ignored",)),
               expect="pending", expect_reason=f"Insufficient {resource('not-ignored')}")),
    S(Scenario("ignorable-failure-is-skipped", TWO_REFUSED, P(routes=("fail-ignorable",)),
               expect_node="n0"), ("fail-ignorable", "filter")),
    S(Scenario("failure-fails-the-cycle", TWO, P(routes=("fail",)), expect="pending",
               expect_reason="code 500"), ("fail", "filter")),
    S(Scenario("error-field-fails-the-cycle", TWO, P(routes=("error",)), expect="pending",
               expect_reason=FAILED_TEXT), ("error", "filter")),
    S(Scenario("timeout-fails-the-cycle", TWO, P(routes=("timeout",)), expect="pending",
               expect_reason="Timeout"), ("timeout", "filter")),
    S(Scenario("ignorable-timeout-is-skipped", TWO_REFUSED,
               P(routes=("timeout-ignorable",)), expect_node="n0"),
      ("timeout-ignorable", "filter")),
    # A failing prioritize is never fatal: the plugins' scores decide.
    S(Scenario("prioritize-failure-is-ignored", TWO, P(routes=("prioritize-fail",)),
               expect_node="n0"), ("prioritize-fail", "prioritize")),
    S(Scenario("slow-extender", (N("n0"), N("n1", labels=_score(10))), P(routes=("slow",)),
               expect_node="n1"), ("slow", "filter"), ("slow", "prioritize")),
    # n0 would cost one victim against n1's two, but the extender takes it off the
    # candidates (full victims in the request).
    S(Scenario("preempt-drops-a-protected-node",
               (N("n0", cpu="2", labels=PROTECTED), N("n1", cpu="2")),
               P(routes=("preempt-full",), cpu="1500m", priority_class="high"),
               existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),
                         P("a1", node="n1", cpu="700m", priority_class="low"),
                         P("a2", node="n1", cpu="700m", priority_class="low")),
               expect="preempted", expect_node="n1"), ("preempt-full", "preempt")),
    # n0 needs both its low pods gone; the extender spares one (UIDs in the request),
    # so n0 still wins on the lower victim, loses a, and the pod does not fit there;
    # the next round finds only the spared pod on n0 (dropped) and takes b on n1.
    S(Scenario("preempt-spares-a-victim",
               (N("n0"), N("n1")),
               P(routes=("preempt-names",), cpu="3", priority_class="high"),
               existing=(P("a", node="n0", cpu="2", priority_class="low"),
                         P("s", node="n0", cpu="2", priority_class="low", labels=SPARE),
                         P("b", node="n1", cpu="3500m", priority_class="mid")),
               expect="preempted", expect_node="n1"), ("preempt-names", "preempt")),
    # A failing preempt verb: fatal for the preemption (the pod stays pending with
    # the error in its FailedScheduling text), or skipped when ignorable (the
    # default choice stands).
    S(Scenario("preempt-failure", FULL_OF_LOW, P(routes=("preempt-fail",), cpu="1500m",
                                                 priority_class="high"),
               existing=LOW_VICTIMS, expect="pending", expect_reason="code 500"),
      ("preempt-fail", "preempt")),
    S(Scenario("preempt-ignorable-failure", FULL_OF_LOW,
               P(routes=("preempt-fail-ignorable",), cpu="1500m", priority_class="high"),
               existing=LOW_VICTIMS, expect="preempted", expect_node="n0"),
      ("preempt-fail-ignorable", "preempt")),
    S(Scenario("binding-extender", TWO, P(routes=("bind",)), expect_node="n0"),
      ("bind", "filter"), ("bind", "bind")),
    S(Scenario("https-with-a-ca", (N("n0"), N("n1", labels=_score(10))), P(routes=("https",)),
               expect_node="n1"), ("https", "filter"), ("https", "prioritize")),
]
