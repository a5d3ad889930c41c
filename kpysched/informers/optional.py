"""When an optional resource's list is refused or not served: what that means, what to do.

Only two answers make an optional resource read as empty: 403 Forbidden (RBAC grants
kpysched no list on it) and 404 Not Found (the API server does not serve it: an older
release, or the API turned off). Every other failure is a failure like any informer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from kpysched.informers.decode import ApiStatusError

FORBIDDEN = 403
NOT_FOUND = 404


@dataclass(frozen=True, slots=True)
class Unavailability:
    status: int  # 403 or 404
    reason: str  # the API server's message
    meaning: str  # what kpysched does about it
    action: str  # what the operator can do


def group_version(path: str) -> tuple[str, str]:
    """(API group, version) of a collection path: '' is the core group (/api/v1/...)."""
    parts = path.strip("/").split("/")
    if parts[0] == "apis" and len(parts) > 2:
        return parts[1], parts[2]
    return "", parts[1] if len(parts) > 1 else ""


def unavailability(error: BaseException, path: str, resource: str) -> Unavailability | None:
    """Why `resource` (listed at `path`) reads as empty, or None if `error` is another
    failure."""
    if not isinstance(error, ApiStatusError) or error.code not in (FORBIDDEN, NOT_FOUND):
        return None
    group, version = group_version(path)
    if error.code == FORBIDDEN:
        return Unavailability(
            FORBIDDEN, error.message or error.reason,
            meaning=f"kpysched may not list {resource}, so it reads them as none",
            action=(f"grant kpysched's identity list and watch on {resource} in apiGroup "
                    f"'{group}' (its ClusterRole; docs/install.md); it lists again with "
                    "backoff and uses them once granted"))
    return Unavailability(
        NOT_FOUND, error.message or error.reason,
        meaning=(f"the API server does not serve {resource} in "
                 f"{group or 'core'}/{version}, so there are none to read"),
        action=("nothing, if the cluster's release has no such API (is kpysched's "
                "release the cluster's? see --emulated-version); it lists again with "
                "backoff and uses them once served"))
