"""Gang scenarios for the differential suite: PodGroups with their member pods, run
once under upstream kube-scheduler and once under kpysched, both with the release's
gang gates on (v1.36: GenericWorkload and GangScheduling, PodGroups as
scheduling.k8s.io/v1alpha2; v1.37: GenericWorkload, PodGroups as v1beta1), on a
cluster serving that API.

A scenario names nodes, groups (a gang's minCount) and pods (each a member of a group
or a plain pod) by role, and the order they are created in. The outcome compared is,
for every pod, whether it was bound and the first FailedScheduling note it got (roles
for names), and the condition the release's kube-scheduler writes on each PodGroup
(PodGroupScheduled in v1.36, PodGroupInitiallyScheduled in v1.37). Which node a pod lands
on is not compared: members of a gang are alike, so the node among equal ones is
chosen at random by both schedulers.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.e2e.differential.compare import first_failures
from tests.e2e.differential.model import NodeSpec
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _wait_nodes_gone

GROUP = "scheduling.k8s.io"
# Each release's PodGroup API version and the condition its kube-scheduler writes.
POD_GROUP_VERSIONS = {"1.36": "v1alpha2", "1.37": "v1beta1"}
CONDITION_TYPES = {"1.36": "PodGroupScheduled", "1.37": "PodGroupInitiallyScheduled"}
# A gated gang sends no event: watch this long that nothing happens to it.
QUIET_SECONDS = 6.0
OUTCOME_TIMEOUT_SECONDS = 40.0
# After the last pod's outcome, how long later attempts may still change nothing.
SETTLE_SECONDS = 3.0


@dataclass(frozen=True)
class GangPod:
    role: str
    group: str | None = None  # role of its PodGroup; None for a plain pod
    cpu: str = "1"
    priority_class: str | None = None
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates, never removed


@dataclass(frozen=True)
class Step:
    """What the scenario does next: create these pods, this group, or add a node."""

    pods: tuple[GangPod, ...] = ()
    group: tuple[str, int | None] | None = None  # (role, minCount; None: basic policy)
    group_priority_class: str | None = None  # the group's spec.priorityClassName
    group_whole: bool = False  # the group's disruptionMode is all (v1.37): preempted whole
    # The group's spec.preemptionPolicy (v1.37, PodGroupPreemptionPolicy): the API
    # server defaults it to PreemptLowerPriority before its priority admission checks
    # it against the priority class's, so a Never class needs it written.
    group_preemption_policy: str | None = None
    node: NodeSpec | None = None
    pause: float = 0.0  # seconds to wait after the step


@dataclass(frozen=True)
class GangScenario:
    name: str
    nodes: tuple[NodeSpec, ...]
    steps: tuple[Step, ...]
    # What upstream must do for the scenario to mean what it says: pod role -> True
    # (bound) or False (pending).
    expect_bound: dict[str, bool] = field(default_factory=dict)
    # How many pending members upstream held back for their group's sake (they fit,
    # the gang did not).
    expect_held_back: int = 0
    # The pods upstream preempted (deleted) for a group.
    expect_preempted: frozenset[str] = frozenset()
    # Groups whose last condition kube-scheduler leaves to a race, with every ending it
    # was seen to reach. v1.37 sends a placed group's left-over member back at once; if
    # that retry fails before kube-scheduler's own watch has brought back the True its
    # cycle wrote (it had not, under load), it overwrites the True with a False. Both
    # schedulers must end in one of these; every other group's condition must match.
    racy_conditions: dict[str, frozenset[tuple[str, str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class PodOutcome:
    bound: bool
    note: str | None  # the first FailedScheduling note, names as roles
    preempted: bool = False  # deleted by the scheduler (a Preempted event names it)


@dataclass(frozen=True)
class GangOutcome:
    pods: dict[str, PodOutcome]
    # PodGroup role -> (status, reason, message) of PodGroupScheduled, or None.
    conditions: dict[str, tuple[str, str, str] | None]

    def describe(self) -> str:
        lines = [f"   {role}: {'preempted' if o.preempted else 'bound' if o.bound else 'pending'}"
                 f" note={o.note!r}" for role, o in sorted(self.pods.items())]
        lines += [f"   group {role}: {c}" for role, c in sorted(self.conditions.items())]
        return "\n" + "\n".join(lines)

    def held_back_notes(self) -> list[str]:
        """The pending pods' notes as a multiset: which member of a gang tried first,
        and so which one fits nowhere, follows creation order to the millisecond."""
        return sorted(o.note or "" for o in self.pods.values()
                      if not o.bound and not o.preempted)

    def preempted(self) -> set[str]:
        return {role for role, o in self.pods.items() if o.preempted}

    def bound(self) -> set[str]:
        return {role for role, o in self.pods.items() if o.bound}


def assert_same_outcome(upstream: GangOutcome, ours: GangOutcome,
                        racy_conditions: Mapping[str, frozenset[tuple[str, str, str]]]
                        = MappingProxyType({})) -> None:
    """kpysched ends a gang scenario as kube-scheduler did: the same pods bound and
    preempted, the same notes on those held back, the same PodGroup conditions (for a
    group of `racy_conditions`, both end in one of the endings listed there)."""
    detail = f"\n upstream:{upstream.describe()}\n kpysched:{ours.describe()}"
    assert ours.bound() == upstream.bound(), detail
    assert ours.held_back_notes() == upstream.held_back_notes(), detail
    assert ours.preempted() == upstream.preempted(), detail
    for group, endings in racy_conditions.items():
        assert upstream.conditions.get(group) in endings, detail
        assert ours.conditions.get(group) in endings, detail
    assert ({g: c for g, c in ours.conditions.items() if g not in racy_conditions}
            == {g: c for g, c in upstream.conditions.items() if g not in racy_conditions}), \
        detail


def _pod_body(pod: GangPod, scheduler_name: str) -> dict[str, Any]:
    body = kube.pod_body(pod.role, scheduler_name=scheduler_name, cpu=pod.cpu,
                         memory="100Mi", priority_class=pod.priority_class)
    if pod.group is not None:
        body["spec"]["schedulingGroup"] = {"podGroupName": pod.group}
    if pod.scheduling_gates:
        body["spec"]["schedulingGates"] = [{"name": gate} for gate in pod.scheduling_gates]
    return body


def _group_body(role: str, min_count: int | None, release: str,
                priority_class: str | None = None, whole: bool = False,
                preemption_policy: str | None = None) -> dict[str, Any]:
    policy: dict[str, Any] = ({"gang": {"minCount": min_count}} if min_count is not None
                              else {"basic": {}})
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if whole:
        spec["disruptionMode"] = {"all": {}}
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    return {"apiVersion": f"{GROUP}/{POD_GROUP_VERSIONS[release]}", "kind": "PodGroup",
            "metadata": {"name": role}, "spec": spec}


async def _create_node(api: client.ApiClient, node: NodeSpec, names: _Names) -> None:
    await kube.create_node(api, kube.node_body(
        names.of(node.role), cpu=node.cpu, memory=node.memory, pods=node.pods,
        labels={ROLE_LABEL: node.role, **node.labels}, taints=node.taints))


async def run_gang_scenario(api: client.ApiClient, scenario: GangScenario,
                            scheduler_name: str, release: str) -> GangOutcome:
    """Run `scenario` under `scheduler_name` on a cluster of `release` ("1.37")."""
    namespace = await kube.create_namespace(api, "gang")
    names = _Names(secrets.token_hex(3), namespace)
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    node_roles = [n.role for n in scenario.nodes]
    try:
        for node in scenario.nodes:
            await _create_node(api, node, names)
        for step in scenario.steps:
            if step.group is not None:
                await custom.create_namespaced_custom_object(
                    GROUP, POD_GROUP_VERSIONS[release], namespace, "podgroups",
                    _group_body(*step.group, release, step.group_priority_class,
                                step.group_whole, step.group_preemption_policy))
            for pod in step.pods:
                await core.create_namespaced_pod(namespace, _pod_body(pod, scheduler_name))
            if step.node is not None:
                node_roles.append(step.node.role)
                await _create_node(api, step.node, names)
            if step.pause:
                await asyncio.sleep(step.pause)
        return await _observe(api, scenario, names, release)
    finally:
        await kube.delete_namespace(api, namespace)
        node_names = [names.of(role) for role in node_roles]
        await kube.delete_nodes(api, node_names)
        await _wait_nodes_gone(api, node_names)


def _pods(scenario: GangScenario) -> list[GangPod]:
    return [pod for step in scenario.steps for pod in step.pods]


async def _conditions(api: client.ApiClient, scenario: GangScenario, names: _Names,
                      release: str) -> dict[str, tuple[str, str, str] | None]:
    custom = client.CustomObjectsApi(api)
    conditions: dict[str, tuple[str, str, str] | None] = {}
    for step in scenario.steps:
        if step.group is None:
            continue
        role = step.group[0]
        try:
            group = await custom.get_namespaced_custom_object(
                GROUP, POD_GROUP_VERSIONS[release], names.namespace, "podgroups", role)
        except ApiException as error:
            if error.status != 404:
                raise
            conditions[role] = None
            continue
        found = [c for c in group.get("status", {}).get("conditions", [])
                 if c["type"] == CONDITION_TYPES[release]]
        conditions[role] = ((found[0]["status"], found[0]["reason"],
                             names.text(found[0].get("message", ""))) if found else None)
    return conditions


async def _observe(api: client.ApiClient, scenario: GangScenario, names: _Names,
                   release: str) -> GangOutcome:
    """Wait until every pod is bound or was told why not (or, when none was, a quiet
    spell passed), then a settling spell, then read the outcome."""
    core = client.CoreV1Api(api)
    roles = [pod.role for pod in _pods(scenario)]
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < OUTCOME_TIMEOUT_SECONDS:
        listed = {p.metadata.name: p for p in
                  (await core.list_namespaced_pod(names.namespace)).items}
        notes = await first_failures(api, names)
        # A pod upstream must bind counts as decided once bound, not at its first
        # FailedScheduling note: a scenario whose last step (a node added) lets a
        # failed gang fit waits for the retry, however long each scheduler's backoff
        # makes it, instead of reading the outcome a settling spell after the note.
        decided = [role for role in roles
                   if role not in listed  # preempted
                   or listed[role].spec.node_name
                   or (role in notes and not scenario.expect_bound.get(role, False))]
        if len(decided) == len(roles):
            break
        if not notes and loop.time() - started >= QUIET_SECONDS and not any(
                role in listed and listed[role].spec.node_name for role in roles):
            break  # held before any attempt: nothing will happen
        await asyncio.sleep(0.25)
    await asyncio.sleep(SETTLE_SECONDS)
    listed = {p.metadata.name: p for p in
              (await core.list_namespaced_pod(names.namespace)).items}
    notes = await first_failures(api, names)
    preempted = {event["regarding"]["name"]
                 for event in await kube.events(api, names.namespace, "Preempted")}
    pods = {role: PodOutcome(role in listed and bool(listed[role].spec.node_name),
                             notes.get(role), role in preempted and role not in listed)
            for role in roles}
    return GangOutcome(pods, await _conditions(api, scenario, names, release))
