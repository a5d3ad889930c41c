"""GangScheduling's PreEnqueue, Permit and queueing hints, with upstream's texts
(pkg/scheduler/framework/plugins/gangscheduling)."""

from __future__ import annotations

import pytest

from kpysched.cache.pod_groups import PodGroupState
from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, QueueingHint, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins import gang_scheduling as gang
from tests.unit.builders import FakeHandle, make_pod, make_pod_group


def handle_with(*members: str, min_count: int | None = 3) -> FakeHandle:
    handle = FakeHandle()
    handle.pod_groups["default/g"] = make_pod_group("g", min_count)
    for name in members:
        handle.pod_group_states.add_or_update(make_pod(name).group("g").info())
    return handle


def test_a_pod_outside_any_group_passes_both_points() -> None:
    plugin = gang.GangScheduling(FakeHandle())
    pod = make_pod("plain").info()
    assert plugin.pre_enqueue(pod).ok
    assert plugin.permit(CycleState(), pod, "n1")[0].ok


def test_pre_enqueue_holds_members_until_the_group_and_min_count_exist() -> None:
    member = make_pod("a").group("g").info()
    no_group = gang.GangScheduling(FakeHandle()).pre_enqueue(member)
    assert no_group.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert no_group.message() == (
        'waiting for pods\'s pod group "g" to appear in scheduling queue')
    assert no_group.plugin == "GangScheduling"
    short = gang.GangScheduling(handle_with("a", "b")).pre_enqueue(member)
    assert short.message() == ("waiting for minCount pods from a gang to appear in "
                               "scheduling queue")
    assert gang.GangScheduling(handle_with("a", "b", "c")).pre_enqueue(member).ok


def test_a_group_without_a_gang_policy_holds_nobody() -> None:
    plugin = gang.GangScheduling(handle_with("a", min_count=None))
    member = make_pod("a").group("g").info()
    assert plugin.pre_enqueue(member).ok
    assert plugin.permit(CycleState(), member, "n1")[0].ok


def test_permit_waits_for_the_quorum_and_the_last_member_lets_the_others_go() -> None:
    handle = handle_with("a", "b", "c", min_count=2)
    plugin = gang.GangScheduling(handle)
    a, b = make_pod("a").group("g").info(), make_pod("b").group("g").info()
    handle.pod_group_states.assume(a)
    status, timeout = plugin.permit(CycleState(), a, "n1")
    assert (status.code, status.message(), timeout) == (
        Code.WAIT, "waiting for minCount pods from a gang to be scheduled", 300.0)
    # The unscheduled members are worth another try now.
    assert sorted(handle.activated) == [b.uid, make_pod("c").group("g").info().uid]
    handle.pod_group_states.assume(b)
    status, _ = plugin.permit(CycleState(), b, "n2")
    assert status.ok
    assert sorted(handle.allowed) == [(a.uid, "GangScheduling"), (b.uid, "GangScheduling")]


def test_permit_in_a_pod_group_cycle_counts_on_the_cycles_copy() -> None:
    handle = handle_with("a", "b", min_count=2)
    plugin = gang.GangScheduling(handle)
    a = make_pod("a").group("g").info()
    state = CycleState()
    state.pod_group = PodGroupState()
    for name in ("a", "b"):
        member = make_pod(name).group("g").info()
        state.pod_group.add(member)
        state.pod_group.assume(member)
    assert plugin.permit(state, a, "n1")[0].ok
    assert plugin.permit(CycleState(), a, "n1")[0].code is Code.WAIT  # the cache's view


def test_permit_fails_with_an_error_when_the_group_is_gone() -> None:
    status, _ = gang.GangScheduling(FakeHandle()).permit(
        CycleState(), make_pod("a").group("g").info(), "n1")
    assert status.code is Code.ERROR
    assert status.message() == ('failed to get podGroup default/g: '
                                'podgroup.scheduling.k8s.io "g" not found')


def test_hints_queue_only_for_the_same_group() -> None:
    member = make_pod("a").group("g").info()
    same = make_pod("b").group("g").info()
    other = make_pod("c").group("h").info()
    elsewhere = make_pod("d", namespace="other").group("g").info()
    assert gang.schedulable_after_pod_added(member, None, same) is QueueingHint.QUEUE
    for added in (other, elsewhere, make_pod("plain").info()):
        assert gang.schedulable_after_pod_added(member, None, added) is QueueingHint.QUEUE_SKIP
    assert gang.schedulable_after_pod_group_added(
        member, None, make_pod_group("g", 2)) is QueueingHint.QUEUE
    assert gang.schedulable_after_pod_group_added(
        member, None, make_pod_group("h", 2)) is QueueingHint.QUEUE_SKIP


# Upstream v1.37's Test_isSchedulableAfterPodGroupUpdated (CompositePodGroup off; the
# group ns1/pg, the target pod a member of it unless said otherwise).
@pytest.mark.parametrize(("member_of", "old", "new", "expected"), [
    pytest.param("pg", 4, 3, QueueingHint.QUEUE, id="minCount decreased matches target pod"),
    pytest.param("pg", None, None, QueueingHint.QUEUE_SKIP, id="update Basic policy"),
    pytest.param("pg", 3, 4, QueueingHint.QUEUE_SKIP, id="minCount increased matches target pod"),
    pytest.param("pg", 3, 3, QueueingHint.QUEUE_SKIP, id="minCount unchanged matches target pod"),
    pytest.param("other", 4, 3, QueueingHint.QUEUE_SKIP,
                 id="minCount decreased but pod group name doesn't match target pod"),
    pytest.param(None, 4, 3, QueueingHint.QUEUE_SKIP, id="a pod outside any group"),
    pytest.param("pg", 4, None, QueueingHint.QUEUE_SKIP, id="gang policy replaced by basic"),
])
def test_pod_group_updated_hint(member_of: str | None, old: int | None, new: int | None,
                                expected: QueueingHint) -> None:
    pod = make_pod("p", namespace="ns1")
    if member_of is not None:
        pod = pod.group(member_of)
    hint = gang.schedulable_after_pod_group_updated(
        pod.info(), make_pod_group("pg", old, namespace="ns1"),
        make_pod_group("pg", new, namespace="ns1"))
    assert hint is expected


@pytest.mark.parametrize(("release", "hears_updates"), [(36, False), (37, True)])
def test_pod_group_updates_are_heard_from_v1_37(release: int, hears_updates: bool) -> None:
    plugin = gang.GangScheduling(FakeHandle(features_value=Features(release=release)))
    events = [r.event for r in plugin.events_to_register()]
    assert (ClusterEvent(Resource.POD_GROUP, ActionType.UPDATE) in events) is hears_updates
    assert ClusterEvent(Resource.POD_GROUP, ActionType.ADD) in events
