"""`python -m benchmarks run|report|workloads`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks import growth, plot, report, schedulers, summary, workloads
from benchmarks.results import RunResult
from benchmarks.runner import CreateMode, RunSpec, run_once
from tests.cluster import releases


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="kpysched vs kube-scheduler on the same API server, one at a time")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run workloads for each scheduler in turn")
    run.add_argument("--workload", default="basic",
                     help=f"comma-separated: {', '.join(workloads.WORKLOADS)} or 'all'")
    run.add_argument("--nodes", type=int, default=100)
    run.add_argument("--init-pods", type=int,
                     help="initial (already bound) pods; default depends on the workload")
    run.add_argument("--pods", type=int,
                     help="measured pods; default depends on the workload")
    run.add_argument("--schedulers", default=",".join(schedulers.NAMES),
                     help="comma-separated, run in this order (reversed on even repeats)")
    run.add_argument("--qps", type=float,
                     help="clientConnection.qps for both (default: each one's own)")
    run.add_argument("--burst", type=int,
                     help="clientConnection.burst for both (default: --qps if given)")
    run.add_argument("--repeat", type=int, default=1,
                     help="runs per scheduler (0 with --profile: only the profiled run)")
    run.add_argument("--release", choices=sorted(releases.RELEASES),
                     help="Kubernetes release of the control plane and of kube-scheduler "
                          "(default: KPYSCHED_TEST_RELEASE, else the harness's default); "
                          "kpysched follows the API server's version")
    run.add_argument("--out", type=Path, help="write the JSON here (and a .md beside it)")
    run.add_argument("--create-mode", choices=["before", "live"], default="before",
                     help="before: create every measured pod before the scheduler starts "
                          "(default; creation can never be the bottleneck); live: create "
                          "them while it runs, as scheduler_perf does")
    run.add_argument("--duration", type=float, metavar="SECONDS",
                     help="steady-state workloads: how long the pods are kept pending "
                          "and replaced (default: the workload's, upstream's 10)")
    run.add_argument("--concurrency", type=int, default=48,
                     help="requests in flight while creating pods")
    run.add_argument("--timeout", type=float,
                     help="seconds for all measured pods to bind (default 60 + pods/10)")
    run.add_argument("--workdir", type=Path,
                     help="where benchmark clusters live while they run (default: $TMPDIR)")
    run.add_argument("--profile", type=Path, metavar="DIR",
                     help="add one kpysched run profiled with py-spy (kept out of the "
                          "figures); its collapsed stacks go to DIR")
    run.add_argument("--keep-logs", type=Path, metavar="DIR",
                     help="copy each scheduler's log here before its cluster is removed")
    run.add_argument("--interleave", action="store_true",
                     help="run the workloads in turn within each repeat (order alternating) "
                          "instead of all repeats of one before the next: a workload and "
                          "its baseline then see the same drift in the machine's load")
    rendered = commands.add_parser(
        "report", help="print an overview and the tables of results JSON files")
    rendered.add_argument("files", type=Path, nargs="+")
    grown = commands.add_parser(
        "growth", help="one workload's figures by cluster size, from results JSON files")
    grown.add_argument("files", type=Path, nargs="+")
    grown.add_argument("--workload", default="basic")
    drawn = commands.add_parser(
        "plot", help="draw pods/s per workload and the growth curves from results JSON files")
    drawn.add_argument("files", type=Path, nargs="*",
                       help="results JSON files (default: those of the summary table)")
    drawn.add_argument("--out", type=Path, default=Path("docs/benchmarks"),
                       help="directory for the PNG files (default: docs/benchmarks)")
    commands.add_parser(
        "summary", help="print docs/benchmarks.md's summary table from the current results")
    commands.add_parser("workloads", help="list the workloads and their default sizes")
    return parser


def _workloads(text: str) -> list[workloads.Workload]:
    names = list(workloads.WORKLOADS) if text == "all" else text.split(",")
    unknown = [n for n in names if n not in workloads.WORKLOADS]
    if unknown:
        raise SystemExit(f"error: unknown workload(s) {unknown}; "
                         f"choose from {', '.join(workloads.WORKLOADS)}")
    return [workloads.WORKLOADS[n] for n in names]


def run_suite(spec: RunSpec, names: list[str], repeat: int
              ) -> tuple[list[RunResult], RunResult | None]:
    """Every scheduler `repeat` times (order alternating), then, when asked, one
    extra profiled kpysched run that is kept out of the figures (py-spy pauses the
    process to sample it)."""
    measured = dataclasses.replace(spec, profile_dir=None)
    runs = []
    for index in range(1, repeat + 1):
        order = names if index % 2 else list(reversed(names))
        for name in order:
            runs.append(run_once(measured, name, index))
    profiled = (run_once(spec, schedulers.KPYSCHED, 0)
                if spec.profile_dir is not None else None)
    return runs, profiled


def _run(args: argparse.Namespace) -> int:
    if args.release is not None:
        # The harness's clusters and kube-scheduler follow it (tests.cluster.releases).
        os.environ[releases.ENV_VAR] = args.release
    names = args.schedulers.split(",")
    unknown = [n for n in names if n not in schedulers.NAMES]
    if unknown:
        raise SystemExit(f"error: unknown scheduler(s) {unknown}; "
                         f"choose from {', '.join(schedulers.NAMES)}")
    burst = args.burst if args.burst is not None else (
        math.ceil(args.qps) if args.qps is not None else None)
    try:  # every size is checked before the first cluster starts
        planned = [(workload, workloads.sizes_for(workload, args.nodes, args.init_pods,
                                                  args.pods))
                   for workload in _workloads(args.workload)]
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    for workload, _ in planned:
        if workload.coscheduling and schedulers.KUBE_SCHEDULER in names:
            raise SystemExit(f"error: workload {workload.name} runs kpysched's Coscheduling "
                             f"plugin, which kube-scheduler lacks; pass --schedulers "
                             f"{schedulers.KPYSCHED}")
    suites: list[tuple[RunSpec, dict[str, Any]]] = []
    for workload, sizes in planned:
        # Pods measured one at a time or in a steady state are created while the
        # scheduler runs.
        create_mode: CreateMode = ("live" if workload.one_at_a_time
                                   or workload.steady_seconds is not None
                                   else args.create_mode)
        spec = RunSpec(workload, sizes, qps=args.qps, burst=burst,
                       create_mode=create_mode, timeout=args.timeout,
                       concurrency=args.concurrency, workdir=args.workdir,
                       profile_dir=args.profile, logs_dir=args.keep_logs,
                       duration=args.duration)
        suites.append((spec, report.meta({
            "workload": workload.name, "upstream": workload.upstream,
            "nodes": sizes.nodes, "init_pods": sizes.init_pods, "pods": sizes.pods,
            "schedulers": names, "qps": args.qps, "burst": burst, "repeat": args.repeat,
            "create_mode": create_mode, "concurrency": args.concurrency,
            "feature_gates": dict(workload.gates.feature_gates),
            "runtime_config": list(workload.gates.runtime_config),
            "coscheduling": workload.coscheduling, "baseline": workload.baseline,
            "interleaved": args.interleave,
            **({"steady_state_seconds": spec.steady_seconds()}
               if spec.steady_seconds() is not None else {}),
        }, releases.selected().kubernetes_version)))
    if args.interleave:
        _run_interleaved(suites, names, args.repeat, args.out)
        return 0
    documents: list[dict[str, Any]] = []
    for spec, info in suites:
        runs, profiled = run_suite(spec, names, args.repeat)
        document = report.document(info, runs, profiled)
        documents.append(document)
        print(report.markdown(document), flush=True)
        if args.out is not None:  # rewritten after each workload: partial results survive
            _write(args.out, documents)
    return 0


def _run_interleaved(suites: list[tuple[RunSpec, dict[str, Any]]], names: list[str],
                     repeat: int, out: Path | None) -> None:
    """Repeat by repeat, every workload in turn (workloads and schedulers in reverse
    order on even repeats), then the profiled runs; results are rewritten after each
    repeat."""
    runs: list[list[RunResult]] = [[] for _ in suites]
    profiled: list[RunResult | None] = [None] * len(suites)

    def documents() -> list[dict[str, Any]]:
        return [report.document(info, found, extra)
                for (_, info), found, extra in zip(suites, runs, profiled, strict=True)]

    order = list(range(len(suites)))
    for index in range(1, repeat + 1):
        for position in (order if index % 2 else list(reversed(order))):
            spec = dataclasses.replace(suites[position][0], profile_dir=None)
            for name in (names if index % 2 else list(reversed(names))):
                runs[position].append(run_once(spec, name, index))
        if out is not None:
            _write(out, documents())
    for position, (spec, _) in enumerate(suites):
        if spec.profile_dir is not None:
            profiled[position] = run_once(spec, schedulers.KPYSCHED, 0)
    final = documents()
    for document in final:
        print(report.markdown(document), flush=True)
    if out is not None:
        _write(out, final)


def _write(path: Path, documents: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"suites": documents}, indent=2, default=str) + "\n")
    tables = [report.overview(documents), report.baseline_comparisons(documents)]
    path.with_suffix(".md").write_text("\n\n".join(
        [*(table for table in tables if table.count("\n") > 1),
         *(report.markdown(d) for d in documents)]) + "\n")


def _report(args: argparse.Namespace) -> int:
    documents = [report.rebuild(document) for path in args.files
                 for document in json.loads(path.read_text())["suites"]]
    print(report.overview(documents) + "\n")
    comparisons = report.baseline_comparisons(documents)
    if comparisons:
        print(comparisons + "\n")
    for document in documents:
        print(report.markdown(document))
    return 0


def _growth(args: argparse.Namespace) -> int:
    documents = [document for path in args.files
                 for document in json.loads(path.read_text())["suites"]]
    try:
        print(growth.growth_table(documents, args.workload))
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    return 0


def _plot(args: argparse.Namespace) -> int:
    try:
        written = plot.plot(args.files, args.out)
    except (ValueError, OSError, KeyError) as error:
        raise SystemExit(f"error: {error}") from None
    for path in written:
        print(path)
    return 0


def _list() -> int:
    for workload in workloads.WORKLOADS.values():
        sizes = [workloads.sizes_for(workload, n, None, None) for n in (100, 1000, 5000)]
        defaults = "; ".join(f"{s.nodes} nodes: {s.init_pods} init, {s.pods} measured"
                             for s in sizes)
        print(f"{workload.name:20} {workload.upstream:36} {workload.summary}\n"
              f"{'':20} defaults: {defaults}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "report":
        return _report(args)
    if args.command == "growth":
        return _growth(args)
    if args.command == "plot":
        return _plot(args)
    if args.command == "summary":
        print(summary.render())
        return 0
    return _list()


if __name__ == "__main__":
    sys.exit(main())
