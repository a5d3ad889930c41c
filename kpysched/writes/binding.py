"""Posting the Binding subresource: the one write that places a pod.

The Binder also holds the binding cycles in flight (each ends in its Binding, or
fails before it): a graceful stop lets them finish, a lost lease cancels them, since
another replica may already be scheduling.
"""

from __future__ import annotations

import asyncio

import structlog

from kpysched.api.client import RawApi
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api

log = structlog.get_logger(__name__)


class Binder:
    def __init__(self, raw: RawApi) -> None:
        self._raw = raw
        self._in_flight: set[asyncio.Task[None]] = set()

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        meta = pod.metadata
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        response = await self._raw.request(
            "POST", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/binding", body)
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
