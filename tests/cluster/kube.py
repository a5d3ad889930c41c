"""Async helpers that act on the test cluster through its real API.

They create objects the way a test needs them: namespaces (ready once the
serviceaccount controller has made `default`), Nodes with a status but no kubelet
(returned once node lifecycle has settled their taints), pods, and waits driven
by watches. They expect the cluster's kube-controller-manager (`Addons`); Nodes
made here never heartbeat, so that cluster runs with a long node-monitor grace
period (see tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster.cluster import ClusterState

Taint = Mapping[str, str]
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def api_client(state: ClusterState) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = state.server
    configuration.ssl_ca_cert = state.ca_file
    configuration.api_key = {"BearerToken": f"Bearer {state.token}"}
    return client.ApiClient(configuration)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


SETTLE_TIMEOUT_SECONDS = 30.0


async def _poll(what: str, check: Callable[[], Awaitable[bool]],
                timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} within {timeout:.0f}s; does the cluster run "
                         "kube-controller-manager (tests.cluster.cluster.Addons)?")


async def wait_for(predicate: Callable[[], Awaitable[Any]], timeout: float, what: str,
                   interval: float = 0.25) -> Any:
    """Poll `predicate` until it returns something truthy (returned), or fail naming
    `what` after `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(interval)


async def create_namespace(api: client.ApiClient, prefix: str = "test") -> str:
    name = unique_name(prefix)
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    await wait_default_service_account(api, name)
    return name


async def wait_default_service_account(api: client.ApiClient, namespace: str) -> None:
    """ServiceAccount admission refuses pods until the controller has made `default`."""
    core = client.CoreV1Api(api)

    async def exists() -> bool:
        try:
            await core.read_namespaced_service_account("default", namespace)
        except ApiException as error:
            if error.status != 404:
                raise
            return False
        return True

    await _poll(f"no ServiceAccount default in {namespace}", exists)


async def delete_namespace(api: client.ApiClient, name: str) -> None:
    """Delete every pod and claim at once, then the namespace; the namespace controller
    finishes.

    Pods go first with grace 0: on a hand-made Node no kubelet would ever confirm a
    graceful stop, and the namespace would stay Terminating. PersistentVolumeClaims go
    next, by us: the namespace controller deletes them only ~5s later, and a caller that
    waits for the claims' PVs to be released (delete_persistent_volumes) waits that long.
    """
    core = client.CoreV1Api(api)
    try:
        await core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        await core.delete_collection_namespaced_persistent_volume_claim(name)
        await core.delete_namespace(name, grace_period_seconds=0)
    except ApiException as error:
        if error.status != 404:
            raise


async def events(api: client.ApiClient, namespace: str, reason: str, *,
                 regarding: str | None = None) -> list[dict[str, Any]]:
    """The namespace's events.k8s.io Events of `reason` (about object `regarding`, when
    given), oldest first.

    Read as plain JSON: an event a controller recorded through core/v1 (say, the
    resourceclaim controller's about a missing template) has no eventTime, which the
    client's events.k8s.io model refuses."""
    selector = f"regarding.name={regarding}" if regarding is not None else None
    response = await client.EventsV1Api(api).list_namespaced_event(
        namespace, field_selector=selector, _preload_content=False)
    found = [e for e in json.loads(await response.read())["items"]
             if e.get("reason") == reason]
    found.sort(key=lambda e: e["metadata"]["creationTimestamp"])
    return found


_node_counter = itertools.count()


def node_body(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    extra_allocatable: Mapping[str, str] | None = None,
    images: Sequence[tuple[str, int]] = (),
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra_allocatable or {})}
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    return {
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "created by the kpysched test harness"}],
            "images": [{"names": [image], "sizeBytes": size} for image, size in images],
            "phase": "Running",
        },
    }


def settled_taints(body: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """The taints node lifecycle leaves on a Ready Node: its own, plus the
    `unschedulable` taint when spec.unschedulable is set."""
    spec = body["spec"]
    taints = {(t["key"], t.get("value") or "", t["effect"]) for t in spec.get("taints", ())}
    if spec.get("unschedulable"):
        taints.add((UNSCHEDULABLE_TAINT, "", "NoSchedule"))
    return taints


async def create_node(api: client.ApiClient, body: Mapping[str, Any]) -> None:
    """Create a Node and return once its taints are settled.

    The TaintNodesByCondition admission plugin puts `node.kubernetes.io/not-ready`
    on every new Node; node lifecycle (kube-controller-manager) lifts it from a
    Ready Node a moment later. Waiting for that means a scheduler never sees a
    taint come or go while a test runs.
    """
    core = client.CoreV1Api(api)
    name = body["metadata"]["name"]
    await core.create_node(dict(body))
    expected = settled_taints(body)

    async def settled() -> bool:
        node = await core.read_node(name)
        return {(t.key, t.value or "", t.effect) for t in node.spec.taints or ()} == expected

    await _poll(f"Node {name} did not settle to taints {sorted(expected)}", settled)


async def create_nodes(
    api: client.ApiClient, count: int, *, prefix: str = "node", **spec: Any
) -> list[str]:
    """Create `count` Nodes (status included: no kubelet needed to schedule on them)."""
    names = [f"{prefix}-{next(_node_counter)}-{secrets.token_hex(2)}" for _ in range(count)]
    for name in names:
        await create_node(api, node_body(name, **spec))
    return names


async def delete_nodes(api: client.ApiClient, names: Iterable[str]) -> None:
    core = client.CoreV1Api(api)
    for name in names:
        try:
            await core.delete_node(name)
        except ApiException as error:
            if error.status != 404:
                raise


def pod_body(
    name: str,
    *,
    scheduler_name: str = "default-scheduler",
    cpu: str | None = "100m",
    memory: str | None = "500Mi",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    host_ports: Sequence[int] = (),
    priority_class: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "pause", "image": image,
                                 "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [container],
        # No kubelet runs, so a graceful delete would never finish.
        "terminationGracePeriodSeconds": 0,
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


async def create_pod(api: client.ApiClient, namespace: str, body: Mapping[str, Any]) -> Any:
    return await client.CoreV1Api(api).create_namespaced_pod(namespace, dict(body))


async def wait_bound(
    api: client.ApiClient, namespace: str, names: Iterable[str], timeout: float = 60.0
) -> dict[str, str]:
    """Wait by watch until every named pod has spec.nodeName; return name -> node."""
    core = client.CoreV1Api(api)
    wanted = set(names)
    bound: dict[str, str] = {}

    async def watch_until_bound() -> None:
        listed = await core.list_namespaced_pod(namespace)
        for pod in listed.items:
            if pod.metadata.name in wanted and pod.spec.node_name:
                bound[pod.metadata.name] = pod.spec.node_name
        version = listed.metadata.resource_version
        while not wanted <= bound.keys():
            stream = watch.Watch()
            async with stream.stream(core.list_namespaced_pod, namespace,
                                     resource_version=version, timeout_seconds=30) as events:
                async for event in events:
                    pod = event["object"]
                    version = pod.metadata.resource_version
                    if pod.metadata.name in wanted and pod.spec.node_name:
                        bound[pod.metadata.name] = pod.spec.node_name
                        if wanted <= bound.keys():
                            return

    try:
        await asyncio.wait_for(watch_until_bound(), timeout)
    except TimeoutError:
        missing = sorted(wanted - bound.keys())
        raise AssertionError(
            f"{len(missing)} pod(s) in {namespace} not bound within {timeout:.0f}s: "
            f"{missing[:10]}"
        ) from None
    return {name: bound[name] for name in wanted}


# ---- storage: the objects volume tests create -----------------------------------

HOSTNAME_LABEL = "kubernetes.io/hostname"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def storage_class_body(name: str, *, provisioner: str = NO_PROVISIONER,
                       binding_mode: str = "WaitForFirstConsumer",
                       allowed_topologies: Mapping[str, Sequence[str]] | None = None,
                       ) -> dict[str, Any]:
    """A StorageClass; `allowed_topologies` is one term, {label key: values}."""
    body: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner,
                            "volumeBindingMode": binding_mode}
    if allowed_topologies:
        body["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": key, "values": list(values)} for key, values in allowed_topologies.items()]}]
    return body


def pv_body(name: str, *, storage_class: str = "", capacity: str = "10Gi",
            access_modes: Sequence[str] = ("ReadWriteOnce",),
            node_affinity: Mapping[str, Sequence[str]] | None = None,
            labels: Mapping[str, str] | None = None,
            claim: tuple[str, str] | None = None,
            source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A statically made PersistentVolume (policy Retain, as an administrator makes one);
    `node_affinity` is one required term, {label key: values}; `claim` is the
    (namespace, name) it is pre-bound to; the source defaults to a hostPath."""
    spec: dict[str, Any] = {
        "capacity": {"storage": capacity}, "accessModes": list(access_modes),
        "storageClassName": storage_class, "persistentVolumeReclaimPolicy": "Retain",
        **(dict(source) if source else {"hostPath": {"path": f"/tmp/kpysched-test/{name}"}}),
    }
    if node_affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": list(values)}
            for key, values in node_affinity.items()]}]}}
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                            "namespace": claim[0], "name": claim[1]}
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": spec}


def pvc_body(name: str, *, storage_class: str = "", request: str = "1Gi",
             access_modes: Sequence[str] = ("ReadWriteOnce",), volume_name: str | None = None,
             selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A PersistentVolumeClaim; storageClassName is always set ("" for none), so no
    default class is ever filled in."""
    spec: dict[str, Any] = {"accessModes": list(access_modes),
                            "storageClassName": storage_class,
                            "resources": {"requests": {"storage": request}}}
    if volume_name:
        spec["volumeName"] = volume_name
    if selector:
        spec["selector"] = {"matchLabels": dict(selector)}
    return {"metadata": {"name": name}, "spec": spec}


async def wait_claims_bound(api: client.ApiClient, namespace: str, names: Iterable[str],
                            timeout: float = SETTLE_TIMEOUT_SECONDS) -> dict[str, str]:
    """Wait until the PV controller has bound every named claim; return name -> PV."""
    core = client.CoreV1Api(api)
    wanted = set(names)

    async def bound() -> dict[str, str] | None:
        claims = (await core.list_namespaced_persistent_volume_claim(namespace)).items
        done = {c.metadata.name: c.spec.volume_name for c in claims
                if c.metadata.name in wanted and c.status.phase == "Bound"}
        return done if done.keys() == wanted else None

    result: dict[str, str] = await wait_for(bound, timeout,
                                            f"claims {sorted(wanted)} in {namespace} Bound")
    return result


async def delete_persistent_volumes(api: client.ApiClient, names: Iterable[str],
                                    timeout: float = SETTLE_TIMEOUT_SECONDS) -> list[str]:
    """Delete the PVs and wait for them to go; return those still there after `timeout`.

    pv-protection holds a PV while it is Bound; once its claim is gone the PV
    controller marks it Released and the deletion completes.
    """
    core = client.CoreV1Api(api)
    remaining = set(names)
    for name in remaining:
        try:
            await core.delete_persistent_volume(name)
        except ApiException as error:
            if error.status != 404:
                raise
    deadline = asyncio.get_running_loop().time() + timeout
    while remaining and asyncio.get_running_loop().time() < deadline:
        present = {pv.metadata.name for pv in (await core.list_persistent_volume()).items}
        remaining &= present
        if remaining:
            await asyncio.sleep(0.2)
    return sorted(remaining)
