"""The queue part of a pod's answer (kpysched.queue.pod_state, as JSON) as text: where
the pod waits, since or until when, and the cluster events that would move it."""

from __future__ import annotations

from typing import Any, Final

_WHERE: Final = {
    "active": "in the active queue: it is tried next, in priority order",
    "backoff": "backing off after a failed attempt",
    "unschedulable": "among the unschedulable pods, waiting for a cluster event",
    "gated": "held back before the queue (PreEnqueue)",
    "inFlight": "being scheduled now",
}


def render_queue(queue: dict[str, Any] | None) -> list[str]:
    if not queue:
        return []
    where = _WHERE.get(queue["queue"], queue["queue"])
    lines = [f"Queue: {where}; {queue['attempts']} attempt(s) so far"]
    if queue.get("gatedBy"):
        lines.append(f"  gated by plugin {queue['gatedBy']}")
    if queue.get("backoffUntil"):
        lines.append(f"  backoff ends at {queue['backoffUntil']}")
    if queue.get("waitingSince"):
        lines.append(f"  waiting since {queue['waitingSince']}; moved back at the latest at "
                     f"{queue['movedByFlushAt']} (podMaxInUnschedulablePodsDuration)")
    if queue.get("rejectedBy"):
        lines.append("  rejected by: " + ", ".join(queue["rejectedBy"]))
    if queue.get("pendingOn"):
        lines.append("  pending on: " + ", ".join(queue["pendingOn"]))
    if queue.get("nominatedNode"):
        lines.append(f"  nominated node: {queue['nominatedNode']}")
    triggers = queue.get("requeueOn") or []
    if triggers:
        lines.append("  tried again when (as the rejecting plugins' queueing hints decide):")
        by_plugin: dict[str, list[str]] = {}
        for trigger in triggers:
            by_plugin.setdefault(trigger["plugin"], []).append(
                f"{trigger['text']} ({trigger['event']})")
        for plugin, texts in by_plugin.items():
            lines.append(f"    {plugin}: " + "; ".join(texts))
    elif queue["queue"] in ("unschedulable", "gated"):
        lines.append("  tried again on any cluster event (no plugin's rejection is on record)")
    return lines
