"""With CompositePodGroup on, a tree of groups is one queue entity, its root's
(pod_group_entities.py, pod_group_moves.py over workload_forest.py).

The rows of upstream v1.37.2's TestPriorityQueue_AddCompositePodGroup,
TestPriorityQueue_AddPodGroup_Hierarchical and TestPriorityQueue_DeletePodGroup_Hierarchical
(backend/queue/scheduling_queue_test.go) that kpysched's queue can show: which entity
each queued pod waits in once the groups are seen. Where upstream keeps a pod whose
tree's root is not seen in incompletePodGroupPods, kpysched's queue keeps it in its
PodGroup's own entity (GangScheduling's PreEnqueue holds it in a scheduler, see
test_composite_cycle.py); those rows assert that the pod is in no tree's entity. Then
what the one entity changes: one backoff for the tree, capped by the tree's size, one
entity in the metrics, and an event for one PodGroup's member moving the whole tree.
"""

from __future__ import annotations

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.pod_group_tree import EntityKind
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.plugins import priority_sort, scheduling_gates
from kpysched.queue.pod_group_entities import tree_key
from kpysched.queue.scheduling_queue import SchedulingQueue
from kpysched.queue.workload_forest import WorkloadForest
from tests.unit.builders import make_composite_pod_group, make_pod, make_pod_group
from tests.unit.queue.test_pod_group_entities import NODE_ADD, take_group
from tests.unit.queue.test_scheduling_queue import FIT, FakeClock, hints, reject

NS = "ns1"


class Tree:
    """A v1.37 queue with CompositePodGroup on, and the forest it reads."""

    def __init__(self, clock: FakeClock | None = None, maximum: float = 10.0) -> None:
        self.forest = WorkloadForest(composite_pod_groups=True)
        self.queue = SchedulingQueue(
            priority_sort.PrioritySort().less, scheduling_gates.SchedulingGates().pre_enqueue,
            hints(), clock=clock or FakeClock(), pod_groups=True, release=37,
            initial_backoff_seconds=1.0, max_backoff_seconds=maximum,
            tree_root=self.root)
        self.pods: dict[str, PodInfo] = {}

    def root(self, namespace: str, name: str) -> str | None:
        found = self.forest.root_of_pod_group(namespace, name)
        if found is None or found.kind is not EntityKind.COMPOSITE_POD_GROUP:
            return None
        return found.name

    def pod_group(self, name: str, parent: str | None = None) -> PodGroup:
        """Seen as the informer shows it: the forest first, then the queue's event."""
        group = make_pod_group(name, None, NS, parent=parent)
        self.forest.add_pod_group(group)
        self.queue.move_on_event(ClusterEvent(Resource.POD_GROUP, ActionType.ADD), None, group)
        return group

    def composite(self, name: str, parent: str | None = None) -> CompositePodGroup:
        group = make_composite_pod_group(name, None, NS, parent=parent)
        self.forest.add_composite(group)
        self.queue.move_on_event(ClusterEvent(Resource.COMPOSITE_POD_GROUP, ActionType.ADD),
                                 None, group)
        return group

    def pod(self, name: str, group: str) -> PodInfo:
        built = make_pod(name, NS).group(group).obj()
        built.metadata.uid = f"uid-{name}"
        info = PodInfo.of(built)
        self.pods[name] = info
        self.queue.add(info)
        return info

    def entities(self) -> dict[str, str | None]:
        """Each pod's entity: "compositepodgroup/<root>" for a tree, else
        "podgroup/<name>" (upstream's getActivePodGroups keys)."""
        found: dict[str, str | None] = {}
        for name, info in self.pods.items():
            key = self.queue.entity_of(info.uid)
            found[name] = None if key is None else (
                key[1] if key[1].startswith("compositepodgroup/") else f"podgroup/{key[1]}")
        return found


def test_root_with_pods() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="root-cpg")
    tree.pod("pod1", "pg1")
    tree.composite("root-cpg")
    assert tree.entities() == {"pod1": "compositepodgroup/root-cpg"}
    assert tree.queue.where(tree.pods["pod1"].uid) == "active"


