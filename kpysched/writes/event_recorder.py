"""What users see in `kubectl get events`: events.k8s.io/v1 Events, written as
kube-scheduler's event broadcaster (client-go tools/events, v1.36) writes them.

- reportingController is the profile's scheduler name, reportingInstance
  `<controller>-<hostname>`, with the Scheduled / FailedScheduling / Preempted
  reasons and notes upstream uses.
- Isomorphic events (same type, action, reason, reporting controller and instance,
  regarding and related object; the note does not count) fold into one Event: the
  second occurrence PATCHes a series (count 2, lastObservedTime), later ones only
  count in memory. The count is written again every 30 minutes, and a final time
  when the series ends after 6 minutes of quiet, as upstream.
- Writes wait in a bounded queue (1000 entries, as upstream's broadcaster), served by
  writer tasks started as events queue up (at most WRITERS, leaving when the queue is
  empty), so a storm of failures never piles up tasks or memory; when the queue is
  full the event is dropped and counted (kpysched_events_dropped_total).
- Transport errors and 5xx answers are retried (12 tries, about 10 s apart, as
  upstream); any other rejection abandons the event. A retry waits on a timer, not in
  a writer: upstream writes each event in a goroutine of its own, so one event waiting
  to be retried never holds back the others (with writers asleep between tries, an
  API server that failed a few writes let the queue fill and drop fresh events).
The scheduling loop never waits on any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import random
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import structlog

from kpysched.api.client import RawApi
from kpysched.api.response import TRANSPORT_ERROR
from kpysched.api.times import micro_time
from kpysched.objects import api

log = structlog.get_logger(__name__)

SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"

# client-go tools/events: maxQueuedEvents, maxTriesPerEvent, finishTime, refreshTime,
# and the recorder's default sleep between tries.
MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
FINISH_SECONDS = 6 * 60.0
REFRESH_SECONDS = 30 * 60.0
RETRY_SLEEP_SECONDS = 10.0
# Writers sharing the event client's rate limiter (which bounds the request rate, as
# upstream's goroutine per event is bounded only by it): enough that slow answers
# from a loaded API server do not hold the rest back. With 16, SchedulingBasic at 5000
# nodes bound ~950 pods/s while event writes took ~100 ms each, and 72-86 % of the
# Scheduled events were dropped from a full queue; kube-scheduler wrote every one.
# The events' own connection lane (app.py) bounds the requests in flight. Writers are
# started as events queue up and leave when it is empty (a standby holds none: the
# soak counts a jump of 128 idle tasks at fail-over as a leak).
WRITERS = 128
NOTE_LENGTH_LIMIT = 1024


class DropCounter(Protocol):
    """Where dropped events are counted (SchedulerMetrics.event_dropped)."""

    def event_dropped(self, reason: str) -> None: ...


@dataclass(slots=True)
class _Recorded:
    """One Event object as the server has (or will have) it, and its series count.

    Every event is kept six minutes for its series, as upstream keeps it: the body is
    kept as the JSON it is sent as, which is a third of the dicts' size (10000
    Scheduled events as dicts were ~25 MB of a 5000-node run's peak RSS)."""

    encoded: bytes  # the Event's JSON, as created
    namespace: str
    name: str
    reason: str
    first_seen: float  # monotonic
    count: int = 1
    last_observed: str = ""  # MicroTime of the latest occurrence
    last_observed_at: float = 0.0  # monotonic
    created: bool = False
    written_count: int = 0  # the count the server last got
    tries: int = 0  # failed tries of the write in progress


def _event_key(body: dict[str, Any]) -> bytes:
    """Upstream's getKey: what makes two events one series (not the note), as compact
    bytes (equal keys encode equally: the object references are sorted)."""
    related = body.get("related")
    return msgspec.json.encode(
        (body["type"], body["action"], body["reason"], body["reportingController"],
         body["reportingInstance"], sorted(body["regarding"].items()),
         sorted(related.items()) if related else None))


