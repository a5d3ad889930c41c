"""The bodies upstream's extender protocol (k8s.io/kube-scheduler/extender/v1) sends
and reads.

Those types carry no JSON tags, so Go writes the field names as declared ("Pod",
"NodeNames", "FailedNodes", "NumPDBViolations") and nil pointers and maps as null,
and reads them back case-insensitively; so does this module. Pods and nodes go as
the API server sent them when the informers kept their JSON (extenders/raw.py), else
from kpysched's slim objects (see docs/extenders.md); each node's body is made once
while the node is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.raw import RawObjects
from kpysched.objects import api

_encode = msgspec.json.encode
_decode = msgspec.json.decode
_NULL = b"null"


class BodyError(ExtenderError):
    """An answer that is not the JSON its verb returns."""


class NodeBodies:
    """Each node's JSON, kept while the node object is the same one (an informer
    update replaces it), so a cycle joins bytes instead of encoding 1000 nodes.

    Entries of nodes no cycle sent for a while (deleted nodes, mostly) are dropped
    in rounds: a round ends after as many fresh encodings as there were entries when
    it began (64 at least), and the next begins by dropping what neither it nor the
    round before used."""

    def __init__(self, raw: RawObjects | None = None) -> None:
        self._raw = raw
        self._by_name: dict[str, tuple[api.Node, bytes, int]] = {}
        self._round = 0
        self._encoded_this_round = 0
        self._round_length = 64

    def __len__(self) -> int:
        return len(self._by_name)

    def encoded(self, node: api.Node) -> bytes:
        name = node.metadata.name
        kept = self._by_name.get(name)
        if kept is not None and kept[0] is node:
            if kept[2] != self._round:
                self._by_name[name] = (node, kept[1], self._round)
            return kept[1]
        body = (self._raw.json_of(node) if self._raw is not None else None) or _encode(node)
        self._by_name[name] = (node, body, self._round)
        self._encoded_this_round += 1
        if self._encoded_this_round > self._round_length:
            self._next_round()
        return body

    def remember(self, node: api.Node, body: bytes) -> None:
        """`node`'s body is `body` (a node an extender returned, sent on as returned)."""
        self._by_name[node.metadata.name] = (node, body, self._round)

    def _next_round(self) -> None:
        oldest_kept = self._round - 1
        self._by_name = {name: entry for name, entry in self._by_name.items()
                         if entry[2] >= oldest_kept}
        self._round += 1
        self._encoded_this_round = 0
        self._round_length = max(len(self._by_name), 64)


def extender_args(pod: bytes, nodes: Sequence[api.Node] | None,
                  node_names: Sequence[str] | None, bodies: NodeBodies) -> bytes:
    """ExtenderArgs: the pod and either the nodes (a v1.NodeList) or their names."""
    if nodes is not None:
        items = b",".join(bodies.encoded(node) for node in nodes)
        node_list = b'{"metadata":{},"items":[' + items + b"]}"
    else:
        node_list = _NULL
    names = _encode(list(node_names)) if node_names is not None else _NULL
    return b'{"Pod":' + pod + b',"Nodes":' + node_list + b',"NodeNames":' + names + b"}"


def encode_pod(pod: api.Pod, raw: RawObjects | None = None) -> bytes:
    """The pod's JSON as the API server sent it when kept, else its slim object's."""
    return (raw.json_of(pod) if raw is not None else None) or _encode(pod)


@dataclass(slots=True)
class FilterResult:
    """ExtenderFilterResult: NodeNames and Nodes as the answer had them (None when
    absent or null), Nodes decoded into node objects."""

    node_names: list[str] | None
    nodes: list[bytes] | None  # each node's JSON as returned (decode_node reads one)
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    error: str = ""


class _RawNodeList(msgspec.Struct):
    items: list[msgspec.Raw] | None = None


_top_level = msgspec.json.Decoder(dict[str, msgspec.Raw] | None)
_names = msgspec.json.Decoder(list[str] | None)
_node_list = msgspec.json.Decoder(_RawNodeList | None)
_reasons = msgspec.json.Decoder(dict[str, str] | None)
_text = msgspec.json.Decoder(str | None)
_node = msgspec.json.Decoder(api.Node)


def decode_filter_result(body: bytes) -> FilterResult:
    """Only the top level is read as a whole; the returned nodes stay bytes (an answer
    with 1000 nodes is large, and the same node is often returned unchanged)."""
    fields = _fields(body)
    node_list = _typed(fields, "Nodes", _node_list)
    nodes = None
    if node_list is not None:
        nodes = [bytes(item) for item in node_list.items or ()]
    return FilterResult(
        _typed(fields, "NodeNames", _names), nodes,
        _typed(fields, "FailedNodes", _reasons) or {},
        _typed(fields, "FailedAndUnresolvableNodes", _reasons) or {},
        _typed(fields, "Error", _text) or "")


def decode_node(body: bytes) -> api.Node:
    """One node an extender returned."""
    return _typed_raw(msgspec.Raw(body), "Nodes.items", _node)  # type: ignore[no-any-return]


