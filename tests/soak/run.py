"""One soak from start to end: cluster, schedulers, churn, faults, checks, figures."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import cluster, kube, nodes
from tests.cluster.upstream import UpstreamScheduler
from tests.progress import Progress
from tests.soak import fault_plan, mixed
from tests.soak.churn import IMAGE, KPYSCHED, NAMESPACE, Churn, priority_classes
from tests.soak.observer import Observer, PodRecord
from tests.soak.plan import SoakPlan
from tests.soak.replicas import Replicas
from tests.soak.report import SoakReport

NODE_SHAPE: Final = nodes.NodeShape(cpu="4", memory="16Gi", pods=110, zones=3)
SAMPLE_SECONDS: Final = 10.0
PROBE_TIMEOUT_SECONDS: Final = 120.0
QUIESCE_TIMEOUT_SECONDS: Final = 180.0
EVENT_WATCH_GRACE_SECONDS: Final = 10.0


@contextlib.asynccontextmanager
async def _running(directory: Path) -> AsyncIterator[cluster.ClusterState]:
    state = await asyncio.to_thread(cluster.up, directory, cluster.FULL)
    try:
        yield state
    finally:
        await asyncio.to_thread(cluster.down, directory)


async def run(plan: SoakPlan, directory: Path, logs: Path) -> SoakReport:
    """Run `plan` on a cluster of its own in `directory` (removed afterwards); the
    schedulers' logs are kept in `logs`."""
    report = SoakReport(plan=plan, started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    async with _running(directory) as state, kube.api_client(state) as api, \
            mixed.installed(plan, state, logs) as addition:
        began = time.monotonic()
        await nodes.add(api, plan.nodes, NODE_SHAPE)
        await _prepare(api)
        if addition is not None:
            await addition.prepare(api)
            report.parts.append(addition)
        report.setup_seconds = round(time.monotonic() - began, 1)
        replicas = Replicas(state)
        upstream = UpstreamScheduler(state)
        await asyncio.to_thread(replicas.start)
        await asyncio.to_thread(upstream.start)
        try:
            await _soak(plan, state, directory, api, replicas, report, addition)
            await _final_checks(api, report)
        finally:
            report.bindings_by_replica = {r.serial: r.bound() for r in replicas.all}
            report.rss_samples = {r.serial: r.rss_samples for r in replicas.all}
            report.task_samples = {r.serial: r.task_samples for r in replicas.all}
            await asyncio.to_thread(replicas.stop)
            await asyncio.to_thread(upstream.stop)
            logs.mkdir(parents=True, exist_ok=True)
            for replica in replicas.all:
                kept = logs / f"kpysched-{replica.serial}.log"
                shutil.copy(replica.process.log_path, kept)
                report.replica_logs.append(str(kept))
            shutil.copy(upstream.log_path, logs / "kube-scheduler.log")
    report.finish()
    return report


async def _prepare(api: client.ApiClient) -> None:
    scheduling = client.SchedulingV1Api(api)
    for body in priority_classes():
        with contextlib.suppress(ApiException):
            await scheduling.create_priority_class(body)
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
    await kube.wait_default_service_account(api, NAMESPACE)


async def _soak(plan: SoakPlan, state: cluster.ClusterState, directory: Path,
                api: client.ApiClient, replicas: Replicas, report: SoakReport,
                addition: mixed.MixedRun | None) -> None:
    observer = addition.observer if addition is not None else Observer()
    report.observer = observer
    churn = Churn(api, plan, observer.bound_at, observer.live_pods, observer.pending_never_fit)
    report.churn = churn.counts
    stop_churn, stop_watch = asyncio.Event(), asyncio.Event()
    watching = asyncio.create_task(observer.run(api, stop_watch))
    churning = asyncio.create_task(churn.run(stop_churn))
    # Kueue's waves (the mixed run) stop with churn; Observer's own checks go on.
    waving = asyncio.create_task(addition.run(api, stop_churn) if addition is not None
                                 else stop_churn.wait())
    sampling = asyncio.create_task(_sample(replicas, observer, churn, stop_watch, plan, report,
                                           addition))
    context = fault_plan.FaultContext(directory, api, replicas, report.notes)
    began = time.monotonic()
    spacing = plan.duration_seconds / (len(plan.faults) + 1)
    try:
        for index, name in enumerate(plan.faults):
            await _sleep_until(began + spacing * (index + 1), churning, watching, waving)
            report.faults.append(await _inject(name, context, api, replicas, observer))
        await _sleep_until(began + plan.duration_seconds, churning, watching, waving)
        report.churn_seconds = round(time.monotonic() - began, 1)
        stop_churn.set()
        await churning
        await waving
        if addition is not None:
            await addition.drain(api)
        await _quiesce(api, replicas, observer, report)
    finally:
        stop_churn.set()
        stop_watch.set()
        for task in (churning, waving, sampling, watching):
            task.cancel()
        await asyncio.gather(churning, waving, sampling, watching, return_exceptions=True)


async def _sleep_until(deadline: float, *watched: asyncio.Task[Any]) -> None:
    while time.monotonic() < deadline:
        for task in watched:
            if task.done():
                task.result()  # a crashed churn or observer ends the soak with its error
                raise AssertionError(f"{task.get_name()} ended early")
        await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


async def _sample(replicas: Replicas, observer: Observer, churn: Churn,
                  stop: asyncio.Event, plan: SoakPlan, report: SoakReport,
                  addition: mixed.MixedRun | None = None) -> None:
    """Memory and tasks of every replica, and the soak's progress for whoever watches
    (time into the plan, pods, faults done; a bar on a terminal, lines elsewhere)."""
    began = time.monotonic()
    with Progress("[soak]", plan.duration_seconds, "s",
                  plain_every=SAMPLE_SECONDS) as shown:
        while not stop.is_set():
            await asyncio.to_thread(replicas.sample)
            counts = churn.counts
            shown.update_to(
                round(min(time.monotonic() - began, plan.duration_seconds)),
                faults=f"{len(report.faults)}/{len(plan.faults)}",
                created=counts.created, deleted=counts.deleted,
                live=observer.live_pods(), pending=len(observer.pending()),
                watch_restarts=observer.watch_restarts,
                violations=len(observer.violations),
                **(addition.progress() if addition is not None else {}))
            await asyncio.sleep(SAMPLE_SECONDS)


async def _inject(name: str, context: fault_plan.FaultContext, api: client.ApiClient,
                  replicas: Replicas, observer: Observer) -> dict[str, Any]:
    """The fault, then repair (a replacement replica), then a probe pod: how long until
    kpysched places a new pod again."""
    started = time.monotonic()
    observer.quiet_since = float("inf")  # no pending-time verdicts during a fault
    error = ""
    try:
        await fault_plan.FAULTS[name](context)
    except Exception as failure:
        error = f"{type(failure).__name__}: {failure}"
    ended = time.monotonic()
    for replica in replicas.all:
        process = replica.process.process
        if process is not None and process.poll() is not None and \
                not any(f"replica {replica.serial} " in note for note in context.notes):
            # e.g. a leader that could not renew while etcd was down: it must exit 1.
            context.notes.append(f"{name}: replica {replica.serial} exited "
                                 f"{process.returncode}")
    await asyncio.to_thread(replicas.replace_dead)
    probe = await _probe(api, observer, f"probe-{name}")
    observer.quiet_since = time.monotonic()
    return {"fault": name, "seconds": round(ended - started, 1), "error": error,
            "placeAfterSeconds": probe}


async def _probe(api: client.ApiClient, observer: Observer, name: str) -> float | None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"soak/kind": "probe"}},
            "spec": {"schedulerName": KPYSCHED, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": IMAGE,
                                     "resources": {"requests": {"cpu": "10m"}}}]}}
    created = time.monotonic()
    core = client.CoreV1Api(api)
    deadline = created + PROBE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            await core.create_namespaced_pod(NAMESPACE, body, _preload_content=False)
            break
        except (TimeoutError, ApiException, OSError, aiohttp.ClientError):
            await asyncio.sleep(1)  # the API server is still coming back
    while time.monotonic() < deadline:
        bound = observer.bound_at(name)
        if bound is not None:
            return round(max(0.0, bound - created), 2)
        await asyncio.sleep(0.1)
    return None


