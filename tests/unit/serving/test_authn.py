"""Delegated authentication: client certificate, then TokenReview, else anonymous."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.serving.authn import ANONYMOUS, AuthenticationError, Authenticator, UserInfo
from kpysched.serving.ttl_cache import TtlCache
from tests.unit.serving.fakes import FakeReviewer

ALICE = {"authenticated": True, "user": {"username": "alice", "uid": "u1",
                                         "groups": ["devs"], "extra": {"scope": ["a"]}}}
CERT = {"subject": ((("organizationName", "system:masters"),),
                    (("commonName", "admin"),))}


@pytest.mark.parametrize(("header", "peer", "expected"), [
    pytest.param(None, None, ANONYMOUS, id="nothing-anonymous"),
    pytest.param("Basic abc", None, ANONYMOUS, id="not-bearer-anonymous"),
    pytest.param("Bearer good", None,
                 UserInfo("alice", ("devs", "system:authenticated"), "u1",
                          (("scope", ("a",)),)), id="token"),
    pytest.param("Bearer good", CERT, UserInfo("admin", ("system:masters",
                                                         "system:authenticated")),
                 id="certificate-first"),
])
async def test_authenticate(header: str | None, peer: Any, expected: UserInfo) -> None:
    authenticator = Authenticator(FakeReviewer({"good": ALICE}), cache_ttl=10)
    assert await authenticator.authenticate(header, peer) == expected


async def test_a_rejected_token_is_401_not_anonymous() -> None:
    authenticator = Authenticator(FakeReviewer(), cache_ttl=10)
    with pytest.raises(AuthenticationError, match="invalid bearer token"):
        await authenticator.authenticate("Bearer bad", None)


async def test_a_failed_review_is_401_and_not_cached() -> None:
    reviewer = FakeReviewer(error="HTTP 403: cannot create resource \"tokenreviews\"")
    authenticator = Authenticator(reviewer, cache_ttl=10)
    for _ in range(2):
        with pytest.raises(AuthenticationError, match="token review failed"):
            await authenticator.authenticate("Bearer x", None)
    assert len(reviewer.calls) == 2


async def test_without_a_review_client_tokens_are_not_looked_at() -> None:
    assert await Authenticator(None, cache_ttl=10).authenticate("Bearer x", None) == ANONYMOUS


async def test_answers_are_cached_for_the_ttl() -> None:
    now = [0.0]
    reviewer = FakeReviewer({"good": ALICE})
    authenticator = Authenticator(reviewer, cache_ttl=10, cache=TtlCache(lambda: now[0]))
    await authenticator.authenticate("Bearer good", None)
    await authenticator.authenticate("Bearer good", None)
    assert len(reviewer.calls) == 1
    now[0] = 10.5
    await authenticator.authenticate("Bearer good", None)
    assert len(reviewer.calls) == 2
    assert all("good" not in str(key) for key in authenticator._cache._entries)  # hashed
