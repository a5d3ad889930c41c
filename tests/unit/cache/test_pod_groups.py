"""Pod-group member states: unscheduled, assumed, assigned, as upstream's podGroupState
moves them, and the copy a pod-group cycle works on."""

from __future__ import annotations

from kpysched.cache.cache import Cache
from kpysched.cache.pod_groups import Member, PodGroupStates, group_name
from tests.unit.builders import make_node, make_pod


def test_members_move_from_unscheduled_to_assumed_to_assigned() -> None:
    states = PodGroupStates()
    a = make_pod("a").group("g").info()
    b = make_pod("b").group("g").info()
    states.add_or_update(a)
    states.add_or_update(b)
    group = states.get("default", "g")
    assert (group.all_count(), group.scheduled_count()) == (2, 0)
    states.assume(make_pod("a").group("g").node("n1").info())
    assert group.where(a.uid) is Member.ASSUMED
    assert group.assumed_uids() == [a.uid]
    assert [p.uid for p in group.unscheduled_pods()] == [b.uid]
    states.forget(a)
    assert group.where(a.uid) is Member.UNSCHEDULED
    states.add_or_update(make_pod("a").group("g").node("n1").info())  # bound
    assert group.where(a.uid) is Member.ASSIGNED
    states.forget(a)  # a binding that completed is never undone
    assert group.where(a.uid) is Member.ASSIGNED
    assert group.scheduled_count() == 1


def test_a_group_is_dropped_with_its_last_member_and_other_pods_are_ignored() -> None:
    states = PodGroupStates()
    member = make_pod("a").group("g").info()
    states.add_or_update(member)
    states.add_or_update(make_pod("plain").info())
    assert len(states) == 1
    states.delete(member.pod)
    assert len(states) == 0
    assert states.get("default", "g").all_count() == 0


def test_an_assumption_on_a_copy_stays_in_the_copy() -> None:
    states = PodGroupStates()
    member = make_pod("a").group("g").info()
    states.add_or_update(member)
    copy = states.get("default", "g").copy()
    copy.assume(member)
    assert copy.scheduled_count() == 1
    assert states.get("default", "g").scheduled_count() == 0


def test_the_cache_keeps_member_states_only_when_asked() -> None:
    plain, tracking = Cache(), Cache(group_of=group_name)
    member = make_pod("a").group("g").info()
    for cache in (plain, tracking):
        cache.add_or_update_node(make_node("n1").capacity(cpu="1").obj())
    assert plain.pod_groups is None
    assert tracking.pod_groups is not None
    tracking.pod_groups.add_or_update(member)
    assumed = make_pod("a").group("g").node("n1").info()
    tracking.assume_pod(assumed, "n1")
    assert tracking.pod_groups.get("default", "g").where(member.uid) is Member.ASSUMED
    tracking.forget_pod(member.uid)
    assert tracking.pod_groups.get("default", "g").where(member.uid) is Member.UNSCHEDULED
    tracking.add_or_update_pod(assumed)  # the informer reports it bound
    assert tracking.pod_groups.get("default", "g").where(member.uid) is Member.ASSIGNED
    tracking.remove_pod(member.uid)
    assert len(tracking.pod_groups) == 0
