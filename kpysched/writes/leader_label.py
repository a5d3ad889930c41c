"""Labels the pod of the replica that leads, so the decisions API reaches only it.

Why: the chart's decisions Service (behind the APIService) would otherwise spread
requests over every replica. A standby keeps no decision records and answers 503 with
Retry-After; kubectl retries up to 10 times, but with two replicas about one request
in a thousand met the standby every time. Selecting on this label sends every request
to the leader. During a hand-over both pods may carry it for a moment (the old one
then answers 503 and the client retries), or neither (the Service has no endpoint and
the API server answers 503 the same way).

The replica learns its pod from the downward API (KPYSCHED_POD_NAME and
KPYSCHED_POD_NAMESPACE, set by the chart). It clears the label when it starts, in case
a restarted container finds its pod still marked, and when it stops leading. Every
write is best effort: a failure is logged and never stops scheduling.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

import structlog

from kpysched.api.client import RawApi

log = structlog.get_logger(__name__)

LABEL: Final = "kpysched.io/leader"
MERGE_PATCH: Final = "application/merge-patch+json"
# A write at shutdown must not hold up the Lease's release for long.
TIMEOUT_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class LeaderLabel:
    raw: RawApi
    namespace: str
    pod: str

    @classmethod
    def of(cls, raw: RawApi, namespace: str | None, pod: str | None) -> LeaderLabel | None:
        """None outside a pod (a local run): there is no Service to steer."""
        if not namespace or not pod:
            return None
        return cls(raw, namespace, pod)

    async def mark(self, leading: bool) -> bool:
        """Sets or removes the label; True when the API server took the write."""
        path = (f"/api/v1/namespaces/{quote(self.namespace, safe='')}"
                f"/pods/{quote(self.pod, safe='')}")
        body = {"metadata": {"labels": {LABEL: "true" if leading else None}}}
        try:
            response = await asyncio.wait_for(
                self.raw.request("PATCH", path, body, content_type=MERGE_PATCH,
                                 timeout=TIMEOUT_SECONDS),
                TIMEOUT_SECONDS + 1)
        except TimeoutError:
            log.warning("leader_label.failed", pod=f"{self.namespace}/{self.pod}",
                        leading=leading, reason="timed out")
            return False
        if response.ok:
            log.info("leader_label.set" if leading else "leader_label.cleared",
                     pod=f"{self.namespace}/{self.pod}", label=LABEL)
            return True
        log.warning("leader_label.failed", pod=f"{self.namespace}/{self.pod}",
                    leading=leading, status=response.status,
                    reason=response.message(),
                    consequence="the decisions API may reach a standby (503, retried)")
        return False
