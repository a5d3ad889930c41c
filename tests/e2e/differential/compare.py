"""What every differential test file shares: the schedulers beside the cluster, and
one scenario run under each and compared.

Each scheduler has a cluster of its own for a whole test module: kube-scheduler the
session's cluster, kpysched its twin (the same components, flags and gates; see
conftest.py); each handles only pods naming it. A scenario runs on both at once, on
fresh nodes and namespaces, and the outcomes (node, FailedScheduling text, preempted
victims, and each claim's binding: to which PV, on which selected node) must be
identical. At once, not one after the other on one cluster, because a scheduler sees
every Node of its cluster (the FailedScheduling text counts them): on one cluster
the second run would have to wait for the first to end. Upstream is the
specification. kube-controller-manager's PV controller binds the claims, and the
test provisioner (tests/cluster/provisioner.py) provisions for the scenarios'
provisioning classes, as an external CSI provisioner would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from kubernetes_asyncio import client

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.provisioner import ProvisionerProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.model import Outcome, Scenario
from tests.e2e.differential.runner import _Names, ensure_priority_classes, run_scenario

UPSTREAM = "default-scheduler"
KPYSCHED = "kpysched"
T = TypeVar("T")


@dataclass(frozen=True)
class Twins:
    """The cluster each scheduler runs on."""

    upstream: ClusterState
    kpysched: ClusterState


@dataclass(frozen=True)
class TwinApis:
    """A client of each scheduler's cluster."""

    upstream: client.ApiClient
    kpysched: client.ApiClient


@contextmanager
def schedulers_running(twins: Twins) -> Iterator[None]:
    with (ProvisionerProcess(twins.upstream), ProvisionerProcess(twins.kpysched),
          UpstreamScheduler(twins.upstream), KpyschedProcess(twins.kpysched, log_level="info")):
        yield


@contextmanager
def schedulers_side_by_side(cluster: ClusterState) -> Iterator[None]:
    """Both schedulers on one cluster, for a test whose two runs must see each other's
    nodes (dra_writes.py)."""
    with (ProvisionerProcess(cluster), UpstreamScheduler(cluster),
          KpyschedProcess(cluster, log_level="info")):
        yield


async def both(upstream: Awaitable[T], ours: Awaitable[T]) -> tuple[T, T]:
    """Run the two runs at once and let both finish (each cleans up after itself)
    before the first failure, if any, is raised."""
    results = await asyncio.gather(upstream, ours, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results[0], results[1]  # type: ignore[return-value]


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


async def same_decision(apis: TwinApis, scenario: Scenario) -> None:
    await ensure_priority_classes(apis.upstream)
    await ensure_priority_classes(apis.kpysched)
    upstream, ours = await both(run_scenario(apis.upstream, scenario, UPSTREAM),
                                run_scenario(apis.kpysched, scenario, KPYSCHED))
    check_kind(scenario, upstream)
    assert ours == upstream, (f"\n upstream: {upstream.describe()}\n kpysched: "
                              f"{ours.describe()}")


async def first_failures(api: client.ApiClient, names: _Names) -> dict[str, str]:
    """pod -> its first FailedScheduling note, run names turned back into roles."""
    first: dict[str, str] = {}
    for event in await kube.events(api, names.namespace, "FailedScheduling"):
        first.setdefault(event["regarding"]["name"], names.text(event.get("note", "")))
    return first
