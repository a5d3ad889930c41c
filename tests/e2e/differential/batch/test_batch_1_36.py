"""The same batch on a Kubernetes v1.36.4 control plane against kube-scheduler v1.36.4:
the compatibility set's stateless part (issue 34; test_batch.py runs it on the
harness's default release, v1.37.2, and ../test_compatibility_1_36.py the volume and
DRA plugins' part). kpysched, started with no version flag, must take v1.36 from the
API server."""

from __future__ import annotations

import pytest

from tests.e2e.differential.batch.test_batch import (  # the module's tests, run again here
    batch,
    test_kpysched_behaves_as_the_clusters_release,
    test_same_decision_as_kube_scheduler,
)

pytestmark = pytest.mark.release("1.36")

__all__ = ["batch", "test_kpysched_behaves_as_the_clusters_release",
           "test_same_decision_as_kube_scheduler"]
