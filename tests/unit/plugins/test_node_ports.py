"""NodePorts, with upstream's node_ports_test.go table ("protocol/ip/port")."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.plugins import node_ports as np_
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered
from tests.unit.plugins.runner import run_filter


def ports_pod(*specs: str) -> PodBuilder:
    pod = make_pod()
    for spec in specs:
        protocol, ip, port = spec.split("/")
        pod.host_port(int(port), protocol, ip)
    return pod


def sidecar_port_pod(*, sidecar: bool) -> PodBuilder:
    pod = make_pod()
    pod.obj().spec.init_containers.append(api.Container(
        name="init", restart_policy="Always" if sidecar else None,
        ports=[api.ContainerPort(container_port=8001, host_port=8001, protocol="TCP")]))
    return pod


CASES = [
    pytest.param(make_pod(), (), True, id="nothing running"),
    pytest.param(ports_pod("UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/9090",), True, id="other port"),
    pytest.param(ports_pod("UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), False,
                 id="same udp port"),
    pytest.param(ports_pod("TCP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), False,
                 id="same tcp port"),
    pytest.param(ports_pod("TCP/127.0.0.1/8080"), ("TCP/127.0.0.2/8080",), True,
                 id="different host ip"),
    pytest.param(ports_pod("UDP/127.0.0.1/8080"), ("TCP/127.0.0.1/8080",), True,
                 id="different protocol"),
    pytest.param(ports_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",),
                 False, id="second udp port conflict"),
    pytest.param(ports_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
                 ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), False,
                 id="first tcp port conflict"),
    pytest.param(ports_pod("TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), False,
                 id="first tcp port conflict due to 0.0.0.0 hostIP"),
    pytest.param(ports_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",),
                 False, id="TCP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(ports_pod("TCP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001",), False,
                 id="second tcp port conflict to 0.0.0.0 hostIP"),
    pytest.param(ports_pod("UDP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001",), True,
                 id="second different protocol"),
    pytest.param(ports_pod("UDP/127.0.0.1/8001"), ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
                 False, id="UDP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(sidecar_port_pod(sidecar=False), ("TCP/0.0.0.0/8001",), True,
                 id="non-sidecar initContainer using hostPort"),
    pytest.param(sidecar_port_pod(sidecar=True), ("TCP/0.0.0.0/8001",), False,
                 id="TCP hostPort conflict from sidecar initContainer"),
    pytest.param(ports_pod("TCP//8001"), ("TCP/10.0.0.1/8001",), False,
                 id="empty host IP means 0.0.0.0"),
]


@pytest.mark.parametrize(("pod", "used", "fits"), CASES)
def test_filter(pod: PodBuilder, used: tuple[str, ...], fits: bool) -> None:
    node = make_node("n").info(ports_pod(*used)) if used else make_node("n").info()
    status = run_filter(np_.new(None, FakeHandle()), pod.info(), node)
    if fits:
        assert status.ok
    else:
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE,
            ["node(s) didn't have free ports for the requested pod ports"], np_.NAME)


def test_pre_filter_skips_pods_without_host_ports() -> None:
    _, status = np_.new(None, FakeHandle()).pre_filter(CycleState(), make_pod().info(), [])
    assert status.code == Code.SKIP


def test_filter_without_pre_filter_is_an_error() -> None:
    plugin = np_.new(None, FakeHandle())
    status = plugin.filter(CycleState(), ports_pod("TCP//80").info(), make_node().info())
    assert status.code == Code.ERROR


def test_spec_and_events() -> None:
    assert np_.SPEC.extension_points() == ["preFilter", "filter"]
    # A new node needs no hint: it may always have the ports free.
    assert registered(np_.new(None, FakeHandle())) == [
        (ClusterEvent(Resource.POD, ActionType.DELETE), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD), False),
    ]
