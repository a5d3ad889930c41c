"""Coscheduling (scheduler-plugins' PodGroup API): PreEnqueue, PreFilter's minResources,
Permit's quorum, QueueSort and the queueing hints."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kpysched.cache.pod_groups import PodGroupState, PodGroupStates, coscheduling_group_name
from kpysched.framework.cluster_events import ActionType, ClusterEvent, QueueingHint, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.plugins.coscheduling import plugin as coscheduling
from kpysched.plugins.coscheduling.args import CoschedulingArgs
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod

LABEL = cs.POD_GROUP_LABEL


def member(name: str, group: str = "g") -> PodBuilder:
    return make_pod(name).label(LABEL, group).req(cpu="1")


def pod_group(name: str = "g", min_member: int = 3, *, created: str = "2026-01-01T00:00:00Z",
              min_resources: dict[str, str | int] | None = None,
              timeout: int | None = None) -> cs.PodGroup:
    return cs.PodGroup(
        metadata=api.ObjectMeta(name=name, namespace="default", uid=f"uid-{name}",
                                creation_timestamp=created),
        spec=cs.PodGroupSpec(min_member=min_member, min_resources=min_resources,
                             schedule_timeout_seconds=timeout))


def handle_with(*members: PodBuilder, group: cs.PodGroup | None = None) -> FakeHandle:
    handle = FakeHandle(pod_group_states=PodGroupStates(coscheduling_group_name))
    if group is not None:
        handle.coscheduling_groups[f"default/{group.metadata.name}"] = group
    for pod in members:
        handle.pod_group_states.add_or_update(pod.info())
    return handle


def plugin(handle: FakeHandle, **args: int) -> coscheduling.Coscheduling:
    return coscheduling.Coscheduling(CoschedulingArgs.model_validate(args), handle)


def test_a_pod_without_the_label_passes_every_point() -> None:
    cosched = plugin(FakeHandle())
    pod = make_pod("plain").info()
    assert cosched.pre_enqueue(pod).ok
    assert cosched.pre_filter(CycleState(), pod, [])[1].ok
    assert cosched.permit(CycleState(), pod, "n1")[0].ok


def test_pre_enqueue_holds_a_member_until_its_group_and_min_member_exist() -> None:
    pod = member("a").info()
    missing = plugin(handle_with(member("a"))).pre_enqueue(pod)
    assert (missing.code, missing.message(), missing.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, 'PodGroup "default/g" not found', "Coscheduling")
    short = plugin(handle_with(member("a"), member("b"), group=pod_group())).pre_enqueue(pod)
    assert short.message() == ("pre-filter pod a cannot find enough sibling pods, current "
                               "pods number: 2, minMember of group: 3")
    enough = handle_with(member("a"), member("b"), member("c"), group=pod_group())
    assert plugin(enough).pre_enqueue(pod).ok


def test_gated_members_do_not_count_towards_min_member() -> None:
    handle = handle_with(member("a"), member("b"), member("c").gates("wait"),
                         group=pod_group())
    status = plugin(handle).pre_enqueue(member("a").info())
    assert status.message() == ("pre-filter pod a cannot proceed due to gated pods in the "
                                "same PodGroup")


@pytest.mark.parametrize(("min_resources", "min_member", "short"), [
    ({"cpu": "3"}, 2, ""),
    ({"cpu": "5"}, 2, "cpu 2"),
    ({"cpu": "4500m", "memory": "1Gi"}, 2, "cpu 1500m"),
    ({"cpu": "1"}, 5, "pods 2"),
], ids=["fits", "short of cpu", "short of a cpu and a half", "short of pod slots"])
def test_pre_filter_compares_min_resources_with_the_free_capacity(
        min_resources: dict[str, str | int], min_member: int, short: str) -> None:
    # Two nodes of 2 cpu and 2 pods each; one holds a 1-cpu stranger and a 1-cpu member
    # of the group (which counts as free: it is the group's own).
    nodes = [make_node("n1").capacity(cpu="2", memory="8Gi", pods="2").info(
                 make_pod("stranger").req(cpu="1"), member("placed").node("n1")),
             make_node("n2").capacity(cpu="2", memory="8Gi", pods="2").info()]
    group = pod_group(min_member=min_member, min_resources=min_resources)
    _, status = plugin(handle_with(member("placed").node("n1"), group=group)).pre_filter(
        CycleState(), member("a").info(), nodes)
    if not short:
        assert status.ok
        return
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "PodGroup default/g needs more than the cluster has free (minResources and "
        f"minMember pods); short of {short}")


def test_an_invalid_min_resources_quantity_is_reported() -> None:
    group = pod_group(min_resources={"cpu": "lots"})
    _, status = plugin(handle_with(group=group)).pre_filter(
        CycleState(), member("a").info(), [make_node("n1").capacity(cpu="2").info()])
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("PodGroup default/g has an invalid minResources")


@pytest.mark.parametrize(("timeout", "args", "wait"), [
    (None, {}, 60.0), (None, {"permitWaitingTimeSeconds": 10}, 10.0),
    (30, {"permitWaitingTimeSeconds": 10}, 30.0)],
    ids=["default", "args", "group's own"])
def test_permit_waits_for_min_member_placed_then_lets_all_through(
        timeout: int | None, args: dict[str, int], wait: float) -> None:
    handle = handle_with(member("a"), member("b"), member("c"),
                         group=pod_group(min_member=2, timeout=timeout))
    cosched = plugin(handle, **args)
    a, b = member("a").info(), member("b").info()
    handle.pod_group_states.assume(a)
    status, waited = cosched.permit(CycleState(), a, "n1")
    assert (status.code, status.message(), waited) == (
        Code.WAIT, "waiting for 2 pods of PodGroup default/g to be placed", wait)
    handle.pod_group_states.assume(b)
    assert cosched.permit(CycleState(), b, "n2")[0].ok
    assert sorted(handle.allowed) == [(a.uid, "Coscheduling"), (b.uid, "Coscheduling")]


def test_permit_counts_on_the_group_cycles_copy() -> None:
    handle = handle_with(member("a"), member("b"), group=pod_group(min_member=2))
    state = CycleState()
    state.pod_group = PodGroupState()
    for name in ("a", "b"):
        state.pod_group.add(member(name).info())
        state.pod_group.assume(member(name).info())
    assert plugin(handle).permit(state, member("a").info(), "n1")[0].ok
    assert plugin(handle).permit(CycleState(), member("a").info(), "n1")[0].code is Code.WAIT


def test_permit_rejects_a_member_whose_group_is_gone() -> None:
    status, _ = plugin(handle_with(member("a"))).permit(CycleState(), member("a").info(), "n")
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "PodGroup not found")


def queued(pod: PodBuilder, at: float) -> QueuedPodInfo:
    return QueuedPodInfo(pod.info(), timestamp=at, initial_attempt_timestamp=at)


def test_queue_sort_keeps_the_older_group_first_and_its_members_together() -> None:
    handle = handle_with(group=pod_group("old", created="2026-01-01T00:00:00Z"))
    handle.coscheduling_groups["default/new"] = pod_group("new", created="2026-01-02T00:00:00Z")
    cosched = plugin(handle)
    # Queued later, but its group is older: first.
    old_member, new_member = queued(member("x", "old"), 50.0), queued(member("y", "new"), 1.0)
    assert cosched.less(old_member, new_member)
    assert not cosched.less(new_member, old_member)
    # Priority still comes first.
    urgent = queued(member("z", "new").priority(10), 1.0)
    assert cosched.less(urgent, old_member)
    # Members of one group tie on time and sort by the group's name, not the pod's.
    sibling = queued(member("a", "old"), 99.0)
    assert not cosched.less(old_member, sibling) and not cosched.less(sibling, old_member)


def _reference_less(handle: FakeHandle, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """QueueSort as first written, each term read afresh: priority, then the PodGroup's
    creation time (the pod's first attempt without one), then namespace/group-or-pod."""
    def since(queued: QueuedPodInfo) -> float:
        name = coscheduling_group_name(queued.pod_info.pod)
        group = (handle.coscheduling_groups.get(f"{queued.pod_info.namespace}/{name}")
                 if name is not None else None)
        created = coscheduling._epoch(group.metadata.creation_timestamp) if group else None
        if created is not None:
            return created
        first = queued.initial_attempt_timestamp
        return ((first if first is not None else queued.timestamp)
                + coscheduling._WALL_MINUS_MONOTONIC)

    def key(queued: QueuedPodInfo) -> str:
        name = coscheduling_group_name(queued.pod_info.pod)
        return f"{queued.pod_info.namespace}/{name or queued.pod_info.pod.metadata.name}"

    if a.pod_info.priority != b.pod_info.priority:
        return a.pod_info.priority > b.pod_info.priority
    if since(a) != since(b):
        return since(a) < since(b)
    return key(a) < key(b)


_CREATED = st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z",
                            "2025-12-31T23:59:59Z", "", "not a time"])
