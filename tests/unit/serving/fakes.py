"""A stand-in for the API server's review endpoints: answers from a table, counts calls."""

from __future__ import annotations

from typing import Any

from kpysched.serving.delegation import ReviewError


class FakeReviewer:
    def __init__(self, answers: dict[str, Any] | None = None,
                 error: str | None = None) -> None:
        self.answers = answers or {}  # token or "user path verb" -> status
        self.error = error
        self.calls: list[dict[str, Any]] = []

    async def create(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(review)
        if self.error is not None:
            raise ReviewError(self.error)
        spec = review["spec"]
        if review["kind"] == "TokenReview":
            return dict(self.answers.get(spec["token"], {"authenticated": False}))
        attributes = spec["nonResourceAttributes"]
        key = f"{spec['user']} {attributes['path']} {attributes['verb']}"
        return dict(self.answers.get(key, {"allowed": False}))

    async def get(self, path: str) -> dict[str, Any]:
        raise ReviewError("HTTP 403: forbidden")
