"""The ceiling: a binder that does no real scheduling, to measure how fast any
out-of-process scheduler could go on this machine and API server.

It writes what a scheduler writes per pod (a Binding and a Scheduled event; a
FailedScheduling event for a pod that fits nowhere; DELETEs of victims when a pod
only fits by preempting) through kpysched's own write client (RawApi, same QPS and
burst) and event recorder, and reads pods and nodes with kpysched's informers. Its "decision" is the
next node, round robin, with room for the pod's CPU, memory and pod count: no
affinity, spreading or scoring. So its throughput bounds every workload from above,
and kpysched / ceiling says how much of the remaining gap is scheduling at all.

Run as a process of its own, as the schedulers are:
    python -m benchmarks.ceiling --kubeconfig K --scheduler-name ceiling --port P
It serves /readyz (informers synced) and /metrics (scheduler_schedule_attempts_total
by result, the one series the benchmark samples).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from kpysched.api.client import RawApi, make_api_client
from kpysched.informers import node_reflector, pod_reflector
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.objects.resource_vectors import Resource
from kpysched.writes.event_recorder import EventRecorder

RETRY_SECONDS = 1.0


@dataclass(slots=True)
class Room:
    """A node's allocatable and what the pods counted on it request."""

    allocatable: Resource
    used_cpu: int = 0
    used_memory: int = 0
    pods: dict[str, PodInfo] = field(default_factory=dict)  # by uid

    def fits(self, pod: PodInfo, freed: tuple[int, int, int] = (0, 0, 0)) -> bool:
        cpu, memory, count = freed
        return (self.used_cpu - cpu + pod.requests.milli_cpu <= self.allocatable.milli_cpu
                and self.used_memory - memory + pod.requests.memory
                <= self.allocatable.memory
                and len(self.pods) - count + 1 <= self.allocatable.allowed_pod_number)

    def count(self, pod: PodInfo) -> None:
        self.pods[pod.uid] = pod
        self.used_cpu += pod.requests.milli_cpu
        self.used_memory += pod.requests.memory

    def uncount(self, uid: str) -> None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self.used_cpu -= pod.requests.milli_cpu
            self.used_memory -= pod.requests.memory