_SORTED_POD = st.tuples(
    st.sampled_from(["a", "b", "a-b"]),  # namespace ('-' sorts before '/')
    st.sampled_from([None, "g", "h", "g-x"]),  # group label
    st.integers(0, 3),  # pod name
    st.sampled_from([0, 10]),  # priority
    st.sampled_from([None, 1.0, 2.0]))  # first attempt


@settings(max_examples=300, deadline=None)
@given(pods=st.lists(_SORTED_POD, min_size=2, max_size=8),
       groups=st.dictionaries(st.tuples(st.sampled_from(["a", "b", "a-b"]),
                                        st.sampled_from(["g", "h", "g-x"])), _CREATED),
       renewed=st.dictionaries(st.tuples(st.sampled_from(["a", "b", "a-b"]),
                                         st.sampled_from(["g", "h", "g-x"])), _CREATED))
def test_queue_sort_by_one_key_per_pod_orders_as_term_by_term(
        pods: list[tuple[str, str | None, int, int, float | None]],
        groups: dict[tuple[str, str], str], renewed: dict[tuple[str, str], str]) -> None:
    """One (time, name) key per pod orders every pair as comparing term by term did,
    also after PodGroups are replaced (updated, or deleted and created)."""
    handle = FakeHandle()
    cosched = plugin(handle)

    def list_groups(listed: dict[tuple[str, str], str]) -> None:
        for (namespace, name), created in listed.items():
            group = pod_group(name, created=created)
            group.metadata.namespace = namespace
            handle.coscheduling_groups[f"{namespace}/{name}"] = group

    queued_pods = []
    for namespace, group_name, index, priority, first in pods:
        builder = make_pod(f"p{index}", namespace).priority(priority)
        if group_name is not None:
            builder = builder.label(LABEL, group_name)
        queued_pods.append(QueuedPodInfo(builder.info(), timestamp=3.0,
                                         initial_attempt_timestamp=first))
    for listed in (groups, renewed):
        list_groups(listed)
        for a in queued_pods:
            for b in queued_pods:
                assert cosched.less(a, b) is _reference_less(handle, a, b)
        if listed is groups:
            for (namespace, name) in list(groups):
                if (namespace, name) not in renewed:
                    del handle.coscheduling_groups[f"{namespace}/{name}"]


