"""Suite results: medians and spread over repeats, kpysched / kube-scheduler ratios
(and kpysched / kpysched-no-records, the cost of decision records, when both ran),
the issue's targets, JSON and a markdown table."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.results import FIGURE_KEYS, FIGURES, RunResult
from benchmarks.schedulers import CEILING, KPYSCHED, KPYSCHED_NO_RECORDS, KUBE_SCHEDULER
from benchmarks.stats import Spread, sampled_share, spread


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        memory_kib = int(next(line.split()[1] for line in
                              Path("/proc/meminfo").read_text().splitlines()
                              if line.startswith("MemTotal")))
    except (OSError, StopIteration, ValueError):
        memory_kib = 0
    return {"cpus": os.cpu_count(), "cpu_model": model,
            "memory_gib": round(memory_kib / 1024 / 1024, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def source_digest() -> str:
    """A digest of kpysched's source, to tell which code a result measured."""
    import kpysched

    root = Path(kpysched.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def meta(spec_fields: dict[str, Any], kubernetes_version: str) -> dict[str, Any]:
    from kpysched import __version__

    return {"command": " ".join(["python -m benchmarks", *sys.argv[1:]]),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": machine(), "kubernetes_version": kubernetes_version,
            "kpysched_version": __version__, "kpysched_source_sha256": source_digest(),
            **spec_fields}


def summarise(runs: Sequence[RunResult]) -> dict[str, dict[str, Spread]]:
    by_scheduler: dict[str, list[RunResult]] = {}
    for run in runs:
        by_scheduler.setdefault(run.scheduler, []).append(run)
    return {name: {key: spread([r.figures[key] for r in group]) for key in FIGURE_KEYS}
            for name, group in by_scheduler.items()}


def ratios(summary: dict[str, dict[str, Spread]], baseline: str = KUBE_SCHEDULER,
           subject: str = KPYSCHED) -> dict[str, float]:
    """`subject`'s medians over `baseline`'s, figure by figure ({} unless both ran)."""
    if subject not in summary or baseline not in summary:
        return {}
    found = {}
    for key in FIGURE_KEYS:
        ours, theirs = summary[subject][key].median, summary[baseline][key].median
        found[key] = ours / theirs if theirs and not math.isnan(theirs) else math.nan
    return found


RECORDS_OVERHEAD_LIMIT = 1.05  # the issue: recording costs < 5 % CPU at 5000 nodes
EXPENSIVE_POD_CPU_LIMIT = 2.0  # issue 30: kpysched within 2x kube-scheduler's CPU
POD_COST_KEYS = ("seconds_to_bind", "cpu_ms_to_bind", "cpu_ms_settled")


def pod_cost_medians(runs: Sequence[RunResult]) -> dict[str, dict[str, float]]:
    """Per scheduler, the median of each cost over every pod measured alone (workloads
    that create pods one at a time); {} without such pods."""
    found: dict[str, dict[str, float]] = {}
    for run in runs:
        found.setdefault(run.scheduler, {})
    for name in list(found):
        costs = [cost for run in runs if run.scheduler == name for cost in run.pod_costs]
        if not costs:
            del found[name]
            continue
        found[name] = {key: statistics.median(float(cost[key]) for cost in costs)
                       for key in POD_COST_KEYS}
    return found


def pod_cost_ratios(medians: dict[str, dict[str, float]]) -> dict[str, float]:
    """kpysched's median pod costs over kube-scheduler's ({} unless both ran)."""
    if KPYSCHED not in medians or KUBE_SCHEDULER not in medians:
        return {}
    ours, theirs = medians[KPYSCHED], medians[KUBE_SCHEDULER]
    return {key: ours[key] / theirs[key] if theirs[key] > 0 else math.nan
            for key in POD_COST_KEYS}


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    text: str
    value: float
    limit: float
    higher_is_better: bool

    @property
    def met(self) -> bool:
        if math.isnan(self.value):
            return False
        return self.value >= self.limit if self.higher_is_better else self.value <= self.limit


def targets(info: dict[str, Any], summary: dict[str, dict[str, Spread]],
            ratio: dict[str, float], records_ratio: dict[str, float] | None = None
            ) -> list[Target]:
    """The issue's targets that apply to this workload, size and QPS."""
    found: list[Target] = []
    if records_ratio and info["workload"] == "basic" and info["nodes"] >= 5000:
        found.append(Target("SchedulingBasic 5000 nodes: CPU per pod with decision records "
                            "/ without (kpysched / kpysched-no-records) < 1.05",
                            records_ratio["cpu_ms_per_pod"], RECORDS_OVERHEAD_LIMIT, False))
    equal_qps = info.get("qps") == 5000 and info.get("burst") == 5000
    ours = summary.get(KPYSCHED)
    key = _throughput_figure(summary)
    throughput = UNITS[key]
    if info["workload"] == "basic" and info["nodes"] >= 5000 and equal_qps:
        if ratio:
            found.append(Target("SchedulingBasic 5000 nodes, equal QPS: throughput "
                                f"kpysched/kube-scheduler ≥ 1.0 ({throughput})",
                                ratio[key], 1.0, True))
        if ours is not None:
            found.append(Target("SchedulingBasic 5000 nodes: kpysched algorithm latency "
                                "p99 ≤ 5 ms", ours["algorithm_p99_ms"].median, 5.0, False))
            found.append(Target("5000 nodes / 10k pods: kpysched peak RSS ≤ 400 MiB",
                                ours["peak_rss_mib"].median, 400.0, False))
    # The 0.8 is for scheduler_perf's workloads on upstream's defaults; the gang
    # workloads (gates on, or Coscheduling) report their ratio with no target.
    gang = bool(info.get("feature_gates")) or bool(info.get("coscheduling"))
    if (info["workload"] != "basic" and info["nodes"] == 1000 and equal_qps and ratio
            and not gang):
        found.append(Target(f"{info['upstream']} 1000 nodes, equal QPS: throughput "
                            f"kpysched/kube-scheduler ≥ 0.8 ({throughput})",
                            ratio[key], 0.8, True))
    if (info["upstream"] == "Unschedulable" and info["nodes"] == 1000 and equal_qps
            and ratio):
        found.append(Target(f"{info['workload']} 1000 nodes, equal QPS: unschedulable "
                            "attempts kpysched/kube-scheduler ≤ 1.1",
                            ratio["attempts_unschedulable"], 1.1, False))
    return found


UNITS = {"throughput_avg": "avg of 1 s samples", "throughput_ready": "ready→last bind"}


def _throughput_figure(summary: dict[str, dict[str, Spread]]) -> str:
    """The issue's figure is the average of 1 s samples; when they cover under half
    of either scheduler's run (stats.sampled_share) they say little, and pods per
    second from the moment the scheduler was ready to the last binding is judged
    instead."""
    shares = [figures["sampled_share"].median for figures in summary.values()]
    if shares and all(share >= 0.5 for share in shares):
        return "throughput_avg"
    return "throughput_ready"


def document(info: dict[str, Any], runs: Sequence[RunResult],
             profiled: RunResult | None = None) -> dict[str, Any]:
    summary = summarise(runs)
    ratio = ratios(summary)
    records_ratio = ratios(summary, KPYSCHED_NO_RECORDS)
    pod_costs = pod_cost_medians(runs)
    pod_ratios = pod_cost_ratios(pod_costs)
    found_targets = targets(info, summary, ratio, records_ratio)
    if pod_ratios and info["workload"] == "expensive-pod":
        found_targets.append(Target(
            "Issue 30 expensive pod: CPU from creation to binding (idle less), "
            f"kpysched / kube-scheduler ≤ {EXPENSIVE_POD_CPU_LIMIT:g}",
            pod_ratios["cpu_ms_to_bind"], EXPENSIVE_POD_CPU_LIMIT, False))
    return {
        "meta": info,
        "runs": [dataclasses.asdict(run) for run in runs],
        "profile_run": dataclasses.asdict(profiled) if profiled is not None else None,
        "summary": {name: {key: dataclasses.asdict(value) for key, value in figures.items()}
                    for name, figures in summary.items()},
        "ratios": ratio,
        **({"records_ratios": records_ratio} if records_ratio else {}),
        # How close each scheduler comes to the ceiling (benchmarks/ceiling.py).
        **({"ceiling_ratios": ceiling} if (ceiling := {
            name: found for name in (KPYSCHED, KUBE_SCHEDULER)
            if (found := ratios(summary, CEILING, subject=name))}) else {}),
        **({"pod_costs": pod_costs, "pod_cost_ratios": pod_ratios} if pod_costs else {}),
        "targets": [{"target": t.text, "value": t.value, "limit": t.limit, "met": t.met}
                    for t in found_targets],
    }


def rebuild(doc: dict[str, Any]) -> dict[str, Any]:
    """The document again from its runs, with the current figures and targets (results
    written by an older version lack some fields; they are derived where possible)."""

    def run_of(fields: dict[str, Any]) -> RunResult:
        fields = {"bound_per_second": [], "scheduled_per_second": [], **fields}
        figures = dict(fields["figures"])
        samples, bound = fields["throughput_samples"], fields["bound"]
        active = figures["makespan_s"]
        if doc["meta"].get("create_mode") != "live":
            active -= figures["startup_s"]
        figures["sampled_share"] = sampled_share(samples, bound, active)
        figures.setdefault("startup_cpu_s", math.nan)  # measured from 28 November on
        figures.setdefault("attempts_unschedulable",
                           fields["attempts_by_result"].get("unschedulable", 0.0))
        if "pods_per_cpu_second" not in figures:
            cpu = figures.get("cpu_seconds", math.nan)
            figures["pods_per_cpu_second"] = fields["pods"] / cpu if cpu > 0 else math.nan
        if "throughput_ready" not in figures:
            figures["throughput_ready"] = bound / active if bound and active > 0 else math.nan
        fields["figures"] = figures
        return RunResult(**fields)

    profiled = doc.get("profile_run")
    return document(doc["meta"], [run_of(r) for r in doc["runs"]],
                    run_of(profiled) if profiled else None)


def _counts(counts: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in counts.items())


def _number(value: float, digits: int) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def _cell(item: Spread, digits: int) -> str:
    text = _number(item.median, digits)
    if len(item.values) > 1 and not math.isnan(item.low):
        text += f" [{_number(item.low, digits)}, {_number(item.high, digits)}]"
    return text


def markdown(doc: dict[str, Any]) -> str:
    info = doc["meta"]
    summary = {name: {key: Spread(v["median"], v["low"], v["high"], tuple(v["values"]))
                      for key, v in figures.items()}
               for name, figures in doc["summary"].items()}
    ratio: dict[str, float] = doc["ratios"]
    records_ratio: dict[str, float] = doc.get("records_ratios", {})
    ceiling_ratios: dict[str, dict[str, float]] = doc.get("ceiling_ratios", {})
    qps = (f"qps {info['qps']:g} / burst {info['burst']}" if info.get("qps") is not None
           else "each scheduler's default qps/burst")
    lines = [
        f"#### {info['upstream']} ({info['workload']}): {info['nodes']} nodes, "
        f"{info['init_pods']} initial pods, {info['pods']} measured pods, {qps}, "
        f"{info['repeat']} repeat(s)",
        "",
        f"`{info['command']}`",
        "",
        f"Started {info.get('started_utc', '?')}; kube-scheduler and kube-apiserver "
        f"{info['kubernetes_version']}; kpysched {info['kpysched_version']} (source "
        f"digest {info.get('kpysched_source_sha256', 'not recorded')}).",
        "",
    ]
    names = [n for n in (KUBE_SCHEDULER, KPYSCHED, KPYSCHED_NO_RECORDS, CEILING)
             if n in summary]
    profiled = doc.get("profile_run")
    if not names:  # --repeat 0: only the profiled run
        if profiled and profiled.get("profile"):
            lines += profile_markdown(profiled["profile"])
        return "\n".join(lines)
    columns = [(title, found) for title, found in (
        ("kpysched / kube-scheduler", ratio),
        (f"kpysched / {KPYSCHED_NO_RECORDS}", records_ratio),
        *((f"{name} / {CEILING}", ceiling_ratios.get(name, {}))
          for name in (KPYSCHED, KUBE_SCHEDULER))) if found]
    header = "| figure | better | " + " | ".join([*names, *(t for t, _ in columns)]) + " |"
    lines += [header, "|" + "---|" * (2 + len(names) + len(columns))]
    for figure in FIGURES:
        row = f"| {figure.label} | {'↑' if figure.better == 'higher' else '↓'} | "
        row += " | ".join([*(_cell(summary[n][figure.key], figure.digits) for n in names),
                           *(_number(found[figure.key], 2) for _, found in columns)])
        lines.append(row + " |")
    lines.append("")
    if info.get("create_mode") == "live":
        lines += ["Pods were created while the scheduler ran; pod latency runs from the "
                  "pod's create reply, makespan from the first create, to when the watch "
                  "saw spec.nodeName.", ""]
    else:
        lines += ["All measured pods existed before the scheduler started; pod latency "
                  "and makespan run from the scheduler's process start (start-up "
                  "included, see the start-to-ready row) to when the watch saw "
                  "spec.nodeName.", ""]
    if len(next(iter(summary.values()))["throughput_avg"].values) > 1:
        lines += ["Cells: median [min, max] over the repeats.", ""]
    for run in doc["runs"]:
        if not run["complete"]:
            lines.append(f"- **incomplete**: {run['scheduler']} run {run['repeat']} bound "
                         f"{run['bound']}/{run['pods']} pods before the timeout.")
    extras = []
    for run in doc["runs"]:
        # Pods moved by a cluster event or timer, not their own add or failure.
        requeues = {k: v for k, v in run.get("queue_incoming", {}).items()
                    if not k.startswith(("PodAdd ", "UnschedulablePodAdd ",
                                              "ScheduleAttemptFailure "))}
        writes = ", ".join(f"{k} {v:g}" for k, v in run["api_writes_by_kind"].items())
        extras.append(f"- {run['scheduler']} #{run['repeat']}: pods created at "
                      f"{run['created_per_second']:.0f}/s, load average "
                      f"{run['load_average']:.2f} at start"
                      + (f", from ready to the last bind the scheduler on a CPU "
                         f"{run['scheduler_busy_share']:.0%} of the time and the machine's "
                         f"CPU {run['machine_idle_share']:.0%} idle"
                         if not math.isnan(run.get("scheduler_busy_share", math.nan)) else "")
                      + ", attempts "
                      f"{ {k: round(v) for k, v in run['attempts_by_result'].items()} }, "
                      f"writes: {writes or 'none'}"
                      + (f", never-fitting pods {run['churn_pods']}" if run["churn_pods"]
                         else "")
                      + (f", events dropped {_counts(run['events_dropped'])}"
                         if run.get("events_dropped") else "")
                      + (f", requeues {_counts(requeues)}" if requeues else "")
                      + (f", pod-group cycles {_counts(run['podgroup_attempts'])}"
                         if run.get("podgroup_attempts") else "")
                      + (", pod-group cycle ms " + ", ".join(
                          f"{k} {v:.1f}" for k, v in run["podgroup_latency_ms"].items())
                         if run.get("podgroup_latency_ms") else "")
                      + (f", unschedulable attempts by the last bind "
                         f"{run['unschedulable_by_last_bind']:g}"
                         if run.get("unschedulable_by_last_bind", 0) else ""))
    lines += [*extras, ""]
    if doc.get("pod_costs"):
        lines += pod_costs_markdown(doc)
    for target in doc["targets"]:
        verdict = "**met**" if target["met"] else "**missed**"
        lines.append(f"- Target: {target['target']}: {_number(target['value'], 2)} → {verdict}")
    if doc["targets"]:
        lines.append("")
    if profiled and profiled.get("profile"):
        lines += profile_markdown(profiled["profile"])
    return "\n".join(lines)


def pod_costs_markdown(doc: dict[str, Any]) -> list[str]:
    """Each pod measured alone, then the medians and kpysched / kube-scheduler."""
    lines = ["Each measured pod alone (created once the scheduler was ready and idle, "
             "after the previous one was bound): the scheduler's CPU (user + system, all "
             "threads) from just before its create request to when the watch saw it "
             "bound, less the idle process's CPU over as long; and the same to 2 s after "
             "the binding.", "",
             "| scheduler | idle CPU (ms/s) | pod | creation to binding (s) "
             "| CPU to binding (ms) | CPU to binding + 2 s (ms) |",
             "|---|---:|---|---:|---:|---:|"]
    for run in doc["runs"]:
        for cost in run.get("pod_costs", ()):
            lines.append(f"| {run['scheduler']} #{run['repeat']} "
                         f"| {_number(run['idle_cpu_ms_per_second'], 1)} | {cost['pod']} "
                         f"| {_number(cost['seconds_to_bind'], 2)} "
                         f"| {_number(cost['cpu_ms_to_bind'], 0)} "
                         f"| {_number(cost['cpu_ms_settled'], 0)} |")
    medians: dict[str, dict[str, float]] = doc["pod_costs"]
    lines += ["", "| median over the pods | creation to binding (s) | CPU to binding (ms) "
              "| CPU to binding + 2 s (ms) |", "|---|---:|---:|---:|"]
    for name, found in medians.items():
        lines.append(f"| {name} | {_number(found['seconds_to_bind'], 2)} "
                     f"| {_number(found['cpu_ms_to_bind'], 0)} "
                     f"| {_number(found['cpu_ms_settled'], 0)} |")
    ratio: dict[str, float] = doc.get("pod_cost_ratios", {})
    if ratio:
        lines.append(f"| kpysched / kube-scheduler | {_number(ratio['seconds_to_bind'], 2)} "
                     f"| **{_number(ratio['cpu_ms_to_bind'], 2)}** "
                     f"| {_number(ratio['cpu_ms_settled'], 2)} |")
    return [*lines, ""]


def overview(docs: Sequence[dict[str, Any]]) -> str:
    """One line per suite: the judged throughput and the main costs, side by side."""
    lines = ["| workload | nodes | initial / measured pods | qps/burst | throughput "
             "kube-scheduler | throughput kpysched | ratio | algorithm p99 ms "
             "(kube-scheduler / kpysched) | CPU ms per pod | pods per CPU-s | peak RSS MiB | "
             "API requests per pod | throughput ceiling | kpysched / ceiling | "
             "kube-scheduler / ceiling |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for doc in docs:
        info, summary = doc["meta"], doc["summary"]
        if KPYSCHED not in summary or KUBE_SCHEDULER not in summary:
            continue
        spreads = {name: {key: Spread(v["median"], v["low"], v["high"], tuple(v["values"]))
                          for key, v in figures.items()} for name, figures in summary.items()}
        key = _throughput_figure(spreads)
        theirs, ours = spreads[KUBE_SCHEDULER], spreads[KPYSCHED]
        unit = UNITS[key]

        def pair(figure: str, digits: int, a: dict[str, Spread] = theirs,
                 b: dict[str, Spread] = ours) -> str:
            return f"{_number(a[figure].median, digits)} / {_number(b[figure].median, digits)}"

        qps = f"{info['qps']:g}/{info['burst']}" if info.get("qps") is not None else "defaults"
        ceiling = doc.get("ceiling_ratios", {})
        limit = spreads[CEILING][key].median if CEILING in spreads else math.nan
        lines.append(
            f"| {info['upstream']} | {info['nodes']} | {info['init_pods']} / {info['pods']} "
            f"| {qps} | {_number(theirs[key].median, 1)} | {_number(ours[key].median, 1)} "
            f"| **{_number(doc['ratios'][key], 2)}** ({unit}) "
            f"| {pair('algorithm_p99_ms', 2)} | {pair('cpu_ms_per_pod', 2)} "
            f"| {pair('pods_per_cpu_second', 0)} "
            f"| {pair('peak_rss_mib', 0)} | {pair('api_requests_per_pod', 2)} "
            f"| {_number(limit, 1)} "
            f"| {_number(ceiling.get(KPYSCHED, {}).get(key, math.nan), 2)} "
            f"| {_number(ceiling.get(KUBE_SCHEDULER, {}).get(key, math.nan), 2)} |")
    return "\n".join(lines)


def _spreads(doc: dict[str, Any]) -> dict[str, dict[str, Spread]]:
    return {name: {key: Spread(v["median"], v["low"], v["high"], tuple(v["values"]))
                   for key, v in figures.items()} for name, figures in doc["summary"].items()}


def baseline_comparisons(docs: Sequence[dict[str, Any]]) -> str:
    """Each workload beside its baseline (the same run less one thing, e.g. a
    never-fitting gang), scheduler by scheduler: with / without. Empty when no
    suite's baseline is among `docs` (from the same command: same sizes, QPS and
    create mode)."""
    lines = ["| workload / baseline | scheduler | throughput with | throughput without "
             "| with / without | CPU ms per pod with / without | pod latency p99 ms with "
             "/ without | unschedulable attempts with / without |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    found = False
    for doc in docs:
        info = doc["meta"]
        if not info.get("baseline"):
            continue
        for base in docs:
            other = base["meta"]
            if other["workload"] != info["baseline"] or any(
                    other.get(k) != info.get(k)
                    for k in ("command", "nodes", "pods", "qps", "burst", "create_mode")):
                continue
            with_gang, without = _spreads(doc), _spreads(base)
            for name in (KUBE_SCHEDULER, KPYSCHED, KPYSCHED_NO_RECORDS):
                if name not in with_gang or name not in without:
                    continue
                found = True
                pair = {name: with_gang[name], f"{name} baseline": without[name]}
                key = _throughput_figure(pair)
                a, b = with_gang[name], without[name]
                ratio = (a[key].median / b[key].median if b[key].median
                         else math.nan)

                def both(figure: str, digits: int, a: dict[str, Spread] = a,
                         b: dict[str, Spread] = b) -> str:
                    return (f"{_number(a[figure].median, digits)} / "
                            f"{_number(b[figure].median, digits)}")

                lines.append(
                    f"| {info['workload']} / {other['workload']} ({info['nodes']} nodes"
                    f"{', created live' if info.get('create_mode') == 'live' else ''}) "
                    f"| {name} | {_number(a[key].median, 1)} | {_number(b[key].median, 1)} "
                    f"| **{_number(ratio, 2)}** ({UNITS[key]}) | {both('cpu_ms_per_pod', 2)} "
                    f"| {both('latency_p99_ms', 0)} | {both('attempts_unschedulable', 0)} |")
    return "\n".join(lines) if found else ""


def profile_markdown(profile: dict[str, Any]) -> list[str]:
    samples = profile["samples"] or 1
    pods = profile["pods"]
    cpu = profile["cpu_seconds"]
    lines = [f"Profile of one extra kpysched run (py-spy, {profile['rate']} Hz, "
             f"{profile['samples']} samples holding the GIL; "
             f"{cpu:.1f} s scheduler CPU over {pods} pods = {cpu * 1000 / pods:.2f} ms/pod):",
             "", "| where | share | ms per pod |", "|---|---:|---:|"]
    for category, count in profile["categories"].items():
        share = count / samples
        lines.append(f"| {category} | {share:.1%} | {share * cpu * 1000 / pods:.3f} |")
    lines += ["", "Hottest leaf functions (self time):", "", "| function | share |",
              "|---|---:|"]
    for function, count in profile["top_leaf_functions"][:12]:
        lines.append(f"| `{function}` | {count / samples:.1%} |")
    return [*lines, ""]
