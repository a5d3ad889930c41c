"""pod_requests, with cases from upstream's resource helper tests (component-helpers
resource/helpers_test.go) and scheduler framework types_test.go (non-zero requests)."""

from __future__ import annotations

import pytest

from kpysched.objects.resource_vectors import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    Resource,
    is_scalar_resource,
    pod_requests,
)
from tests.unit.builders import PodBuilder, make_pod

MI = 1024 * 1024
HUGE_2M = "hugepages-2Mi"
HUGE_1G = "hugepages-1Gi"


def cpu(pod: PodBuilder) -> int:
    return pod_requests(pod.obj().spec).milli_cpu


# TestPodResourceRequests (nil options rows) and its sidecar rows.
@pytest.mark.parametrize(("pod", "milli_cpu"), [
    pytest.param(make_pod().init_req(cpu="4").req(cpu="1"), 4000,
                 id="nil options, larger init container"),
    pytest.param(make_pod().init_req(cpu="1").req(cpu="2").req(cpu="3"), 5000,
                 id="nil options, larger containers"),
    pytest.param(make_pod().init_req(cpu="2").req(cpu="2").req(cpu="3").overhead(cpu="1"),
                 6000, id="pod overhead included"),
    pytest.param(make_pod().init_req(cpu="1", sidecar=True).req(cpu="1"), 2000,
                 id="restartable init container"),
    pytest.param(make_pod().init_req(cpu="5").init_req(cpu="1", sidecar=True)
                 .init_req(cpu="2", sidecar=True).init_req(cpu="3", sidecar=True).req(cpu="1"),
                 7000, id="multiple restartable init containers"),
    pytest.param(make_pod().init_req(cpu="5").init_req(cpu="1", sidecar=True)
                 .init_req(cpu="2", sidecar=True).init_req(cpu="5")
                 .init_req(cpu="3", sidecar=True).req(cpu="1"),
                 8000, id="multiple restartable and regular init containers"),
    pytest.param(make_pod().init_req(cpu="10", sidecar=True).init_req(cpu="200").req(cpu="100"),
                 210_000, id="restartable-init, init and regular"),
    pytest.param(make_pod(), 0, id="no containers"),
])
def test_pod_requests_cpu(pod: PodBuilder, milli_cpu: int) -> None:
    assert cpu(pod) == milli_cpu


def test_overhead_adds_every_resource() -> None:
    pod = make_pod().req(cpu="2", memory="1Gi").overhead(cpu="1", memory="1Gi")
    requests = pod_requests(pod.obj().spec)
    assert (requests.milli_cpu, requests.memory) == (3000, 2048 * MI)


def test_init_peak_is_per_resource() -> None:
    # The init phase needs max per resource, not the whole vector of the larger container.
    pod = make_pod().init_req(cpu="4", memory="100Mi").init_req(cpu="1", memory="2Gi").req(
        cpu="2", memory="1Gi")
    requests = pod_requests(pod.obj().spec)
    assert (requests.milli_cpu, requests.memory) == (4000, 2048 * MI)


def test_scalar_resources_follow_the_same_rules() -> None:
    pod = (make_pod().init_req({"example.com/gpu": "3"})
           .req({"example.com/gpu": "1"}).req({"example.com/gpu": "1"}))
    assert pod_requests(pod.obj().spec).scalar == {"example.com/gpu": 3}


# TestPodLevelResourceRequests.
@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(make_pod().pod_requests(memory="2Mi"), {"memory": 2 * MI},
                 id="pod level memory resource"),
    pytest.param(make_pod().pod_requests(memory="2Mi").req(cpu="2m"),
                 {"memory": 2 * MI, "cpu": 2},
                 id="pod level memory and container level cpu resources"),
    pytest.param(make_pod().pod_requests(ephemeral_storage="2Mi").req(ephemeral_storage="3Mi"),
                 {"ephemeral-storage": 3 * MI},
                 id="pod level unsupported resources set at both pod-level and container-level"),
    pytest.param(make_pod().pod_requests(cpu="2", memory="2Gi").req(cpu="1", memory="1Gi")
                 .init_req(cpu="3", memory="100Mi").init_req(cpu="500m", sidecar=True),
                 {"cpu": 2000, "memory": 2048 * MI},
                 id="pod-level resources override containers, init and sidecars"),
    pytest.param(make_pod().pod_requests(memory="10Mi", **{HUGE_2M: "2Mi"}),
                 {"memory": 10 * MI, HUGE_2M: 2 * MI},
                 id="pod-level resources, hugepage request single page size"),
    pytest.param(make_pod().pod_requests(cpu="1", **{HUGE_2M: "10Mi"}).req({HUGE_2M: "6Mi"}),
                 {"cpu": 1000, HUGE_2M: 10 * MI},
                 id="pod-level resources, container-level resources, hugepage single page size"),
    pytest.param(make_pod().pod_requests(cpu="1", **{HUGE_2M: "10Mi"})
                 .req({"memory": "4Mi", HUGE_1G: "1Gi"}),
                 {"cpu": 1000, "memory": 4 * MI, HUGE_2M: 10 * MI, HUGE_1G: 1024 * MI},
                 id="hugepage page sizes split between pod-level and container-level"),
    pytest.param(make_pod().pod_requests(cpu="1").overhead(cpu="250m"), {"cpu": 1250},
                 id="overhead is added on top of pod-level requests"),
])
def test_pod_level_requests(pod: PodBuilder, expected: dict[str, int]) -> None:
    requests = pod_requests(pod.obj().spec)
    assert {name: requests.get(name) for name in expected} == expected
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name not in expected:
            assert requests.get(name) == 0, name


