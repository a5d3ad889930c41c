"""What every differential test file shares: the schedulers beside the cluster, and
one scenario run under each and compared.

Both schedulers run for a whole test module against the real cluster; each handles
only pods naming it. A scenario runs twice on fresh nodes and namespaces, once
per scheduler, and the outcomes (node, FailedScheduling text, preempted victims,
and each claim's binding: to which PV, on which selected node) must be identical.
Upstream is the specification. kube-controller-manager's PV controller binds the
claims, and the test provisioner (tests/cluster/provisioner.py) provisions for
the scenarios' provisioning classes, as an external CSI provisioner would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes_asyncio import client

from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.provisioner import ProvisionerProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.model import Outcome, Scenario
from tests.e2e.differential.runner import ensure_priority_classes, run_scenario

UPSTREAM = "default-scheduler"
KPYSCHED = "kpysched"


@contextmanager
def schedulers_running(cluster: ClusterState) -> Iterator[None]:
    with (ProvisionerProcess(cluster), UpstreamScheduler(cluster),
          KpyschedProcess(cluster, log_level="info")):
        yield


def check_kind(scenario: Scenario, outcome: Outcome) -> None:
    """The scenario means what it says (else a passing comparison proves little)."""
    if scenario.expect == "bound":
        assert outcome.node is not None and not outcome.victims, outcome.describe()
    elif scenario.expect == "pending":
        assert outcome.node is None and outcome.message, outcome.describe()
    elif scenario.expect == "gated":
        assert outcome.node is None and outcome.message is None, outcome.describe()
    elif scenario.expect == "retried":
        assert outcome.node is not None and outcome.message and not outcome.victims, \
            outcome.describe()
    else:
        assert outcome.node is not None and outcome.victims, outcome.describe()
    if scenario.expect_node is not None:
        assert outcome.node == scenario.expect_node, outcome.describe()
    assert all(node is not None for _, node in outcome.then), outcome.describe()
    assert scenario.expect_reason in (outcome.message or ""), outcome.describe()
    volumes = {claim.role: claim.volume for claim in outcome.claims}
    for claim, volume in scenario.expect_claims.items():
        assert volumes.get(claim) == volume, outcome.describe()
    devices = {rc.claim: tuple(f"{d.pool}/{d.device}" for d in rc.devices)
               for rc in outcome.resource_claims}
    for resource_claim, wanted in scenario.expect_devices.items():
        assert devices.get(resource_claim) == wanted, outcome.describe()


async def same_decision(api: client.ApiClient, scenario: Scenario) -> None:
    await ensure_priority_classes(api)
    upstream = await run_scenario(api, scenario, UPSTREAM)
    ours = await run_scenario(api, scenario, KPYSCHED)
    check_kind(scenario, upstream)
    assert ours == upstream, (f"\n upstream: {upstream.describe()}\n kpysched: "
                              f"{ours.describe()}")
