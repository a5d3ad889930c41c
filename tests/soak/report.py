"""A soak's figures and its verdict: what docs/reliability.md quotes and CI asserts."""

from __future__ import annotations

import dataclasses
import itertools
import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from tests.soak.churn import KPYSCHED, UPSTREAM, ChurnCounts
from tests.soak.observer import Observer
from tests.soak.plan import SoakPlan

MIB: Final = 1024 * 1024
# A replica's memory in the last third of its life may exceed the middle third by this
# factor plus this many bytes before it counts as growing (a leak).
RSS_GROWTH_FACTOR, RSS_GROWTH_SLACK = 1.5, 64 * MIB
TASK_GROWTH_SLACK: Final = 100


class ReportPart(Protocol):
    """What a run beside the soak adds to its report (the mixed run's, mixed.py)."""

    def figures(self) -> dict[str, Any]: ...

    def problems(self) -> list[str]: ...


@dataclass
class SoakReport:
    plan: SoakPlan
    started: str
    setup_seconds: float = 0.0
    churn_seconds: float = 0.0
    quiesce_seconds: float = 0.0
    churn: ChurnCounts | None = None
    observer: Observer | None = None
    faults: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    leader_dump: dict[str, Any] | None = None
    cache_mismatches: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    bindings_by_replica: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    replica_logs: list[str] = field(default_factory=list)
    rss_samples: dict[int, list[int]] = field(default_factory=dict)
    task_samples: dict[int, list[int]] = field(default_factory=dict)
    replica_memory: dict[int, dict[str, Any]] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    parts: list[ReportPart] = field(default_factory=list)

    def finish(self) -> None:
        observer = self.observer
        assert observer is not None and self.churn is not None
        pods = list(observer.pods.values())
        placed = [p for p in pods if p.node]
        self.figures = {
            "podsCreated": len(pods),
            "podsPlacedByKpysched": sum(1 for p in placed if p.scheduler == KPYSCHED),
            "podsPlacedByKubeScheduler": sum(1 for p in placed if p.scheduler == UPSTREAM),
            "podsDeleted": sum(1 for p in pods if p.deleted),
            "doubleBinds": sum(1 for v in observer.violations
                               if v.what in ("bound-twice", "node-changed")),
            "lostPods": len(self.lost),
            "latePending": len(observer.late_pending),
            "overcommits": {cause: sum(1 for o in observer.overcommits if o["cause"] == cause)
                            for cause in ("race", "kpysched", "kube-scheduler")},
            "maxPlaceAfterFaultSeconds": max(
                (f["placeAfterSeconds"] or float("inf") for f in self.faults), default=0.0),
            "leaderOverlaps": self.leader_overlaps(),
            "cacheMismatches": len(self.cache_mismatches),
            "observerWatchRestarts": observer.watch_restarts,
        }
        for part in self.parts:
            self.figures.update(part.figures())
        self.replica_memory = {
            serial: {"peakRssMiB": round(max(samples, default=0) / MIB, 1),
                     "rssMiB": [round(s / MIB) for s in samples],
                     "peakTasks": max(self.task_samples.get(serial, []), default=0)}
            for serial, samples in self.rss_samples.items()}

    def leader_overlaps(self) -> list[str]:
        """Pairs of replicas whose binding windows overlap: two leaders at once."""
        windows = {serial: (min(b)[0], max(b)[0])
                   for serial, b in self.bindings_by_replica.items() if b}
        overlaps = []
        ordered = sorted(windows.items(), key=lambda item: item[1][0])
        for (first, (_, first_end)), (second, (second_start, _)) in itertools.pairwise(ordered):
            if second_start <= first_end:
                overlaps.append(f"replica {second} bound from {second_start}, replica {first} "
                                f"until {first_end}")
        return overlaps

    def growth(self) -> list[str]:
        """Replicas whose RSS or task count kept growing (a leak)."""
        problems = []
        for serial, samples in self.rss_samples.items():
            if len(samples) < 9:
                continue
            third = len(samples) // 3
            middle = statistics.mean(samples[third:2 * third])
            last = statistics.mean(samples[2 * third:])
            if last > middle * RSS_GROWTH_FACTOR + RSS_GROWTH_SLACK:
                problems.append(f"replica {serial}: RSS grew from {middle / MIB:.0f} MiB to "
                                f"{last / MIB:.0f} MiB")
        for serial, counts in self.task_samples.items():
            if len(counts) >= 9 and max(counts[-3:]) > max(counts[:len(counts) // 3]) + \
                    TASK_GROWTH_SLACK:
                problems.append(f"replica {serial}: asyncio tasks grew to {max(counts[-3:])}")
        return problems

    def verdict(self) -> list[str]:
        """Everything that breaks an invariant; empty when the soak passed."""
        observer = self.observer
        assert observer is not None
        problems = [f"{v.what}: {v.detail}" for v in observer.violations]
        problems += [f"lost: {name} pending with no FailedScheduling event" for name in self.lost]
        problems += [f"late: {observer.pods[uid].name} pending over 2x max backoff with no "
                     "FailedScheduling event" for uid in sorted(observer.late_pending)]
        problems += [f"cache: {m}" for m in self.cache_mismatches]
        problems += [f"two leaders: {o}" for o in self.leader_overlaps()]
        problems += [f"fault {f['fault']} failed: {f['error']}" for f in self.faults if f["error"]]
        problems += [f"after {f['fault']}: the probe pod was not placed" for f in self.faults
                     if f["placeAfterSeconds"] is None]
        problems += self.growth()
        problems += [problem for part in self.parts for problem in part.problems()]
        if self.churn is not None:
            problems += [f"churn: {error}" for error in self.churn.unexpected[:20]]
        return problems

    def to_json(self) -> str:
        return json.dumps({
            "plan": dataclasses.asdict(self.plan), "started": self.started,
            "setupSeconds": self.setup_seconds, "churnSeconds": self.churn_seconds,
            "quiesceSeconds": self.quiesce_seconds,
            "churn": dataclasses.asdict(self.churn) if self.churn else None,
            "figures": self.figures, "faults": self.faults, "notes": self.notes,
            "overcommits": self.observer.overcommits if self.observer else [],
            "replicas": self.replica_memory, "verdict": self.verdict(),
            "replicaLogs": self.replica_logs}, indent=1)

    def to_markdown(self) -> str:
        figures = self.figures
        lines = [
            f"Soak of {self.plan.duration_seconds:.0f} s on {self.plan.nodes} nodes, "
            f"{self.plan.rate:g} pods/s, seed {self.plan.seed}, started {self.started}.",
            "",
            "| figure | value |", "|---|---|",
            *(f"| {key} | {value} |" for key, value in figures.items()),
            "", "| fault | lasted (s) | next kpysched pod placed after (s) | error |",
            "|---|---|---|---|",
            *(f"| {f['fault']} | {f['seconds']} | {f['placeAfterSeconds']} | {f['error']} |"
              for f in self.faults),
            "", "| replica | peak RSS (MiB) | peak asyncio tasks |", "|---|---|---|",
            *(f"| {serial} | {m['peakRssMiB']} | {m['peakTasks']} |"
              for serial, m in self.replica_memory.items()),
        ]
        verdict = self.verdict()
        lines += ["", "Verdict: " + ("all invariants held" if not verdict else
                                     f"{len(verdict)} problem(s)")]
        lines += [f"- {problem}" for problem in verdict[:50]]
        return "\n".join(lines)
