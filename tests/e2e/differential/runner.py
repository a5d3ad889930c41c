"""Run one scenario against one scheduler on the real cluster and observe the outcome."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kube
from tests.e2e.differential.model import Outcome, PodSpec, Scenario

ROLE_LABEL = "kpysched.test/role"
PRIORITY_CLASSES = {"low": (100, "PreemptLowerPriority"), "mid": (500, "PreemptLowerPriority"),
                    "high": (1000, "PreemptLowerPriority"), "high-nonpreempting": (1000, "Never")}
# Informers of both schedulers must have seen the scenario's nodes and pods before the
# incoming pod arrives; watch latency on loopback is milliseconds, but a loaded 2-core CI
# machine can delay an informer by a second or more.
SETTLE_SECONDS = 2.5
OUTCOME_TIMEOUT_SECONDS = 30.0


async def ensure_priority_classes(api: client.ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api)
    for name, (value, policy) in PRIORITY_CLASSES.items():
        try:
            await scheduling.create_priority_class(
                {"metadata": {"name": name}, "value": value, "preemptionPolicy": policy})
        except ApiException as error:
            if error.status != 409:
                raise


def _pod_body(spec: PodSpec, scheduler_name: str, node_names: dict[str, str]) -> dict[str, Any]:
    body = kube.pod_body(spec.role, scheduler_name=scheduler_name, cpu=spec.cpu,
                         memory=spec.memory, labels=spec.labels,
                         priority_class=spec.priority_class)
    body["spec"].update(spec.spec)
    body["spec"]["containers"][0].update(spec.container)
    if spec.node is not None:
        body["spec"]["nodeName"] = node_names[spec.node]
    return body


async def _failed_scheduling_note(api: client.ApiClient, namespace: str) -> str | None:
    listed = await client.EventsV1Api(api).list_namespaced_event(
        namespace, field_selector="regarding.name=incoming")
    notes = [e for e in listed.items if e.reason == "FailedScheduling"]
    notes.sort(key=lambda e: e.metadata.creation_timestamp)
    return notes[0].note if notes else None


async def run_scenario(api: client.ApiClient, scenario: Scenario,
                       scheduler_name: str) -> Outcome:
    core = client.CoreV1Api(api)
    namespace = await kube.create_namespace(api, "diff")
    suffix = secrets.token_hex(2)
    node_names = {n.role: f"{n.role}-{suffix}" for n in scenario.nodes}
    roles_by_node = {name: role for role, name in node_names.items()}
    try:
        for node in scenario.nodes:
            body = kube.node_body(
                node_names[node.role], cpu=node.cpu, memory=node.memory, pods=node.pods,
                labels={ROLE_LABEL: node.role, **node.labels}, taints=node.taints,
                unschedulable=node.unschedulable, images=node.images,
                extra_allocatable=node.extra)
            # Returns once node lifecycle has settled the taints: both schedulers see
            # the same final Node before any pod arrives.
            await kube.create_node(api, body)
        for pdb in scenario.pdbs:
            await client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, {
                "metadata": {"name": pdb.role},
                "spec": {"maxUnavailable": pdb.max_unavailable,
                         "selector": {"matchLabels": pdb.selector}}})
        for existing in scenario.existing:
            await core.create_namespaced_pod(namespace,
                                             _pod_body(existing, scheduler_name, node_names))
        await asyncio.sleep(SETTLE_SECONDS)
        await core.create_namespaced_pod(namespace,
                                         _pod_body(scenario.incoming, scheduler_name, node_names))
        return await _observe(api, namespace, scenario, roles_by_node)
    finally:
        await kube.delete_namespace(api, namespace)
        await kube.delete_nodes(api, node_names.values())
        await _wait_nodes_gone(api, node_names.values())


async def _observe(api: client.ApiClient, namespace: str, scenario: Scenario,
                   roles_by_node: dict[str, str]) -> Outcome:
    core = client.CoreV1Api(api)
    existing = {p.role for p in scenario.existing}
    deadline = asyncio.get_running_loop().time() + OUTCOME_TIMEOUT_SECONDS
    message: str | None = None
    while asyncio.get_running_loop().time() < deadline:
        pods = {p.metadata.name: p for p in (await core.list_namespaced_pod(namespace)).items}
        incoming = pods["incoming"]
        if message is None:
            message = await _failed_scheduling_note(api, namespace)
        if incoming.spec.node_name:
            return Outcome(roles_by_node.get(incoming.spec.node_name, incoming.spec.node_name),
                           message, frozenset(existing - set(pods)))
        if message is not None and scenario.expect != "preempted":
            await asyncio.sleep(SETTLE_SECONDS)  # a second attempt must not change anything
            pods = {p.metadata.name for p in (await core.list_namespaced_pod(namespace)).items}
            return Outcome(None, message, frozenset(existing - pods))
        await asyncio.sleep(0.2)
    pods = {p.metadata.name for p in (await core.list_namespaced_pod(namespace)).items}
    return Outcome(None, message, frozenset(existing - pods))


async def _wait_nodes_gone(api: client.ApiClient, names: Any) -> None:
    core = client.CoreV1Api(api)
    for name in names:
        for _ in range(50):
            try:
                await core.read_node(name)
            except ApiException as error:
                if error.status == 404:
                    break
                raise
            await asyncio.sleep(0.1)
