"""The summary table at the top of docs/benchmarks.md, drawn from the results files.

`CURRENT` names, for each workload and size, the newest results file in which
kpysched and kube-scheduler ran on the same API server in one run. A workload
kube-scheduler cannot run (kpysched's Coscheduling) is compared instead with kpysched
on a baseline workload of the same run (`Row.baseline`): its compared cells name that
baseline, so they cannot be read as kube-scheduler's. The table is rendered from those
files (`python -m benchmarks summary`), and a unit test holds docs/benchmarks.md to
exactly that rendering, so the figures a reader sees are the files' figures. A new
measurement replaces its row's file here and the table is pasted again.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
START_MARKER = "<!-- summary: python -m benchmarks summary -->"
END_MARKER = "<!-- end of summary -->"


@dataclass(frozen=True, slots=True)
class Row:
    file: str  # under benchmarks/results/
    workload: str
    nodes: int
    # None: kpysched against kube-scheduler in the same suite. Otherwise the workload,
    # in the same file and run, whose kpysched figures are compared with this one's
    # kpysched (the workload less one thing, e.g. plain pods for gangs).
    baseline: str | None = None
    # The table the row is in: docs/benchmarks.md shows one table per section, in the
    # order the sections first appear in CURRENT, each titled by it ("" for no title).
    section: str = ""
    # Told after the workload's name when two rows share workload and size (e.g. "full").
    variant: str = ""


_FOUR_5000 = "n5000-four-qps5000-repeat3-lean.json"
# Against kube-scheduler v1.37.2 on a v1.37.2 API server (the release column says which).
_SIX_1_37 = "n1000-six-v1.37-qps5000-repeat3.json"
_AFFINITY_CSI_1_37 = "n1000-affinity-csi-v1.37-qps5000-repeat3.json"
# The same on a quiet machine (load average 1-2.3), after InterPodAffinity's kept
# preferred-term counts and vector Score (f9a381e, dc9fb64, 85a0b1d).
_QUIET_1_37 = "n1000-basic-preferred-affinity-v1.37-qps5000-repeat3.json"
# One interleaved run each, alone on the machine (28 November, 06:09-06:28).
_PVS_EXTENDER_1_37 = "n1000-in-tree-pvs-basic-extender-v1.37-qps5000-repeat3.json"
# The first run with kpysched in a session (autogroup) of its own, as kube-scheduler
# always was (d0f54dc), alone on the machine (28 November, 07:12-07:28 and 07:32-07:41).
_OWN_SESSION_1_37 = "n1000-mixed-preferred-extender-gang-blocked-v1.37-qps5000-repeat3.json"
_OWN_SESSION_B_1_37 = "n1000-pod-affinity-anti-gang-v1.37-qps5000-repeat3.json"
# After the cuts of 28 November's morning (extender calls on the loop, /metrics text,
# decision records, queue moves; tree 220fc5e), alone on the machine, 10:02-10:10.
_AFTER_CUTS_1_37 = "n1000-mixed-anti-extender-v1.37-qps5000-repeat3.json"
_AFFINITY_5000_1_37 = "n5000-pod-affinity-preferred-v1.37-qps5000-repeat3.json"
_N200_PVS_DRA_1_37 = "n200-in-tree-pvs-dra-claim-templates-v1.37-qps5000-repeat3.json"

STATELESS = "The six stateless workloads (no regression from these)"
ROUND_THREE = "Round three (issue 38): stateful, device, pod-group and affinity-heavy workloads"
# Upstream's sizes (scheduler_perf v1.37.2): SchedulingInTreePVs and SchedulingCSIPVs
# 500Nodes (500 initial pods, 1000 measured) and 5000Nodes (5000, 1000);
# SchedulingWithResourceClaimTemplate 2000pods_200nodes (1000, 1000) and
# 5000pods_500nodes (2500, 2500), its steady-state cases at 500 nodes.
_VOLUMES_500_1_37 = "n500-in-tree-csi-pvs-v1.37-qps5000-repeat3.json"


def _stateless(file: str, workload: str, nodes: int) -> Row:
    return Row(file, workload, nodes, section=STATELESS)


def _round_three(file: str, workload: str, nodes: int, baseline: str | None = None,
                 variant: str = "") -> Row:
    return Row(file, workload, nodes, baseline=baseline, section=ROUND_THREE, variant=variant)


CURRENT: tuple[Row, ...] = (
    _stateless(_QUIET_1_37, "basic", 1000),
    *(_stateless(_SIX_1_37, workload, 1000) for workload in (
        "node-affinity", "topology-spreading", "unschedulable")),
    _stateless(_AFTER_CUTS_1_37, "pod-anti-affinity", 1000),
    # Re-measured alone on a quiet machine (load 0.6-3.7).
    _stateless("n1000-preemption-v1.37-qps5000-repeat3.json", "preemption", 1000),
    # Against v1.37.2, alone on the machine, interleaved (28 November, 10:53-11:03).
    _stateless("n5000-basic-node-affinity-v1.37-qps5000-repeat3.json", "basic", 5000),
    _stateless("n5000-basic-node-affinity-v1.37-qps5000-repeat3.json", "node-affinity", 5000),
    _stateless(_FOUR_5000, "pod-anti-affinity", 5000),
    _stateless(_FOUR_5000, "topology-spreading", 5000),
    _stateless(_FOUR_5000, "unschedulable", 5000),
    _stateless("n5000-preemption-1000pods-qps5000-repeat3-lean.json", "preemption", 5000),
    _stateless("n15000-basic-growth-qps5000-lean.json", "basic", 15000),
    _round_three(_PVS_EXTENDER_1_37, "in-tree-pvs", 1000),
    _round_three(_VOLUMES_500_1_37, "in-tree-pvs", 500),
    # Upstream's SchedulingInTreePVs/5000Nodes (5000 initial pods, 1000 measured).
    _round_three("n5000-in-tree-pvs-v1.37-qps5000-repeat3.json", "in-tree-pvs", 5000),
    _round_three(_AFFINITY_CSI_1_37, "csi-pvs", 1000),
    _round_three(_VOLUMES_500_1_37, "csi-pvs", 500),
    _round_three("n5000-csi-pvs-v1.37-qps5000-repeat3.json", "csi-pvs", 5000),
    # One interleaved run on a quiet machine; the same run's in-tree PVs at 200 nodes
    # (not an upstream size) are in docs/benchmarks.md's prose.
    _round_three(_N200_PVS_DRA_1_37, "dra-claim-templates", 200),
    _round_three("n500-dra-claim-templates-v1.37-qps5000-repeat3.json", "dra-claim-templates",
                 500),
    # Upstream's steady-state cases (SteadyStateClusterResourceClaimTemplate): 10 pods
    # kept for 10 s, empty_500nodes and full_500nodes (4990 of 5000 devices taken).
    _round_three("n500-dra-steady-state-v1.37-qps5000-repeat3.json", "dra-steady-state", 500,
                 variant="empty"),
    _round_three("n500-dra-steady-state-full-v1.37-qps5000-repeat3.json", "dra-steady-state",
                 500, variant="full"),
    _round_three(_OWN_SESSION_B_1_37, "gang", 1000),
    # Upstream's own gang case, 5000Nodes_1000Gangs_3000Pods.
    _round_three("n5000-gang-3-v1.37-qps5000-repeat3.json", "gang-3", 5000),
    _round_three(_OWN_SESSION_1_37, "gang-blocked", 1000),
    # kube-scheduler has no Coscheduling: against kpysched on plain pods with the same
    # profile, same run (--pods 2400 makes the baseline's pod count the gangs').
    _round_three("n1000-coscheduling-baseline-v1.37-qps5000-repeat3.json", "coscheduling", 1000,
                  baseline="coscheduling-blocked-baseline"),
    _round_three(_AFTER_CUTS_1_37, "basic-extender", 1000),
    # Issue 30's one-tenant pathological pod (3 measured pods: the per-CPU figure is the one).
    _round_three("n1000-expensive-pod.json", "expensive-pod", 1000),
    _round_three(_OWN_SESSION_B_1_37, "pod-affinity", 1000),
    # Upstream's 5000Nodes (5000 initial pods, 1000 measured), alone on the machine until
    # 07:52, then beside another engineer's niced e2e tests (autogroup nice 19).
    _round_three(_AFFINITY_5000_1_37, "pod-affinity", 5000),
    _round_three(_OWN_SESSION_1_37, "preferred-pod-affinity", 1000),
    _round_three(_AFFINITY_5000_1_37, "preferred-pod-affinity", 5000),
    _round_three(_OWN_SESSION_1_37, "preferred-pod-anti-affinity", 1000),
    _round_three(_AFTER_CUTS_1_37, "mixed-affinity", 1000),
    # Upstream's 5000Nodes_5000Pods (10000 initial pods of five kinds), alone on the machine.
    _round_three("n5000-mixed-affinity-v1.37-qps5000-repeat3.json", "mixed-affinity", 5000),
    # Upstream's 5000Nodes size (4000 initial pods, 1000 measured), alone on the machine.
    _round_three("n5000-anti-affinity-ns-selector-v1.37-qps5000-repeat3.json",
                 "anti-affinity-ns-selector", 5000),
)


def suite_of(row: Row, results: Path = RESULTS) -> dict[str, Any]:
    for suite in json.loads((results / row.file).read_text())["suites"]:
        meta = suite["meta"]
        if meta["workload"] == row.workload and int(meta["nodes"]) == row.nodes:
            return suite  # type: ignore[no-any-return]
    raise ValueError(f"{row.file} has no {row.workload} suite at {row.nodes} nodes")


def _median(figures: dict[str, Any], key: str) -> float:
    """One scheduler's median of `key` in a suite's summary ({} when it did not run)."""
    value = figures.get(key, {}).get("median")
    return math.nan if value is None else float(value)


def _number(value: float, digits: int = 0) -> str:
    # A rate below 10 (the pathological pod's few pods) keeps two decimals: rounded to a
    # whole number it would read 0 or 1 and hide the ratio beside it.
    if not math.isnan(value) and abs(value) < 10:
        digits = max(digits, 2)
    return "-" if math.isnan(value) else f"{value:,.{digits}f}"


def _ratio(ours: float, theirs: float) -> str:
    if math.isnan(ours) or math.isnan(theirs) or theirs == 0:
        return "-"
    return f"**{ours / theirs:.2f}x**"


# What must agree for a workload and its baseline to be one comparison: the same run
# (command), cluster, sizes and client settings.
_SAME_RUN = ("command", "kubernetes_version", "nodes", "init_pods", "pods", "qps", "burst",
             "create_mode", "repeat")


def compared_with(row: Row, suite: dict[str, Any], results: Path = RESULTS
                  ) -> tuple[dict[str, Any], str]:
    """The figures kpysched's are compared with, and the label their cells carry:
    kube-scheduler's in the same suite (no label), or kpysched's on the row's baseline
    workload, labelled with its name. ValueError when that comparison cannot be made."""
    if row.baseline is None:
        if "kube-scheduler" not in suite["summary"]:
            raise ValueError(f"{row.file}: {row.workload} at {row.nodes} nodes has no "
                             "kube-scheduler run; give the row a kpysched baseline")
        return suite["summary"]["kube-scheduler"], ""
    base = suite_of(Row(row.file, row.baseline, row.nodes), results)
    differ = [key for key in _SAME_RUN if base["meta"].get(key) != suite["meta"].get(key)]
    if differ:
        raise ValueError(f"{row.file}: {row.workload} and its baseline {row.baseline} "
                         f"differ in {', '.join(differ)}: not one comparison")
    if "kpysched" not in base["summary"]:
        raise ValueError(f"{row.file}: baseline {row.baseline} has no kpysched run")
    return base["summary"]["kpysched"], f"kpysched baseline ({row.baseline}): "


def _per_core(figures: dict[str, Any]) -> float:
    cpu = _median(figures, "cpu_ms_per_pod")
    return 1000 / cpu if cpu > 0 else math.nan


def render(results: Path = RESULTS) -> str:
    """The tables (one per section) and, under them, the command of each file they
    read (in order)."""
    header = ("| workload (upstream) | nodes | release | pods/s kpysched | pods/s kube-scheduler | "
              "ratio | pods per CPU-s kpysched | kube-scheduler | ratio | repeats | date | "
              "command |")
    lines: list[str] = []
    commands: list[str] = []
    for section in dict.fromkeys(row.section for row in CURRENT):
        if lines:
            lines.append("")
        if section:
            lines.extend((f"**{section}**", ""))
        lines.extend((header, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"))
        lines.extend(_row_line(row, commands, results)
                     for row in CURRENT if row.section == section)
    lines.append("")
    lines.extend(f"[{index}] `{command}`" + "  " * (index < len(commands))
                 for index, command in enumerate(commands, start=1))
    return "\n".join(lines)


def _row_line(row: Row, commands: list[str], results: Path) -> str:
    """One row of the table; its command joins `commands` (numbered in order) if new."""
    suite = suite_of(row, results)
    meta = suite["meta"]
    command = meta["command"]
    if command not in commands:
        commands.append(command)
    ours = suite["summary"].get("kpysched", {})
    theirs, label = compared_with(row, suite, results)
    rates = [_median(figures, "throughput_avg") for figures in (ours, theirs)]
    per_core = [_per_core(figures) for figures in (ours, theirs)]
    return (
        f"| {row.workload}{f', {row.variant}' if row.variant else ''} ({meta['upstream']}) | "
        f"{row.nodes:,} | "
        f"{meta.get('kubernetes_version', '-')} | {_number(rates[0])} | "
        f"{label}{_number(rates[1])} | {_ratio(*rates)} | {_number(per_core[0])} | "
        f"{label}{_number(per_core[1])} | {_ratio(*per_core)} | {meta['repeat']} | "
        f"{meta['started_utc'][:10]} | [{commands.index(command) + 1}] |")


def section_of(document: str) -> str:
    """The text between the summary markers of docs/benchmarks.md."""
    start = document.index(START_MARKER) + len(START_MARKER)
    return document[start:document.index(END_MARKER)].strip("\n")
