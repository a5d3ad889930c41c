"""Running kpysched like kube-scheduler: leader election, health endpoints, metrics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import kube
from tests.cluster.cluster import ClusterState, free_port
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

SCHEDULER = "kpysched"
LEASE = {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "1s"}


def _elected_config(namespace: str) -> dict[str, Any]:
    return scheduler_config(leaderElection={
        "leaderElect": True, "resourceNamespace": namespace, "resourceName": "kpysched",
        **LEASE})


async def _lease_holder(api: client.ApiClient, namespace: str) -> str | None:
    try:
        lease = await client.CoordinationV1Api(api).read_namespaced_lease("kpysched", namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return lease.spec.holder_identity


def _identity(kp: KpyschedProcess) -> str:
    for event in kp.log_events():
        if event.get("event") == "leader.acquiring":
            return str(event["identity"])
    raise AssertionError(f"no leader.acquiring line in {kp.log_path}")


async def _create(api: client.ApiClient, namespace: str, names: list[str]) -> None:
    for name in names:
        await kube.create_pod(api, namespace, kube.pod_body(name, scheduler_name=SCHEDULER))


def _bound_lines(*processes: KpyschedProcess) -> Counter[str]:
    return Counter(e["pod"] for kp in processes for e in kp.log_events()
                   if e.get("event") == "pod.bound")


async def test_only_the_leader_binds_and_the_standby_takes_over_after_kill(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 3, prefix="ha")
    config = _elected_config(namespace)
    with KpyschedProcess(cluster, config) as leader, \
            KpyschedProcess(cluster, config, wait_for="scheduler.informers_synced") as standby:
        assert await _lease_holder(api, namespace) == _identity(leader)
        first = [f"first-{i}" for i in range(10)]
        await _create(api, namespace, first)
        await kube.wait_bound(api, namespace, first, timeout=60)
        assert standby.metric_total("scheduler_schedule_attempts_total") == 0
        assert leader.metric_total("scheduler_schedule_attempts_total") >= len(first)

        leader.kill()
        second = [f"second-{i}" for i in range(10)]
        await _create(api, namespace, second)
        # leaseDuration (4s) + retryPeriod (1s), plus room for a busy CI machine.
        await kube.wait_bound(api, namespace, second, timeout=4 + 1 + 10)
        assert await _lease_holder(api, namespace) == _identity(standby)
        bound = _bound_lines(leader, standby)
    assert set(bound) == {f"{namespace}/{name}" for name in first + second}
    assert all(count == 1 for count in bound.values()), bound


async def test_sigterm_releases_the_lease_and_the_standby_leads(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="handover")
    config = _elected_config(namespace)
    with KpyschedProcess(cluster, config) as leader, \
            KpyschedProcess(cluster, config, wait_for="scheduler.informers_synced") as standby:
        assert leader.process is not None
        leader.process.send_signal(signal.SIGTERM)
        assert leader.process.wait(30) == 0
        assert any(e.get("event") == "leader.released" for e in leader.log_events())

        async def standby_leads() -> bool:
            return any(e.get("event") == "scheduler.started" for e in standby.log_events())

        # About one retryPeriod (1s) rather than a whole leaseDuration.
        await kube.wait_for(standby_leads, timeout=1 + 3, what="the standby to lead")
        await kube.create_pod(api, namespace, kube.pod_body("after", scheduler_name=SCHEDULER))
        await kube.wait_bound(api, namespace, ["after"], timeout=30)


# Every metric the issue names, with upstream's label names (None: no labels).
EXPECTED_METRICS: dict[str, tuple[str, set[str]]] = {
    "scheduler_schedule_attempts_total": ("counter", {"result", "profile"}),
    "scheduler_scheduling_attempt_duration_seconds": ("histogram", {"result", "profile"}),
    "scheduler_pod_scheduling_sli_duration_seconds": ("histogram", {"attempts"}),
    "scheduler_pod_scheduling_attempts": ("histogram", set()),
    "scheduler_pending_pods": ("gauge", {"queue"}),
    "scheduler_queue_incoming_pods_total": ("counter", {"queue", "event"}),
    "scheduler_unschedulable_pods": ("gauge", {"plugin", "profile"}),
    "scheduler_framework_extension_point_duration_seconds": (
        "histogram", {"extension_point", "status", "profile"}),
    "scheduler_plugin_execution_duration_seconds": (
        "histogram", {"plugin", "extension_point", "status"}),
    "scheduler_preemption_attempts_total": ("counter", set()),
    "scheduler_preemption_victims": ("histogram", set()),
    "scheduler_goroutines": ("gauge", {"operation"}),
    "leader_election_master_status": ("gauge", {"name"}),
}


async def test_metrics_carry_upstream_names_and_move_with_the_workload(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="metrics", cpu="2")
    await _priority_classes(api)
    for i in range(2):
        await kube.create_pod(api, namespace, kube.pod_body(
            f"low-{i}", scheduler_name=SCHEDULER, cpu="1500m", priority_class="kp-low"))
    with KpyschedProcess(cluster, _elected_config(namespace)) as kp:
        await kube.wait_bound(api, namespace, ["low-0", "low-1"], timeout=60)
        await kube.create_pod(api, namespace, kube.pod_body(
            "high", scheduler_name=SCHEDULER, cpu="1500m", priority_class="kp-high"))
        await kube.create_pod(api, namespace, kube.pod_body(
            "huge", scheduler_name=SCHEDULER, cpu="8"))
        await kube.wait_bound(api, namespace, ["high"], timeout=60)
        # Gauges are published by the scheduling loop every second (a scrape never reads
        # the live queue), so "huge" shows up as pending within a publish or two.
        for _ in range(50):
            status, body = kp.get("/metrics")
            if 'scheduler_pending_pods{queue="unschedulable"} 1.0' in body:
                break
            await asyncio.sleep(0.2)
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body)}

    for name, (kind, labels) in EXPECTED_METRICS.items():
        family_name = name.removesuffix("_total") if kind == "counter" else name
        family = families.get(family_name)
        assert family is not None, f"{name} missing from /metrics"
        assert family.type == kind, (name, family.type)
        sample_labels = {key for sample in family.samples for key in sample.labels
                         if key not in ("le", "quantile")}
        assert sample_labels <= labels, (name, sample_labels)

    def total(metric: str, **labels: str) -> float:
        return sum(s.value for f in families.values() for s in f.samples
                   if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()))

    assert total("scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER) >= 3
    assert total("scheduler_schedule_attempts_total", result="unschedulable") >= 1
    assert total("scheduler_preemption_attempts_total") >= 1
    assert total("scheduler_preemption_victims_count") >= 1
    assert total("scheduler_pod_scheduling_sli_duration_seconds_count") >= 3
    assert total("scheduler_pending_pods", queue="unschedulable") >= 1  # "huge" waits
    assert total("scheduler_unschedulable_pods", plugin="NodeResourcesFit",
                 profile=SCHEDULER) >= 1
    assert total("scheduler_framework_extension_point_duration_seconds_count",
                 extension_point="Bind", status="Success") >= 3
    assert total("leader_election_master_status", name="kpysched") == 1
    assert total("scheduler_queue_incoming_pods_total") >= 4


async def _priority_classes(api: client.ApiClient) -> None:
    for name, value in (("kp-low", 10), ("kp-high", 10000)):
        with contextlib.suppress(ApiException):
            await client.SchedulingV1Api(api).create_priority_class(
                {"metadata": {"name": name}, "value": value})


async def test_livez_fails_while_a_plugin_blocks_the_loop(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="busy")
    config = scheduler_config(profiles=[{
        "schedulerName": SCHEDULER,
        "plugins": {"filter": {"enabled": [{"name": "BusyFilter"}]}},
        "pluginConfig": [{"name": "BusyFilter", "args": {"blockSeconds": 8}}],
    }], leaderElection={"leaderElect": False})
    with KpyschedProcess(cluster, config,
                         env={"KPYSCHED_LIVENESS_STALL_SECONDS": "2"}) as kp:
        assert kp.get("/livez")[0] == 200
        await _create(api, namespace, ["a", "b"])

        async def unhealthy() -> bool:
            return (await asyncio.to_thread(kp.get, "/livez"))[0] == 500

        await kube.wait_for(unhealthy, timeout=20, what="/livez to fail")
        status, body = await asyncio.to_thread(kp.get, "/livez?verbose")
        logged = [e["reasons"] for e in kp.log_events()
                  if e.get("event") == "health.check_failed"]
    assert status == 500
    # Plain HTTP on loopback has no access control, so every path, the check's own
    # included, is open and the body gives the reason; behind authorization only a
    # caller allowed /livez/sched-progress gets it (tests/unit/serving/test_server.py).
    assert "[-]sched-progress failed" in body
    assert "no progress" in body
    # The reason is logged whoever asks, as upstream logs it.
    assert logged and "no progress" in logged[-1]["sched-progress"]


@contextlib.asynccontextmanager
async def _late_proxy(target_port: int) -> AsyncIterator[tuple[int, asyncio.Event]]:
    """A TCP forwarder to the API server that only starts listening when told to."""
    port = free_port()
    go = asyncio.Event()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    async def serve_later() -> None:
        await go.wait()
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    task = asyncio.create_task(serve_later())
    try:
        yield port, go
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_readyz_is_unready_until_the_informers_sync(
    cluster: ClusterState, api: client.ApiClient, tmp_path: Path,
) -> None:
    async with _late_proxy(cluster.apiserver_port) as (port, go):
        kubeconfig = json.loads(Path(cluster.kubeconfig).read_text())
        kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
        path = tmp_path / "kubeconfig"
        path.write_text(json.dumps(kubeconfig))
        # The release is given: with no API server to ask for its /version, kpysched
        # would wait up to 60 s and then take the newest release (docs/configuration.md).
        kp = KpyschedProcess(cluster, scheduler_config(leaderElection={"leaderElect": False}),
                             kubeconfig=str(path), wait_for="scheduler.starting",
                             extra_args=(f"--emulated-version={cluster.release}",))
        with kp:
            await asyncio.sleep(1)
            status, body = await asyncio.to_thread(kp.get, "/readyz?verbose")
            assert status == 500, body
            assert "[-]sched-handler-sync failed" in body
            assert (await asyncio.to_thread(kp.get, "/healthz"))[0] == 200
            go.set()

            async def ready() -> bool:
                return (await asyncio.to_thread(kp.get, "/readyz"))[0] == 200

            await kube.wait_for(ready, timeout=60, what="/readyz after the API server appeared")