def test_root_when_another_root_exists() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="root-cpg")
    tree.pod_group("pg2")
    tree.pod("pod2", "pg2")
    tree.pod("pod1", "pg1")
    tree.composite("root-cpg")
    assert tree.entities() == {"pod2": "podgroup/pg2", "pod1": "compositepodgroup/root-cpg"}


def test_non_root_when_parent_is_missing() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="child-cpg")
    tree.pod("pod1", "pg1")
    tree.composite("child-cpg", parent="parent-cpg")
    # Upstream: incomplete. Here: no tree's entity.
    assert tree.entities() == {"pod1": "podgroup/pg1"}


def test_non_root_when_parent_is_root() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="child-cpg")
    tree.composite("root-cpg")
    tree.pod("pod1", "pg1")
    tree.composite("child-cpg", parent="root-cpg")
    assert tree.entities() == {"pod1": "compositepodgroup/root-cpg"}


def test_non_root_when_parent_is_root_and_already_queued_with_another_pod() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="child-cpg")
    tree.pod_group("pg2", parent="root-cpg")
    tree.composite("root-cpg")
    tree.pod("pod2", "pg2")
    tree.pod("pod1", "pg1")
    tree.composite("child-cpg", parent="root-cpg")
    assert tree.entities() == {"pod2": "compositepodgroup/root-cpg",
                               "pod1": "compositepodgroup/root-cpg"}
    # One entity: pod1 moved into the tree's (its own PodGroup's entity is gone).
    assert tree.queue.pending_entities()[("active", "podgroup")] == 1


def test_non_root_when_parent_exists_but_root_is_missing() -> None:
    tree = Tree()
    tree.pod_group("pg1", parent="child-cpg")
    tree.composite("parent-cpg", parent="root-cpg")
    tree.pod("pod1", "pg1")
    tree.composite("child-cpg", parent="parent-cpg")
    assert tree.entities() == {"pod1": "podgroup/pg1"}


def test_pod_group_added_to_an_existing_root() -> None:
    # AddPodGroup_Hierarchical: a PodGroup whose parent is a queued root joins its entity.
    tree = Tree()
    tree.composite("root-cpg")
    tree.pod_group("pg1", parent="root-cpg")
    tree.pod("pod1", "pg1")
    tree.pod_group("pg2", parent="root-cpg")
    tree.pod("pod2", "pg2")
    assert tree.entities() == {"pod1": "compositepodgroup/root-cpg",
                               "pod2": "compositepodgroup/root-cpg"}


def test_a_pod_group_deleted_from_a_tree_leaves_its_entity() -> None:
    # DeletePodGroup_Hierarchical: the deleted PodGroup's pods leave the root's entity;
    # the rest of the tree keeps it, where it waited.
    tree = Tree()
    tree.composite("root-cpg")
    gone = tree.pod_group("pg1", parent="root-cpg")
    tree.pod_group("pg2", parent="root-cpg")
    tree.pod("pod1", "pg1")
    tree.pod("pod2", "pg2")
    tree.forest.delete_pod_group(gone)
    tree.queue.move_on_event(ClusterEvent(Resource.POD_GROUP, ActionType.DELETE), gone, None)
    assert tree.entities() == {"pod1": "podgroup/pg1", "pod2": "compositepodgroup/root-cpg"}
    assert tree.queue.where(tree.pods["pod2"].uid) == "active"