def test_hints_wake_members_for_their_own_group_only() -> None:
    pod = member("a").info()
    assert coscheduling.schedulable_after_pod_added(
        pod, None, member("b").info()) is QueueingHint.QUEUE
    assert coscheduling.schedulable_after_pod_added(
        pod, None, member("c", "other").info()) is QueueingHint.QUEUE_SKIP
    before, after = pod_group(min_member=3), pod_group(min_member=2)
    change = coscheduling.schedulable_after_pod_group_change
    assert change(pod, None, before) is QueueingHint.QUEUE
    assert change(pod, before, after) is QueueingHint.QUEUE
    status_only = pod_group(min_member=3)
    status_only.status.phase = cs.SCHEDULING
    assert change(pod, before, status_only) is QueueingHint.QUEUE_SKIP
    assert change(pod, None, pod_group("other")) is QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(("members", "group", "answer"), [
    (("a", "b", "c"), None, QueueingHint.QUEUE_SKIP),
    (("a", "b"), pod_group(), QueueingHint.QUEUE_SKIP),
    (("a", "b", "c*"), pod_group(), QueueingHint.QUEUE_SKIP),
    (("a", "b", "c"), pod_group(), QueueingHint.QUEUE),
    (("a", "b", "c", "d*"), pod_group(), QueueingHint.QUEUE),
], ids=["no PodGroup", "short of members", "short of members not gated", "complete",
        "complete beside a gated one"])
def test_room_on_the_nodes_wakes_a_member_only_when_its_group_is_complete(
        members: tuple[str, ...], group: cs.PodGroup | None, answer: QueueingHint) -> None:
    """A node added or a pod deleted may let a rejected group fit; it cannot give a group
    its PodGroup or its members, which PreEnqueue holds the member for."""
    handle = handle_with(*(member(name.rstrip("*")).gates("wait") if name.endswith("*")
                           else member(name) for name in members), group=group)
    cosched = plugin(handle)
    room = [registration for registration in cosched.events_to_register()
            if registration.event.resource in (Resource.NODE, Resource.ASSIGNED_POD)]
    assert {(r.event.resource, r.event.action) for r in room} == {
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
         | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
        (Resource.ASSIGNED_POD, ActionType.DELETE)}
    pod = member("a").info()
    for registration in room:
        assert registration.hint is not None
        assert registration.hint(pod, None, make_node("n9").obj()) is answer
    # The answer is PreEnqueue's: Skip exactly for a member it holds.
    assert (answer is QueueingHint.QUEUE_SKIP) is (not cosched.pre_enqueue(pod).ok)


def test_a_new_member_wakes_the_others_only_once_it_completes_their_group() -> None:
    handle = handle_with(member("a"), member("b"), group=pod_group())
    cosched = plugin(handle)
    (added,) = [registration for registration in cosched.events_to_register()
                if registration.event == ClusterEvent(Resource.UNSCHEDULED_POD, ActionType.ADD)]
    assert added.hint is not None
    pod = member("a").info()
    # b is in the group (the cache has it before the hint is asked): 2 of 3, still short.
    assert added.hint(pod, None, member("b").info()) is QueueingHint.QUEUE_SKIP
    assert not cosched.pre_enqueue(pod).ok
    handle.pod_group_states.add_or_update(member("c").info())
    assert added.hint(pod, None, member("c").info()) is QueueingHint.QUEUE
    assert cosched.pre_enqueue(pod).ok
    # Another group's member never wakes it.
    assert added.hint(pod, None, member("x", "other").info()) is QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize("args", [
    {"permitWaitingTimeSeconds": -1}, {"podGroupBackoffSeconds": -5},
    {"podGroupRejectPercentage": 101}, {"permitWaitingTimeSeconds": "10"},
    {"unknownField": 1}], ids=["negative wait", "negative backoff", "percentage over 100",
                               "string for an integer", "unknown field"])
def test_bad_args_are_refused(args: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CoschedulingArgs.model_validate(args)
