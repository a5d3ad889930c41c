"""May this user do this: delegated authorization as kube-scheduler's secure port does it.

In order: members of system:masters may do anything (the API server's own rule, so
asking it would only cost a round trip); paths in --authorization-always-allow-paths
are open to all (a trailing "*" matches a prefix); everything else is a
SubjectAccessReview (authorization.k8s.io/v1) with nonResourceAttributes {path, verb}.
Without a SubjectAccessReview client every other request is forbidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from kpysched.serving.authn import UserInfo
from kpysched.serving.delegation import ReviewError
from kpysched.serving.request_info import ResourceAttributes
from kpysched.serving.reviews import ReviewClient, gated
from kpysched.serving.ttl_cache import TtlCache

log = structlog.get_logger(__name__)

SUBJECT_ACCESS_REVIEWS_PATH: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
PRIVILEGED_GROUP: Final = "system:masters"
DEFAULT_ALWAYS_ALLOW_PATHS: Final = ("/healthz", "/readyz", "/livez")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class AuthorizationError(Exception):
    """The review could not be made (HTTP 500, as upstream answers then)."""


class Authorizer:
    def __init__(self, reviewer: ReviewClient | None, always_allow_paths: Sequence[str],
                 allowed_ttl: float, denied_ttl: float,
                 cache: TtlCache[tuple[object, ...], Decision] | None = None) -> None:
        self._reviewer = gated(reviewer)  # QPS 200 / burst 400, singleflight
        self._exact, self._prefixes = _compile(always_allow_paths)
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._cache: TtlCache[tuple[object, ...], Decision] = cache or TtlCache()

    def always_allowed(self, path: str) -> bool:
        trimmed = path.lstrip("/")
        return trimmed in self._exact or any(trimmed.startswith(p) for p in self._prefixes)

    async def authorize(self, user: UserInfo, path: str, verb: str,
                        resource: ResourceAttributes | None = None) -> Decision:
        """`resource`: the API resource the path names (an aggregated API's), asked
        about as such so RBAC rules on the resource, per namespace, apply."""
        if PRIVILEGED_GROUP in user.groups or self.always_allowed(path):
            return Decision(True)
        if self._reviewer is None:
            return Decision(False, "no authorization-kubeconfig: only always-allowed paths "
                                   "and system:masters are served")
        key = (user, path, verb, resource)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        decision = await self._review(self._reviewer, user, path, verb, resource)
        self._cache.put(key, decision,
                        self._allowed_ttl if decision.allowed else self._denied_ttl)
        return decision

    async def _review(self, reviewer: ReviewClient, user: UserInfo, path: str,
                      verb: str, resource: ResourceAttributes | None) -> Decision:
        spec: dict[str, object] = {"user": user.name, "groups": list(user.groups)}
        if resource is None:
            spec["nonResourceAttributes"] = {"path": path, "verb": verb}
        else:
            spec["resourceAttributes"] = resource.review()
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": spec}
        try:
            status = await reviewer.create(SUBJECT_ACCESS_REVIEWS_PATH, review)
        except ReviewError as error:
            log.error("authz.subject_access_review_failed", reason=str(error))
            raise AuthorizationError(str(error)) from None
        allowed = bool(status.get("allowed")) and not status.get("denied")
        return Decision(allowed, str(status.get("reason", "")))


def _compile(paths: Sequence[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact: set[str] = set()
    prefixes: list[str] = []
    for path in paths:
        trimmed = path.lstrip("/")
        if trimmed.endswith("*"):
            prefixes.append(trimmed[:-1])
        else:
            exact.add(trimmed)
    return frozenset(exact), tuple(prefixes)
