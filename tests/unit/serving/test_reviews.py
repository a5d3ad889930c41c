"""Reviews sent on a client's behalf: rate-limited as upstream's delegation clients
(QPS 200 / burst 400) and identical ones in flight sent once. Issue 31: a client
sending a fresh token or path per request cost the API server 1,306 TokenReviews or
667 SubjectAccessReviews a second, and a burst of identical requests one review each."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kpysched.serving.authn import Authenticator
from kpysched.serving.authz import Authorizer
from kpysched.serving.delegation import ReviewError
from kpysched.serving.reviews import REVIEW_BURST, REVIEW_QPS, GatedReviewer
from tests.unit.serving.fakes import FakeReviewer

SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _review(path: str) -> dict[str, Any]:
    return {"kind": "SubjectAccessReview", "spec": {
        "user": "alice", "groups": [], "nonResourceAttributes": {"path": path, "verb": "get"}}}


class HeldReviewer(FakeReviewer):
    """Answers only once `release` is set, so reviews pile up in flight."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__({"alice /metrics get": {"allowed": True}}, error)
        self.release = asyncio.Event()

    async def create(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        await self.release.wait()
        return await super().create(path, review)


def test_upstream_s_limits_are_the_defaults_of_both_reviewers() -> None:
    assert (REVIEW_QPS, REVIEW_BURST) == (200.0, 400)
    fake = FakeReviewer()
    for gate in (Authenticator(fake, 10)._reviewer,
                 Authorizer(fake, (), 10, 10)._reviewer):
        assert isinstance(gate, GatedReviewer)
        assert (gate._bucket._rate, gate._bucket._capacity) == (200.0, 400.0)


async def test_fresh_reviews_past_the_burst_wait_for_the_rate() -> None:
    fake = FakeReviewer()
    gate = GatedReviewer(fake, qps=0.001, burst=5)  # one token per ~17 minutes
    sent = [asyncio.ensure_future(gate.create(SAR, _review(f"/metrics/{index}")))
            for index in range(8)]
    await asyncio.sleep(0.1)
    assert len(fake.calls) == 5  # the burst went; the rest wait for tokens
    assert sum(task.done() for task in sent) == 5
    for task in sent:
        task.cancel()
    await asyncio.gather(*sent, return_exceptions=True)


async def test_identical_reviews_in_flight_are_sent_once() -> None:
    held = HeldReviewer()
    gate = GatedReviewer(held)
    waiting = [asyncio.ensure_future(gate.create(SAR, _review("/metrics")))
               for _ in range(50)]
    other = asyncio.ensure_future(gate.create(SAR, _review("/debug/cache")))
    await asyncio.sleep(0)
    assert gate.in_flight == 2
    held.release.set()
    answers = await asyncio.gather(*waiting)
    assert answers == [{"allowed": True}] * 50
    assert await other == {"allowed": False}
    assert len(held.calls) == 2
    assert gate.in_flight == 0
    await gate.create(SAR, _review("/metrics"))  # once landed, the next is sent anew
    assert len(held.calls) == 3


async def test_a_caller_going_away_leaves_the_review_to_the_others() -> None:
    held = HeldReviewer()
    gate = GatedReviewer(held)
    first = asyncio.ensure_future(gate.create(SAR, _review("/metrics")))
    second = asyncio.ensure_future(gate.create(SAR, _review("/metrics")))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    held.release.set()
    assert await second == {"allowed": True}
    assert first.cancelled()


async def test_a_failed_review_fails_every_waiter_and_is_not_remembered() -> None:
    held = HeldReviewer(error="HTTP 500: boom")
    gate = GatedReviewer(held)
    waiting = [asyncio.ensure_future(gate.create(SAR, _review("/metrics"))) for _ in range(3)]
    await asyncio.sleep(0)
    held.release.set()
    for task in waiting:
        with pytest.raises(ReviewError, match="boom"):
            await task
    held.error = None
    assert await gate.create(SAR, _review("/metrics")) == {"allowed": True}
    assert len(held.calls) == 2


async def test_a_burst_of_one_fresh_token_sends_one_token_review() -> None:
    held = HeldReviewer()
    authenticator = Authenticator(held, cache_ttl=10)
    attempts = [asyncio.ensure_future(authenticator.authenticate("Bearer fresh", None))
                for _ in range(20)]
    await asyncio.sleep(0)
    held.release.set()
    results = await asyncio.gather(*attempts, return_exceptions=True)
    assert all(isinstance(result, Exception) for result in results)  # invalid token: 401
    assert len(held.calls) == 1
