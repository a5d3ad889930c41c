"""NodeInfo bookkeeping and host-port conflicts (upstream's HostPortInfo rules)."""

from __future__ import annotations

import pytest

from kpysched.cache.node_info import NodeInfo, normalized_image_name
from kpysched.objects.resource_vectors import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from tests.unit.builders import PodBuilder, make_node, make_pod

MI = 1024 * 1024


def ports(*specs: str) -> PodBuilder:
    """A pod with host ports given as "protocol/ip/port" (empty fields are defaulted)."""
    pod = make_pod()
    for spec in specs:
        protocol, ip, port = spec.split("/")
        pod.host_port(int(port), protocol, ip)
    return pod


# Upstream's TestHostPortInfo_Check (kube-scheduler framework/types_test.go).
@pytest.mark.parametrize(("used", "wanted", "conflict"), [
    pytest.param(("TCP/127.0.0.1/80",), "//81", False,
                 id="empty check should check 0.0.0.0 and TCP"),
    pytest.param(("TCP/127.0.0.1/80",), "//80", True,
                 id="empty check should check 0.0.0.0 and TCP (conflicted)"),
    pytest.param(("TCP/127.0.0.1/80",), "TCP/0.0.0.0/80", True,
                 id="0.0.0.0 should check all registered IPs"),
    pytest.param(("UDP/127.0.0.1/80",), "TCP/0.0.0.0/80", False,
                 id="0.0.0.0 with different protocol should be allowed"),
    pytest.param(("TCP/127.0.0.1/79", "TCP/127.0.0.1/81", "TCP/127.0.0.1/82"),
                 "TCP/0.0.0.0/80", False, id="0.0.0.0 with different port should be allowed"),
    pytest.param(("TCP/0.0.0.0/80",), "TCP/127.0.0.1/80", True,
                 id="normal ip should check all registered 0.0.0.0"),
    pytest.param(("TCP/0.0.0.0/79", "UDP/0.0.0.0/80", "TCP/0.0.0.0/81", "TCP/0.0.0.0/82"),
                 "TCP/127.0.0.1/80", False,
                 id="normal ip with different port/protocol should be allowed (0.0.0.0)"),
    pytest.param(("TCP/127.0.0.1/79", "UDP/127.0.0.1/80", "TCP/127.0.0.1/81",
                  "TCP/127.0.0.1/82"), "TCP/127.0.0.1/80", False,
                 id="normal ip with different port/protocol should be allowed"),
    pytest.param(("TCP/127.0.0.1/80",), "TCP/127.0.0.2/80", False,
                 id="different specific IPs do not conflict"),
    pytest.param(("TCP/127.0.0.1/80",), "TCP/127.0.0.1/80", True,
                 id="same specific IP conflicts"),
])
def test_port_conflicts(used: tuple[str, ...], wanted: str, conflict: bool) -> None:
    node = make_node("n").info(ports(*used))
    assert node.port_conflicts(ports(wanted).info().host_ports) is conflict


def test_port_zero_is_never_a_host_port() -> None:
    pod = make_pod()
    pod.host_port(0)
    assert pod.info().host_ports == ()
    assert not make_node("n").info(ports("TCP/127.0.0.1/80")).port_conflicts(
        pod.info().host_ports)


def test_removing_the_pod_frees_its_port() -> None:
    node = make_node("n").info()
    user = ports("TCP/0.0.0.0/8080").info()
    node.add_pod(user)
    assert node.port_conflicts(ports("TCP/10.0.0.1/8080").info().host_ports)
    node.remove_pod(user.uid)
    assert not node.port_conflicts(ports("TCP/10.0.0.1/8080").info().host_ports)
    assert node.used_ports == {}


