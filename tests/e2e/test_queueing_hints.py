"""Queueing hints end to end (issue 14, item 3): a pod rejected for insufficient CPU is
not retried by node changes that cannot help it, and is retried, and placed, once CPU
is freed. kpysched runs as a process against the harness's real API server; the
attempts are read from its /metrics and its log, as an operator would."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes_asyncio import client
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

SCHEDULER = "kpysched"
# Longer than the rejected pod's backoff (1 s) plus the backoff flusher's period (1 s):
# had an event moved it, it would have been retried within this.
RETRY_WINDOW_SECONDS = 4.0


def _samples(kp: KpyschedProcess, name: str) -> dict[frozenset[tuple[str, str]], float]:
    _, body = kp.get("/metrics")
    return {frozenset(sample.labels.items()): sample.value
            for family in text_string_to_metric_families(body)
            for sample in family.samples if sample.name == name}


def _sample(kp: KpyschedProcess, name: str, **labels: str) -> float:
    return _samples(kp, name).get(frozenset(labels.items()), 0.0)


def _attempts(kp: KpyschedProcess, pod: str) -> int:
    """Scheduling attempts that ended with this pod rejected (one log line each)."""
    return sum(1 for e in kp.log_events()
               if e.get("event") == "pod.unschedulable" and e.get("pod") == pod)


def _holder(name: str, node: str) -> dict[str, Any]:
    """A pod already on the node (no scheduler involved) using most of its CPU."""
    body = kube.pod_body(name, scheduler_name=SCHEDULER, cpu="1500m", memory="100Mi")
    body["spec"]["nodeName"] = node
    return body


async def _handled(kp: KpyschedProcess, event: str) -> None:
    """Wait until kpysched's node handler has run for an event of this label."""
    async def seen() -> bool:
        return _sample(kp, "scheduler_event_handling_duration_seconds_count",
                       event=event) >= 1
    await kube.wait_for(seen, 30, f"kpysched to handle a {event} event")


async def test_node_changes_that_cannot_help_do_not_retry_a_pod_short_of_cpu_freeing_cpu_does(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    core = client.CoreV1Api(api)
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="hints", cpu="2")
    node = nodes_to_clean[0]
    await kube.create_pod(api, namespace, _holder("holder", node))
    config = scheduler_config(leaderElection={"leaderElect": False})
    with KpyschedProcess(cluster, config, log_level="info") as kp:
        await kube.create_pod(api, namespace, kube.pod_body(
            "waiting", scheduler_name=SCHEDULER, cpu="1", memory="100Mi"))
        pod = f"{namespace}/waiting"

        async def rejected_once() -> bool:
            return _attempts(kp, pod) == 1
        await kube.wait_for(rejected_once, 30, "the pod's first rejection")
        unschedulable_before = _sample(kp, "scheduler_schedule_attempts_total",
                                       result="unschedulable", profile=SCHEDULER)

        # An unrelated label: NodeResourcesFit did not even register label changes.
        await core.patch_node(node, {"metadata": {"labels": {"team": "blue"}}})
        await _handled(kp, "NodeUpdateNodeLabel")
        # More of something the pod does not request: its hint answers QueueSkip.
        await core.patch_node_status(node, {"status": {
            "allocatable": {"ephemeral-storage": "100Gi"},
            "capacity": {"ephemeral-storage": "100Gi"}}})
        await _handled(kp, "NodeUpdateNodeAllocatable")
        await asyncio.sleep(RETRY_WINDOW_SECONDS)

        assert _attempts(kp, pod) == 1
        assert _sample(kp, "scheduler_schedule_attempts_total", result="unschedulable",
                       profile=SCHEDULER) == unschedulable_before
        assert (await core.read_namespaced_pod("waiting", namespace)).spec.node_name is None
        assert _sample(kp, "scheduler_queueing_hint_execution_duration_seconds_count",
                       plugin="NodeResourcesFit", event="NodeUpdateNodeAllocatable",
                       hint="QueueSkip") >= 1
        moved_by_nodes = {labels: value for labels, value in
                          _samples(kp, "scheduler_queue_incoming_pods_total").items()
                          if dict(labels)["event"].startswith("NodeUpdate")}
        assert moved_by_nodes == {}

        # Freeing CPU: the deleted holder's hint answers Queue and the pod is placed.
        await core.delete_namespaced_pod("holder", namespace, grace_period_seconds=0)
        bound = await kube.wait_bound(api, namespace, ["waiting"], timeout=30)
        assert bound == {"waiting": node}
        assert _attempts(kp, pod) == 1
        assert _sample(kp, "scheduler_queueing_hint_execution_duration_seconds_count",
                       plugin="NodeResourcesFit", event="AssignedPodDelete",
                       hint="Queue") >= 1


        async def moved_by_the_deletion() -> bool:
            # Published from the queue's counts once a second.
            return any(dict(labels)["event"] == "AssignedPodDelete" and value >= 1
                       for labels, value in
                       _samples(kp, "scheduler_queue_incoming_pods_total").items())
        await kube.wait_for(moved_by_the_deletion, 10,
                            "scheduler_queue_incoming_pods_total{event=AssignedPodDelete}")
