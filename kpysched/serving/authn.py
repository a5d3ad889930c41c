"""Who is asking: delegated authentication as kube-scheduler's secure port does it.

In order: a client certificate verified against the client CA (user = its CommonName,
groups = its Organizations), then a bearer token checked by a TokenReview
(authentication.k8s.io/v1), else the anonymous user. A token the API server rejects,
or a review that fails, is a 401: it never falls back to anonymous. Without a
TokenReview client a bearer token is not looked at, so the request is anonymous, as
upstream's optional delegation does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

import structlog

from kpysched.serving.delegation import ReviewError
from kpysched.serving.reviews import ReviewClient, gated
from kpysched.serving.ttl_cache import TtlCache

log = structlog.get_logger(__name__)

TOKEN_REVIEWS_PATH: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
AUTHENTICATED_GROUP: Final = "system:authenticated"


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


ANONYMOUS: Final = UserInfo("system:anonymous", ("system:unauthenticated",))


class AuthenticationError(Exception):
    """The request claimed an identity that could not be confirmed (HTTP 401)."""


@dataclass(frozen=True, slots=True)
class _TokenResult:
    user: UserInfo | None  # None: the API server says the token is not valid


class Authenticator:
    def __init__(self, reviewer: ReviewClient | None, cache_ttl: float,
                 cache: TtlCache[str, _TokenResult] | None = None) -> None:
        self._reviewer = gated(reviewer)  # QPS 200 / burst 400, singleflight
        self._ttl = cache_ttl
        self._cache: TtlCache[str, _TokenResult] = cache or TtlCache()

    async def authenticate(self, authorization: str | None,
                           peer_certificate: Any) -> UserInfo:
        """`authorization` is the Authorization header; `peer_certificate` what
        ssl.SSLSocket.getpeercert() returned (already verified against the client CA)."""
        from_certificate = user_from_certificate(peer_certificate)
        if from_certificate is not None:
            return from_certificate
        token = _bearer_token(authorization)
        if token is None or self._reviewer is None:
            return ANONYMOUS
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is None:
            cached = await self._review(self._reviewer, token)
            self._cache.put(key, cached, self._ttl)
        if cached.user is None:
            raise AuthenticationError("invalid bearer token")
        return cached.user

    async def _review(self, reviewer: ReviewClient, token: str) -> _TokenResult:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": token}}
        try:
            status = await reviewer.create(TOKEN_REVIEWS_PATH, review)
        except ReviewError as error:
            # Not cached: the next request tries again.
            log.error("authn.token_review_failed", reason=str(error))
            raise AuthenticationError(f"token review failed: {error}") from None
        if not status.get("authenticated"):
            return _TokenResult(None)
        user = status.get("user") or {}
        return _TokenResult(_with_authenticated(UserInfo(
            name=str(user.get("username", "")),
            groups=tuple(str(g) for g in user.get("groups") or ()),
            uid=str(user.get("uid", "")),
            extra=tuple(sorted((str(k), tuple(str(x) for x in v))
                               for k, v in (user.get("extra") or {}).items())),
        )))


def _bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def user_from_certificate(peer_certificate: Any) -> UserInfo | None:
    """User and groups from a verified client certificate's subject, as upstream's
    x509 authenticator maps them (CommonName, Organizations)."""
    if not isinstance(peer_certificate, dict) or not peer_certificate.get("subject"):
        return None
    common_name = ""
    organizations: list[str] = []
    for relative_name in peer_certificate["subject"]:
        for attribute, value in relative_name:
            if attribute == "commonName":
                common_name = value
            elif attribute == "organizationName":
                organizations.append(value)
    if not common_name:
        return None
    return _with_authenticated(UserInfo(common_name, tuple(organizations)))


def _with_authenticated(user: UserInfo) -> UserInfo:
    if AUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, (*user.groups, AUTHENTICATED_GROUP), user.uid, user.extra)