# TestPodInfoCalculateResources: what NodeInfo counts for scoring (Non0CPU / Non0Mem).
@pytest.mark.parametrize(("pod", "non_zero"), [
    pytest.param(make_pod().req(), (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
                 id="requestless container"),
    pytest.param(make_pod().req(cpu="500m", memory="500Mi"), (500, 500 * MI),
                 id="1X container with requests"),
    pytest.param(make_pod().req(cpu="500m", memory="500Mi").req(cpu="700m", memory="800Mi"),
                 (1200, 1300 * MI), id="2X container with requests"),
    pytest.param(make_pod().req().req(), (200, 2 * DEFAULT_MEMORY_REQUEST),
                 id="each requestless container counts the defaults"),
    pytest.param(make_pod().req(cpu="500m").req(), (600, 2 * DEFAULT_MEMORY_REQUEST),
                 id="defaults per container and per resource"),
    pytest.param(make_pod().init_req(cpu="500m", memory="500Mi").req(cpu="500m", memory="500Mi")
                 .pod_requests(cpu="1200m", memory="1200Mi"), (1200, 1200 * MI),
                 id="1X container and 1X init container with pod-level requests"),
    pytest.param(make_pod().init_req(cpu="500m", memory="500Mi", sidecar=True)
                 .req(cpu="500m", memory="500Mi").pod_requests(cpu="1200m", memory="1200Mi"),
                 (1200, 1200 * MI),
                 id="1X container and 1X sidecar container with pod-level requests"),
    pytest.param(make_pod().init_req().req().pod_requests(memory="1200Mi"),
                 (DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
                 id="1X container with pod-level memory requests"),
    pytest.param(make_pod().init_req().req().pod_requests(cpu="500m"),
                 (500, DEFAULT_MEMORY_REQUEST), id="1X container with pod-level cpu requests"),
    pytest.param(make_pod().init_req(ephemeral_storage="500Mi").req(ephemeral_storage="800Mi")
                 .pod_requests(cpu="500m"), (500, DEFAULT_MEMORY_REQUEST),
                 id="1X container unsupported resources and pod-level supported resources"),
    pytest.param(make_pod().req(cpu="500m").req().pod_requests(memory="1Gi"), (500, 1024 * MI),
                 id="pod-level requests set: no default for a resource some container requests"),
    pytest.param(make_pod().req(cpu="1").overhead(cpu="100m", memory="10Mi"),
                 (1100, DEFAULT_MEMORY_REQUEST + 10 * MI), id="overhead counts for scoring too"),
])
def test_non_zero_requests(pod: PodBuilder, non_zero: tuple[int, int]) -> None:
    requests = pod_requests(pod.obj().spec, non_zero=True)
    assert (requests.milli_cpu, requests.memory) == non_zero


def test_non_zero_leaves_the_real_requests_alone() -> None:
    pod = make_pod().req()
    requests = pod_requests(pod.obj().spec)
    assert (requests.milli_cpu, requests.memory) == (0, 0)


@pytest.mark.parametrize(("name", "scalar"), [
    pytest.param("example.com/gpu", True, id="extended"),
    pytest.param("nvidia.com/gpu", True, id="vendor"),
    pytest.param("hugepages-2Mi", True, id="hugepages"),
    pytest.param("attachable-volumes-csi-x", True, id="attachable volumes"),
    pytest.param("cpu", False, id="cpu"),
    pytest.param("memory", False, id="memory"),
    pytest.param("ephemeral-storage", False, id="ephemeral-storage"),
    pytest.param("pods", False, id="pods"),
])
def test_is_scalar_resource(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


def test_resource_arithmetic() -> None:
    total = Resource.from_mapping({"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"})
    total.add(Resource.from_mapping({"cpu": "500m", "example.com/gpu": "2", "pods": "1"}))
    assert (total.milli_cpu, total.memory, total.allowed_pod_number, total.scalar) == (
        1500, 1024 * MI, 1, {"example.com/gpu": 3})
    total.subtract(Resource.from_mapping({"cpu": "1500m", "memory": "1Gi", "example.com/gpu": "3",
                                          "pods": "1"}))
    assert total.is_zero()
    peak = Resource.from_mapping({"cpu": "1", "memory": "2Gi"})
    peak.set_max(Resource.from_mapping({"cpu": "2", "memory": "1Gi", "example.com/gpu": "1"}))
    assert (peak.milli_cpu, peak.memory, peak.scalar) == (2000, 2048 * MI, {"example.com/gpu": 1})
    copy = peak.clone()
    copy.add(peak)
    assert peak.milli_cpu == 2000
