"""kpysched scheduling end to end against the real kube-apiserver (issue: scheduler core)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from typing import Any

import msgspec
from kubernetes_asyncio import client

from kpysched.objects import api as wire
from kpysched.objects.labels import node_selector_matches
from kpysched.objects.quantity import milli_value, value
from kpysched.objects.taints import find_untolerated_taint
from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

SCHEDULER = "kpysched"
ZONE = "topology.kubernetes.io/zone"


async def _pods(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    listed = await client.CoreV1Api(api).list_namespaced_pod(namespace)
    return {pod.metadata.name: pod for pod in listed.items}


async def _events(api: client.ApiClient, namespace: str, pod: str) -> list[Any]:
    listed = await client.EventsV1Api(api).list_namespaced_event(
        namespace, field_selector=f"regarding.name={pod}")
    return list(listed.items)


def _as_wire(obj: Any, api: client.ApiClient, kind: type[Any]) -> Any:
    """A kubernetes_asyncio model -> our wire struct, to reuse the matching helpers."""
    return msgspec.convert(api.sanitize_for_serialization(obj), kind)


async def test_mixed_workload_all_bound_within_constraints(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    rng = random.Random(7)
    sizes = [("4", "8Gi"), ("8", "16Gi"), ("16", "32Gi")]
    for i in range(20):
        cpu, memory = sizes[i % 3]
        labels = {ZONE: "abc"[i % 3], "disktype": "ssd" if i % 2 else "hdd"}
        gpu_node = i % 5 == 0
        taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if gpu_node else []
        if taints:
            labels["dedicated"] = "gpu"
        nodes_to_clean += await kube.create_nodes(api, 1, prefix="mix", cpu=cpu, memory=memory,
                                                  labels=labels, taints=taints)
    gpu_toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu",
                      "effect": "NoSchedule"}
    names = []
    for i in range(200):
        kind = i % 8
        spec: dict[str, Any] = {"scheduler_name": SCHEDULER,
                                "cpu": f"{rng.choice([100, 200, 250, 500])}m",
                                "memory": f"{rng.choice([128, 256, 512])}Mi"}
        if kind == 1:
            spec["node_selector"] = {"disktype": "ssd"}
        elif kind == 2:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": ["a", "b"]}]}]}}}
        elif kind == 3:
            spec["tolerations"] = [gpu_toleration]
            spec["node_selector"] = {"dedicated": "gpu"}
        elif kind == 4 and i < 80:
            spec["host_ports"] = [8080]
        elif kind == 5:
            preferred = [{"weight": 50, "preference": {"matchExpressions": [
                {"key": ZONE, "operator": "In", "values": ["c"]}]}}]
            spec["affinity"] = {"nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": preferred}}
            spec["tolerations"] = [{"operator": "Exists"}]
        elif kind == 6:
            spec["cpu"] = None  # BestEffort: counts only for scoring defaults
            spec["memory"] = None
        names.append(f"pod-{i}")
        await kube.create_pod(api, namespace, kube.pod_body(names[-1], **spec))

    with KpyschedProcess(cluster, log_level="info"):
        bound = await kube.wait_bound(api, namespace, names, timeout=120)

    core = client.CoreV1Api(api)
    nodes = {n: _as_wire(await core.read_node(n), api, wire.Node) for n in nodes_to_clean}
    pods = await _pods(api, namespace)
    cpu_used: Counter[str] = Counter()
    memory_used: Counter[str] = Counter()
    ports: dict[str, list[int]] = defaultdict(list)
    for name, node_name in bound.items():
        pod = _as_wire(pods[name], api, wire.Pod)
        node = nodes[node_name]
        labels = node.metadata.labels
        assert all(labels.get(k) == v for k, v in pod.spec.node_selector.items()), name
        node_affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        required = (node_affinity.required_during_scheduling_ignored_during_execution
                    if node_affinity else None)
        if required is not None:
            assert node_selector_matches(required, labels, node_name), name
        assert find_untolerated_taint(node.spec.taints, pod.spec.tolerations) is None, name
        for container in pod.spec.containers:
            cpu_used[node_name] += milli_value(container.resources.requests.get("cpu", 0))
            memory_used[node_name] += value(container.resources.requests.get("memory", 0))
            ports[node_name] += [p.host_port for p in container.ports if p.host_port]
    for node_name, node in nodes.items():
        assert cpu_used[node_name] <= milli_value(node.status.allocatable["cpu"]), node_name
        assert memory_used[node_name] <= value(node.status.allocatable["memory"]), node_name
        assert len(ports[node_name]) == len(set(ports[node_name])), node_name


async def test_default_scheduler_pod_is_never_touched(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="untouched")
    await kube.create_pod(api, namespace, kube.pod_body("theirs"))  # default-scheduler
    await kube.create_pod(api, namespace, kube.pod_body("ours", scheduler_name=SCHEDULER))

    with KpyschedProcess(cluster):
        await kube.wait_bound(api, namespace, ["ours"], timeout=60)
        await asyncio.sleep(2)  # give a wrong decision time to show up

    theirs = (await _pods(api, namespace))["theirs"]
    assert theirs.spec.node_name is None
    assert not theirs.status.conditions
    assert await _events(api, namespace, "theirs") == []


async def test_unfit_pod_gets_upstream_message_then_binds_when_a_node_fits(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="small", cpu="1")
    await kube.create_pod(api, namespace, kube.pod_body("big", scheduler_name=SCHEDULER, cpu="3"))

    with KpyschedProcess(cluster):
        async def failed_event() -> Any:
            events = await _events(api, namespace, "big")
            return next((e for e in events if e.reason == "FailedScheduling"), None)

        event = await kube.wait_for(failed_event, 30, "a FailedScheduling event")
        total_nodes = len((await client.CoreV1Api(api).list_node()).items)
        assert event.type == "Warning"
        assert event.reporting_controller == SCHEDULER
        assert event.action == "Scheduling"
        # Upstream's text exactly (the differential suite compares it with kube-scheduler's):
        # v1.36 words DynamicResources' PostFilter in it, v1.37 only preemption's.
        dra_post_filter = "no new claims to deallocate, " if cluster.release == "1.36" else ""
        assert event.note == (
            f"0/{total_nodes} nodes are available: 2 Insufficient cpu. {dra_post_filter}"
            f"preemption: 0/{total_nodes} nodes are available: {total_nodes} "
            "Preemption is not helpful for scheduling."), event.note

        async def condition() -> Any:
            pod = (await _pods(api, namespace))["big"]
            return next((c for c in pod.status.conditions or [] if c.type == "PodScheduled"),
                        None)

        scheduled = await kube.wait_for(condition, 30, "the PodScheduled condition")
        assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
        assert scheduled.message == event.note

        nodes_to_clean += await kube.create_nodes(api, 1, prefix="roomy", cpu="4")
        # Well inside the 5-minute unschedulable flush: only the NodeAdd event can do it.
        bound = await kube.wait_bound(api, namespace, ["big"], timeout=20)
    assert bound["big"] == nodes_to_clean[-1]
    scheduled_events = [e for e in await _events(api, namespace, "big") if e.reason == "Scheduled"]
    assert [e.note for e in scheduled_events] == [
        f"Successfully assigned {namespace}/big to {nodes_to_clean[-1]}"]


def _slow_bind_config(delay: float) -> dict[str, Any]:
    return scheduler_config(profiles=[{
        "schedulerName": SCHEDULER,
        "plugins": {"preBind": {"enabled": [{"name": "SlowPreBind"}]}},
        "pluginConfig": [{"name": "SlowPreBind", "args": {"delaySeconds": delay}}],
    }])


async def _bound_count(kp: KpyschedProcess, event: str) -> int:
    return sum(1 for e in kp.log_events() if e.get("event") == event)


async def test_pod_deleted_during_bind_leaves_no_phantom_usage(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="phantom", cpu="2")
    core = client.CoreV1Api(api)
    with KpyschedProcess(cluster, _slow_bind_config(3.0)) as kp:
        await kube.create_pod(api, namespace,
                              kube.pod_body("doomed", scheduler_name=SCHEDULER, cpu="2"))

        async def assumed() -> bool:
            return any(e.get("event") == "pod.assumed" and e.get("pod") == f"{namespace}/doomed"
                       for e in kp.log_events())

        await kube.wait_for(assumed, 30, "kpysched to assume the pod")
        await core.delete_namespaced_pod("doomed", namespace, grace_period_seconds=0)

        async def bind_failed() -> bool:
            return any(e.get("event") == "bind.failed" for e in kp.log_events())

        await kube.wait_for(bind_failed, 30, "the in-flight bind to fail")
        # If the deleted pod's 2 CPUs were still counted, this pod could never fit.
        await kube.create_pod(api, namespace,
                              kube.pod_body("next", scheduler_name=SCHEDULER, cpu="2"))
        bound = await kube.wait_bound(api, namespace, ["next"], timeout=30)
    assert bound == {"next": nodes_to_clean[0]}
    assert "doomed" not in await _pods(api, namespace)


async def test_pod_bound_by_someone_else_during_bind_is_counted_once(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="race", cpu="2")
    node = nodes_to_clean[0]
    core = client.CoreV1Api(api)
    with KpyschedProcess(cluster, _slow_bind_config(3.0)) as kp:
        await kube.create_pod(api, namespace,
                              kube.pod_body("contested", scheduler_name=SCHEDULER, cpu="1"))

        async def assumed() -> bool:
            return any(e.get("event") == "pod.assumed" for e in kp.log_events())

        await kube.wait_for(assumed, 30, "kpysched to assume the pod")
        binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "contested"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        response = await core.create_namespaced_pod_binding("contested", namespace, binding,
                                                            _preload_content=False)
        assert response.status == 201

        async def conflict_seen() -> bool:
            return any(e.get("event") == "bind.failed" for e in kp.log_events())

        await kube.wait_for(conflict_seen, 30, "kpysched's own bind to be refused")
        await kube.create_pod(api, namespace,
                              kube.pod_body("fits", scheduler_name=SCHEDULER, cpu="1"))
        await kube.create_pod(api, namespace,
                              kube.pod_body("too-many", scheduler_name=SCHEDULER, cpu="1"))
        bound = await _first_bound(api, namespace, ["fits", "too-many"])
        assert kp.process is not None and kp.process.poll() is None  # no crash
    assert len(bound) == 1, bound  # 1 CPU left: exactly one of the two fits
    pods = await _pods(api, namespace)
    assert pods["contested"].spec.node_name == node


async def _first_bound(api: client.ApiClient, namespace: str, names: list[str]) -> dict[str, str]:
    """Wait until one of `names` is bound, then a little longer; return all bound ones."""
    async def any_bound() -> dict[str, str]:
        pods = await _pods(api, namespace)
        return {n: pods[n].spec.node_name for n in names if pods[n].spec.node_name}

    await kube.wait_for(any_bound, 30, f"one of {names} to be bound")
    await asyncio.sleep(5)  # a wrongly double-freed CPU would let the second bind by now
    return await any_bound()


async def test_restart_apiserver_mid_run_binds_every_pod_exactly_once(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 5, prefix="restart", cpu="8")
    first = [f"before-{i}" for i in range(30)]
    second = [f"after-{i}" for i in range(30)]
    # Without leader election: a leader that cannot renew while the API server is down
    # exits by design (as kube-scheduler does); this test is about resuming after it.
    config = scheduler_config(leaderElection={"leaderElect": False})
    with KpyschedProcess(cluster, config) as kp:
        for name in first:
            await kube.create_pod(api, namespace, kube.pod_body(name, scheduler_name=SCHEDULER))
        await asyncio.to_thread(_restart_apiserver, cluster)
        async with kube.api_client(cluster) as fresh:
            for name in second:
                await kube.create_pod(fresh, namespace,
                                      kube.pod_body(name, scheduler_name=SCHEDULER))
            await kube.wait_bound(fresh, namespace, first + second, timeout=120)
        bound_lines = Counter(e["pod"] for e in kp.log_events() if e.get("event") == "pod.bound")
    expected = {f"{namespace}/{name}" for name in first + second}
    assert set(bound_lines) == expected
    assert all(count == 1 for count in bound_lines.values()), bound_lines


def _restart_apiserver(cluster: ClusterState) -> None:
    from pathlib import Path

    from tests.cluster.cluster import restart_apiserver

    restarted = restart_apiserver(Path(cluster.dir))
    cluster.apiserver_pid = restarted.apiserver_pid  # keep the session teardown current


async def test_out_of_tree_filter_plugin_changes_placements(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    label = kube.unique_name("chosen")
    # The unlabelled node is far bigger: LeastAllocated alone would pick it every time.
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="big", cpu="64", memory="256Gi")
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="labelled", labels={label: "yes"})
    names = [f"p{i}" for i in range(5)]
    config = scheduler_config(profiles=[{
        "schedulerName": SCHEDULER,
        "plugins": {"filter": {"enabled": [{"name": "RequireNodeLabel"}]}},
        "pluginConfig": [{"name": "RequireNodeLabel", "args": {"labelKey": label}}],
    }])
    for name in names:
        await kube.create_pod(api, namespace, kube.pod_body(name, scheduler_name=SCHEDULER))
    with KpyschedProcess(cluster, config):
        bound = await kube.wait_bound(api, namespace, names, timeout=60)
    assert set(bound.values()) == {nodes_to_clean[1]}
