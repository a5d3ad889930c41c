"""Topology-aware pod-group scenarios for the differential suite (v1.37's alpha gate
TopologyAwareWorkloadScheduling, with GenericWorkload): nodes in racks (a label), one
PodGroup whose spec.schedulingConstraints.topology names the rack label (or nothing),
its members, and pods already bound to some nodes. Run once under upstream
kube-scheduler and once under kpysched, one after the other, each run on nodes and a
namespace of its own that are gone before the next starts: a placement is cut from
every node of the cluster, so no other run's nodes may be there.

A scenario may instead be a tree of groups (v1.37's alpha CompositePodGroup, which
needs TopologyAwareWorkloadScheduling): PodGroups under CompositePodGroups (created
PodGroups first, the root CompositePodGroup last), each PodGroup with members of its
own (named <group>-m<i>); a CompositePodGroup may carry the rack constraint for its
whole subtree.

The outcome compared is, for every member, the node it was bound to (as a role) or
the first FailedScheduling note it got, the PodGroupInitiallyScheduled condition of
each PodGroup, and which of the pods already bound were preempted.
Scenarios are built so that neither scheduler has a tie to break at random: one node
per rack where the node matters, distinct placement scores, and racks alike where the
group fits in none (upstream tries its placements in random order and reports the
first one).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.e2e.differential.compare import first_failures
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _wait_nodes_gone

GROUP, VERSION = "scheduling.k8s.io", "v1beta1"
COMPOSITE_VERSION = "v1alpha3"
# Every group of a tree must name a Workload template (the API server asks it of a
# CompositePodGroup, and of a PodGroup with a parent); the Workload need not exist.
WORKLOAD = "w"
CONDITION = "PodGroupInitiallyScheduled"
RACK = "topology.example.com/rack"
# Time for both schedulers' informers to see every member before the PodGroup comes.
MEMBERS_SEEN_SECONDS = 1.0
OUTCOME_TIMEOUT_SECONDS = 40.0
# After every member is decided, how long later attempts may still change nothing.
SETTLE_SECONDS = 3.0


@dataclass(frozen=True)
class RackNode:
    role: str
    rack: str | None  # the rack label's value; None: the node has no rack label
    cpu: str


@dataclass(frozen=True)
class TreeGroup:
    """A PodGroup of a tree: `members` pods named <name>-m<i>."""

    name: str
    parent: str
    min_count: int | None  # None: basic policy
    members: int
    member_cpu: str = "1"


@dataclass(frozen=True)
class TreeComposite:
    """A CompositePodGroup of a tree; `constrained`: the rack constraint."""

    name: str
    min_group_count: int | None  # None: basic policy
    parent: str | None = None
    constrained: bool = False
    disruption_all: bool = False  # spec.disruptionMode: all


@dataclass(frozen=True)
class TopologyScenario:
    name: str
    nodes: tuple[RackNode, ...]
    min_count: int
    members: int
    member_cpu: str = "1"
    constrained: bool = True  # the PodGroup's topology constraint names RACK
    # Pods bound before the group comes (node role, cpu), scheduled by nobody, of
    # priority class `busy_priority_class` (None: no class).
    busy: tuple[tuple[str, str], ...] = ()
    busy_priority_class: str | None = None
    # The PodGroup's and its members' priority class (None: no class).
    priority_class: str | None = None
    # What upstream must do for the scenario to mean what it says: member role ->
    # node role, or None (pending); the busy pods it preempts.
    expect: dict[str, str | None] = field(default_factory=dict)
    expect_preempted: frozenset[str] = frozenset()
    # A tree instead of the one PodGroup "g" (min_count, members, member_cpu and
    # constrained are then unused): composite groups root first (created last).
    composites: tuple[TreeComposite, ...] = ()
    groups: tuple[TreeGroup, ...] = ()
    # A tree the busy pods belong to (of busy_priority_class), created before them:
    # busy pod i is a member of PodGroup busy_groups[i] (None: of none).
    victim_composites: tuple[TreeComposite, ...] = ()
    victim_groups: tuple[TreeGroup, ...] = ()
    busy_groups: tuple[str | None, ...] = ()
    # PodGroups whose final condition kube-scheduler does not fix, left out of the
    # comparison: a PodGroup placed while a sibling failed takes the root's failure on
    # the sibling's retry, and upstream writes that False over its True or not
    # depending on whether its copy shows the True yet (seen both ways).
    racy_conditions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TopologyOutcome:
    # Member role -> (node role or None, first FailedScheduling note or None).
    members: dict[str, tuple[str | None, str | None]]
    condition: tuple[str, str, str] | None
    # The busy pods the scheduler preempted (deleted, with a Preempted event).
    preempted: frozenset[str] = frozenset()
    # A tree's PodGroups' conditions, by PodGroup name.
    conditions: dict[str, tuple[str, str, str] | None] = field(default_factory=dict)

    def nodes(self) -> dict[str, str | None]:
        return {role: node for role, (node, _) in self.members.items()}

    def notes(self) -> list[str]:
        """The pending members' notes as a multiset: which member is tried first (and
        so which one fits nowhere) follows creation order to the millisecond."""
        return sorted(note or "" for node, note in self.members.values() if node is None)

    def describe(self) -> str:
        lines = [f"   {role}: {node or 'pending'} note={note!r}"
                 for role, (node, note) in sorted(self.members.items())]
        groups = [f"   condition of {name}: {condition}"
                  for name, condition in sorted(self.conditions.items())]
        return "\n" + "\n".join([*lines, f"   condition: {self.condition}", *groups,
                                  f"   preempted: {sorted(self.preempted)}"])


def member_roles(scenario: TopologyScenario) -> list[str]:
    if scenario.groups:
        return [role for _, role, _ in _tree_members(scenario)]
    return [f"m{i}" for i in range(scenario.members)]


def _tree_members(scenario: TopologyScenario) -> list[tuple[str, str, str]]:
    """(PodGroup, member role, cpu) of every member of a tree scenario."""
    return [(group.name, f"{group.name}-m{i}", group.member_cpu)
            for group in scenario.groups for i in range(group.members)]


def _policy(count: int | None, field_name: str) -> dict[str, Any]:
    return {"basic": {}} if count is None else {"gang": {field_name: count}}


def _tree_bodies(scenario: TopologyScenario, *, victims: bool = False
                 ) -> list[tuple[str, str, dict[str, Any]]]:
    """(version, plural, body) of every group of a tree in the order they are created:
    the PodGroups, then the CompositePodGroups from the deepest, the root last. Until
    the root exists no member can be tried, so the first cycle sees the whole tree
    whatever its quorum lets through earlier. `victims`: the busy pods' tree, of their
    priority class."""
    tree_composites, tree_groups, priority_class = (
        (scenario.victim_composites, scenario.victim_groups, scenario.busy_priority_class)
        if victims else (scenario.composites, scenario.groups, scenario.priority_class))
    composites: list[tuple[str, str, dict[str, Any]]] = []
    for composite in reversed(tree_composites):
        spec: dict[str, Any] = {
            "schedulingPolicy": _policy(composite.min_group_count, "minGroupCount"),
            "workloadRef": {"workloadName": WORKLOAD, "templateName": composite.name}}
        if composite.parent is not None:
            spec["parentCompositePodGroupName"] = composite.parent
        if composite.constrained:
            spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
        if composite.disruption_all:
            spec["disruptionMode"] = {"all": {}}
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        composites.append((COMPOSITE_VERSION, "compositepodgroups", {
            "apiVersion": f"{GROUP}/{COMPOSITE_VERSION}", "kind": "CompositePodGroup",
            "metadata": {"name": composite.name}, "spec": spec}))
    bodies: list[tuple[str, str, dict[str, Any]]] = []
    for group in tree_groups:
        spec = {"schedulingPolicy": _policy(group.min_count, "minCount"),
                "parentCompositePodGroupName": group.parent,
                "workloadRef": {"workloadName": WORKLOAD, "templateName": group.name}}
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        bodies.append((VERSION, "podgroups", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
            "metadata": {"name": group.name}, "spec": spec}))
    return bodies + composites


def _group_body(scenario: TopologyScenario) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": scenario.min_count}}}
    if scenario.priority_class is not None:
        spec["priorityClassName"] = scenario.priority_class
    if scenario.constrained:
        spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
            "metadata": {"name": "g"}, "spec": spec}


async def run_topology_scenario(api: client.ApiClient, scenario: TopologyScenario,
                                scheduler_name: str) -> TopologyOutcome:
    namespace = await kube.create_namespace(api, "topology")
    names = _Names(secrets.token_hex(3), namespace)
    core = client.CoreV1Api(api)
    try:
        for node in scenario.nodes:
            labels = {ROLE_LABEL: node.role, **({RACK: node.rack} if node.rack else {})}
            await kube.create_node(api, kube.node_body(names.of(node.role), cpu=node.cpu,
                                                       labels=labels))
        custom = client.CustomObjectsApi(api)
        for version, plural, group_body in _tree_bodies(scenario, victims=True):
            await custom.create_namespaced_custom_object(GROUP, version, namespace, plural,
                                                         group_body)
        for index, (node_role, cpu) in enumerate(scenario.busy):
            body = kube.pod_body(f"busy-{index}", scheduler_name=scheduler_name, cpu=cpu,
                                 memory="100Mi", priority_class=scenario.busy_priority_class)
            if index < len(scenario.busy_groups) and scenario.busy_groups[index]:
                body["spec"]["schedulingGroup"] = {"podGroupName": scenario.busy_groups[index]}
            body["spec"]["nodeName"] = names.of(node_role)
            await core.create_namespaced_pod(namespace, body)
        members = (_tree_members(scenario) if scenario.groups else
                   [("g", role, scenario.member_cpu) for role in member_roles(scenario)])
        for group_name, role, cpu in members:
            body = kube.pod_body(role, scheduler_name=scheduler_name, cpu=cpu,
                                 memory="100Mi", priority_class=scenario.priority_class)
            body["spec"]["schedulingGroup"] = {"podGroupName": group_name}
            await core.create_namespaced_pod(namespace, body)
        # The groups last: their members wait for them at PreEnqueue, so the first
        # cycle has every member, whatever minCount lets through.
        await asyncio.sleep(MEMBERS_SEEN_SECONDS)
        bodies = (_tree_bodies(scenario) if scenario.groups
                  else [(VERSION, "podgroups", _group_body(scenario))])
        for version, plural, group_body in bodies:
            await custom.create_namespaced_custom_object(GROUP, version, namespace, plural,
                                                         group_body)
        return await _observe(api, scenario, names)
    finally:
        await kube.delete_namespace(api, namespace)
        node_names = [names.of(node.role) for node in scenario.nodes]
        await kube.delete_nodes(api, node_names)
        await _wait_nodes_gone(api, node_names)


async def _observe(api: client.ApiClient, scenario: TopologyScenario,
                   names: _Names) -> TopologyOutcome:
    """Wait until every member is bound or was told why not, then a settling spell."""
    core = client.CoreV1Api(api)
    roles = member_roles(scenario)
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < OUTCOME_TIMEOUT_SECONDS:
        listed = {p.metadata.name: p for p in
                  (await core.list_namespaced_pod(names.namespace)).items}
        notes = await first_failures(api, names)
        if all(listed[role].spec.node_name or role in notes
               for role in roles if role in listed):
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(SETTLE_SECONDS)
    listed = {p.metadata.name: p for p in
              (await core.list_namespaced_pod(names.namespace)).items}
    notes = await first_failures(api, names)
    members: dict[str, tuple[str | None, str | None]] = {}
    for role in roles:
        node = listed[role].spec.node_name if role in listed else None
        members[role] = (names.role(node) if node else None, notes.get(role))
    preempted = frozenset(
        event["regarding"]["name"]
        for event in await kube.events(api, names.namespace, "Preempted")
        if event["regarding"]["name"] not in listed)
    if scenario.groups:
        conditions = {group.name: await _condition(api, names, group.name)
                      for group in scenario.groups}
        return TopologyOutcome(members, None, preempted, conditions)
    return TopologyOutcome(members, await _condition(api, names), preempted)


async def _condition(api: client.ApiClient, names: _Names,
                     name: str = "g") -> tuple[str, str, str] | None:
    try:
        group = await client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, names.namespace, "podgroups", name)
    except ApiException as error:
        if error.status != 404:
            raise
        return None
    found = [c for c in group.get("status", {}).get("conditions", [])
             if c["type"] == CONDITION]
    if not found:
        return None
    return (found[0]["status"], found[0]["reason"], names.text(found[0].get("message", "")))


def assert_same_outcome(scenario: TopologyScenario, upstream: TopologyOutcome,
                        ours: TopologyOutcome) -> None:
    """The scenario means what it says on upstream, and kpysched ends the same way:
    the same nodes, notes (as a multiset), conditions and victims."""
    detail = f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
    assert upstream.nodes() == scenario.expect, detail
    assert upstream.preempted == scenario.expect_preempted, detail
    if all(node is None for node in scenario.expect.values()):
        conditions = ([upstream.condition] if not scenario.groups
                      else list(upstream.conditions.values()))
        assert all(c is not None and c[0] == "False" for c in conditions), detail
    assert ours.nodes() == upstream.nodes(), detail
    assert ours.notes() == upstream.notes(), detail
    assert ours.condition == upstream.condition, detail
    def fixed(conditions: dict[str, tuple[str, str, str] | None]
              ) -> dict[str, tuple[str, str, str] | None]:
        return {name: condition for name, condition in conditions.items()
                if name not in scenario.racy_conditions}

    assert fixed(ours.conditions) == fixed(upstream.conditions), detail
    assert ours.preempted == upstream.preempted, detail
