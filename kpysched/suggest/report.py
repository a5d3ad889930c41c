"""Checked fixes as text for `kpysched explain` (JSON is Suggestions.to_json)."""

from __future__ import annotations

from typing import Any, Final

# Fixes shown in text; -o json gives all.
SHOWN: Final = 3


def render_suggestions(body: dict[str, Any] | None, shown: int = SHOWN) -> list[str]:
    if body is None:
        return []
    if body.get("placedAsIs"):
        return [f"Fits now: a simulation of the cluster as it is places it on "
                f"{body['placedAsIs']} (it waits for its next attempt)"]
    fixes = body.get("fixes") or []
    heading = (f"What would make it fit (each checked by simulating the cluster; "
               f"{body.get('tried', 0)} attempts):")
    if not fixes:
        return [heading, "  no single change found that gives it a node"]
    lines = [heading]
    for rank, fix in enumerate(fixes[:shown], 1):
        nodes = f"{fix['nodes']} node{'s' if fix['nodes'] != 1 else ''}"
        lines.append(f"  {rank}. {fix['change']}: {nodes} (it would go to {fix['node']})")
        if fix.get("victims"):
            lines.append("     preempting " + ", ".join(fix["victims"]))
        if fix.get("how"):
            # The pod's strategic merge patch (JSON), or a command / what to set.
            label = "patch" if fix["how"].startswith("{") else "how"
            lines.append(f"     {label}: {fix['how']}")
    if len(fixes) > shown:
        lines.append(f"  ({len(fixes) - shown} more with -o json)")
    return lines
