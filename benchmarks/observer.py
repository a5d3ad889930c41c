"""Watch-based observer: the moment each measured pod is seen with a node.

It watches only the measured pods' namespace and decodes each event into a
three-field struct, so its own CPU cost stays small next to what it measures.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec

from benchmarks.kubeapi import ApiError, BenchApi


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    resource_version: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _Event(msgspec.Struct):
    type: str
    object: _Pod


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""


class _PodList(msgspec.Struct):
    metadata: _ListMeta
    items: list[_Pod]


_decode_event = msgspec.json.Decoder(_Event).decode
_decode_list = msgspec.json.Decoder(_PodList).decode


class BindingObserver:
    """Records time.monotonic() at which each pod in `namespace` first had a node;
    `on_bound(name)`, when given, runs at that moment (steady state replaces the pod)."""

    def __init__(self, api: BenchApi, namespace: str, expected: int,
                 on_bound: Callable[[str], None] | None = None) -> None:
        self._api = api
        self._namespace = namespace
        self.expected = expected
        self._on_bound = on_bound
        self.bound_at: dict[str, float] = {}
        self.all_bound = asyncio.Event()
        self._waiting: dict[str, asyncio.Event] = {}
        self._resource_version = ""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """List (to get a starting point), then watch in the background."""
        listed = _decode_list(await self._api.must(
            "GET", f"/api/v1/namespaces/{self._namespace}/pods"))
        now = time.monotonic()
        for pod in listed.items:
            self._saw(pod, now)
        self._resource_version = listed.metadata.resource_version
        self._task = asyncio.create_task(self._watch(), name="binding observer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                if not self._task.cancelled():
                    raise

    async def wait(self, timeout: float) -> bool:
        """True once every expected pod is bound; False when the time is up."""
        try:
            await asyncio.wait_for(self.all_bound.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def wait_pod(self, name: str, timeout: float) -> float | None:
        """When the pod `name` was first seen bound; None when the time is up."""
        if name not in self.bound_at:
            seen = self._waiting.setdefault(name, asyncio.Event())
            try:
                await asyncio.wait_for(seen.wait(), timeout)
            except TimeoutError:
                return None
            finally:
                self._waiting.pop(name, None)
        return self.bound_at[name]

    def _saw(self, pod: _Pod, now: float) -> None:
        if pod.spec.node_name and pod.metadata.name not in self.bound_at:
            self.bound_at[pod.metadata.name] = now
            if pod.metadata.name in self._waiting:
                self._waiting[pod.metadata.name].set()
            if self._on_bound is not None:
                self._on_bound(pod.metadata.name)
            if len(self.bound_at) >= self.expected:
                self.all_bound.set()

    async def _watch(self) -> None:
        path = f"/api/v1/namespaces/{self._namespace}/pods"
        while True:
            params = {"watch": "1", "resourceVersion": self._resource_version,
                      "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
            async for line in self._api.stream_lines(path, params):
                now = time.monotonic()
                event = _decode_event(line)
                if event.type == "ERROR":
                    raise ApiError(f"pod watch failed: {line[:400]!r}")
                self._resource_version = event.object.metadata.resource_version
                if event.type != "BOOKMARK":
                    self._saw(event.object, now)
