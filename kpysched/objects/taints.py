"""Taints and tolerations, with upstream's matching rules."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kpysched.objects import api

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"


def tolerates(toleration: api.Toleration, taint: api.Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    # An empty key with operator Exists tolerates every taint (of the effect).
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return False


def find_untolerated_taint(
    taints: Iterable[api.Taint], tolerations: Sequence[api.Toleration],
    effects: tuple[str, ...] = (NO_SCHEDULE, NO_EXECUTE),
) -> api.Taint | None:
    """The first taint with one of `effects` that no toleration tolerates."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
