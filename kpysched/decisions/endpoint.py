"""Where the leader serves its decisions: /debug/decisions/<namespace>/<pod> on the
secure port (authorized as /metrics), beside the aggregated API (kpysched.decisions.api)
that `kpysched explain` uses.

Earlier versions wrote the leader's serving address and pod on the Lease, and explain
sent the user's credential there. The leader now clears those annotations (a previous
version's, or planted ones) and nothing reads them: an address found in cluster data
is never sent a credential."""

from __future__ import annotations

from typing import Final

PATH_PREFIX: Final = "/debug/decisions"
# Annotations earlier versions wrote on the Lease; only ever cleared now.
ADDRESS_ANNOTATION: Final = "kpysched.io/serving-address"
POD_ANNOTATION: Final = "kpysched.io/pod"


def path(namespace: str, name: str) -> str:
    return f"{PATH_PREFIX}/{namespace}/{name}"


def cleared_lease_annotations() -> dict[str, str]:
    """Both annotations empty, which the elector writes as their removal."""
    return {ADDRESS_ANNOTATION: "", POD_ANNOTATION: ""}
