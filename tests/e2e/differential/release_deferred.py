"""Deferred in-place resize scenarios (v1.37, InPlacePodVerticalScalingSchedulerPreemption):
a pod already on its node asks for more CPU, the kubelet defers the resize, and the
scheduler checks the new size against that node only, preempting lower-priority pods
there when that makes room.

No kubelet runs on the test cluster, so the scenario does what the kubelet would: after
the resize request (pods/<name>/resize, which the API server accepts for a pod with no
running container) it writes the pod's status condition PodResizePending with reason
Deferred (or Infeasible) through the status subresource. That is cluster state the
schedulers read, not a stand-in for a component under test.

A scenario names nodes and bound pods by role; every pod is created bound (spec.nodeName)
and names the scheduler under test, so that scheduler's profile is responsible for it.
The outcome compared: which pods were deleted, the Preempted notes (preemptor and nodes
as roles), every FailedScheduling note, and the resized pod's node, nominated node and
PodScheduled condition.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client

from tests.cluster import kube
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _wait_nodes_gone

GATE = "InPlacePodVerticalScalingSchedulerPreemption"
# A resize a scheduler leaves alone sends no event: watch this long that nothing happens.
QUIET_SECONDS = 8.0
OUTCOME_TIMEOUT_SECONDS = 40.0
SETTLE_SECONDS = 3.0
# Both schedulers' informers must have the bound pods before the resize arrives.
INFORMER_SETTLE_SECONDS = 2.0
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class BoundPod:
    role: str
    node: str  # role of the node it is bound to
    cpu: str = "1"
    priority_class: str | None = None


@dataclass(frozen=True)
class DeferredScenario:
    name: str
    nodes: tuple[tuple[str, str], ...]  # (role, cpu)
    pods: tuple[BoundPod, ...]
    resized: str  # role of the pod whose resize is deferred
    new_cpu: str
    reason: str = "Deferred"  # the PodResizePending reason the "kubelet" writes
    # Owners that opted the node out of resize preemption (spec.podPreemptionPolicy).
    disabled_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What kube-scheduler v1.37.2 must do for the scenario to mean what it says.
    expect_deleted: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DeferredOutcome:
    deleted: frozenset[str]
    preempted_notes: tuple[str, ...]
    failed_scheduling: tuple[tuple[str, str], ...]  # (pod role, note)
    resized_node: str
    resized_nominated: str
    resized_pod_scheduled: tuple[str, str] | None  # (status, reason) of PodScheduled


def _node_body(role: str, cpu: str, names: _Names,
               disabled_by: tuple[str, ...] | None) -> dict[str, Any]:
    body = kube.node_body(names.of(role), cpu=cpu, memory="8Gi", labels={ROLE_LABEL: role})
    if disabled_by is not None:
        body["spec"]["podPreemptionPolicy"] = {"disableResizePreemption": list(disabled_by)}
    return body


def _pod_body(pod: BoundPod, scheduler_name: str, names: _Names) -> dict[str, Any]:
    body = kube.pod_body(pod.role, scheduler_name=scheduler_name, cpu=pod.cpu,
                         memory="100Mi", priority_class=pod.priority_class)
    body["spec"]["nodeName"] = names.of(pod.node)
    return body


async def _resize(api: client.ApiClient, namespace: str, role: str, cpu: str) -> None:
    """The in-place resize a user asks for (requests only: the QoS class stays)."""
    await client.CoreV1Api(api).patch_namespaced_pod_resize(
        role, namespace,
        [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": cpu}],
        _content_type=JSON_PATCH)


async def _kubelet_defers(api: client.ApiClient, namespace: str, role: str,
                          reason: str) -> None:
    """What the kubelet writes when it cannot carry a resize out now (cluster state)."""
    condition = {"type": "PodResizePending", "status": "True", "reason": reason,
                 "message": "Node didn't have enough resources: cpu"}
    await client.CoreV1Api(api).patch_namespaced_pod_status(
        role, namespace, [{"op": "add", "path": "/status/conditions", "value": [condition]}],
        _content_type=JSON_PATCH)


async def run_deferred_scenario(api: client.ApiClient, scenario: DeferredScenario,
                                scheduler_name: str) -> DeferredOutcome:
    namespace = await kube.create_namespace(api, "deferred")
    names = _Names(secrets.token_hex(3), namespace)
    core = client.CoreV1Api(api)
    node_names = [names.of(role) for role, _ in scenario.nodes]
    try:
        for role, cpu in scenario.nodes:
            await kube.create_node(api, _node_body(role, cpu, names,
                                                   scenario.disabled_by.get(role)))
        for pod in scenario.pods:
            await core.create_namespaced_pod(namespace, _pod_body(pod, scheduler_name, names))
        await asyncio.sleep(INFORMER_SETTLE_SECONDS)
        await _resize(api, namespace, scenario.resized, scenario.new_cpu)
        await _kubelet_defers(api, namespace, scenario.resized, scenario.reason)
        return await _observe(api, scenario, names)
    finally:
        await kube.delete_namespace(api, namespace)
        await kube.delete_nodes(api, node_names)
        await _wait_nodes_gone(api, node_names)


async def _observe(api: client.ApiClient, scenario: DeferredScenario,
                   names: _Names) -> DeferredOutcome:
    """Wait until the pods upstream must lose are gone (or, when none must go, a quiet
    spell passed), then a settling spell, then read the outcome."""
    core = client.CoreV1Api(api)
    roles = {pod.role for pod in scenario.pods}
    loop = asyncio.get_running_loop()
    started = loop.time()
    while loop.time() - started < OUTCOME_TIMEOUT_SECONDS:
        listed = {p.metadata.name for p in
                  (await core.list_namespaced_pod(names.namespace)).items}
        if scenario.expect_deleted and scenario.expect_deleted.isdisjoint(listed):
            break
        if not scenario.expect_deleted and loop.time() - started >= QUIET_SECONDS:
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(SETTLE_SECONDS)
    pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(names.namespace)).items}
    resized = pods.get(scenario.resized)
    uid = resized.metadata.uid if resized is not None else ""

    def text(note: str) -> str:
        return names.text(note).replace(uid, "<resized>") if uid else names.text(note)

    preempted = tuple(sorted(
        f"{event['regarding']['name']}: {text(event.get('note', ''))}"
        for event in await kube.events(api, names.namespace, "Preempted")))
    failed = tuple(sorted(
        (event["regarding"]["name"], text(event.get("note", "")))
        for event in await kube.events(api, names.namespace, "FailedScheduling")))
    scheduled = None
    if resized is not None:
        found = [c for c in resized.status.conditions or () if c.type == "PodScheduled"]
        scheduled = (found[0].status, found[0].reason or "") if found else None
    return DeferredOutcome(
        deleted=frozenset(roles - set(pods)),
        preempted_notes=preempted,
        failed_scheduling=failed,
        resized_node=names.role(resized.spec.node_name or "") if resized is not None else "",
        resized_nominated=(names.role(resized.status.nominated_node_name or "")
                           if resized is not None else ""),
        resized_pod_scheduled=scheduled,
    )


def _pods(*specs: tuple[str, str, str, str | None]) -> tuple[BoundPod, ...]:
    return tuple(BoundPod(role, node, cpu, priority) for role, node, cpu, priority in specs)


SCENARIOS = (
    # 1 -> 3 CPUs beside a low pod of 2 on a 4-CPU node: the low pod must go; the one on
    # the other node (which has room for the whole resize) is not touched, as a bound
    # pod is checked against its own node only (NodeName's v1.37 PreFilter).
    DeferredScenario(
        "resize-preempts-on-its-own-node-only", (("n0", "4"), ("n1", "4")),
        _pods(("big", "n0", "1", "high"), ("low-here", "n0", "2", "low"),
              ("low-there", "n1", "1", "low")),
        resized="big", new_cpu="3", expect_deleted=frozenset({"low-here"})),
    # The cheapest way: of two low pods either of which frees enough, the one of lower
    # priority goes.
    DeferredScenario(
        "resize-preempts-the-least-important", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("low", "n0", "1", "low"),
              ("mid", "n0", "1", "mid")),
        resized="big", new_cpu="3", expect_deleted=frozenset({"low"})),
    # The node still has room for the larger size: nothing to preempt (upstream ends
    # such a cycle with an error and retries, writing nothing).
    DeferredScenario(
        "resize-that-fits-preempts-nobody", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("low", "n0", "1", "low")),
        resized="big", new_cpu="2"),
    # Even without every lower-priority pod the node lacks room (an equal holds it), so
    # preemption cannot help and the low pod stays. (A resize beyond the node's whole
    # allocatable never gets this far: the API server refuses it, NodeCapacity.)
    DeferredScenario(
        "resize-that-preemption-cannot-help-preempts-nobody", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("peer", "n0", "1", "high"),
              ("low", "n0", "1", "low")),
        resized="big", new_cpu="4"),
    # Only lower priorities are preempted.
    DeferredScenario(
        "resize-never-preempts-an-equal", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("peer", "n0", "2", "high")),
        resized="big", new_cpu="3"),
    # An infeasible resize is not the scheduler's business.
    DeferredScenario(
        "infeasible-resize-is-left-alone", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("low", "n0", "2", "low")),
        resized="big", new_cpu="3", reason="Infeasible"),
    # The node opted out of resize preemption: DeferredPodScheduling rejects it.
    DeferredScenario(
        "node-that-disables-resize-preemption", (("n0", "4"),),
        _pods(("big", "n0", "1", "high"), ("low", "n0", "2", "low")),
        resized="big", new_cpu="3", disabled_by={"n0": ("example.com/autoscaler",)}),
)
