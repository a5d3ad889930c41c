"""The requests an extender instance recorded, made comparable across the two
clusters: run names back to roles, UIDs to the names of their objects, the fields
that differ by when a run happened dropped, and lists whose order upstream does not
define sorted.

Node lists come in the order the scheduler's feasible nodes had, which starts at a
rotating index; victims come per node in a map. Time stamps, resource versions and
managedFields (a log of writes with times) differ from one cluster to the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.extender.server import ExtenderServer, Request

UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# A node, namespace or other run-scoped name: its role and the run's 6-hex suffix.
RUN_NAME = re.compile(r"\b([a-z][a-z0-9]*)-[0-9a-f]{6}\b")
ENDPOINT = re.compile(r"127\.0\.0\.1:\d+")
# The service account token volume the API server adds, named with a random suffix.
TOKEN_VOLUME = re.compile(r"\bkube-api-access-[a-z0-9]{5}\b")
VOLATILE = frozenset({"resourceVersion", "creationTimestamp", "managedFields",
                      "lastTransitionTime", "lastHeartbeatTime", "lastProbeTime"})
# Each scheduler's pods name it.
SCHEDULER_NAME = "schedulerName"
Key = tuple[str, str]  # (route, verb)


def text(message: str) -> str:
    """A FailedScheduling note with the extender's address (a port per instance) out."""
    return ENDPOINT.sub("<extender>", message)


def _uids(value: Any, found: dict[str, str]) -> None:
    if isinstance(value, dict):
        metadata = value.get("metadata")
        if isinstance(metadata, dict) and "uid" in metadata and "name" in metadata:
            found.setdefault(metadata["uid"], metadata["name"])
        for item in value.values():
            _uids(item, found)
    elif isinstance(value, list):
        for item in value:
            _uids(item, found)


def _clean(value: Any, uids: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        # Keys too: victims come keyed by node name.
        return {_clean(k, uids): "<scheduler>" if k == SCHEDULER_NAME else _clean(v, uids)
                for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v, uids) for v in value]
    if isinstance(value, str):
        value = UID.sub(lambda m: f"uid-of-{uids.get(m.group(0), '?')}", value)
        value = TOKEN_VOLUME.sub("kube-api-access", RUN_NAME.sub(r"\1", value))
        return ENDPOINT.sub("<extender>", value)
    return value


def _name(obj: Any) -> str:
    return json.dumps(obj.get("metadata", {}).get("name") if isinstance(obj, dict) else obj)


def _sorted(body: Any) -> Any:
    if not isinstance(body, dict):
        return body
    if isinstance(body.get("Nodes"), dict) and body["Nodes"].get("items"):
        body["Nodes"]["items"].sort(key=_name)
    if isinstance(body.get("NodeNames"), list):
        body["NodeNames"].sort()
    for key in ("NodeNameToVictims", "NodeNameToMetaVictims"):
        for victims in (body.get(key) or {}).values():
            if victims and victims.get("Pods"):
                victims["Pods"].sort(key=lambda p: _name(p) if "metadata" in p
                                     else json.dumps(p))
    return body


def canonical(request: Request, uids: Mapping[str, str]) -> str:
    return json.dumps(_sorted(_clean(request.body, uids)), sort_keys=True)


def _namespace(request: Request) -> str | None:
    body = request.body
    if isinstance(body, dict) and isinstance(body.get("Pod"), dict):
        namespace: str | None = body["Pod"]["metadata"].get("namespace")
        return namespace
    return body.get("PodNamespace") if isinstance(body, dict) else None


def _without_pod_status(request: Request) -> Request:
    if isinstance(request.body, dict) and isinstance(request.body.get("Pod"), dict):
        pod = {k: v for k, v in request.body["Pod"].items() if k != "status"}
        return Request(request.route, request.verb, {**request.body, "Pod": pod})
    return request


@dataclass(frozen=True)
class Calls:
    """One scenario's requests to one instance: the first body per (route, verb),
    and every distinct body with the pod's status left out (retries of one attempt
    differ only there, and how many retries a run sees is a matter of timing)."""

    first: dict[Key, str]
    distinct: dict[Key, frozenset[str]]

    def keys(self) -> set[Key]:
        return set(self.first)

    def differences(self, other: Calls) -> list[str]:
        lines = []
        for key in sorted(self.keys() | other.keys()):
            mine, theirs = self.first.get(key), other.first.get(key)
            if mine != theirs:
                lines.append(f"{key} first request differs (upstream vs kpysched):")
                lines += [f"   {line}" for line in _paths(_load(mine), _load(theirs))]
            elif self.distinct.get(key) != other.distinct.get(key):
                mine_all = self.distinct.get(key, frozenset())
                theirs_all = other.distinct.get(key, frozenset())
                lines.append(f"{key}: the requests after the first differ")
                for side, extra in (("upstream", mine_all - theirs_all),
                                    ("kpysched", theirs_all - mine_all)):
                    for body in sorted(extra):
                        lines.append(f"  only {side}'s, against its first request:")
                        lines += [f"     {line}" for line in _paths(_load(mine), _load(body))]
        return lines


def _load(body: str | None) -> Any:
    return json.loads(body) if body is not None else "<no request>"


def _paths(mine: Any, theirs: Any, path: str = "", limit: int = 40) -> list[str]:
    """Where two bodies differ, as JSON paths with both values (at most `limit`)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        found: list[str] = []
        for key in sorted(mine.keys() | theirs.keys()):
            found += _paths(mine.get(key, "<absent>"), theirs.get(key, "<absent>"),
                            f"{path}.{key}", limit - len(found))
            if len(found) >= limit:
                break
        return found
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        found = []
        for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            found += _paths(a, b, f"{path}[{index}]", limit - len(found))
        return found[:limit]
    if mine == theirs:
        return []
    return [f"{path or '.'}: {json.dumps(mine)[:300]} vs {json.dumps(theirs)[:300]}"]


@dataclass
class Recorder:
    """The instances serving one scheduler, read scenario by scenario. A pod of an
    earlier scenario may still be retried while the next one starts; requests about
    a namespace seen before are not this scenario's."""

    servers: tuple[ExtenderServer, ...]
    seen: set[str] = field(default_factory=set)
    # Per server, how many requests it had when the scenario's outcome was read;
    # None until then. A pod still retried during clean-up would be sent with some
    # of its victims already deleted: those requests are not the scenario's.
    counted: list[int] | None = None

    def begin(self) -> None:
        self.counted = None
        for server in self.servers:
            server.clear()

    def decided(self) -> None:
        self.counted = [len(server.requests()) for server in self.servers]

    def _requests(self) -> list[Request]:
        counted = self.counted or [len(server.requests()) for server in self.servers]
        return [r for server, count in zip(self.servers, counted, strict=True)
                for r in server.requests()[:count]]

    def calls(self) -> Calls:
        requests = [r for r in self._requests() if _namespace(r) not in self.seen]
        self.seen.update(ns for r in requests if (ns := _namespace(r)) is not None)
        uids: dict[str, str] = {}
        for server in self.servers:
            uids.update(server.pod_names())
        for request in requests:
            _uids(request.body, uids)
        return _calls(requests, uids)


def _calls(requests: Iterable[Request], uids: Mapping[str, str]) -> Calls:
    first: dict[Key, str] = {}
    distinct: dict[Key, set[str]] = {}
    for request in requests:
        key = (request.route, request.verb)
        first.setdefault(key, canonical(request, uids))
        distinct.setdefault(key, set()).add(canonical(_without_pod_status(request), uids))
    return Calls(first, {k: frozenset(v) for k, v in distinct.items()})
