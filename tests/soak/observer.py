"""The invariant checker: its own watch on pods and events, apart from any scheduler.

It remembers every pod of the soak namespace (which scheduler, when created or
ungated, when first bound and where) and every Scheduled and FailedScheduling event,
and checks continuously:
- a pod's nodeName, once set, never changes (a moved or twice-bound pod);
- no pod gets two Scheduled events (two successful bindings);
- a kpysched pod pending longer than twice the maximum backoff, outside a fault's
  recovery window, has had a FailedScheduling event;
- no node's requests exceed its allocatable, except when kube-scheduler's and
  kpysched's bindings raced (both within RACE_WINDOW_SECONDS, before either
  scheduler's informer could show it the other's pod).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

from kpysched.objects.quantity import milli_value, value
from tests.soak.churn import KIND_LABEL, KPYSCHED, NAMESPACE

# kube-scheduler's podMaxBackoffSeconds default: a pod is retried at least this often
# until it is found unschedulable.
MAX_BACKOFF_SECONDS: Final = 10.0
# Two schedulers' bindings this close together could not see each other: the
# informer latency under load on this machine (measured: well under a second).
RACE_WINDOW_SECONDS: Final = 2.0
WATCH_TIMEOUT_SECONDS: Final = 300
# The API server sends a bookmark about every minute on a quiet watch.
WATCH_PROGRESS_SECONDS: Final = 90.0


@dataclass
class PodRecord:
    name: str
    uid: str
    scheduler: str
    kind: str
    cpu_milli: int
    memory: int
    seen_at: float
    released_at: float | None  # when it had no scheduling gate (None while gated)
    node: str = ""
    bound_at: float | None = None
    deleted: bool = False
    # Succeeded or Failed (a Job's pod): it holds no room on its node any more.
    finished: bool = False


@dataclass
class Violation:
    what: str
    detail: str
    at: float = field(default_factory=time.monotonic)


@dataclass
class NodeRecord:
    cpu_milli: int
    memory: int
    pods: int


def _requests(pod: dict[str, Any]) -> tuple[int, int]:
    cpu = memory = 0
    for container in pod["spec"].get("containers", ()):
        requests = container.get("resources", {}).get("requests", {})
        cpu += milli_value(requests.get("cpu", "0"))
        memory += value(requests.get("memory", "0"))
    return cpu, memory


class Observer:
    def __init__(self) -> None:
        self.pods: dict[str, PodRecord] = {}  # by uid
        self._by_name: dict[str, PodRecord] = {}
        self.scheduled_events: dict[str, int] = {}  # pod uid -> Scheduled events
        self._scheduled: dict[str, dict[str, int]] = {}  # pod uid -> event name -> count
        self.failed_events: dict[str, float] = {}  # pod uid -> last FailedScheduling seen
        self.nodes: dict[str, NodeRecord] = {}
        self.violations: list[Violation] = []
        self.overcommits: list[dict[str, Any]] = []
        self._overcommitted: dict[str, frozenset[str]] = {}
        self.late_pending: set[str] = set()
        self.watch_restarts = 0
        # The last moment a fault ended: pending-time checks give it a recovery window.
        self.quiet_since = time.monotonic()

    # --- what churn and the report ask ----------------------------------------------

    def bound_at(self, name: str) -> float | None:
        record = self._by_name.get(name)
        return record.bound_at if record is not None else None

    def live_pods(self) -> int:
        return sum(1 for r in self.pods.values() if not r.deleted and not r.finished)

    def pending_never_fit(self) -> int:
        return sum(1 for r in self.pods.values()
                   if not r.deleted and r.kind == "never-fit" and not r.node)

    def pending(self, scheduler: str = KPYSCHED) -> list[PodRecord]:
        return [r for r in self.pods.values()
                if not r.deleted and not r.node and r.scheduler == scheduler]

    # --- watches ---------------------------------------------------------------------

    async def run(self, api: client.ApiClient, stop: asyncio.Event) -> None:
        core, events = client.CoreV1Api(api), client.EventsV1Api(api)
        async with asyncio.TaskGroup() as group:
            group.create_task(self._follow("pods", core.list_namespaced_pod,
                                           self._on_pod, stop))
            group.create_task(self._follow("nodes", core.list_node, self._on_node, stop))
            group.create_task(self._follow("events", events.list_namespaced_event,
                                           self._on_event, stop))
            group.create_task(self._check_forever(stop))

    async def _follow(self, what: str, lister: Callable[..., Any],
                      handle: Callable[[str, dict[str, Any]], None],
                      stop: asyncio.Event) -> None:
        """List, then watch from the list's resourceVersion; list again on 410 or
        when the API server goes away (a fault), until `stop`."""
        namespaced = what != "nodes"
        args: dict[str, Any] = {"namespace": NAMESPACE} if namespaced else {}
        while not stop.is_set():
            try:
                listed = await lister(**args, _preload_content=False)
                body = json.loads(await listed.read())
                self._forget_missing(what, {i["metadata"]["uid"] for i in body["items"]})
                for item in body["items"]:
                    handle("ADDED", item)
                self._listed(what)
                version = body["metadata"]["resourceVersion"]
                async for kind, item in self._watch(lister, args, version, stop):
                    handle(kind, item)
            except (TimeoutError, ApiException, OSError, ValueError, aiohttp.ClientError):
                pass  # the API server went away or the watch expired: list again
            self.watch_restarts += 1
            if not stop.is_set():
                await asyncio.sleep(1)

    def _forget_missing(self, what: str, listed: set[str]) -> None:
        """After a watch gap, what the new list lacks was deleted meanwhile."""
        if what == "pods":
            for record in self.pods.values():
                if record.uid not in listed:
                    record.deleted = True
        elif what == "nodes":
            self.nodes.clear()

    def _listed(self, what: str) -> None:
        """Every item of a fresh list has been handled (a hook for checks that must not
        judge the half-applied list)."""

    async def _watch(self, lister: Callable[..., Any], args: dict[str, Any], version: str,
                     stop: asyncio.Event) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        while not stop.is_set():
            response = await lister(**args, watch=True, resource_version=version,
                                    allow_watch_bookmarks=True,
                                    timeout_seconds=WATCH_TIMEOUT_SECONDS,
                                    _preload_content=False)
            async with response:
                while True:
                    # A watch silent past the API server's bookmark interval is dead
                    # (seen once in a 30-minute soak): list again, as kpysched does.
                    try:
                        line = await asyncio.wait_for(response.content.readline(),
                                                      WATCH_PROGRESS_SECONDS)
                    except TimeoutError:
                        return
                    if not line:
                        break  # the server ended the watch: watch on from `version`
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        return  # 410 Gone and the like: list again
                    version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        yield event["type"], event["object"]
                    if stop.is_set():
                        return

    # --- what each event means ------------------------------------------------------------

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        uid, now = meta["uid"], time.monotonic()
        record = self.pods.get(uid)
        if record is None:
            cpu, memory = _requests(pod)
            gated = bool(spec.get("schedulingGates"))
            record = PodRecord(meta["name"], uid, spec.get("schedulerName", ""),
                               meta.get("labels", {}).get(KIND_LABEL, ""), cpu, memory,
                               now, None if gated else now)
            self.pods[uid] = record
            self._by_name[record.name] = record
        if record.released_at is None and not spec.get("schedulingGates"):
            record.released_at = now
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            record.finished = True
        node = spec.get("nodeName") or ""
        if node and not record.node:
            record.node, record.bound_at = node, now
            self._check_node(node)
        elif node != record.node and record.node:
            self.violations.append(Violation(
                "node-changed", f"{record.name} moved from {record.node} to {node or '(none)'}"))
        if kind == "DELETED":
            record.deleted = True

    def _on_node(self, kind: str, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self.nodes.pop(name, None)
            return
        allocatable = node.get("status", {}).get("allocatable", {})
        self.nodes[name] = NodeRecord(milli_value(allocatable.get("cpu", "0")),
                                      value(allocatable.get("memory", "0")),
                                      int(allocatable.get("pods", "0")))

    def _on_event(self, _: str, event: dict[str, Any]) -> None:
        uid = event.get("regarding", {}).get("uid", "")
        if event.get("reason") == "Scheduled":
            # A repeat of the same event becomes a series on the same object.
            count = int((event.get("series") or {}).get("count") or 1)
            per_event = self._scheduled.setdefault(uid, {})
            per_event[event["metadata"]["name"]] = count
            total = sum(per_event.values())
            if total > 1 and self.scheduled_events.get(uid, 0) <= 1:
                self.violations.append(Violation(
                    "bound-twice", f"{event['regarding'].get('name')}: {total} Scheduled "
                    "events"))
            self.scheduled_events[uid] = total
        elif event.get("reason") == "FailedScheduling":
            self.failed_events[uid] = time.monotonic()

    # --- continuous checks -----------------------------------------------------------------

    async def _check_forever(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(2)
            self.check_pending()

    def check_pending(self) -> None:
        """kpysched pods pending over twice the max backoff with no FailedScheduling event.
        Counted once each; a fault's recovery window does not count."""
        now = time.monotonic()
        limit = 2 * MAX_BACKOFF_SECONDS
        for record in self.pending():
            if record.released_at is None or record.uid in self.late_pending:
                continue
            since = max(record.released_at, self.quiet_since)
            if now - since > limit and record.uid not in self.failed_events:
                self.late_pending.add(record.uid)

    def _check_node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return  # bound to a node already deleted: pod GC's business
        on_node = [r for r in self.pods.values()
                   if r.node == name and not r.deleted and not r.finished]
        cpu = sum(r.cpu_milli for r in on_node)
        memory = sum(r.memory for r in on_node)
        if cpu <= node.cpu_milli and memory <= node.memory and len(on_node) <= node.pods:
            self._overcommitted.pop(name, None)
            return
        members = frozenset(r.uid for r in on_node)
        if self._overcommitted.get(name) == members:
            return
        self._overcommitted[name] = members
        newest = max(on_node, key=lambda r: r.bound_at or 0.0)
        rivals = [r for r in on_node if r.scheduler != newest.scheduler and r.bound_at
                  and abs((newest.bound_at or 0.0) - r.bound_at) <= RACE_WINDOW_SECONDS]
        verdict = ("race" if rivals else
                   "kpysched" if newest.scheduler == KPYSCHED else "kube-scheduler")
        self.overcommits.append({
            "node": name, "cause": verdict, "newest": newest.name,
            "newestScheduler": newest.scheduler,
            "gapSeconds": round(min((abs((newest.bound_at or 0) - (r.bound_at or 0))
                                     for r in rivals), default=-1.0), 3),
            "cpuMilli": cpu, "allocatableCpuMilli": node.cpu_milli})
        if verdict == "kpysched":
            self.violations.append(Violation(
                "overcommit", f"{name}: kpysched placed {newest.name} on a full node "
                f"({cpu}m of {node.cpu_milli}m CPU, {len(on_node)} pods)"))
