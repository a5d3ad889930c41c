"""Simulated nodes: Node objects that KWOK keeps Ready, with Leases and running pods.

`add` creates Nodes carrying KWOK's management annotation, spread round-robin
over `topology.kubernetes.io/zone` values, and returns once KWOK has made every
one Ready and node lifecycle has lifted the `not-ready` taint that admission puts
on a new Node, so a scheduler sees them exactly as requested. `delete` removes
them again (their Leases go with them: KWOK makes the Node their owner).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import kwok
from tests.progress import Progress

ZONE_LABEL = "topology.kubernetes.io/zone"
# KWOK's own convention for its nodes; it is what `delete` and the CLI select on.
KWOK_LABEL = "type"
KWOK_LABEL_VALUE = "kwok"
# Requests in flight at once: enough to create thousands of Nodes in seconds
# without the 2-core machine's API server queueing them for long.
CONCURRENCY = 16
READY_TIMEOUT_SECONDS = 180.0
_TAINT = re.compile(r"^(?P<key>[^=:]+)(?:=(?P<value>[^:]*))?:(?P<effect>\w+)$")


@dataclass(frozen=True, slots=True)
class NodeShape:
    cpu: str = "4"
    memory: str = "32Gi"
    pods: int = 110
    zones: int = 3
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()


def parse_labels(text: str) -> dict[str, str]:
    """`k=v,k2=v2` as kubectl writes labels."""
    labels: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"label {item!r}: expected key=value")
        labels[key] = value
    return labels


def parse_taints(text: str) -> list[dict[str, str]]:
    """`k=v:Effect,k2:Effect` as `kubectl taint` writes taints."""
    taints: list[dict[str, str]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _TAINT.match(item)
        if match is None or match["effect"] not in ("NoSchedule", "PreferNoSchedule",
                                                      "NoExecute"):
            raise ValueError(f"taint {item!r}: expected key[=value]:NoSchedule|"
                             "PreferNoSchedule|NoExecute")
        taint = {"key": match["key"], "effect": match["effect"]}
        if match["value"]:
            taint["value"] = match["value"]
        taints.append(taint)
    return taints


def zone_name(index: int) -> str:
    return f"zone-{index}"


def node_body(name: str, index: int, shape: NodeShape) -> dict[str, Any]:
    """A Node for KWOK: labels and capacity as given; KWOK writes conditions and addresses."""
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods)}
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", KWOK_LABEL: KWOK_LABEL_VALUE,
        **({ZONE_LABEL: zone_name(index % shape.zones)} if shape.zones > 0 else {}),
        **shape.labels,
    }
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {kwok.MANAGED_ANNOTATION: kwok.MANAGED_VALUE}},
        "spec": {"taints": [dict(t) for t in shape.taints]},
        "status": {"capacity": resources, "allocatable": resources},
    }


async def _list(api: client.ApiClient) -> list[dict[str, Any]]:
    # Raw JSON: building client models for thousands of Nodes would take seconds a poll.
    response = await client.CoreV1Api(api).list_node(
        label_selector=f"{KWOK_LABEL}={KWOK_LABEL_VALUE}", _preload_content=False)
    items: list[dict[str, Any]] = json.loads(await response.read())["items"]
    return items


async def _existing(api: client.ApiClient) -> list[str]:
    return [node["metadata"]["name"] for node in await _list(api)]


def _next_index(existing: Iterable[str], prefix: str) -> int:
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)$")
    indexes = [int(m.group(1)) for m in map(pattern.match, existing) if m]
    return max(indexes, default=-1) + 1


async def add(api: client.ApiClient, count: int, shape: NodeShape | None = None, *,
              name_prefix: str = "kwok-node",
              timeout: float = READY_TIMEOUT_SECONDS, show_progress: bool = False) -> list[str]:
    """Create `count` KWOK nodes named `<prefix>-<n>` (numbering goes on after existing
    ones) and wait until each is Ready with exactly the requested taints. With
    `show_progress`, how many are created, then Ready (tests.progress)."""
    node_shape = shape or NodeShape()
    core = client.CoreV1Api(api)
    first = _next_index(await _existing(api), name_prefix)
    names = [f"{name_prefix}-{first + i}" for i in range(count)]
    gate = asyncio.Semaphore(CONCURRENCY)
    created = Progress("[nodes] created", count, "nodes") if show_progress else None

    made = 0

    async def create(index: int, name: str) -> None:
        nonlocal made
        async with gate:
            await core.create_node(node_body(name, index, node_shape))
        made += 1
        if created is not None:
            created.update_to(made)

    await asyncio.gather(*(create(first + i, n) for i, n in enumerate(names)))
    if created is not None:
        created.close()
    ready_now = Progress("[nodes] Ready", count, "nodes") if show_progress else None
    try:
        await wait_ready(api, names, node_shape.taints, timeout=timeout,
                         on_poll=ready_now.update_to if ready_now is not None else None)
    finally:
        if ready_now is not None:
            ready_now.close()
    return names


def _taint_keys(taints: Iterable[Mapping[str, str]]) -> set[tuple[str, str, str]]:
    return {(t["key"], t.get("value") or "", t["effect"]) for t in taints}


async def wait_ready(api: client.ApiClient, names: Sequence[str],
                     taints: Sequence[Mapping[str, str]] = (), *,
                     timeout: float = READY_TIMEOUT_SECONDS,
                     on_poll: Callable[[int], object] | None = None) -> None:
    """Poll until every named Node is Ready and carries exactly `taints` (`on_poll`
    hears how many are, after each poll)."""
    wanted = set(names)
    expected = _taint_keys(taints)
    deadline = asyncio.get_running_loop().time() + timeout
    waiting: list[str] = sorted(wanted)
    while asyncio.get_running_loop().time() < deadline:
        settled = {
            node["metadata"]["name"] for node in await _list(api)
            if node["metadata"]["name"] in wanted and ready(node)
            and _taint_keys(node["spec"].get("taints", ())) == expected
        }
        waiting = sorted(wanted - settled)
        if on_poll is not None:
            on_poll(len(settled))
        if not waiting:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(
        f"{len(waiting)} of {len(wanted)} KWOK node(s) not Ready with taints {sorted(expected)} "
        f"within {timeout:.0f}s (is KWOK running? see kwok.log): {waiting[:5]}")


def ready(node: Mapping[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node.get("status", {}).get("conditions", ()))


async def delete(api: client.ApiClient, *, name_prefix: str | None = None) -> list[str]:
    """Delete KWOK nodes (those named `<prefix>-<n>` when a prefix is given)."""
    core = client.CoreV1Api(api)
    names = await _existing(api)
    if name_prefix is not None:
        pattern = re.compile(rf"^{re.escape(name_prefix)}-\d+$")
        names = [n for n in names if pattern.match(n)]
    gate = asyncio.Semaphore(CONCURRENCY)

    async def remove(name: str) -> None:
        async with gate:
            try:
                await core.delete_node(name)
            except ApiException as error:
                if error.status != 404:
                    raise

    await asyncio.gather(*(remove(n) for n in names))
    return names
