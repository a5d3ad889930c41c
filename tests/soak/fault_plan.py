"""The faults a soak injects, each a coroutine that returns when the fault is over.

What a fault leaves broken (a dead replica) is repaired by the runner afterwards, as
a Deployment would; the invariants are checked all the while by the observer.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubernetes_asyncio import client

from tests.cluster import cluster, faults, nodes, provisioner
from tests.cluster.provisioner import ProvisionerProcess
from tests.soak.churn import HIGH_PRIORITY, IMAGE, KPYSCHED, LOW_PRIORITY, NAMESPACE
from tests.soak.replicas import Replicas

# Longer than kpysched's renewDeadline (10 s, kube-scheduler's default): the leader
# cannot renew and must stop before another replica may lead.
PAUSE_SECONDS: Final = 13.0
RELIST_TIMEOUT_SECONDS: Final = 30.0
LEADER_EXIT_SECONDS: Final = 20.0
POOL_LABEL: Final = "soak.kpysched.io/pool"
POOL_TAINT: Final = {"key": POOL_LABEL, "value": "pdb", "effect": "NoSchedule"}
HELD_PODS: Final = 5
PREBIND_SECONDS: Final = 30.0
BIND_SECONDS: Final = 60.0


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
        # A replica that exited meanwhile (a leader that could not renew while the API
        # server was slow to come back, which the runner notes) lists no more.
        still = [serial for serial in before if serial in after]
        if still and all(after[serial] > before[serial] for serial in still):
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


async def sigterm_in_slow_prebind(ctx: FaultContext) -> None:
    """Issue 32 item 9: SIGTERM while bindings sit in a slow PreBind. Pods whose
    WaitForFirstConsumer claims the test provisioner holds back wait in VolumeBinding's
    PreBind (for up to bindTimeoutSeconds) when the leader is told to stop. It must
    cancel those bindings before it releases its Lease, so that nothing it decided is
    written while the next leader schedules (the report's leader-overlap check compares
    their binding windows); then the claims are let go and the next leader binds every
    pod once."""
    core, storage = client.CoreV1Api(ctx.api), client.StorageV1Api(ctx.api)
    tag = secrets.token_hex(3)
    class_name = f"soak-held-{tag}"
    await storage.create_storage_class({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": class_name}, "provisioner": f"soak.{provisioner.DOMAIN}",
        "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"})
    claims = [f"held-{tag}-{i}" for i in range(HELD_PODS)]
    for claim in claims:
        await core.create_namespaced_persistent_volume_claim(NAMESPACE, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "annotations": {provisioner.ANN_HOLD: "true"}},
            "spec": {"storageClassName": class_name, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}})
        await core.create_namespaced_pod(NAMESPACE, _pod(claim, {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
            labels={"soak/held": tag}))
    # PreBind has begun once the claim names its node (VolumeBinding writes it first).
    await _wait_for(lambda: _claims_with_node(core, claims), len(claims), PREBIND_SECONDS,
                    "claims annotated with a selected node (pods in PreBind)")
    stopped = await asyncio.to_thread(ctx.replicas.signal_leader, signal.SIGTERM)
    if stopped is None or stopped.process.process is None:
        raise AssertionError("no leader to stop")
    code = stopped.process.process.returncode
    events = [e.get("event") for e in stopped.process.log_events()]
    if code != 0:
        raise AssertionError(f"replica {stopped.serial} exited {code} on SIGTERM")
    if "bindings.aborted" not in events or "leader.released" not in events or \
            events.index("bindings.aborted") > events.index("leader.released"):
        raise AssertionError(f"replica {stopped.serial} did not cancel its bindings in "
                             "PreBind before releasing the Lease")
    bound_by_stopped = {pod for _, pod in stopped.bound()} & {
        f"{NAMESPACE}/{claim}" for claim in claims}
    if bound_by_stopped:
        raise AssertionError(f"the stopped replica bound {sorted(bound_by_stopped)}")
    with ProvisionerProcess(ctx.replicas.state):
        for claim in claims:
            await core.patch_namespaced_persistent_volume_claim(
                claim, NAMESPACE, {"metadata": {"annotations": {provisioner.ANN_HOLD: None}}})
        await _wait_all_bound(core, f"soak/held={tag}", len(claims), timeout=BIND_SECONDS)
    ctx.notes.append(f"sigterm-in-slow-prebind: replica {stopped.serial} cancelled "
                     f"{HELD_PODS} bindings in PreBind before releasing the Lease; the next "
                     "leader bound them once the claims were provisioned")


async def _claims_with_node(core: client.CoreV1Api, names: list[str]) -> int:
    listed = await core.list_namespaced_persistent_volume_claim(NAMESPACE)
    return len([c for c in listed.items if c.metadata.name in names
                and provisioner.ANN_SELECTED_NODE in (c.metadata.annotations or {})])


async def _wait_for(count: Callable[[], Awaitable[int]], want: int, timeout: float,
                    what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while (seen := await count()) < want:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{seen} of {want} {what} within {timeout:.0f}s")
        await asyncio.sleep(0.5)


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
    "sigterm-in-slow-prebind": sigterm_in_slow_prebind,
}
