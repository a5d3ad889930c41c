"""Coscheduling without its CRD: kpysched, started with a profile that enables
Coscheduling against a cluster that does not serve scheduler-plugins' PodGroups, exits 1
at start-up and says `coscheduling.crd_missing` (docs/gang.md).

The session's cluster (tests/conftest.py), which no test module gives the PodGroup CRD:
test_coscheduling.py installs it on a cluster of its own. The test checks that the CRD
is absent before it starts, so a cluster that has it fails with that reason, not with a
misleading exit code.
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import cluster as harness
from tests.cluster import kube
from tests.cluster.kpysched_process import KpyschedProcess
from tests.e2e.test_coscheduling import CONFIG, GROUP, PLURAL

pytestmark = pytest.mark.e2e

CRD_NAME = f"{PLURAL}.{GROUP}"
# kpysched's start-up (imports, config, one discovery request) until it exits.
EXIT_TIMEOUT_SECONDS = 20.0


async def _served_crd(state: harness.ClusterState) -> bool:
    async with kube.api_client(state) as api:
        try:
            await client.ApiextensionsV1Api(api).read_custom_resource_definition(CRD_NAME)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
    return True


def test_coscheduling_without_the_crd_exits_1_saying_crd_missing(
    cluster: harness.ClusterState,
) -> None:
    assert not asyncio.run(_served_crd(cluster)), (
        f"the session cluster has the CRD {CRD_NAME}; this test needs a cluster without "
        f"it (which test installed it?)")
    kp = KpyschedProcess(cluster, CONFIG)
    # Not kp.start(): that waits for scheduler.started, which must never come.
    with kp.log_path.open("ab") as log:
        try:
            code = subprocess.run(kp.command, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=kp.env, check=False,
                                  timeout=EXIT_TIMEOUT_SECONDS).returncode
        except subprocess.TimeoutExpired:  # run() has killed it
            raise AssertionError(
                f"kpysched still running {EXIT_TIMEOUT_SECONDS:.0f}s after start without "
                f"the PodGroup CRD; last lines of {kp.log_path}:\n"
                f"{harness.log_tail(kp.log_path)}") from None
    events = kp.log_events()
    logged = [e for e in events if e.get("event") == "coscheduling.crd_missing"]
    context = f"last lines of {kp.log_path}:\n{harness.log_tail(kp.log_path)}"
    assert code == 1, f"kpysched exited with {code}; {context}"
    assert logged, f"no coscheduling.crd_missing in the log; {context}"
    assert logged[0].get("level") == "error", logged
    assert "podgroups.scheduling.x-k8s.io/v1alpha1" in logged[0].get("reason", ""), logged
    assert not any(e.get("event") == "scheduler.started" for e in events), context
