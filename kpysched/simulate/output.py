"""What `kpysched simulate` prints: one line per pod (or `kpysched explain`'s tables
with --explain), then a summary; or all of it as JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from kpysched.explain.render import render
from kpysched.simulate.runner import ERROR, PENDING, PLACED, Placement

_TIES_SHOWN = 5


def pod_line(placement: Placement) -> str:
    if placement.outcome == PLACED:
        text = f"{placement.pod} -> {placement.node}"
        if placement.tied:
            shown = ", ".join(placement.ties[:_TIES_SHOWN])
            more = "" if len(placement.ties) <= _TIES_SHOWN else ", ..."
            text += f"  (tie among {len(placement.ties)}: {shown}{more})"
        if placement.victims:
            text += f"  preempting {', '.join(placement.victims)}"
        if placement.placed_after:
            text += f"  (retried after {placement.placed_after})"
        return text
    if placement.outcome == PENDING:
        nominated = (f" [nominated to {placement.nominated_node}]"
                     if placement.nominated_node else "")
        return f"{placement.pod} pending{nominated}: {placement.message}"
    return f"{placement.pod} error: {placement.message}"


def explanation(placement: Placement) -> str:
    """The same tables `kpysched explain` prints for the pod."""
    return render({"pod": placement.pod, "decisions": placement.decisions})


def pending_reasons(placement: Placement) -> list[str]:
    """The distinct reasons a pending pod's last attempt gave (per node, or PreFilter's)."""
    if not placement.decisions:
        return [placement.message or "not attempted"]
    last = placement.decisions[-1]
    reasons: dict[str, None] = {}
    if last.get("pre_filter_message"):
        reasons[last["pre_filter_message"]] = None
    for rejection in (last.get("rejected") or {}).values():
        for reason in rejection["reasons"]:
            reasons[reason] = None
    if not reasons:
        reasons[last.get("message") or placement.message] = None
    return list(reasons)


def summary(placements: Sequence[Placement]) -> dict[str, Any]:
    placed = [p for p in placements if p.outcome == PLACED]
    pending = [p for p in placements if p.outcome == PENDING]
    by_reason: Counter[str] = Counter()
    for placement in pending:
        by_reason.update(pending_reasons(placement))
    preemptors = [p for p in placements if p.victims]
    return {
        "pods": len(placements),
        "placed": len(placed),
        "placed_among_ties": sum(1 for p in placed if p.tied),
        "pending": len(pending),
        "errors": sum(1 for p in placements if p.outcome == ERROR),
        "pending_by_reason": dict(by_reason.most_common()),
        "preemptions": len(preemptors),
        "victims": sum(len(p.victims) for p in preemptors),
        "nodes_used": dict(Counter(p.node for p in placed if p.node).most_common()),
    }


def summary_text(stats: dict[str, Any], skipped_pending: int) -> str:
    lines = [f"{stats['pods']} pods: {stats['placed']} placed "
             f"({stats['placed_among_ties']} among tied nodes), {stats['pending']} pending, "
             f"{stats['errors']} errors; {stats['preemptions']} preemptions "
             f"({stats['victims']} victims)"]
    if stats["pending_by_reason"]:
        lines.append("pending pods by reason (a pod may count under several):")
        lines += [f"  {count:5d}  {reason}" for reason, count in stats["pending_by_reason"].items()]
    if skipped_pending:
        lines.append(f"({skipped_pending} pods already pending in the cluster for these "
                     "profiles were left out: simulate places only the given pods)")
    return "\n".join(lines)


def as_json(placements: Sequence[Placement], stats: dict[str, Any], *, explain: bool,
            skipped_pending: Sequence[str]) -> dict[str, Any]:
    pods = []
    for placement in placements:
        entry = asdict(placement)
        entry["tied"] = placement.tied
        if not explain:
            del entry["decisions"]
        pods.append(entry)
    return {"pods": pods, "summary": stats, "skipped_pending": list(skipped_pending)}
