"""Posting the Binding subresource: the one write that places a pod.

The Binder also holds the binding cycles in flight (each ends in its Binding, or
fails before it): a graceful stop lets them finish, a lost lease cancels them, since
another replica may already be scheduling.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Final

import msgspec
import structlog

from kpysched.api.client import RawApi
from kpysched.api.response import TRANSPORT_ERROR, ApiResponse
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api

log = structlog.get_logger(__name__)

# From v1.37 DefaultBinder posts the Binding through util.BindPod, which retries with
# client-go's retry.DefaultBackoff (4 tries; 10 ms, then x5, jitter 0.1) while the
# error is util.Retriable: an InternalError or ServiceUnavailable Status, or a refused
# connection. v1.36 posts once.
BIND_RETRY_RELEASE: Final = 37
_BIND_TRIES: Final = 4
_FIRST_PAUSE: Final = 0.010
_FACTOR: Final = 5.0
_JITTER: Final = 0.1
_RETRIABLE_REASONS: Final = frozenset({(500, "InternalError"), (503, "ServiceUnavailable")})


def bind_retriable(response: ApiResponse) -> bool:
    """util.Retriable for a Binding's answer (conflicts are not retried)."""
    if response.status == TRANSPORT_ERROR:
        return "refused" in response.message().lower()
    return (response.status, _reason(response)) in _RETRIABLE_REASONS


def _reason(response: ApiResponse) -> str:
    try:
        decoded = msgspec.json.decode(response.body)
    except msgspec.DecodeError:
        return ""
    reason = decoded.get("reason") if isinstance(decoded, dict) else None
    return reason if isinstance(reason, str) else ""


class Binder:
    def __init__(self, raw: RawApi, *, release: int = 36,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 rng: random.Random | None = None) -> None:
        self._raw = raw
        self._tries = _BIND_TRIES if release >= BIND_RETRY_RELEASE else 1
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._in_flight: set[asyncio.Task[None]] = set()

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        meta = pod.metadata
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        path = f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/binding"
        pause = _FIRST_PAUSE
        for tries_left in range(self._tries - 1, -1, -1):
            response = await self._raw.request("POST", path, body)
            if response.ok or not tries_left or not bind_retriable(response):
                break
            log.info("bind.retry", pod=f"{meta.namespace}/{meta.name}",
                     status=response.status, reason=response.message())
            await self._sleep(pause * (1 + self._rng.random() * _JITTER))
            pause *= _FACTOR
        if response.ok:
            return SUCCESS
        # The API server's own message, as upstream's DefaultBinder returns the error
        # (e.g. 'pods "p" not found', 'Operation cannot be fulfilled on pods/binding ...').
        return Status.error(response.message())

    # --- the binding cycles in flight ---------------------------------------------

    def track(self, task: asyncio.Task[None]) -> None:
        """Hold a binding cycle until it ends."""
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    def in_flight(self) -> int:
        return len(self._in_flight)

    def started(self, task_name: str) -> bool:
        """Whether a binding cycle of this name is still in flight."""
        return any(task.get_name() == task_name for task in self._in_flight)

    async def drain(self, timeout: float) -> None:
        """Graceful stop: let bindings in flight finish (bounded)."""
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=timeout)

    async def abort(self) -> None:
        """The lease is lost: another replica may already be scheduling, so no binding
        may write any more. Cancel them all and wait until they have stopped."""
        tasks = set(self._in_flight)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
            log.warning("bindings.aborted", count=len(tasks))
