"""The faults a soak injects, each a coroutine that returns when the fault is over.

What a fault leaves broken (a dead replica) is repaired by the runner afterwards, as
a Deployment would; the invariants are checked all the while by the observer.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubernetes_asyncio import client

from tests.cluster import cluster, faults, nodes
from tests.soak.churn import HIGH_PRIORITY, IMAGE, KPYSCHED, LOW_PRIORITY, NAMESPACE
from tests.soak.replicas import Replicas

# Longer than kpysched's renewDeadline (10 s, kube-scheduler's default): the leader
# cannot renew and must stop before another replica may lead.
PAUSE_SECONDS: Final = 13.0
RELIST_TIMEOUT_SECONDS: Final = 30.0
LEADER_EXIT_SECONDS: Final = 20.0
POOL_LABEL: Final = "soak.kpysched.io/pool"
POOL_TAINT: Final = {"key": POOL_LABEL, "value": "pdb", "effect": "NoSchedule"}


@dataclass
class FaultContext:
    directory: Path
    api: client.ApiClient
    replicas: Replicas
    notes: list[str]


Fault = Callable[[FaultContext], Awaitable[None]]


async def apiserver_restart(ctx: FaultContext) -> None:
    await asyncio.to_thread(cluster.restart_apiserver, ctx.directory)


async def etcd_restart(ctx: FaultContext) -> None:
    await asyncio.to_thread(faults.restart_etcd, ctx.directory)


async def watch_expiry(ctx: FaultContext) -> None:
    """Compact etcd, then restart kube-apiserver: every watch resumes from a compacted
    resourceVersion and gets 410 Gone, and each replica must list again."""
    before = await asyncio.to_thread(_relists, ctx.replicas)
    revision = await asyncio.to_thread(faults.compact_etcd, ctx.directory)
    await asyncio.to_thread(cluster.restart_apiserver, ctx.directory)
    deadline = asyncio.get_running_loop().time() + RELIST_TIMEOUT_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        after = await asyncio.to_thread(_relists, ctx.replicas)
        if all(after.get(serial, 0) > count for serial, count in before.items()):
            ctx.notes.append(f"watch-expiry: etcd compacted at revision {revision}; "
                             f"relists per replica {before} -> {after}")
            return
        await asyncio.sleep(1)
    raise AssertionError(f"not every replica listed again after the compaction: "
                         f"{before} -> {after}")


def _relists(replicas: Replicas) -> dict[int, float]:
    """kpysched_informer_relists_total of each running replica."""
    return {r.serial: r.process.metric_total("kpysched_informer_relists_total")
            for r in replicas.running}


async def apiserver_pause(ctx: FaultContext) -> None:
    """The leader cannot renew for longer than renewDeadline: it must stop, exiting 1
    as kube-scheduler does, before another replica leads (the report's leader-overlap
    check compares their binding windows)."""
    leader = await asyncio.to_thread(ctx.replicas.leader)
    if leader is None or leader.process.process is None:
        raise AssertionError("no leader before the pause")
    await asyncio.to_thread(faults.pause_apiserver, ctx.directory, PAUSE_SECONDS)
    try:
        code = await asyncio.to_thread(leader.process.process.wait, LEADER_EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"replica {leader.serial} still runs {LEADER_EXIT_SECONDS:.0f}s "
                             "after it could not renew its lease") from None
    if code != 1:
        raise AssertionError(f"replica {leader.serial} exited {code} after losing its lease")
    ctx.notes.append(f"apiserver-pause: leader replica {leader.serial} lost the lease and "
                     "exited 1")


async def leader_sigterm(ctx: FaultContext) -> None:
    stopped = await asyncio.to_thread(ctx.replicas.signal_leader, signal.SIGTERM)
    if stopped is None or stopped.process.process is None:
        raise AssertionError("no leader to stop")
    ctx.notes.append(f"leader-sigterm: replica {stopped.serial} exited "
                     f"{stopped.process.process.returncode}")


async def leader_kill(ctx: FaultContext) -> None:
    killed = await asyncio.to_thread(ctx.replicas.signal_leader, signal.SIGKILL)
    if killed is None:
        raise AssertionError("no leader to kill")
    ctx.notes.append(f"leader-kill: replica {killed.serial} killed")


async def node_deleted_while_binding(ctx: FaultContext) -> None:
    """Pods pinned to one node, and the node deleted while they are being bound; a
    fresh node replaces it so the cluster keeps its size."""
    core = client.CoreV1Api(ctx.api)
    victim = (await nodes.add(ctx.api, 1, name_prefix="soak-doomed"))[0]
    bodies = [_pod(f"doomed-{victim}-{i}", {"nodeSelector": {"kubernetes.io/hostname": victim}})
              for i in range(10)]
    creations = [asyncio.create_task(core.create_namespaced_pod(NAMESPACE, body))
                 for body in bodies]
    await asyncio.sleep(0.2)
    await core.delete_node(victim)
    await asyncio.gather(*creations, return_exceptions=True)
    ctx.notes.append(f"node-deleted-while-binding: {victim} deleted under 10 pods pinned to it")


async def pdb_changed_mid_preemption(ctx: FaultContext) -> None:
    """Low-priority pods behind a PodDisruptionBudget that allows no disruption fill a
    tainted pool; high-priority pods then need their room, and the budget is relaxed
    while kpysched is preempting."""
    core = client.CoreV1Api(ctx.api)
    policy = client.PolicyV1Api(ctx.api)
    pool = await nodes.add(ctx.api, 2, nodes.NodeShape(
        cpu="2", memory="8Gi", labels={POOL_LABEL: "pdb"}, taints=[POOL_TAINT]),
        name_prefix="soak-pool")
    placement = {"nodeSelector": {POOL_LABEL: "pdb"},
                 "tolerations": [{"key": POOL_LABEL, "operator": "Exists"}]}
    for i in range(4):
        await core.create_namespaced_pod(NAMESPACE, _pod(
            f"pdb-victim-{pool[0]}-{i}", placement, cpu="900m", labels={"app": "pdb-victim"}))
    await _wait_all_bound(core, "app=pdb-victim", 4)
    await policy.create_namespaced_pod_disruption_budget(NAMESPACE, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb-victims"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "pdb-victim"}}}})
    for i in range(2):
        await core.create_namespaced_pod(NAMESPACE, _pod(
            f"pdb-preemptor-{pool[0]}-{i}", placement, cpu="1500m", priority=HIGH_PRIORITY,
            labels={"app": "pdb-preemptor"}))
    await asyncio.sleep(0.5)
    await policy.patch_namespaced_pod_disruption_budget(
        "pdb-victims", NAMESPACE, {"spec": {"maxUnavailable": 2}})
    await _wait_all_bound(core, "app=pdb-preemptor", 2, timeout=60)
    ctx.notes.append("pdb-changed-mid-preemption: both preemptors bound on the pool")


def _pod(name: str, placement: dict[str, Any], *, cpu: str = "100m",
         priority: str = LOW_PRIORITY, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"soak/kind": "fault", **(labels or {})}},
            "spec": {"schedulerName": KPYSCHED, "priorityClassName": priority,
                     "terminationGracePeriodSeconds": 0, **placement,
                     "containers": [{"name": "c", "image": IMAGE, "resources": {
                         "requests": {"cpu": cpu, "memory": "64Mi"}}}]}}


async def _wait_all_bound(core: client.CoreV1Api, selector: str, count: int,
                          timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        listed = await core.list_namespaced_pod(NAMESPACE, label_selector=selector)
        if len([p for p in listed.items if p.spec.node_name]) >= count:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"{selector}: fewer than {count} pods bound within {timeout:.0f}s")


FAULTS: Final[dict[str, Fault]] = {
    "apiserver-restart": apiserver_restart,
    "etcd-restart": etcd_restart,
    "watch-expiry": watch_expiry,
    "apiserver-pause": apiserver_pause,
    "leader-sigterm": leader_sigterm,
    "leader-kill": leader_kill,
    "node-deleted-while-binding": node_deleted_while_binding,
    "pdb-changed-mid-preemption": pdb_changed_mid_preemption,
}