class EventRecorder:
    def __init__(self, raw: RawApi, instance: str | None = None, *,
                 max_queued: int = MAX_QUEUED_EVENTS, writers: int = WRITERS,
                 retry_sleep: float = RETRY_SLEEP_SECONDS,
                 finish_seconds: float = FINISH_SECONDS,
                 refresh_seconds: float = REFRESH_SECONDS,
                 clock: Callable[[], float] = time.monotonic,
                 drops: DropCounter | None = None) -> None:
        self._raw = raw
        self._host = instance or socket.gethostname()
        self._max_queued = max_queued
        self._writers = writers
        self._retry_sleep = retry_sleep
        self._finish_seconds = finish_seconds
        self._refresh_seconds = refresh_seconds
        self._clock = clock
        self._cache: dict[bytes, _Recorded] = {}
        self._queue: asyncio.Queue[_Recorded] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._aborted = False
        self.metrics = drops  # where dropped events are counted
        self.dropped = 0
        self._retrying = 0  # writes waiting on their retry timer
        self._writing = 0  # writes a writer has taken off the queue and not finished
        self._writers_running = 0  # writer tasks alive (busy or about to look)

    # --- what callers record ------------------------------------------------------

    def event(self, pod: api.Pod, controller: str, type_: str, reason: str, action: str,
              note: str, related: api.Pod | Mapping[str, str] | None = None) -> None:
        """`related`: a pod, or any object's reference (a PodGroup's, say)."""
        body = self._body("Pod", "v1", pod.metadata, controller, type_, reason, action, note)
        if isinstance(related, api.Pod):
            body["related"] = {"kind": "Pod", "apiVersion": "v1",
                               "namespace": related.metadata.namespace,
                               "name": related.metadata.name, "uid": related.metadata.uid}
        elif related is not None:
            body["related"] = dict(related)
        self.record(body)

    def object_event(self, kind: str, api_version: str, meta: api.ObjectMeta,
                     controller: str, type_: str, reason: str, action: str,
                     note: str) -> None:
        """An event about any namespaced object (a PodGroup, say), not a pod."""
        self.record(self._body(kind, api_version, meta, controller, type_, reason, action,
                               note))

    def _body(self, kind: str, api_version: str, meta: api.ObjectMeta, controller: str,
              type_: str, reason: str, action: str, note: str) -> dict[str, Any]:
        now = dt.datetime.now(dt.UTC)
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.name}.{int(now.timestamp() * 1e9):x}",
                         "namespace": meta.namespace},
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self._host}",
            "action": action,
            "reason": reason,
            "regarding": {"kind": kind, "apiVersion": api_version,
                          "namespace": meta.namespace, "name": meta.name, "uid": meta.uid,
                          "resourceVersion": meta.resource_version},
            "note": _truncate(note),
            "type": type_,
        }

    def scheduled(self, pod: api.Pod, controller: str, node_name: str) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        self.event(pod, controller, "Normal", SCHEDULED, "Binding",
                   f"Successfully assigned {key} to {node_name}")

    def failed_scheduling(self, pod: api.Pod, controller: str, message: str) -> None:
        self.event(pod, controller, "Warning", FAILED_SCHEDULING, "Scheduling", message)

    def record(self, body: dict[str, Any]) -> None:
        """Fold `body` into its series or queue it as a new Event."""
        if self._aborted:
            return
        key = _event_key(body)
        now = self._clock()
        known = self._cache.get(key)
        if known is None:
            metadata = body["metadata"]
            entry = _Recorded(msgspec.json.encode(body), metadata["namespace"],
                              metadata["name"], body["reason"], first_seen=now)
            self._cache[key] = entry
            self._enqueue(entry)
            return
        known.count += 1
        known.last_observed = micro_time()
        known.last_observed_at = now
        if known.count == 2:
            # Upstream writes the series as soon as it starts; later counts wait.
            self._enqueue(known)

    # --- queue and writers -----------------------------------------------------------

    @property
    def queued(self) -> int:
        return self._queue.qsize() if self._queue is not None else 0

    @property
    def in_flight(self) -> int:
        """Events recorded and not yet settled: queued, being written, or waiting to
        retry. Zero means the API server has (or has refused) everything recorded."""
        return self.queued + self._writing + self._retrying

    def _enqueue(self, entry: _Recorded) -> None:
        queue = self._start()
        try:
            queue.put_nowait(entry)
        except asyncio.QueueFull:
            self.dropped += 1
            if self.metrics is not None:
                self.metrics.event_dropped("queue_full")
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event.dropped", reason=entry.reason,
                            dropped_total=self.dropped, queue_limit=self._max_queued)
            return
        # Like upstream's goroutine per event, a writer starts for a queued event when
        # no idle one will take it, up to the limit; writers leave once the queue is
        # empty, so a quiet or standby recorder holds no writer task.
        idle = self._writers_running - self._writing
        if idle < queue.qsize() and self._writers_running < self._writers:
            self._writers_running += 1
            self._spawn(asyncio.get_running_loop(), self._write_while_queued(), "event writer")

    def _start(self) -> asyncio.Queue[_Recorded]:
        """The queue, and the series upkeep, made on first use (on the running loop)."""
        if self._queue is None:
            self._queue = asyncio.Queue(self._max_queued)
            self._spawn(asyncio.get_running_loop(), self._maintain_series(),
                        "event series upkeep")
        return self._queue

    def _spawn(self, loop: asyncio.AbstractEventLoop, coroutine: Any, name: str) -> None:
        task = loop.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write_while_queued(self) -> None:
        assert self._queue is not None
        queue = self._queue
        try:
            while not queue.empty():
                entry = queue.get_nowait()
                self._writing += 1
                try:
                    await self._try_write(entry)
                except Exception:
                    log.exception("event.write_crashed", reason=entry.reason)
                finally:
                    self._writing -= 1
                    queue.task_done()
        finally:
            self._writers_running -= 1

    async def _try_write(self, entry: _Recorded) -> None:
        """One try; a retryable failure comes back through the queue after a pause."""
        status, message = await self._write(entry)
        if 200 <= status < 300:
            entry.tries = 0
            return
        entry.tries += 1
        retry = status == TRANSPORT_ERROR or status >= 500
        if not retry or entry.tries == MAX_TRIES_PER_EVENT:
            log.warning("event.write_failed", status=status, reason=entry.reason,
                        message=message, tries=entry.tries)
            entry.tries = 0
            return
        self._retrying += 1
        asyncio.get_running_loop().call_later(
            self._retry_sleep * (1 + 0.25 * random.random()), self._retry, entry)

    def _retry(self, entry: _Recorded) -> None:
        self._retrying -= 1
        if not self._aborted:
            self._enqueue(entry)

    async def _write(self, entry: _Recorded) -> tuple[int, str]:
        """Create the Event, or PATCH its series (creating it if it went away)."""
        collection = f"/apis/events.k8s.io/v1/namespaces/{entry.namespace}/events"
        count = entry.count
        series = {"count": count, "lastObservedTime": entry.last_observed}
        if entry.created:
            if count == entry.written_count:
                return 200, ""  # queued twice meanwhile: the server has this count
            response = await self._raw.request(
                "PATCH", f"{collection}/{entry.name}", {"series": series},
                content_type="application/strategic-merge-patch+json")
            if response.status != 404:
                if response.ok:
                    entry.written_count = count
                return response.status, response.message()
        # Not written yet (or deleted since, e.g. by the events TTL): create it, with
        # the series if it already repeated while it waited.
        body: bytes | dict[str, Any] = entry.encoded  # sent as it is
        if count > 1:
            body = {**msgspec.json.decode(entry.encoded), "series": series}
        response = await self._raw.request("POST", collection, body)
        if response.ok or response.status == 409:
            # 409: the same Event twice, already there (upstream drops it too).
            entry.created = True
            entry.written_count = count
            return 200, ""
        return response.status, response.message()

    async def _maintain_series(self) -> None:
        """Upstream's finishSeries (every 6 min) and refreshExistingEventSeries (every
        30 min): write the last count of ended series, forget ended events."""
        next_refresh = self._clock() + self._refresh_seconds
        while True:
            await asyncio.sleep(self._finish_seconds)
            now = self._clock()
            refresh = now >= next_refresh
            if refresh:
                next_refresh = now + self._refresh_seconds
            for key, entry in list(self._cache.items()):
                if entry.count > 1:
                    ended = entry.last_observed_at < now - self._finish_seconds
                    if (ended or refresh) and entry.count != entry.written_count:
                        self._enqueue(entry)
                    if ended:
                        del self._cache[key]
                elif entry.first_seen < now - self._finish_seconds:
                    del self._cache[key]

    # --- shutdown ---------------------------------------------------------------------

    async def drain(self, timeout: float) -> None:
        """Graceful stop: wait (bounded) for queued writes and their retries."""
        if self._queue is None or self._aborted:
            return
        queue = self._queue

        async def settled() -> None:
            while True:
                await queue.join()
                if self._retrying == 0:
                    return
                await asyncio.sleep(min(self._retry_sleep, 0.1))

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(settled(), timeout)

    async def abort(self) -> None:
        """The lease is lost: write nothing more, drop what is queued."""
        self._aborted = True
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)


def _truncate(note: str) -> str:
    """Upstream's truncateMessage: at most 1024 characters, ending ' ...' when cut."""
    if len(note) <= NOTE_LENGTH_LIMIT:
        return note
    suffix = " ..."
    return note[:NOTE_LENGTH_LIMIT - len(suffix)] + suffix
