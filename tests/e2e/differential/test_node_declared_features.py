"""Differential scenarios for NodeDeclaredFeatures: the same scenario under kube-scheduler
v1.36.4 and kpysched, each on a cluster of its own and at once (see compare.py),
compared on node, FailedScheduling text and victims (as the batch, tests/e2e/differential/batch, does).

Nodes publish `status.declaredFeatures` the way a kubelet would; the API server of the
harness runs v1.36's default gates (NodeDeclaredFeatures and
RestartAllContainersOnContainerExits beta, on), so it keeps the field and accepts the
`RestartAllContainers` restart rule that makes a pod need a feature. A pod on the host
network in a user namespace needs the other inferable feature, but its gate
(UserNamespacesHostNetworkSupport) is alpha and the API server refuses such pods; the
unit tests cover it.

The shared runner builds Nodes from NodeSpec, which has no declared features; here its
node body gains them by node role for the length of one test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.cluster import kube
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM, TwinApis, Twins, both
from tests.e2e.differential.model import NodeSpec, Outcome, PodSpec, Scenario
from tests.e2e.differential.runner import ROLE_LABEL, ensure_priority_classes, run_scenario

REASON = "node(s) didn't match Pod's required features"
RESTART_ALL = "RestartAllContainersOnContainerExits"
WEBSOCKETS = "ExtendWebSocketsToKubelet"
POD_RESIZE = "InPlacePodLevelResourcesVerticalScaling"


def _restart_rule(action: str) -> dict[str, Any]:
    return {"restartPolicy": "Never", "restartPolicyRules": [
        {"action": action, "exitCodes": {"operator": "In", "values": [42]}}]}


# Merged into the pod's only container: a failure with exit code 42 restarts the pod's
# every container in place, which only a node declaring the feature can do.
RESTARTS_ALL = _restart_rule("RestartAllContainers")
RESTARTS_ITSELF = _restart_rule("Restart")
INIT_RESTARTS_ALL = {"initContainers": [{"name": "init", "image": "registry.k8s.io/pause:3.10",
                                         **RESTARTS_ALL}]}


@dataclass(frozen=True)
class FeatureScenario:
    scenario: Scenario
    declared: Mapping[str, tuple[str, ...]]  # node role -> status.declaredFeatures
    # Upstream must decide this for the scenario to mean what it says.
    expect_node: str | None = None
    expect_reason: str = ""


def N(role: str, **kw: Any) -> NodeSpec:  # noqa: N802 - table shorthand
    return NodeSpec(role, **kw)


def P(role: str = "incoming", **kw: Any) -> PodSpec:  # noqa: N802 - table shorthand
    return PodSpec(role, **kw)


SCENARIOS = [
    # The least allocated node (n0) and one declaring some other feature (n2) lack it.
    FeatureScenario(
        Scenario("ndf-only-the-declaring-node", (N("n0"), N("n1"), N("n2")),
                 P(container=RESTARTS_ALL),
                 existing=(P("busy", node="n1", cpu="2"),)),
        {"n1": (RESTART_ALL,), "n2": (WEBSOCKETS,)}, expect_node="n1"),
    FeatureScenario(
        Scenario("ndf-no-node-declares", (N("n0"), N("n1")), P(container=RESTARTS_ALL),
                 expect="pending"),
        {"n1": (POD_RESIZE, WEBSOCKETS)}, expect_reason=f"2 {REASON}"),
    # A sidecar-less init container's rule counts too; names the registry does not know
    # are ignored, not a reason to refuse the node.
    FeatureScenario(
        Scenario("ndf-init-container-rule", (N("n0"), N("n1")), P(spec=INIT_RESTARTS_ALL),
                 existing=(P("busy", node="n1", cpu="2"),)),
        {"n1": ("Acme/turbo", RESTART_ALL, "Zeta")}, expect_node="n1"),
    # A rule restarting only its own container needs nothing: the plugin stays out.
    FeatureScenario(
        Scenario("ndf-own-restart-needs-nothing", (N("n0"), N("n1")),
                 P(container=RESTARTS_ITSELF),
                 existing=(P("busy", node="n1", cpu="2"),)),
        {"n1": (RESTART_ALL,)}, expect_node="n0"),
    # Reasons in filter order: the declaring node is full, the free one lacks the feature.
    FeatureScenario(
        Scenario("ndf-full-or-featureless", (N("n0", cpu="2"), N("n1", cpu="2")),
                 P(cpu="1500m", container=RESTARTS_ALL),
                 existing=(P("busy", node="n0", cpu="1"),), expect="pending"),
        {"n0": (RESTART_ALL,)}, expect_reason=f"1 Insufficient cpu, 1 {REASON}"),
    # Preemption cannot give a node a feature: the victim is taken on the declaring node
    # even though the other one is empty.
    FeatureScenario(
        Scenario("ndf-preempts-on-the-declaring-node", (N("n0", cpu="2"), N("n1", cpu="2")),
                 P(cpu="1500m", priority_class="high", container=RESTARTS_ALL),
                 existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),),
                 expect="preempted"),
        {"n0": (RESTART_ALL,)}, expect_node="n0"),
]


@pytest.fixture(scope="module")
def schedulers(twins: Twins) -> Iterator[None]:
    with UpstreamScheduler(twins.upstream), KpyschedProcess(twins.kpysched, log_level="info"):
        yield


def _declaring(node_body: Callable[..., dict[str, Any]],
               declared: Mapping[str, tuple[str, ...]]) -> Callable[..., dict[str, Any]]:
    """The harness's node body, plus what a kubelet would declare for the node's role."""
    def body(name: str, **fields: Any) -> dict[str, Any]:
        made = node_body(name, **fields)
        features = declared.get(fields["labels"][ROLE_LABEL], ())
        if features:
            # Sorted and unique, or the API server refuses the Node.
            made["status"]["declaredFeatures"] = sorted(set(features))
        return made
    return body


def _check_meaning(case: FeatureScenario, outcome: Outcome) -> None:
    """Upstream did what the scenario is about (else a passing comparison proves little)."""
    scenario = case.scenario
    if scenario.expect == "pending":
        assert outcome.node is None and outcome.message, outcome.describe()
    else:
        assert outcome.node == case.expect_node, outcome.describe()
        assert bool(outcome.victims) == (scenario.expect == "preempted"), outcome.describe()
    assert case.expect_reason in (outcome.message or ""), outcome.describe()


@pytest.mark.parametrize("case", SCENARIOS, ids=[c.scenario.name for c in SCENARIOS])
async def test_same_decision_as_kube_scheduler(
    schedulers: None, twin_apis: TwinApis, monkeypatch: pytest.MonkeyPatch,
    case: FeatureScenario,
) -> None:
    monkeypatch.setattr(kube, "node_body", _declaring(kube.node_body, case.declared))
    await ensure_priority_classes(twin_apis.upstream)
    await ensure_priority_classes(twin_apis.kpysched)
    upstream, ours = await both(run_scenario(twin_apis.upstream, case.scenario, UPSTREAM),
                                run_scenario(twin_apis.kpysched, case.scenario, KPYSCHED))
    _check_meaning(case, upstream)
    assert ours == upstream, (f"\n upstream: {upstream.describe()}\n kpysched: "
                              f"{ours.describe()}")


async def test_nodes_keep_their_declared_features(api: client.ApiClient,
                                                  nodes_to_clean: list[str]) -> None:
    """The premise of every scenario: the API server keeps what the Node declares."""
    name = kube.unique_name("ndf")
    body = kube.node_body(name, labels={ROLE_LABEL: "n0"})
    body["status"]["declaredFeatures"] = ["Acme/turbo", RESTART_ALL]
    nodes_to_clean.append(name)
    await kube.create_node(api, body)
    node = await client.CoreV1Api(api).read_node(name)
    assert node.status.declared_features == ["Acme/turbo", RESTART_ALL]
