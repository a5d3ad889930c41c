"""The pod-group part of a pod's answer (kpysched.scheduling.group_state) as text."""

from __future__ import annotations

from typing import Any


def render_group(group: dict[str, Any] | None) -> list[str]:
    if not group:
        return []
    quorum = ""
    if "minCount" in group:
        quorum = f", minCount {group['minCount']}"
    elif "minMember" in group:
        quorum = f", minMember {group['minMember']}"
    lines = [f"Pod group {group['name']} ({group.get('api', '?')}{quorum})"]
    if group.get("exists") is False:
        lines.append("  the PodGroup object does not exist: its members wait for it")
    if group.get("minResources"):
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(group["minResources"].items()))
        lines.append(f"  minResources: {wanted} (checked against the cluster's free capacity)")
    for field_name, words in (("bound", "bound"), ("reserved", "reserved (at Permit or binding)"),
                              ("pending", "pending")):
        part = group.get(field_name) or {"count": 0, "pods": []}
        listed = ", ".join(part["pods"])
        more = part["count"] - len(part["pods"])
        suffix = f": {listed}" + (f" (+{more} more)" if more > 0 else "") if listed else ""
        lines.append(f"  {words}: {part['count']}{suffix}")
    cycle = group.get("lastCycle")
    if cycle:
        lines.append(f"  last group cycle at {cycle['time']}: {cycle['result']}"
                     + (f": {cycle['message']}" if cycle.get("message") else ""))
    return lines