@pytest.mark.parametrize(("pod", "requested", "non_zero"), [
    pytest.param(make_pod().req(), (0, 0), (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST),
                 id="requestless container counts the defaults for scoring only"),
    pytest.param(make_pod().req(cpu="500m", memory="500Mi"), (500, 500 * MI), (500, 500 * MI),
                 id="explicit requests"),
    pytest.param(make_pod().req(cpu="500m"), (500, 0), (500, DEFAULT_MEMORY_REQUEST),
                 id="cpu only: memory defaulted for scoring"),
    pytest.param(make_pod().req(cpu="0", memory="0"), (0, 0), (0, 0),
                 id="explicit zero is not defaulted"),
])
def test_add_and_remove_pod_bookkeeping(pod: PodBuilder, requested: tuple[int, int],
                                        non_zero: tuple[int, int]) -> None:
    node = make_node("n").capacity(cpu="4", memory="8Gi").info()
    info = pod.info()
    node.add_pod(info)
    assert (node.requested.milli_cpu, node.requested.memory) == requested
    assert (node.non_zero_requested.milli_cpu, node.non_zero_requested.memory) == non_zero
    assert list(node.pods) == [info.uid]
    assert node.remove_pod(info.uid) is info
    assert (node.requested.milli_cpu, node.requested.memory) == (0, 0)
    assert (node.non_zero_requested.milli_cpu, node.non_zero_requested.memory) == (0, 0)
    assert node.pods == {}


def test_scalar_and_ephemeral_requests_add_up() -> None:
    node = make_node("n").info()
    first = make_pod("a").uid("a").req({"example.com/gpu": "1", "ephemeral-storage": "1Gi"})
    second = make_pod("b").uid("b").req({"example.com/gpu": "2", "hugepages-2Mi": "4Mi"})
    node.add_pod(first.info())
    node.add_pod(second.info())
    assert node.requested.scalar == {"example.com/gpu": 3, "hugepages-2Mi": 4 * MI}
    assert node.requested.ephemeral_storage == 1024 * MI
    node.remove_pod("a")
    assert node.requested.get("example.com/gpu") == 2
    assert node.requested.ephemeral_storage == 0


def test_removing_an_unknown_pod_changes_nothing() -> None:
    node = make_node("n").info(make_pod().req(cpu="1"))
    assert node.remove_pod("no-such-uid") is None
    assert node.requested.milli_cpu == 1000
    assert len(node.pods) == 1


def test_allocatable_from_the_node() -> None:
    node = make_node("n").capacity(cpu="3500m", memory="1Gi", pods="110",
                                   ephemeral_storage="10Gi").info()
    assert (node.allocatable.milli_cpu, node.allocatable.memory,
            node.allocatable.allowed_pod_number, node.allocatable.ephemeral_storage) == (
        3500, 1024 * MI, 110, 10 * 1024 * MI)


def test_clone_is_independent() -> None:
    original = make_node("n").capacity(cpu="4").info(make_pod("a").uid("a").req(cpu="1"))
    copy = original.clone()
    copy.add_pod(ports("TCP//80").uid("b").req(cpu="2").info())
    copy.remove_pod("a")
    assert original.requested.milli_cpu == 1000
    assert list(original.pods) == ["a"]
    assert original.used_ports == {}
    assert copy.requested.milli_cpu == 2000


def test_node_images_are_normalised() -> None:
    node = make_node("n").image(100, "nginx", "docker.io/library/nginx:1.25").image(
        50, "gcr.io/x/y@sha256:abc").info()
    assert node.images == {"nginx:latest": 100, "docker.io/library/nginx:1.25": 100,
                           "gcr.io/x/y@sha256:abc": 50}


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param("nginx", "nginx:latest", id="no tag"),
    pytest.param("nginx:1.25", "nginx:1.25", id="tag"),
    pytest.param("localhost:5000/app", "localhost:5000/app:latest",
                 id="registry port is not a tag"),
    pytest.param("app@sha256:abc", "app@sha256:abc", id="digest"),
])
def test_normalized_image_name(name: str, expected: str) -> None:
    assert normalized_image_name(name) == expected


def test_placeholder_without_node_has_no_labels() -> None:
    assert NodeInfo("ghost").labels == {}
