"""pod_requests sums quantities the way component-helpers' PodRequests does and converts
once at the end; expected values come from upstream v0.36.4 run on the same pods."""

from __future__ import annotations

import pytest

from kpysched.objects.resource_vectors import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    pod_requests,
    scoring_requests,
)
from tests.unit.builders import PodBuilder, make_pod

MI = 1024 * 1024
HUGE_1G = "hugepages-1Gi"


def test_fractions_are_summed_before_rounding() -> None:
    pod = make_pod().req(cpu="0.5m", memory="0.1Gi").req(cpu="0.5m", memory="0.1Gi")
    requests = pod_requests(pod.obj().spec)
    assert (requests.milli_cpu, requests.memory) == (1, 214748365)


@pytest.mark.parametrize(("pod", "units"), [
    pytest.param(make_pod().req({HUGE_1G: "1"}).init_req({HUGE_1G: "12E"}), 0,
                 id="larger init phase kept as int64Amount"),
    # Comparing with the inf.Dec sum of the containers turns the winner into an inf.Dec,
    # whose Value() wraps instead of giving 0.
    pytest.param(make_pod().req({HUGE_1G: "0.0000000001"}).init_req({HUGE_1G: "12E"}),
                 -6446744073709551616, id="larger init phase converted by the comparison"),
])
def test_init_peak_keeps_upstream_representation(pod: PodBuilder, units: int) -> None:
    assert pod_requests(pod.obj().spec).scalar[HUGE_1G] == units


@pytest.mark.parametrize(("pod", "non_zero", "scoring"), [
    pytest.param(make_pod().req(cpu="500m").req().pod_requests(memory="1Gi"),
                 (500, 1024 * MI), (500 + DEFAULT_MILLI_CPU_REQUEST, 1024 * MI),
                 id="pod-level requests set"),
    pytest.param(make_pod().req(cpu="500m").req(),
                 (500 + DEFAULT_MILLI_CPU_REQUEST, 2 * DEFAULT_MEMORY_REQUEST),
                 (500 + DEFAULT_MILLI_CPU_REQUEST, 2 * DEFAULT_MEMORY_REQUEST),
                 id="no pod-level requests: both agree"),
    pytest.param(make_pod().req().pod_requests(memory="1Gi").overhead(cpu="10m"),
                 (10, 1024 * MI), (DEFAULT_MILLI_CPU_REQUEST + 10, 1024 * MI),
                 id="overhead cpu counts as requested when pod-level requests are set"),
])
def test_node_info_and_scorer_defaults_differ(pod: PodBuilder, non_zero: tuple[int, int],
                                              scoring: tuple[int, int]) -> None:
    """PodInfo.CalculateResource (Non0CPU/Non0Mem) versus the resource scorers'
    calculatePodResourceRequest, which always defaults per container."""
    spec = pod.obj().spec
    node_info = pod_requests(spec, non_zero=True)
    scorer = scoring_requests(spec)
    assert (node_info.milli_cpu, node_info.memory) == non_zero
    assert (scorer.milli_cpu, scorer.memory) == scoring
