"""GatedPods: the gated pods by uid and by (profile, gating plugin), so an event looks
only at the groups whose plugin hears it."""

from __future__ import annotations

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    ClusterEvent,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.queue.gated import GatedPods
from tests.unit.builders import make_pod

GATES = "SchedulingGates"
KUEUE = "example.com/KueueGate"


def gated(name: str, plugin: str, profile: str = "default-scheduler") -> QueuedPodInfo:
    info = QueuedPodInfo(make_pod(name).info(), timestamp=0.0)
    info.pod_info.pod.spec.scheduler_name = profile
    info.gated, info.gating_plugin = True, plugin
    return info


def test_an_event_sees_only_the_pods_whose_gating_plugin_hears_it() -> None:
    pods = GatedPods()
    for index in range(1000):
        pods.put(gated(f"held-{index}", GATES))
    pods.put(gated("kueue", KUEUE))
    asked: list[tuple[str, str]] = []

    def hears(profile: str, plugin: str, event: ClusterEvent) -> bool:
        asked.append((profile, plugin))
        return plugin == KUEUE

    found = pods.hearing(ASSIGNED_POD_DELETE, hears)
    assert [info.pod_info.name for info in found] == ["kueue"]
    assert sorted(asked) == [("default-scheduler", GATES), ("default-scheduler", KUEUE)]


def test_a_wildcard_sees_every_gated_pod() -> None:
    pods = GatedPods()
    pods.put(gated("a", GATES))
    pods.put(gated("b", KUEUE, profile="other"))
    found = pods.hearing(FORCE_ACTIVATE, lambda *_: False)
    assert sorted(info.pod_info.name for info in found) == ["a", "b"]


def test_a_pod_put_again_under_another_gate_moves_group_and_pop_forgets_it() -> None:
    pods = GatedPods()
    info = gated("p", GATES)
    pods.put(info)
    info.gating_plugin = KUEUE
    pods.put(info)
    assert len(pods) == 1
    assert pods.hearing(ASSIGNED_POD_DELETE, lambda _, plugin, __: plugin == GATES) == []
    assert pods.pop(info.pod_info.uid) is info
    assert info.pod_info.uid not in pods and pods.get(info.pod_info.uid) is None
    assert pods.pop(info.pod_info.uid) is None
    assert pods.hearing(FORCE_ACTIVATE, lambda *_: True) == []
