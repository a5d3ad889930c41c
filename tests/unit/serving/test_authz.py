"""Delegated authorization: system:masters, always-allowed paths, SubjectAccessReview."""

from __future__ import annotations

import pytest

from kpysched.serving.authn import ANONYMOUS, UserInfo
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, AuthorizationError, Authorizer
from kpysched.serving.ttl_cache import TtlCache
from tests.unit.serving.fakes import FakeReviewer

PROM = UserInfo("system:serviceaccount:monitoring:prometheus", ("system:authenticated",))
MASTER = UserInfo("admin", ("system:masters", "system:authenticated"))


@pytest.mark.parametrize(("user", "path", "allowed"), [
    pytest.param(ANONYMOUS, "/healthz", True, id="healthz-always"),
    pytest.param(ANONYMOUS, "/livez", True, id="livez-always"),
    pytest.param(ANONYMOUS, "/metrics", False, id="anonymous-metrics-denied"),
    pytest.param(MASTER, "/metrics", True, id="masters-without-review"),
    pytest.param(PROM, "/metrics", True, id="review-allows"),
    pytest.param(PROM, "/debug/x", False, id="review-denies"),
])
async def test_authorize(user: UserInfo, path: str, allowed: bool) -> None:
    reviewer = FakeReviewer({f"{PROM.name} /metrics get": {"allowed": True}})
    authorizer = Authorizer(reviewer, DEFAULT_ALWAYS_ALLOW_PATHS, 10, 10)
    assert (await authorizer.authorize(user, path, "get")).allowed is allowed
    if user is MASTER or path in DEFAULT_ALWAYS_ALLOW_PATHS:
        assert reviewer.calls == []


async def test_the_review_asks_about_the_non_resource_path() -> None:
    reviewer = FakeReviewer()
    await Authorizer(reviewer, (), 10, 10).authorize(PROM, "/metrics", "get")
    assert reviewer.calls == [{
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": PROM.name, "groups": ["system:authenticated"],
                 "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}]


def test_always_allow_paths_match_exactly_or_by_prefix() -> None:
    authorizer = Authorizer(None, ("/healthz", "/debug/*"), 10, 10)
    assert authorizer.always_allowed("/healthz")
    assert authorizer.always_allowed("/debug/pprof")
    assert not authorizer.always_allowed("/healthz/ping")


async def test_without_a_review_client_only_always_allowed_paths_are_served() -> None:
    decision = await Authorizer(None, DEFAULT_ALWAYS_ALLOW_PATHS, 10, 10).authorize(
        PROM, "/metrics", "get")
    assert not decision.allowed
    assert "authorization-kubeconfig" in decision.reason


async def test_a_failed_review_is_an_error() -> None:
    authorizer = Authorizer(FakeReviewer(error="HTTP 403"), (), 10, 10)
    with pytest.raises(AuthorizationError):
        await authorizer.authorize(PROM, "/metrics", "get")


async def test_allowed_and_denied_answers_have_their_own_ttl() -> None:
    now = [0.0]
    reviewer = FakeReviewer({f"{PROM.name} /metrics get": {"allowed": True}})
    authorizer = Authorizer(reviewer, (), allowed_ttl=30, denied_ttl=5,
                            cache=TtlCache(lambda: now[0]))
    for path in ("/metrics", "/other", "/metrics", "/other"):
        await authorizer.authorize(PROM, path, "get")
    assert len(reviewer.calls) == 2
    now[0] = 6.0
    await authorizer.authorize(PROM, "/metrics", "get")
    await authorizer.authorize(PROM, "/other", "get")
    assert len(reviewer.calls) == 3  # only the denied answer expired