class Ceiling:
    def __init__(self, raw: RawApi, scheduler_name: str) -> None:
        self._raw = raw
        self._name = scheduler_name
        # A sibling client for events, as kpysched's app makes one (own rate limiter).
        self._events = EventRecorder(raw.sibling(lane="events"))  # as kpysched does
        self.rooms: dict[str, Room] = {}
        self._order: list[str] = []  # node names, for the round robin
        self._next = 0
        self._node_of: dict[str, str] = {}  # pod uid -> node it is counted on
        self._pending: collections.deque[PodInfo] = collections.deque()
        self._queued: set[str] = set()  # uids pending, being placed or bound
        self._unplaceable: dict[str, PodInfo] = {}  # told FailedScheduling; wait for room
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self.attempts: collections.Counter[str] = collections.Counter()

    # --- informer handlers ------------------------------------------------------------

    def on_add(self, obj: api.Pod | api.Node) -> None:
        if isinstance(obj, api.Node):
            self._set_node(obj)
            return
        self._pod(obj)

    def on_update(self, old: api.Pod | api.Node, new: api.Pod | api.Node) -> None:
        self.on_add(new)

    def on_delete(self, obj: api.Pod | api.Node) -> None:
        if isinstance(obj, api.Node):
            self.rooms.pop(obj.metadata.name, None)
            self._order = list(self.rooms)
            return
        uid = obj.metadata.uid
        self._uncount(uid)
        self._unplaceable.pop(uid, None)
        self._retry_unplaceable()

    def _set_node(self, node: api.Node) -> None:
        allocatable = Resource.from_mapping(node.status.allocatable)
        room = self.rooms.get(node.metadata.name)
        if room is None:
            self.rooms[node.metadata.name] = Room(allocatable)
            self._order.append(node.metadata.name)
            self._retry_unplaceable()
        else:
            room.allocatable = allocatable

    def _pod(self, pod: api.Pod) -> None:
        uid = pod.metadata.uid
        if pod.spec.node_name:
            if self._node_of.get(uid) != pod.spec.node_name:
                self._uncount(uid)
                self._count(PodInfo.of(pod), pod.spec.node_name)
            return
        if (pod.spec.scheduler_name == self._name and uid not in self._queued
                and pod.metadata.deletion_timestamp is None):
            self._queued.add(uid)
            self._pending.append(PodInfo.of(pod))
            self._wake.set()

    def _count(self, pod: PodInfo, node: str) -> None:
        room = self.rooms.get(node)
        if room is not None:
            room.count(pod)
            self._node_of[pod.uid] = node

    def _uncount(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is not None and (room := self.rooms.get(node)) is not None:
            room.uncount(uid)

    def _retry_unplaceable(self) -> None:
        if self._unplaceable:
            self._pending.extend(self._unplaceable.values())
            self._unplaceable.clear()
            self._wake.set()

    # --- the loop -----------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                self._place(self._pending.popleft())
                if len(self._pending) % 64 == 0:
                    # As kpysched's loop does before each decision: hand the core to a
                    # waiting thread here, where the ceiling pauses anyway, rather than
                    # in the middle of a batch (its placements take microseconds, so
                    # once per batch, not per pod).
                    os.sched_yield()
                    await asyncio.sleep(0)  # let informer events and binds in

    def _place(self, pod: PodInfo) -> None:
        node, victims = self._choose(pod)
        if node is None:
            self.attempts["unschedulable"] += 1
            self._unplaceable[pod.uid] = pod
            self._events.failed_scheduling(pod.pod, self._name,
                                           f"0/{len(self.rooms)} nodes are available.")
            return
        for victim in victims:
            self._uncount(victim.uid)
            self._spawn(self._delete(victim))
        self._count(pod, node)  # assumed, as a scheduler does before binding
        self._spawn(self._bind(pod, node))

    def _choose(self, pod: PodInfo) -> tuple[str | None, list[PodInfo]]:
        """The next node round robin with room; else the first where evicting pods of
        lower priority (lowest first) makes room."""
        total = len(self._order)
        for step in range(total):
            name = self._order[(self._next + step) % total]
            if self.rooms[name].fits(pod):
                self._next = (self._next + step + 1) % total
                return name, []
        for step in range(total):
            name = self._order[(self._next + step) % total]
            victims = _victims(self.rooms[name], pod)
            if victims is not None:
                self._next = (self._next + step + 1) % total
                return name, victims
        return None, []

    def _spawn(self, coroutine: object) -> None:
        task = asyncio.ensure_future(coroutine)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- writes -------------------------------------------------------------------------

    async def _bind(self, pod: PodInfo, node: str) -> None:
        namespace, name = pod.namespace, pod.name
        response = await self._raw.request(
            "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
            {"apiVersion": "v1", "kind": "Binding",
             "metadata": {"name": name, "namespace": namespace, "uid": pod.uid},
             "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        if response.ok:
            self.attempts["scheduled"] += 1
            self._events.scheduled(pod.pod, self._name, node)
            self._queued.discard(pod.uid)
            return
        self.attempts["error"] += 1
        self._uncount(pod.uid)
        if response.status == 404:
            self._queued.discard(pod.uid)  # deleted meanwhile
            return
        await asyncio.sleep(RETRY_SECONDS)
        self._pending.append(pod)
        self._wake.set()

    async def _delete(self, victim: PodInfo) -> None:
        await self._raw.request(
            "DELETE", f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})

    # --- serving ------------------------------------------------------------------------

    def metrics_text(self) -> str:
        lines = ["# TYPE scheduler_schedule_attempts_total counter"]
        lines += [f'scheduler_schedule_attempts_total{{profile="{self._name}",'
                  f'result="{result}"}} {count}'
                  for result, count in sorted(self.attempts.items())]
        return "\n".join(lines) + "\n"


def _victims(room: Room, pod: PodInfo) -> list[PodInfo] | None:
    """The fewest lowest-priority pods below `pod`'s priority whose removal makes room."""
    candidates = sorted((p for p in room.pods.values() if p.priority < pod.priority),
                        key=lambda p: p.priority)
    chosen: list[PodInfo] = []
    freed = [0, 0, 0]
    for candidate in candidates:
        chosen.append(candidate)
        freed[0] += candidate.requests.milli_cpu
        freed[1] += candidate.requests.memory
        freed[2] += 1
        if room.fits(pod, (freed[0], freed[1], freed[2])):
            return chosen
    return None


async def serve(kubeconfig: Path, scheduler_name: str, qps: float, burst: int,
                port: int) -> None:
    api_client = await make_api_client(kubeconfig)
    raw = RawApi(api_client, qps, burst)
    ceiling = Ceiling(raw, scheduler_name)
    reflectors = [node_reflector(api_client, ceiling), pod_reflector(api_client, ceiling)]

    async def readyz(_: web.Request) -> web.Response:
        synced = all(reflector.has_synced for reflector in reflectors)
        return web.Response(text="ok" if synced else "informers not synced",
                             status=200 if synced else 500)

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text=ceiling.metrics_text())

    app = web.Application()
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    tasks = [asyncio.create_task(r.run()) for r in reflectors]
    tasks.append(asyncio.create_task(ceiling.run()))
    await stop.wait()
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, return_exceptions=True)
    await runner.cleanup()
    await api_client.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ceiling",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--scheduler-name", default="ceiling")
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.kubeconfig, args.scheduler_name, args.qps, args.burst, args.port))


if __name__ == "__main__":
    main()
