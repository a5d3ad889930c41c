"""The cluster's scheduling state, listed once through the informers' own paths and
decoders, as one JSON document.

Each resource is kept as its List (`{"metadata": ..., "items": [...]}`) of the slim
structs the informers decode into (msgspec, camelCase, defaults omitted), so reading
a snapshot back goes through the same Decoder as a live list page, and only what
scheduling reads is written (no managedFields, no container commands).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from kpysched.api.response import ApiResponse
from kpysched.api.times import api_time
from kpysched.informers import NON_TERMINAL_PODS
from kpysched.informers.decode import Decoder, MalformedResponseError, status_error
from kpysched.informers.listers import Listers
from kpysched.objects import api

API_VERSION = "kpysched.io/v1alpha1"
KIND = "ClusterSnapshot"
PAGE_SIZE = 500


class PriorityClass(msgspec.Struct, rename="camel", omit_defaults=True):
    """What pod admission reads of a PriorityClass: a pod's priority comes from it."""

    metadata: api.ObjectMeta = msgspec.field(default_factory=api.ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None


class PriorityClassList(msgspec.Struct, rename="camel", omit_defaults=True):
    metadata: api.ListMeta = msgspec.field(default_factory=api.ListMeta)
    items: list[PriorityClass] = []


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    resource: str  # the informer's resource name, the snapshot's key
    path: str
    kind: type[Any]
    list_kind: type[Any]
    field_selector: str | None = None


def resource_specs() -> list[ResourceSpec]:
    """Every resource kpysched watches, in the order the informers start, plus the
    PriorityClasses admission would resolve a new pod's priority from."""
    return [
        ResourceSpec("nodes", "/api/v1/nodes", api.Node, api.NodeList),
        ResourceSpec("pods", "/api/v1/pods", api.Pod, api.PodList, NON_TERMINAL_PODS),
        *(ResourceSpec(resource, path, kind, list_kind)
          for path, kind, list_kind, _, resource in Listers().specs()),
        ResourceSpec("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses",
                     PriorityClass, PriorityClassList),
    ]


class Reader(Protocol):
    """What listing needs of RawApi (GET only)."""

    async def request(self, method: str, path: str, body: Any = None, *,
                      query: dict[str, str] | None = None,
                      timeout: float | None = 30.0) -> ApiResponse: ...


class SnapshotError(Exception):
    """The cluster could not be listed, or a snapshot file cannot be read."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status  # the API server's answer, 0 when there was none


async def list_resource(reader: Reader, spec: ResourceSpec) -> tuple[list[Any], str]:
    """All pages of one resource, decoded as its informer decodes them (a malformed
    object is logged and left out); the items and the list's resourceVersion."""
    decoder: Decoder[Any] = Decoder(spec.resource, spec.kind, spec.list_kind)
    items: list[Any] = []
    continue_token = ""
    while True:
        query = {"limit": str(PAGE_SIZE)}
        if spec.field_selector:
            query["fieldSelector"] = spec.field_selector
        if continue_token:
            query["continue"] = continue_token
        response = await reader.request("GET", spec.path, query=query, timeout=120.0)
        if not response.ok:
            detail = (response.message() if response.status == 0
                      else str(status_error(response.status, response.body)))
            raise SnapshotError(f"list {spec.resource}: {detail}", response.status)
        try:
            page, meta = decoder.decode_list(response.body)
        except MalformedResponseError as error:
            raise SnapshotError(str(error)) from None
        items.extend(page)
        if not meta.continue_:
            return items, meta.resource_version
        continue_token = meta.continue_


def _raw_json(value: Any) -> Any:
    """Opaque JSON kept as the API server sent it (a claim's driver parameters), as a
    value for the document."""
    if isinstance(value, msgspec.Raw):
        return msgspec.json.decode(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


async def take(reader: Reader, server: str = "") -> dict[str, Any]:
    """The snapshot document: each resource listed once. A resource the server does
    not serve (404, e.g. resource.k8s.io off) is recorded as empty."""
    resources: dict[str, Any] = {}
    missing: list[str] = []
    for spec in resource_specs():
        try:
            items, version = await list_resource(reader, spec)
        except SnapshotError as error:
            if error.status != 404:
                raise
            missing.append(spec.resource)
            items, version = [], ""
        resources[spec.resource] = {"metadata": {"resourceVersion": version},
                                    "items": msgspec.to_builtins(items, enc_hook=_raw_json)}
    taken = api_time()
    document: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND,
                                "metadata": {"creationTimestamp": taken, "server": server},
                                "resources": resources}
    if missing:
        document["metadata"]["notServed"] = missing
    return document


def decode(document: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A snapshot document back into the informers' objects, by resource; a resource
    the snapshot lacks is empty (snapshots of older versions still load)."""
    if document.get("kind") != KIND or document.get("apiVersion") != API_VERSION:
        raise SnapshotError(f"not a kpysched snapshot (want apiVersion {API_VERSION}, "
                            f"kind {KIND}; write one with `kpysched snapshot`)")
    resources = document.get("resources")
    if not isinstance(resources, Mapping):
        raise SnapshotError("snapshot has no 'resources' mapping")
    decoded: dict[str, list[Any]] = {}
    for spec in resource_specs():
        section = resources.get(spec.resource)
        if section is None:
            decoded[spec.resource] = []
            continue
        decoder: Decoder[Any] = Decoder(spec.resource, spec.kind, spec.list_kind)
        try:
            items, _ = decoder.decode_list(msgspec.json.encode(section))
        except MalformedResponseError as error:
            raise SnapshotError(f"snapshot: {error}") from None
        decoded[spec.resource] = list(items)
    return decoded
