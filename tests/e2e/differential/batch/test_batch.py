"""The stateless differential scenarios as one batch: kube-scheduler and kpysched
each started once for all of them, on one cluster (see runner.py); each scenario's
two outcomes (node by role, first FailedScheduling text, victims) must be equal,
and upstream's must be what the scenario means and must not rest on a score tie.

The release is the cluster's: kube-scheduler is the control plane's own binary. This
module runs on the harness's default release (v1.37.2), test_batch_1_36.py on v1.36.4
(the compatibility set)."""

from __future__ import annotations

import pytest

from tests.cluster.cluster import ClusterState
from tests.e2e.differential.batch.runner import BatchResult, run_batch
from tests.e2e.differential.batch.scenarios import BATCH, DECLARED_FEATURES
from tests.e2e.differential.compare import check_kind
from tests.e2e.differential.model import Scenario
from tests.e2e.differential.release_run import check_release
from tests.e2e.differential.release_scenarios import BATCH_EXPECTATIONS


@pytest.fixture(scope="module")
def batch(cluster: ClusterState) -> BatchResult:
    result = run_batch(cluster, BATCH, DECLARED_FEATURES)
    print(f"[batch] {len(BATCH)} scenarios: "
          + ", ".join(f"{phase} {s:.1f}s" for phase, s in result.seconds.items()))
    return result


@pytest.mark.parametrize("scenario", BATCH, ids=[s.name for s in BATCH])
def test_same_decision_as_kube_scheduler(batch: BatchResult, scenario: Scenario,
                                        cluster: ClusterState) -> None:
    result = batch.results[scenario.name]
    assert not result.ties, ("upstream's scores tie, so its pick was random; design the "
                             "tie out:\n  " + "\n  ".join(t.describe() for t in result.ties))
    check_kind(scenario, result.upstream)
    if scenario.name in BATCH_EXPECTATIONS:  # an outcome that differs by release
        check_release(scenario.name, BATCH_EXPECTATIONS[scenario.name], cluster.release,
                      result.upstream)
    assert result.kpysched == result.upstream, (
        f"\n upstream: {result.upstream.describe()}\n kpysched: {result.kpysched.describe()}")


def test_kpysched_behaves_as_the_clusters_release(batch: BatchResult,
                                                  cluster: ClusterState) -> None:
    """Started with no version flag, kpysched takes the API server's release: the batch
    then compares like with like."""
    assert batch.kpysched_behaves_as == cluster.kubernetes_version