async def _quiesce(api: client.ApiClient, replicas: Replicas, observer: Observer,
                   report: SoakReport) -> None:
    """Wait until the leader owes nothing it could still place, then read its cache."""
    deadline = time.monotonic() + QUIESCE_TIMEOUT_SECONDS
    dump: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        leader = await asyncio.to_thread(replicas.leader)
        dump = await asyncio.to_thread(leader.dump) if leader is not None else None
        if dump is not None and _settled(dump):
            break
        await asyncio.sleep(2)
    report.quiesce_seconds = round(QUIESCE_TIMEOUT_SECONDS - (deadline - time.monotonic()), 1)
    report.leader_dump = dump
    observer.check_pending()


def _settled(dump: dict[str, Any]) -> bool:
    queue = dump["queue"]
    assumed = any(p["assumed"] for p in dump["pods"].values())
    # Events too: a pod tried last has its FailedScheduling still on its way, and
    # checking for it before it is written would report the pod as lost.
    return queue.get("active", 0) == 0 and queue.get("backoff", 0) == 0 and \
        dump["bindingsInFlight"] == 0 and dump["eventsInFlight"] == 0 and not assumed


async def _final_checks(api: client.ApiClient, report: SoakReport) -> None:
    """The leader's cache against a fresh list, and pods that were lost."""
    core = client.CoreV1Api(api)
    pods = (await core.list_pod_for_all_namespaces(
        field_selector="status.phase!=Succeeded,status.phase!=Failed")).items
    node_names = sorted(n.metadata.name for n in (await core.list_node()).items)
    assigned = {p.metadata.uid: p.spec.node_name for p in pods if p.spec.node_name}
    dump = report.leader_dump
    if dump is None:
        report.cache_mismatches.append("the leader's /debug/cache did not answer")
    else:
        cached = {uid: entry["node"] for uid, entry in dump["pods"].items()}
        for uid in assigned.keys() - cached.keys():
            report.cache_mismatches.append(f"pod {uid} on {assigned[uid]}: not in the cache")
        for uid in cached.keys() - assigned.keys():
            report.cache_mismatches.append(f"pod {uid}: in the cache on {cached[uid]}, "
                                           "not bound in the API")
        for uid in cached.keys() & assigned.keys():
            if cached[uid] != assigned[uid]:
                report.cache_mismatches.append(
                    f"pod {uid}: cache says {cached[uid]}, API says {assigned[uid]}")
        if sorted(dump["nodes"]) != node_names:
            report.cache_mismatches.append(
                f"nodes: cache has {len(dump['nodes'])}, API {len(node_names)}")
    observer = report.observer
    assert observer is not None
    existing = {p.metadata.uid for p in pods}

    def unexplained() -> list[PodRecord]:
        return [record for record in observer.pending()
                if record.uid in existing and record.released_at is not None
                and record.uid not in observer.failed_events]

    # The leader has written every event; the observer's own watch may still be a
    # moment behind it.
    deadline = time.monotonic() + EVENT_WATCH_GRACE_SECONDS
    while time.monotonic() < deadline:
        if not unexplained():
            break
        await asyncio.sleep(0.5)
    report.lost.extend(record.name for record in unexplained())
