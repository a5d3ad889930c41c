"""A pod's decision records (kpysched.decisions.record, as JSON) as text tables.

Filter counts are the FailedScheduling event's: one per node and reason (a node with
two reasons counts under both), nodes outside PreFilter's node set under its
"didn't satisfy plugin(s)" reason, as kpysched.framework.diagnosis counts them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from kpysched.explain.group_render import render_group
from kpysched.explain.queue_render import render_queue

EXAMPLES: Final = 3
DEFAULT_TOP: Final = 5


def render(body: dict[str, Any], top: int = DEFAULT_TOP, every_attempt: bool = False) -> str:
    decisions: list[dict[str, Any]] = body.get("decisions") or []
    lines = render_queue(body.get("queue")) + render_group(body.get("group"))
    if not decisions:
        lines.append(f"No scheduling decision is kept for pod {body.get('pod', '?')}.")
        return "\n".join(lines) + "\n"
    if lines:
        lines.append("")
    shown = decisions if every_attempt else decisions[-1:]
    for decision in shown:
        lines += _decision(decision, top)
        lines.append("")
    earlier = decisions[:-1]
    if earlier and not every_attempt:
        lines.append(f"Earlier attempts kept ({len(earlier)}; --all shows them in full):")
        for decision in earlier:
            where = f" on {decision['node']}" if decision.get("node") else ""
            lines.append(f"  attempt {decision['attempt']} at {decision['time']}: "
                         f"{decision['outcome']}{where}")
        lines.append("")
    return "\n".join(lines)


def filter_counts(decision: dict[str, Any]) -> dict[tuple[str, str], tuple[int, list[str]]]:
    """(plugin, reason) -> how many nodes were rejected for it and which (nodes outside
    PreFilter's node set are counted, not named), as the FailedScheduling event counts."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    rejected: dict[str, Any] = decision.get("rejected") or {}
    for node, rejection in rejected.items():
        for reason in rejection["reasons"]:
            groups[(rejection["plugin"], reason)].append(node)
    counts = {key: (len(nodes), nodes) for key, nodes in groups.items()}
    absent = decision["total_nodes"] - len(rejected)
    if decision.get("absent_reason") and absent > 0 and not decision.get("feasible"):
        key = ("PreFilter", decision["absent_reason"])
        count, nodes = counts.get(key, (0, []))
        counts[key] = (count + absent, nodes)
    return counts


def _decision(decision: dict[str, Any], top: int) -> list[str]:
    outcome = decision["outcome"] or "in progress"
    node = decision.get("node")
    lines = [f"Pod {decision['pod']} (uid {decision['uid']}), profile {decision['profile']}",
             f"Attempt {decision['attempt']} at {decision['time']}: {outcome}"
             + (f" on node {node}" if node else "")]
    if decision.get("message"):
        lines.append(f"  {decision['message']}")
    if decision.get("nominated_node"):
        lines.append(f"  Nominated node: {decision['nominated_node']} (room is being made "
                     "by preemption)")
    lines.append("")
    lines += _filter(decision)
    lines += _extenders(decision, top)
    lines += _scores(decision, top)
    lines += _preemption(decision)
    return lines


def _filter(decision: dict[str, Any]) -> list[str]:
    total = decision["total_nodes"]
    if decision.get("pre_filter_message"):
        return [f"PreFilter rejected all {total} nodes: {decision['pre_filter_message']}", ""]
    lines: list[str] = []
    restricted = decision.get("pre_filter_nodes")
    if restricted is not None:
        lines.append(f"PreFilter narrowed the {total} nodes to {len(restricted)}: "
                     f"{_examples(restricted, 5)}")
    tried = decision.get("nominated_node_tried")
    feasible = decision.get("feasible") or []
    if tried and feasible == [tried] and not decision.get("rejected"):
        lines += [f"Nominated node {tried} was evaluated first and fits: no other node was "
                  "evaluated.", ""]
        return lines
    groups = filter_counts(decision)
    rejected = len(decision.get("rejected", {}))
    if feasible:
        head = (f"Filter: {len(feasible)} feasible of {decision['evaluated_nodes']} "
                f"evaluated ({total} nodes)")
        head += f"; {rejected} rejected" if rejected else ""
    else:
        head = f"Filter: no node fits; {total} nodes rejected"
    lines.append(head + (":" if groups else ""))
    if groups:
        # An extender's verdict names no plugin, as upstream's does not.
        rows = [[plugin or "Extender", str(count), reason, _examples(nodes, EXAMPLES, count)]
                for (plugin, reason), (count, nodes) in sorted(
                    groups.items(), key=lambda item: (-item[1][0], item[0]))]
        lines += _table(["PLUGIN", "NODES", "REASON", "EXAMPLES"], rows, right={1})
    vector = decision.get("vector_rejected") or 0
    if vector:
        lines.append(f"  and {vector} node(s) ruled out by whole-snapshot filters (not "
                     "itemised, since other nodes fit)")
    lines.append("")
    return lines


def _scores(decision: dict[str, Any], top: int) -> list[str]:
    feasible: list[str] = decision.get("feasible") or []
    totals: list[int] = decision.get("totals") or []
    if len(feasible) == 1 and not totals:
        return [f"Score: only {feasible[0]} fits; nothing to compare (scoring skipped)", ""]
    if not totals:
        return []
    plugins: list[dict[str, Any]] = decision.get("scores") or []
    ties = set(decision.get("ties") or [])
    chosen = decision.get("node")
    order = sorted(range(len(feasible)), key=lambda i: (-totals[i], feasible[i]))
    shown = order[:max(top, 1)]
    header = ["NODE", *(f"{p['plugin']}(x{p['weight']})" for p in plugins), "TOTAL", ""]
    rows = []
    for i in shown:
        marks = []
        if feasible[i] == chosen:
            marks.append("chosen")
        if feasible[i] in ties and len(ties) > 1:
            marks.append("tie")
        rows.append([feasible[i], *(str(p["normalized"][i] * p["weight"]) for p in plugins),
                     str(totals[i]), ", ".join(marks)])
    tie_note = (f"; {len(ties)} nodes tie at the top score {max(totals)}, one chosen at "
                "random" if len(ties) > 1 else "")
    lines = [f"Score: top {len(shown)} of {len(feasible)} feasible nodes (normalised score x "
             f"weight){tie_note}:"]
    lines += _table(header, rows, right=set(range(1, len(header) - 1)))
    lines.append("")
    return lines


def _extenders(decision: dict[str, Any], top: int) -> list[str]:
    """What each scheduler extender said: the nodes its filter rejected and why, its
    prioritize scores as they count in the totals, or how its call failed."""
    answers: list[dict[str, Any]] = decision.get("extenders") or []
    lines: list[str] = []
    for answer in answers:
        name, verb = answer["extender"], answer["verb"]
        if answer.get("error"):
            what = "skipped (ignorable)" if answer.get("skipped") else "failed"
            if verb == "prioritize":
                what = "gave no scores"
            lines.append(f"Extender {name} {verb}: {what}: {answer['error']}")
        elif verb in ("filter", "preempt"):
            failed: dict[str, str] = answer.get("failed") or {}
            given = "node" if verb == "filter" else "candidate node"
            if not failed:
                lines.append(f"Extender {name} {verb}: kept every {given} it was given")
                continue
            by_reason: dict[str, list[str]] = defaultdict(list)
            for node, reason in failed.items():
                by_reason[reason].append(node)
            lines.append(f"Extender {name} {verb}: rejected {len(failed)} {given}(s):")
            rows = [[str(len(nodes)), reason, _examples(nodes, EXAMPLES)]
                    for reason, nodes in sorted(by_reason.items(),
                                                key=lambda item: (-len(item[1]), item[0]))]
            lines += _table(["NODES", "REASON", "EXAMPLES"], rows, right={0})
        else:
            scores: dict[str, int] = answer.get("scores") or {}
            best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:max(top, 1)]
            lines.append(f"Extender {name} {verb} (score x weight x 10, in the totals): "
                         + (", ".join(f"{node}={score}" for node, score in best) or "none"))
    return [*lines, ""] if lines else []


def _preemption(decision: dict[str, Any]) -> list[str]:
    preemption = decision.get("preemption")
    if not preemption:
        return []
    candidates = preemption.get("candidates") or []
    lines = [f"Preemption: {len(candidates)} candidate node(s); chose "
             f"{preemption.get('chosen')} by {preemption.get('criterion') or '?'}:"]
    rows = [[c["node"] + (" (chosen)" if c["node"] == preemption.get("chosen") else ""),
             str(c["pdb_violations"]), str(len(c["victims"])), ", ".join(c["victims"])]
            for c in candidates]
    lines += _table(["NODE", "PDB VIOLATIONS", "VICTIMS", "PODS"], rows, right={1, 2})
    lines.append("")
    return lines


def _examples(names: Sequence[str], count: int, total: int | None = None) -> str:
    """The first `count` names, and how many more of `total` (default: all names)."""
    total = len(names) if total is None else total
    shown = ", ".join(sorted(names)[:count])
    more = total - min(count, len(names))
    return shown + (f" (+{more} more)" if more > 0 else "") if shown else f"{total} nodes"


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        text = "  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                         for i, cell in enumerate(cells))
        return "  " + text.rstrip()

    return [line(header), *(line(row) for row in rows)]