async def test_a_tree_backs_off_as_one_entity_of_all_its_pods() -> None:
    # One failure per attempt of the whole tree, and the cap grows with the tree's
    # size (4 pods: 2 * sqrt(4) = 4 s), not each PodGroup's (2 * sqrt(2) = 2.83 s).
    clock = FakeClock()
    tree = Tree(clock, maximum=2.0)
    tree.composite("root-cpg")
    tree.pod_group("a", parent="root-cpg")
    tree.pod_group("b", parent="root-cpg")
    pods = [tree.pod(f"{group}-{i}", group) for group in ("a", "b") for i in range(2)]
    queue = tree.queue
    for _ in range(3):  # 1 s, 2 s, 4 s
        for info in await take_group(queue, *pods):
            reject(queue, info, FIT)
        clock.advance(10)
        assert queue.flush_backoff_completed() == 4
    for info in await take_group(queue, *pods):
        reject(queue, info, FIT)
    assert {queue.where(p.uid) for p in pods} == {"backoff"}
    assert queue.pending_entities()[("backoff", "podgroup")] == 1
    clock.advance(3.5)
    assert queue.flush_backoff_completed() == 0
    clock.advance(0.6)
    assert queue.flush_backoff_completed() == 4


async def test_a_tree_is_held_moved_and_joined_as_one_entity() -> None:
    # "event of interest moves ungated pod group from unschedulableEntities", for a
    # tree: a gated member of PodGroup a holds b's member too; once it is deleted the
    # tree waits among the unschedulable, a new member of a joins it there unasked,
    # and one event moves both PodGroups' members.
    tree = Tree()
    tree.composite("root-cpg")
    tree.pod_group("a", parent="root-cpg")
    tree.pod_group("b", parent="root-cpg")
    queue = tree.queue
    gated = make_pod("a-0", NS).group("a").gates("wait").info()
    queue.add(gated)
    b = tree.pod("b-0", "b")
    assert queue.where(b.uid) == "gated"
    queue.delete(gated.uid)
    assert queue.where(b.uid) == "unschedulable"
    c = tree.pod("a-1", "a")
    assert queue.where(c.uid) == "unschedulable"
    assert queue.pending_entities()[("unschedulable", "podgroup")] == 1
    assert queue.move_on_event(NODE_ADD) == 2
    assert queue.where(b.uid) == queue.where(c.uid) == "active"
    assert queue.entity_of(b.uid) == queue.entity_of(c.uid) == tree_key(NS, "root-cpg")


def test_a_held_pod_group_brings_its_hold_into_the_tree_seen_after_it() -> None:
    # The root seen last (as the differential suite creates trees): pg1's gated member
    # held its PodGroup's entity; once the root is seen, pg2's new member joins the
    # tree's entity held with it, as upstream's one entity for the tree would be.
    tree = Tree()
    tree.pod_group("pg1", parent="root-cpg")
    tree.pod_group("pg2", parent="root-cpg")
    queue = tree.queue
    gated = make_pod("pod1", NS).group("pg1").gates("wait").info()
    queue.add(gated)
    assert queue.where(gated.uid) == "gated"
    tree.composite("root-cpg")
    pod2 = tree.pod("pod2", "pg2")
    assert queue.where(pod2.uid) == "gated"
    assert queue.entity_of(gated.uid) == queue.entity_of(pod2.uid) == tree_key(NS, "root-cpg")
    assert queue.pending_entities()[("gated", "podgroup")] == 1


def test_a_deleted_root_sends_each_pod_group_back_to_its_own_entity() -> None:
    # DeleteCompositePodGroup: the tree's pods leave the root's entity (upstream:
    # aside, in incompletePodGroupPods; here each PodGroup's own entity, where
    # PreEnqueue is asked again: GangScheduling holds it in a scheduler).
    tree = Tree()
    root = tree.composite("root-cpg")
    tree.pod_group("pg1", parent="root-cpg")
    tree.pod_group("pg2", parent="root-cpg")
    tree.pod("pod1", "pg1")
    tree.pod("pod2", "pg2")
    assert tree.queue.pending_entities()[("active", "podgroup")] == 1
    tree.forest.delete_composite(root)
    tree.queue.move_on_event(ClusterEvent(Resource.COMPOSITE_POD_GROUP, ActionType.DELETE),
                             root, None)
    assert tree.queue.pending_entities()[("active", "podgroup")] == 2
    assert tree.entities() == {"pod1": "podgroup/pg1", "pod2": "podgroup/pg2"}
