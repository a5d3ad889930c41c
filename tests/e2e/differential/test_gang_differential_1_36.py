"""Gang scheduling's compatibility set on Kubernetes v1.36.4 (issue 34):
kube-scheduler v1.36.4 and kpysched, both with GenericWorkload and GangScheduling on,
on a cluster serving scheduling.k8s.io/v1alpha2, must end the same way (the
PodGroupScheduled condition included). test_gang_differential.py runs every scenario
on v1.37.2.

Not all of them: CI has room for the whole suite once. The scenarios below cover each
text v1.36 writes (a member held back for its group, a member that fits nowhere, the
group's condition True and False), the PreEnqueue hold below minCount, a basic policy,
the retry after a node is added, and the shared claim of DynamicResources.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from tests.e2e.differential.gang import GangScenario
from tests.e2e.differential.test_gang_differential import (  # the module's fixtures, again
    SCENARIOS,
    gang_api,
    gang_cluster,
    same_gang_outcome,
    same_outcome_of_a_gang_sharing_one_claim,
)

pytestmark = [pytest.mark.e2e, pytest.mark.release("1.36")]

COMPATIBILITY_NAMES = ("below-min-count", "fits-only-in-part", "min-count-fits-the-rest-waits",
                       "basic-policy-group", "node-added-lets-the-gang-fit")
COMPATIBILITY = [s for s in SCENARIOS if s.name in COMPATIBILITY_NAMES]

__all__ = ["gang_api", "gang_cluster"]


@pytest.mark.parametrize("scenario", COMPATIBILITY, ids=[s.name for s in COMPATIBILITY])
async def test_same_gang_outcome_as_kube_scheduler_v1_36(gang_api: client.ApiClient,
                                                         scenario: GangScenario) -> None:
    await same_gang_outcome(gang_api, scenario, "1.36")


async def test_gang_sharing_one_unallocated_claim_v1_36(gang_api: client.ApiClient) -> None:
    await same_outcome_of_a_gang_sharing_one_claim(gang_api, "1.36")
