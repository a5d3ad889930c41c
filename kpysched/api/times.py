"""Now, in the API server's timestamp formats.

metav1.Time is RFC 3339 to the second ("2026-01-02T03:04:05Z"); metav1.MicroTime
carries microseconds ("2026-01-02T03:04:05.123456Z"), as events.k8s.io/v1's
eventTime and a Lease's acquire/renew times need. Both always in UTC with a "Z".
"""

from __future__ import annotations

import datetime as dt

_TIME = "%Y-%m-%dT%H:%M:%SZ"
_MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def api_time(moment: dt.datetime | None = None) -> str:
    """`moment` (now when omitted) as the API server writes a metav1.Time."""
    return (moment or dt.datetime.now(dt.UTC)).strftime(_TIME)


def micro_time(moment: dt.datetime | None = None) -> str:
    """`moment` (now when omitted) as the API server writes a metav1.MicroTime."""
    return (moment or dt.datetime.now(dt.UTC)).strftime(_MICRO_TIME)