def _fields(body: bytes) -> dict[str, msgspec.Raw]:
    try:
        return _top_level.decode(body) or {}
    except msgspec.DecodeError as error:
        raise BodyError(str(error)) from None


def _typed(fields: Mapping[str, msgspec.Raw], name: str,
           decoder: msgspec.json.Decoder[Any]) -> Any:
    raw = _get(fields, name)
    return None if raw is None else _typed_raw(raw, name, decoder)


def _typed_raw(raw: msgspec.Raw, name: str, decoder: msgspec.json.Decoder[Any]) -> Any:
    try:
        return decoder.decode(raw)
    except msgspec.DecodeError as error:
        raise BodyError(f"{name}: {error}") from None


class _HostPriority(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A HostPriority spelled exactly as Go writes it, nothing else in it."""

    Host: str = ""
    Score: int = 0


_host_priorities = msgspec.json.Decoder(list[_HostPriority] | None)


def decode_host_priorities(body: bytes) -> list[tuple[str, int]]:
    """HostPriorityList as (host, score) pairs.

    An answer whose every entry has only "Host" (a string) and "Score" (an integer),
    as Go's encoding/json writes them, is decoded into typed entries at once (a fifth
    of the time of the general reading for 1000 hosts); anything else (other case,
    other fields, nulls, wrong types, not JSON) takes the general reading, which
    decides and words it."""
    try:
        entries = _host_priorities.decode(body)
    except msgspec.DecodeError:
        return _decode_host_priorities_any(body)
    return [] if entries is None else [(entry.Host, entry.Score) for entry in entries]


def _decode_host_priorities_any(body: bytes) -> list[tuple[str, int]]:
    answer = _parse(body)
    if answer is None:
        return []
    pairs = []
    for entry in _list(answer, "HostPriorityList"):
        item = _mapping(entry, "HostPriority")
        score = _get(item, "Score") or 0
        if not isinstance(score, int) or isinstance(score, bool):
            raise BodyError(f"HostPriority.Score is not an integer: {score!r}")
        pairs.append((str(_get(item, "Host") or ""), score))
    return pairs


@dataclass(slots=True)
class MetaVictims:
    pod_uids: list[str]
    num_pdb_violations: int


def preemption_args(pod: bytes, victims: Mapping[str, tuple[Sequence[api.Pod], int]],
                    node_cache_capable: bool, raw: RawObjects | None = None) -> bytes:
    """ExtenderPreemptionArgs: victims as whole pods, or by UID when the extender keeps
    its own cache (nodeCacheCapable)."""
    if node_cache_capable:
        meta = {node: {"Pods": [{"UID": p.metadata.uid} for p in pods],
                       "NumPDBViolations": violations}
                for node, (pods, violations) in victims.items()}
        return b'{"Pod":' + pod + b',"NodeNameToVictims":null,"NodeNameToMetaVictims":' \
            + _encode(meta) + b"}"
    whole = b",".join(
        _encode(node) + b':{"Pods":[' + b",".join(encode_pod(p, raw) for p in pods)
        + b'],"NumPDBViolations":' + str(violations).encode() + b"}"
        for node, (pods, violations) in victims.items())
    return b'{"Pod":' + pod + b',"NodeNameToVictims":{' + whole \
        + b'},"NodeNameToMetaVictims":null}'


def decode_preemption_result(body: bytes) -> dict[str, MetaVictims | None]:
    """ExtenderPreemptionResult.NodeNameToMetaVictims (None: a node given as null)."""
    answer = _object(body)
    by_node = _get(answer, "NodeNameToMetaVictims")
    result: dict[str, MetaVictims | None] = {}
    for node, entry in _mapping(by_node or {}, "NodeNameToMetaVictims").items():
        if entry is None:
            result[node] = None
            continue
        victims = _mapping(entry, "MetaVictims")
        uids = [str(_get(_mapping(pod, "MetaPod"), "UID") or "")
                for pod in _list(_get(victims, "Pods") or [], "MetaVictims.Pods")]
        violations = _get(victims, "NumPDBViolations") or 0
        result[node] = MetaVictims(uids, int(violations))
    return result


def binding_args(name: str, namespace: str, uid: str, node: str) -> bytes:
    return _encode({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})


def decode_binding_error(body: bytes) -> str:
    """ExtenderBindingResult.Error ("" when bound)."""
    return str(_get(_object(body), "Error") or "")


# --- Go's encoding/json reading: null is the zero value, names match without case ------


def _parse(body: bytes) -> Any:
    try:
        return _decode(body)
    except msgspec.DecodeError as error:
        raise BodyError(str(error)) from None


def _object(body: bytes) -> Mapping[str, Any]:
    answer = _parse(body)
    return {} if answer is None else _mapping(answer, "answer")


def _get(mapping: Mapping[str, Any], name: str) -> Any:
    if name in mapping:
        return mapping[name]
    lowered = name.lower()
    for key, value in mapping.items():
        if key.lower() == lowered:
            return value
    return None


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BodyError(f"{what} is not a JSON object")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise BodyError(f"{what} is not a JSON array")
    return value
