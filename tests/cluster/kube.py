"""Async helpers that act on the test cluster through its real API.

They create objects the way a test needs them: namespaces that can really be
deleted (the harness runs no namespace controller, so we finalize ourselves),
Nodes with a status but no kubelet, pods, and waits driven by watches.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster.cluster import ClusterState

Taint = Mapping[str, str]


def api_client(state: ClusterState) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = state.server
    configuration.ssl_ca_cert = state.ca_file
    configuration.api_key = {"BearerToken": f"Bearer {state.token}"}
    return client.ApiClient(configuration)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


async def create_namespace(api: client.ApiClient, prefix: str = "test") -> str:
    name = unique_name(prefix)
    core = client.CoreV1Api(api)
    await core.create_namespace({"metadata": {"name": name}})
    # ServiceAccount admission requires `default` to exist before any pod is created;
    # without kube-controller-manager nobody else makes it.
    await core.create_namespaced_service_account(name, {"metadata": {"name": "default"}})
    return name


async def delete_namespace(api: client.ApiClient, name: str) -> None:
    """Delete every pod at once, then the namespace, then finalize it ourselves."""
    core = client.CoreV1Api(api)
    try:
        await core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        await core.delete_namespace(name, grace_period_seconds=0)
        await core.replace_namespace_finalize(
            name, {"metadata": {"name": name}, "spec": {"finalizers": []}}
        )
    except ApiException as error:
        if error.status != 404:
            raise


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


async def create_nodes(
    api: client.ApiClient, count: int, *, prefix: str = "node", **spec: Any
) -> list[str]:
    """Create `count` Nodes (status included: no kubelet needed to schedule on them).

    The TaintNodesByCondition admission plugin adds `node.kubernetes.io/not-ready`
    to every new Node, and no node lifecycle controller runs here to lift it, so
    the taints are set again (to exactly the requested ones) right after create.
    """
    core = client.CoreV1Api(api)
    names = [f"{prefix}-{next(_node_counter)}-{secrets.token_hex(2)}" for _ in range(count)]
    for name in names:
        body = node_body(name, **spec)
        await core.create_node(body)
        await core.patch_node(name, [{"op": "replace", "path": "/spec/taints",
                                      "value": body["spec"]["taints"]}])
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
