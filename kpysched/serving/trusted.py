"""What the front process (kpysched.serving.front) tells the scheduler process about a
request it has authenticated and authorized, in headers on the backend's Unix socket.

The backend believes these headers without checking anything: only a process running
as the scheduler's own user can connect to the socket, because it lives in a
directory created 0700 by the scheduler (kpysched.serving.front_process). Those
directory permissions are the whole of the trust; the front strips these headers from
every request it receives from the network, so a client cannot send them through."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from kpysched.serving.authn import UserInfo

# Who the front authenticated: JSON of UserInfo, or `null` when the secure port has
# no authentication configured (every reason readable, as in-process).
USER_HEADER: Final = "X-Kpysched-Front-User"
# The failed health checks whose reasons the user may read, comma separated: the
# front's answer to READABLE_ASKED. Absent: not asked yet.
READABLE_HEADER: Final = "X-Kpysched-Front-Readable-Reasons"
# The backend's question, on a health response: may this user read the reasons of
# these failed checks (comma separated)? The front asks its authorizer and repeats the
# request with READABLE_HEADER. The question is asked only when a check fails, so a
# healthy probe costs no SubjectAccessReview, as in-process.
READABLE_ASKED: Final = "X-Kpysched-Authorize-Reasons"
HEADERS: Final = (USER_HEADER, READABLE_HEADER, READABLE_ASKED)


class UntrustedHeaderError(ValueError):
    """A header the front would never have sent."""


def encode_user(user: UserInfo | None) -> str:
    if user is None:
        return "null"
    return json.dumps({"name": user.name, "groups": list(user.groups), "uid": user.uid,
                       "extra": {key: list(values) for key, values in user.extra}},
                      separators=(",", ":"))


def decode_user(value: str) -> UserInfo | None:
    try:
        raw = json.loads(value)
        if raw is None:
            return None
        extra = raw.get("extra", {})
        return UserInfo(str(raw["name"]), tuple(str(g) for g in raw.get("groups", ())),
                        str(raw.get("uid", "")),
                        tuple((str(k), tuple(str(v) for v in vs)) for k, vs in extra.items()))
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise UntrustedHeaderError(f"{USER_HEADER}: {error}") from None


def encode_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))


def decode_names(value: str) -> set[str]:
    return {name for name in value.split(",") if name}
