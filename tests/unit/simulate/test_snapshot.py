"""A snapshot lists each resource once, GET only, through the informers' decoders,
and reads back into the same objects."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from kpysched.api.response import ApiResponse
from kpysched.objects import api, storage
from kpysched.simulate import snapshot
from kpysched.simulate.world import World
from tests.unit.builders import make_node, make_pod


class FakeServer:
    """Serves list pages of fixed objects, two items per page, and records requests."""

    def __init__(self, objects: dict[str, list[Any]]) -> None:
        self.objects = {spec.path: objects.get(spec.resource, [])
                        for spec in snapshot.resource_specs()}
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    async def request(self, method: str, path: str, body: Any = None, *,
                      query: dict[str, str] | None = None,
                      timeout: float | None = 30.0) -> ApiResponse:
        query = query or {}
        self.requests.append((method, path, dict(query)))
        if path == "/apis/resource.k8s.io/v1/deviceclasses":
            return ApiResponse(404, b'{"kind":"Status","code":404,"reason":"NotFound"}')
        items = self.objects[path]
        start = int(query.get("continue") or 0)
        page = items[start:start + 2]
        more = start + 2 < len(items)
        return ApiResponse(200, msgspec.json.encode({
            "metadata": {"resourceVersion": "42", **({"continue": str(start + 2)} if more else {})},
            "items": page}))


def _objects() -> dict[str, list[Any]]:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110)
             .label("zone", "abc"[i % 3]).taint("dedicated", "gpu").obj() for i in range(5)]
    pods = [make_pod(f"p{i}").req(cpu="100m").node(f"n{i}").label("app", "web").obj()
            for i in range(3)]
    claims = [storage.PersistentVolumeClaim(metadata=api.ObjectMeta(name="c", namespace="ns"))]
    return {"nodes": nodes, "pods": pods, "persistentvolumeclaims": claims,
            "namespaces": [api.Namespace(metadata=api.ObjectMeta(name="ns",
                                                                 labels={"team": "a"}))]}


async def test_round_trip_through_json_gives_the_same_objects() -> None:
    objects = _objects()
    server = FakeServer(objects)
    document = await snapshot.take(server, server="https://example")
    world = World.from_snapshot(json.loads(json.dumps(document)))
    for resource, items in objects.items():
        assert world.of(resource) == items, resource
    assert world.of("services") == []
    assert document["metadata"]["notServed"] == ["deviceclasses"]


async def test_only_get_requests_each_resource_once_per_page() -> None:
    server = FakeServer(_objects())
    await snapshot.take(server)
    assert {method for method, _, _ in server.requests} == {"GET"}
    node_pages = [q for _, path, q in server.requests if path == "/api/v1/nodes"]
    assert [q.get("continue") for q in node_pages] == [None, "2", "4"]
    pod_query = next(q for _, path, q in server.requests if path == "/api/v1/pods")
    assert pod_query["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"
    assert len({path for _, path, _ in server.requests}) == len(snapshot.resource_specs())


def test_not_a_snapshot_is_refused() -> None:
    import pytest

    from kpysched.simulate.world import InputError

    with pytest.raises(InputError, match="not a kpysched snapshot"):
        World.from_snapshot({"kind": "List"})
