"""What one scheduler run yields, and the figures compared across schedulers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Better = Literal["higher", "lower"]


@dataclass(frozen=True, slots=True)
class Figure:
    key: str
    label: str
    better: Better
    digits: int = 1


# Every figure a run reports, in table order. A ratio is kpysched / kube-scheduler.
FIGURES: tuple[Figure, ...] = (
    Figure("throughput_avg", "throughput avg (pods/s)", "higher"),
    Figure("throughput_p50", "throughput p50 (pods/s)", "higher"),
    Figure("throughput_p90", "throughput p90 (pods/s)", "higher"),
    Figure("throughput_p99", "throughput p99 (pods/s)", "higher"),
    Figure("throughput_max", "throughput max (pods/s)", "higher"),
    Figure("sampled_share", "share of the run the samples cover", "higher", 2),
    Figure("throughput_drain", "first to last bind (pods/s)", "higher"),
    Figure("throughput_ready", "pods / (ready to last bind) (pods/s)", "higher"),
    Figure("throughput_overall", "pods / makespan (pods/s)", "higher"),
    Figure("makespan_s", "makespan to last bind (s)", "lower"),
    Figure("startup_s", "scheduler start to ready (s)", "lower", 2),
    # Its CPU by then (imports, LIST, cache): part of "scheduler CPU" unless pods are
    # created live. /readyz is polled every 0.1 s, so a first pod may count in it.
    Figure("startup_cpu_s", "scheduler CPU to ready (s)", "lower", 2),
    Figure("latency_p50_ms", "pod latency p50 (ms)", "lower", 0),
    Figure("latency_p90_ms", "pod latency p90 (ms)", "lower", 0),
    Figure("latency_p99_ms", "pod latency p99 (ms)", "lower", 0),
    Figure("algorithm_p50_ms", "algorithm latency p50 (ms)", "lower", 2),
    Figure("algorithm_p99_ms", "algorithm latency p99 (ms)", "lower", 2),
    Figure("attempts_per_pod", "scheduling attempts per measured pod", "lower", 2),
    Figure("attempts_unschedulable", "unschedulable attempts (any pod)", "lower", 0),
    Figure("cpu_seconds", "scheduler CPU (s)", "lower"),
    Figure("cpu_ms_per_pod", "scheduler CPU per pod (ms)", "lower", 2),
    Figure("pods_per_cpu_second", "pods per scheduler CPU-second", "higher", 0),
    Figure("peak_rss_mib", "scheduler peak RSS (MiB)", "lower"),
    Figure("api_requests_per_pod", "API requests per pod", "lower", 2),
    Figure("apiserver_cpu_seconds", "kube-apiserver CPU (s)", "lower"),
)
FIGURE_KEYS = tuple(f.key for f in FIGURES)


@dataclass(slots=True)
class RunResult:
    scheduler: str
    repeat: int
    pods: int
    bound: int
    complete: bool
    figures: dict[str, float]
    throughput_samples: list[float]
    # Pods bound in each 1 s window from the start of the measurement, none dropped.
    bound_per_second: list[int]
    # The scheduler's own scheduled-pod counter, read about once a second meanwhile.
    scheduled_per_second: list[float]
    attempts_by_result: dict[str, float]
    api_writes_by_kind: dict[str, float]
    created_per_second: float  # how fast the benchmark created the measured pods
    setup_seconds: float  # cluster + nodes + initial pods
    load_average: float = 0.0  # 1-minute load average when the run began
    # From the scheduler's ready to the last bind the watch saw: the share of that time
    # it was on a CPU, and the share of the machine's CPU time left idle. Busy
    # well under 1 with idle CPU left means it waited (on the network, on a lock), not
    # that it was crowded out.
    scheduler_busy_share: float = math.nan
    machine_idle_share: float = math.nan
    churn_pods: int = 0  # never-fitting pods: churned, or created up front (blocked_pods)
    # kpysched_events_dropped_total during the run, by reason (kpysched only).
    events_dropped: dict[str, float] = field(default_factory=dict)
    # scheduler_queue_incoming_pods_total during the run, by "event -> queue".
    queue_incoming: dict[str, float] = field(default_factory=dict)
    # scheduler_podgroup_schedule_attempts_total during the run, by result (pod-group
    # cycles; only with GenericWorkload or Coscheduling).
    podgroup_attempts: dict[str, float] = field(default_factory=dict)
    # p50/p99 in ms of scheduler_podgroup_scheduling_{algorithm,attempt}_duration_seconds.
    podgroup_latency_ms: dict[str, float] = field(default_factory=dict)
    # Unschedulable attempts from the start to the first sample (read once a second, and
    # once right after the watch saw every pod bound) at or after the last bind.
    unschedulable_by_last_bind: float = math.nan
    scheduler_log: str = ""  # last log lines when the run did not complete
    # One-at-a-time workloads: each measured pod's cost (runner.PodCost, as a dict) and
    # the idle scheduler's CPU rate subtracted from it (ms of CPU per second).
    pod_costs: list[dict[str, Any]] = field(default_factory=list)
    idle_cpu_ms_per_second: float = math.nan
    profile: dict[str, object] | None = field(default=None)
