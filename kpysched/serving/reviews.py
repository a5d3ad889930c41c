"""What a TokenReview or SubjectAccessReview may cost the API server, as upstream bounds it.

k8s.io/apiserver builds the delegated authentication and authorization clients with
QPS 200 / burst 400 (pkg/server/options/authentication.go and authorization.go: "set
high qps/burst limits since this will effectively limit API server responsiveness"),
and its token cache sends one review for identical tokens in flight (singleflight in
pkg/authentication/token/cache). Here both hold for each reviewer, whichever client is
behind it: an unauthenticated client with a fresh token or path per request gets at
most 200 reviews a second sent on its behalf, and a burst of identical requests one.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, Protocol

import msgspec

from kpysched.api.client import TokenBucket

REVIEW_QPS: Final = 200.0
REVIEW_BURST: Final = 400


class ReviewClient(Protocol):
    async def create(self, path: str, review: dict[str, Any]) -> dict[str, Any]: ...

    async def get(self, path: str) -> dict[str, Any]: ...


class GatedReviewer:
    """A ReviewClient that rate-limits reviews and coalesces identical ones in flight."""

    def __init__(self, inner: ReviewClient, qps: float = REVIEW_QPS,
                 burst: int = REVIEW_BURST) -> None:
        self._inner = inner
        self._bucket = TokenBucket(qps, burst)
        self._in_flight: dict[bytes, asyncio.Future[dict[str, Any]]] = {}

    async def create(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        key = msgspec.json.encode((path, review), order="deterministic")
        shared = self._in_flight.get(key)
        if shared is None:
            # A task of its own, so a caller that goes away (client disconnect) does
            # not cancel the review the others wait for.
            shared = asyncio.ensure_future(self._send(path, review))
            self._in_flight[key] = shared
            shared.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(shared)

    async def get(self, path: str) -> dict[str, Any]:
        await self._bucket.acquire()
        return await self._inner.get(path)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def _landed(self, key: bytes, done: asyncio.Future[dict[str, Any]]) -> None:
        self._in_flight.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: every waiter may have gone, and each gets it

    async def _send(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        await self._bucket.acquire()
        return await self._inner.create(path, review)


def gated(reviewer: ReviewClient | None) -> ReviewClient | None:
    if reviewer is None or isinstance(reviewer, GatedReviewer):
        return reviewer
    return GatedReviewer(reviewer)
