"""GangScheduling with v1.37's CompositePodGroup on: a member of a PodGroup under a
CompositePodGroup answers for its whole tree (upstream's preEnqueueWithHierarchies,
permitPodForHierarchy, areSameHierarchy hints, with their texts)."""

from __future__ import annotations

from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, QueueingHint, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins import gang_scheduling as gang
from tests.unit.builders import FakeHandle, make_composite_pod_group, make_pod, make_pod_group

TREE_GATES = Features.from_gates({"GenericWorkload": True,
                                  "TopologyAwareWorkloadScheduling": True,
                                  "CompositePodGroup": True}, release=37)


def tree_handle(*, root: bool = True, members: dict[str, int] | None = None) -> FakeHandle:
    """Root gang of 2 over PodGroups a and b (gangs of 2); `members` per group."""
    handle = FakeHandle(features_value=TREE_GATES)
    if root:
        handle.composite_groups["default/root"] = make_composite_pod_group("root", 2)
    for name in ("a", "b"):
        handle.pod_groups[f"default/{name}"] = make_pod_group(name, 2, parent="root")
        for index in range((members or {}).get(name, 0)):
            handle.pod_group_states.add_or_update(
                make_pod(f"{name}{index}").group(name).info())
    handle.pod_groups["default/other"] = make_pod_group("other", 1)
    return handle


def test_pre_enqueue_holds_the_tree_until_its_root_is_known() -> None:
    plugin = gang.GangScheduling(tree_handle(root=False, members={"a": 2, "b": 2}))
    status = plugin.pre_enqueue(make_pod("a0").group("a").info())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == ("failed to build hierarchy snapshot: composite pod group "
                                "object not found in state for CompositePodGroup/default/root")


def test_pre_enqueue_holds_the_tree_until_the_root_has_its_quorum() -> None:
    member = make_pod("a0").group("a").info()
    short = gang.GangScheduling(tree_handle(members={"a": 2, "b": 1})).pre_enqueue(member)
    assert short.message() == 'waiting for composite pod group "root" tree to meet quorum'
    assert gang.GangScheduling(tree_handle(members={"a": 2, "b": 2})).pre_enqueue(member).ok


def test_a_pod_group_without_a_parent_keeps_its_own_rule() -> None:
    handle = tree_handle()
    handle.pod_group_states.add_or_update(make_pod("o0").group("other").info())
    assert gang.GangScheduling(handle).pre_enqueue(make_pod("o0").group("other").info()).ok


def test_permit_waits_for_the_trees_quorum_then_lets_every_member_go() -> None:
    handle = tree_handle(members={"a": 2, "b": 2})
    plugin = gang.GangScheduling(handle)
    pods = {name: make_pod(name).group(name[0]).info() for name in ("a0", "a1", "b0", "b1")}
    for name in ("a0", "a1", "b0"):
        handle.pod_group_states.assume(pods[name])
    status, timeout = plugin.permit(CycleState(), pods["b0"], "n1")
    assert (status.code, status.message(), timeout) == (
        Code.WAIT, 'waiting for composite pod group "root" tree to meet quorum', 300.0)
    assert handle.activated == [pods["b1"].uid]
    handle.pod_group_states.assume(pods["b1"])
    assert plugin.permit(CycleState(), pods["b1"], "n1")[0].ok
    assert sorted(uid for uid, _ in handle.allowed) == sorted(p.uid for p in pods.values())


def test_hints_hear_the_whole_tree_and_nothing_else() -> None:
    handle = tree_handle(members={"a": 1})
    plugin = gang.GangScheduling(handle)
    hints = {(e.event.resource, e.event.action): e.hint for e in plugin.events_to_register()}
    member = make_pod("a0").group("a").info()
    pod_added = hints[(Resource.POD, ActionType.ADD)]
    assert pod_added(member, None, make_pod("b0").group("b").info()) is QueueingHint.QUEUE
    assert pod_added(member, None,
                     make_pod("o0").group("other").info()) is QueueingHint.QUEUE_SKIP
    root_added = hints[(Resource.COMPOSITE_POD_GROUP, ActionType.ADD)]
    assert root_added(member, None, handle.composite_groups["default/root"]) is \
        QueueingHint.QUEUE
    assert root_added(member, None,
                      make_composite_pod_group("elsewhere", 1)) is QueueingHint.QUEUE_SKIP
    group_added = hints[(Resource.POD_GROUP, ActionType.ADD)]
    assert group_added(member, None, handle.pod_groups["default/b"]) is QueueingHint.QUEUE
    assert ClusterEvent(Resource.POD_GROUP, ActionType.UPDATE) in {
        e.event for e in plugin.events_to_register()}
