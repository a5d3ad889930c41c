"""UnschedulablePods: the waiting pods by uid, by rejecting plugin, and those an
assigned pod's add may help, so an event looks only at the pods it may move."""

from __future__ import annotations

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    ClusterEvent,
)
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.queue.unschedulable import UnschedulablePods
from tests.unit.builders import make_pod

FIT, SPREAD, PENDING = "NodeResourcesFit", "PodTopologySpread", "WaitsOutside"


def waiting(name: str, *plugins: str, pending: tuple[str, ...] = ()) -> QueuedPodInfo:
    info = QueuedPodInfo(make_pod(name).info(), timestamp=0.0)
    info.unschedulable_plugins = set(plugins)
    info.pending_plugins = set(pending)
    return info


def pool() -> UnschedulablePods:
    return UnschedulablePods(lambda info: SPREAD in info.unschedulable_plugins)


def names(found: list[QueuedPodInfo]) -> list[str]:
    return [info.pod_info.name for info in found]


def test_an_event_sees_pods_rejected_by_a_plugin_that_hears_it_and_those_none_rejected(
        ) -> None:
    pods = pool()
    for index in range(1000):
        pods.put(waiting(f"big-{index}", FIT))
    pods.put(waiting("spread", SPREAD))
    pods.put(waiting("nobody"))
    pods.put(waiting("pending", pending=(PENDING,)))
    asked: set[tuple[str, str]] = set()

    def hears(profile: str, plugin: str, event: ClusterEvent) -> bool:
        asked.add((profile, plugin))
        return plugin in (SPREAD, PENDING)

    assert names(pods.hearing(ASSIGNED_POD_DELETE, hears)) == ["spread", "nobody", "pending"]
    assert {plugin for _, plugin in asked} == {FIT, SPREAD, PENDING}  # once per group


def test_order_is_oldest_put_first_and_a_pod_put_again_is_newest() -> None:
    pods = pool()
    first, second = waiting("first", FIT), waiting("second", FIT, SPREAD)
    pods.put(first)
    pods.put(second)
    pods.put(first)
    assert names(pods.hearing(FORCE_ACTIVATE, lambda *_: False)) == ["second", "first"]
    assert names(pods.hearing(ASSIGNED_POD_DELETE, lambda *_: True)) == ["second", "first"]


def test_only_pods_assigned_pods_may_help_are_kept_for_them() -> None:
    pods = pool()
    pods.put(waiting("fit", FIT))
    spread = waiting("spread", SPREAD)
    pods.put(spread)
    assert names(pods.needing_assigned_pods()) == ["spread"]
    spread.unschedulable_plugins = {FIT}
    pods.put(spread)  # rejected by another plugin on its next attempt
    assert pods.needing_assigned_pods() == []


def test_pop_forgets_the_pod_everywhere() -> None:
    pods = pool()
    info = waiting("p", FIT, SPREAD)
    pods.put(info)
    assert pods.pop(info.pod_info.uid) is info
    assert len(pods) == 0 and info.pod_info.uid not in pods
    assert pods.pop(info.pod_info.uid) is None
    assert pods.hearing(ASSIGNED_POD_DELETE, lambda *_: True) == []
    assert pods.needing_assigned_pods() == []
