"""NodeDeclaredFeatures scenarios for the batch: nodes publish
`status.declaredFeatures` the way a kubelet would, and a pod whose container restart
rule restarts all its containers needs a node declaring that feature.

The API server keeps the field and accepts the `RestartAllContainers` rule under
v1.36's default gates (NodeDeclaredFeatures and RestartAllContainersOnContainerExits
beta, on); tests/e2e/differential/test_node_declared_features.py checks that premise.
A pod on the host network in a user namespace needs the other inferable feature, but
its gate is alpha and the API server refuses such pods; the unit tests cover it.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.differential.model import Scenario
from tests.e2e.differential.scenarios import N, P

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

NODE_FEATURES: list[Scenario] = [
    # The least allocated node (n0) and one declaring some other feature (n2) lack it.
    Scenario("ndf-only-the-declaring-node", (N("n0"), N("n1"), N("n2")),
             P(container=RESTARTS_ALL), existing=(P("busy", node="n1", cpu="2"),),
             expect_node="n1"),
    Scenario("ndf-no-node-declares", (N("n0"), N("n1")), P(container=RESTARTS_ALL),
             expect="pending", expect_reason=f"2 {REASON}"),
    # A sidecar-less init container's rule counts too; names the registry does not know
    # are ignored, not a reason to refuse the node.
    Scenario("ndf-init-container-rule", (N("n0"), N("n1")), P(spec=INIT_RESTARTS_ALL),
             existing=(P("busy", node="n1", cpu="2"),), expect_node="n1"),
    # A rule restarting only its own container needs nothing: the plugin stays out.
    Scenario("ndf-own-restart-needs-nothing", (N("n0"), N("n1")),
             P(container=RESTARTS_ITSELF), existing=(P("busy", node="n1", cpu="2"),),
             expect_node="n0"),
    # Reasons in filter order: the declaring node is full, the free one lacks the feature.
    Scenario("ndf-full-or-featureless", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", container=RESTARTS_ALL),
             existing=(P("busy", node="n0", cpu="1"),), expect="pending",
             expect_reason=f"1 Insufficient cpu, 1 {REASON}"),
    # Preemption cannot give a node a feature: the victim is taken on the declaring node
    # even though the other one is empty.
    Scenario("ndf-preempts-on-the-declaring-node", (N("n0", cpu="2"), N("n1", cpu="2")),
             P(cpu="1500m", priority_class="high", container=RESTARTS_ALL),
             existing=(P("low-0", node="n0", cpu="1500m", priority_class="low"),),
             expect="preempted", expect_node="n0"),
]

# Scenario name -> node role -> status.declaredFeatures.
DECLARED: dict[str, dict[str, tuple[str, ...]]] = {
    "ndf-only-the-declaring-node": {"n1": (RESTART_ALL,), "n2": (WEBSOCKETS,)},
    "ndf-no-node-declares": {"n1": (POD_RESIZE, WEBSOCKETS)},
    "ndf-init-container-rule": {"n1": ("Acme/turbo", RESTART_ALL, "Zeta")},
    "ndf-own-restart-needs-nothing": {"n1": (RESTART_ALL,)},
    "ndf-full-or-featureless": {"n0": (RESTART_ALL,)},
    "ndf-preempts-on-the-declaring-node": {"n0": (RESTART_ALL,)},
}
