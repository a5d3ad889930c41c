"""Prometheus metrics named, typed, labelled and bucketed as kube-scheduler's.

Facts from kubernetes v1.36.4 and v1.37.2 pkg/scheduler/metrics/metrics.go and
profile_metrics.go (the release kpysched behaves as picks the names, texts and series),
component-base/metrics (HELP carries the "[STABILITY] " prefix it adds) and
component-base/metrics/prometheus/clientgo/leaderelection (leader_election_*).
Our own additions carry the `kpysched_` prefix so they never collide with a future
upstream name. Each SchedulerMetrics owns its registry: tests and several schedulers
in one process never share series.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, Literal

import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import Metric

from kpysched.metrics_text import TextFormat

log = structlog.get_logger(__name__)

# The text format Go's promhttp serves by default (and Prometheus scrapes).
CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4

# schedule_one.go: pluginMetricsSamplePercent.
PLUGIN_METRICS_SAMPLE_PERCENT: Final = 10

PENDING_QUEUES: Final = ("active", "backoff", "unschedulable", "gated")
# v1.37's queue also reports pod-group members waiting for their group ("pending") or
# for the group to be complete ("incomplete"); always 0 while pod groups are off.
GROUP_MEMBER_QUEUES: Final = ("incomplete", "pending")
# The first release with v1.37's metric names, texts and stability levels.
V1_37: Final = 37
CACHE_TYPES: Final = ("nodes", "pods", "assumed_pods")
# getAttemptsLabel caps the attempts label to keep cardinality low.
MAX_ATTEMPTS_LABEL: Final = 15

# prometheus_client prints a whole-number bucket bound as le="64.0"; Go prints le="64".
_WHOLE_LE = re.compile(rb'le="(\d+)\.0"')

# How often the loop publishes the gauges it owns (pending pods, cache sizes).
PUBLISH_SECONDS: Final = 1.0

AttemptResult = Literal["scheduled", "unschedulable", "error"]


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus.ExponentialBuckets, multiplied step by step as Go does so every
    `le` label prints exactly as upstream's."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return buckets


def attempts_label(attempts: int) -> str:
    return f"{MAX_ATTEMPTS_LABEL}+" if attempts >= MAX_ATTEMPTS_LABEL else str(attempts)


# Labelled families Go's client leaves out of /metrics until their first series, where
# prometheus_client writes their HELP and TYPE at once (v1.37's preemption figures,
# compared with kube-scheduler's by the pod-group differential module).
_HIDDEN_WHILE_EMPTY = frozenset({
    "scheduler_workload_preemption_attempts",
    "scheduler_preemption_workload_disruptions",
    "scheduler_preemption_evaluation_duration_seconds",
    "scheduler_preemption_execution_duration_seconds",
    "scheduler_preemption_pdb_violations",
})


class _WithoutCreated:
    """The registry as upstream exposes it: prometheus_client adds `<name>_created`
    samples to counters and histograms, which Go's client does not emit."""

    def __init__(self, registry: CollectorRegistry, disabled: frozenset[str]) -> None:
        self._registry = registry
        self._disabled = disabled

    def collect(self) -> Iterable[Metric]:
        for family in self._registry.collect():
            if self._disabled and {family.name, f"{family.name}_total"} & self._disabled:
                continue  # --disabled-metrics
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            if not family.samples and family.name in _HIDDEN_WHILE_EMPTY:
                continue
            yield family


class SchedulerMetrics:
    def __init__(self, *, sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT,
                 rng: random.Random | None = None, process_metrics: bool = True,
                 disabled: frozenset[str] = frozenset(),
                 generic_workload: bool = False, release: int = 36,
                 topology_aware: bool = False) -> None:
        self.registry = CollectorRegistry()
        self._text = TextFormat()
        self.release = release
        v137 = release >= V1_37
        # Families --disabled-metrics hides (fully qualified names, as upstream).
        self.disabled = disabled
        self._sample_percent = sample_percent
        self._rng = rng or random.Random()
        r = self.registry
        if process_metrics:
            # process_cpu_seconds_total, process_resident_memory_bytes, ...: the same
            # names Go's process collector exports, so node/process dashboards work.
            ProcessCollector(registry=r)

        # --- STABLE ----------------------------------------------------------------
        self._schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' "
            "means a pod could not be scheduled, while 'error' means an internal scheduler "
            "problem.",
            ["result", "profile"], registry=r)
        self._attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "[STABLE] Number of selected preemption victims"
            + (" for preemption initiated by a single pod" if v137 else ""),
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self._preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "[STABLE] Total preemption attempts in the cluster till now", registry=r)
        self._pending = Gauge(
            "scheduler_pending_pods",
            "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods "
            "in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            f"number of pods in {'unschedulableEntities' if v137 else 'unschedulablePods'} "
            "that the scheduler attempted to schedule and "
            "failed; 'gated' is the number of unschedulable pods that the scheduler never "
            "attempted to schedule because they are gated"
            + ("; 'incomplete' means number of pods in incompletePodGroupPods; 'pending' "
               "means number of pods in pendingPodGroupPods." if v137 else "."),
            ["queue"], registry=r)
        self._pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "[STABLE] Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5), registry=r)
        # Label children of the per-plugin and per-point series, found once: the
        # framework reports them several times per node in a cycle, and labels() is
        # the costly part of a prometheus_client observation. Keyed by (series, labels).
        self._children: dict[tuple[int, tuple[str, str, str]], Any] = {}
        self._extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "[STABLE] Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12), registry=r)
        self._incoming = Counter(
            "scheduler_queue_incoming_pods_total",
            "[STABLE] Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"], registry=r)
        # v1.37's entity-level queue figures ('pod' for pods outside any pod group,
        # 'podgroup' for a group queued as one); not exposed as v1.36.
        entity_registry = r if v137 else CollectorRegistry()
        self._queued_entities = Gauge(
            "scheduler_queued_entities",
            "[ALPHA] Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands "
            "for individual pods that are not members of any podgroup) by the queue type. "
            "'active' means number of entities in activeQ; 'backoff' means number of "
            "entities in backoffQ; 'unschedulable' means number of entities in "
            "unschedulableEntities that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable entities that the scheduler never "
            "attempted to schedule because they are gated.",
            ["queue", "type"], registry=entity_registry)
        # Upstream's (queue, type) series appears with the first such entity there.
        self._queued_entity_series: set[tuple[str, str]] = set()
        self._incoming_entities = Counter(
            "scheduler_queue_incoming_entities_total",
            "[ALPHA] Number of scheduling entities added to scheduling queues by event, "
            "queue type, and entity type. Entity types are either 'pod' (for individual "
            "pods that are not members of any podgroup) or 'podgroup'.",
            ["queue", "event", "type"], registry=entity_registry)

        # --- BETA ------------------------------------------------------------------
        self._sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"], buckets=exponential_buckets(0.01, 2, 20), registry=r)
        self._goroutines = Gauge(
            "scheduler_goroutines",
            "[BETA] Number of running goroutines split by the work they do such as binding. "
            "kpysched has no goroutines: this counts its in-flight asyncio tasks per "
            "operation, under upstream's name for dashboard compatibility.",
            ["operation"], registry=r)
        self._permit_wait = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "[BETA] Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._unschedulable = Gauge(
            "scheduler_unschedulable_pods",
            "[BETA] The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            ["plugin", "profile"], registry=r)
        self._plugin_evaluation = Counter(
            "scheduler_plugin_evaluation_total",
            "[BETA] Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter, Filter, PreScore, and Score).",
            ["plugin", "extension_point", "profile"], registry=r)

        # --- ALPHA -----------------------------------------------------------------
        # Pod-group cycles' figures exist only with GenericWorkload on, as upstream's.
        group_registry = r if generic_workload else CollectorRegistry()
        self._pod_group_attempts = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "[ALPHA] Number of attempts to schedule pod group, by the result. "
            "'unschedulable' means a pod group could not be scheduled, while 'error' means "
            "an internal scheduler problem.",
            ["result", "profile"], registry=group_registry)
        self._pod_group_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "[ALPHA] Pod group scheduling attempt latency in seconds"
            + ("" if v137 else " (scheduling algorithm + binding)"),
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15),
            registry=group_registry)
        self._pod_group_algorithm_duration = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "[ALPHA] Pod group scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15), registry=group_registry)
        # A pod group's placements, only with TopologyAwareWorkloadScheduling on (v1.37).
        placement_registry = r if topology_aware else CollectorRegistry()
        self._generated_placements = Counter(
            "scheduler_generated_placements_total",
            "[ALPHA] Number of candidate placements generated when scheduling pod groups.",
            ["profile"], registry=placement_registry)
        self._placement_evaluations = Counter(
            "scheduler_placement_evaluations_total",
            "[ALPHA] Number of candidate placements evaluated when scheduling pod groups, "
            "by result. 'feasible' means the pod group fit into the placement, while "
            "'infeasible' means it did not.",
            ["result", "profile"], registry=placement_registry)
        self._placement_evaluation_duration = Histogram(
            "scheduler_placement_evaluation_duration_seconds",
            "[ALPHA] Latency in seconds of evaluating a single candidate placement when "
            "scheduling pod groups, by result. 'feasible' means the pod group fit into the "
            "placement, while 'infeasible' means it did not.",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15),
            registry=placement_registry)
        # v1.37's workload preemption figures, also only with GenericWorkload on:
        # for a pod group's preemption ("podgroup") and a single pod's ("pod").
        workload_registry = r if generic_workload and v137 else CollectorRegistry()
        self._workload_preemption_attempts = Counter(
            "scheduler_workload_preemption_attempts_total",
            "[ALPHA] Total preemption attempts initiated by workload (including pod groups) "
            "in the cluster till now.",
            ["result"], registry=workload_registry)
        self._workload_preemption_victims = Histogram(
            "scheduler_workload_preemption_victims",
            "[ALPHA] Number of pod preemption victims caused by workload preemption.",
            buckets=exponential_buckets(1, 2, 11), registry=workload_registry)
        self._preemption_workload_disruptions = Histogram(
            "scheduler_preemption_workload_disruptions",
            "[ALPHA] Number of workload preemption units being preempted. A single "
            "preemption unit can be all pods in a pod group (in case of DisruptionMode=all), "
            "or a single pod (in case of DisruptionMode=single).",
            ["preemptor"], buckets=exponential_buckets(1, 2, 11), registry=workload_registry)
        self._preemption_evaluation_duration = Histogram(
            "scheduler_preemption_evaluation_duration_seconds",
            "[ALPHA] Duration in seconds for identifying the target preemption victims.",
            ["preemptor", "result"], buckets=exponential_buckets(0.001, 2, 16),
            registry=workload_registry)
        self._preemption_execution_duration = Histogram(
            "scheduler_preemption_execution_duration_seconds",
            "[ALPHA] Duration in seconds for preempting the target preemption victims. With "
            "async preemption enabled, preemption execution does not block the scheduling "
            "of other pods.",
            ["preemptor", "result"], buckets=exponential_buckets(0.001, 2, 16),
            registry=workload_registry)
        self._preemption_pdb_violations = Counter(
            "scheduler_preemption_pdb_violations_total",
            "[ALPHA] Total number of pod disruption budget violations caused by preemption.",
            ["preemptor"], registry=workload_registry)
        self._algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            f"[{'BETA' if v137 else 'ALPHA'}] Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._extender_request = Histogram(
            "kpysched_extender_request_duration_seconds",
            "Latency of one scheduler extender call in seconds (connection, request and "
            "answer), by extender (its urlPrefix) and verb (filter, prioritize, preempt, "
            "bind); scheduler_scheduling_algorithm_duration_seconds includes the filter "
            "and prioritize calls.",
            ["extender", "verb"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._event_handling = Histogram(
            "scheduler_event_handling_duration_seconds",
            "[ALPHA] Event handling latency in seconds.",
            ["event"], buckets=exponential_buckets(0.0001, 2, 12), registry=r)
        self._scheduled_after_flush = Counter(
            "scheduler_pod_scheduled_after_flush_total",
            "[ALPHA] Number of pods that were successfully scheduled after being flushed from "
            f"{'unschedulableEntities' if v137 else 'unschedulablePods'} due to timeout. This "
            "metric helps detect potential queueing hint misconfigurations or event handling "
            "issues.", registry=r)
        self._plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            f"[{'BETA' if v137 else 'ALPHA'}] Duration for running a plugin at a specific "
            "extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20), registry=r)
        # Every hint call is observed (upstream records each, asynchronously).
        self._queueing_hint_duration = Histogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "[ALPHA] Duration for running a queueing hint function of a plugin.",
            ["plugin", "event", "hint"],
            buckets=exponential_buckets(0.00001, 1.5, 20), registry=r)
        # The volume binder's own (volumebinding/metrics), registered with the others;
        # v1.36.4 never counts into the cache one, so it has no samples.
        Counter(
            "scheduler_volume_binder_cache_requests_total",
            "[ALPHA] Total number for request volume binding cache",
            ["operation"], registry=r)
        self._volume_stage_errors = Counter(
            "scheduler_volume_scheduling_stage_error_total",
            "[ALPHA] Volume scheduling stage error count",
            ["operation"], registry=r)
        self._cache_size = Gauge(
            "scheduler_cache_size",
            "[ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"], registry=r)

        # --- leader election (client-go's adapter in component-base) ---------------
        self._leader = Gauge(
            "leader_election_master_status",
            "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 "
            "indicates backup, 1 indicates master. 'name' is the string used to identify the "
            "lease. Please make sure to group by name.",
            ["name"], registry=r)
        self._leader_slowpath = Counter(
            "leader_election_slowpath_total",
            "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is "
            "the string used to identify the lease. Please make sure to group by name.",
            ["name"], registry=r)

        # --- kpysched's own --------------------------------------------------------
        self._watch_restarts = Counter(
            "kpysched_informer_watch_restarts_total",
            "Watches an informer opened again after the previous one ended, by resource.",
            ["resource"], registry=r)
        self._relists = Counter(
            "kpysched_informer_relists_total",
            "Full lists an informer made (the first one and each after a 410 Gone), by "
            "resource.", ["resource"], registry=r)
        self._watch_stalls = Counter(
            "kpysched_informer_watch_stalls_total",
            "Watches dropped because no event or bookmark arrived within the progress "
            "deadline (a dead connection), each followed by a relist, by resource.",
            ["resource"], registry=r)
        self._informer_unavailable = Gauge(
            "kpysched_informer_unavailable",
            "1 while an optional informer reads its resource as empty because the API "
            "server refuses (403: RBAC) or does not serve (404) its list, else 0; by "
            "resource (only optional ones, e.g. devicetaintrules).",
            ["resource"], registry=r)
        self._bind_duration = Histogram(
            "kpysched_bind_duration_seconds",
            "Latency of the Bind call to the API server in seconds, by result.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self._unschedulable_keys: set[tuple[str, str]] = set()
        self._bind_failures = Counter(
            "kpysched_bind_failures_total",
            "Binding cycles that failed, by the stage that failed (Permit, PreBind, Bind).",
            ["reason"], registry=r)
        self._loop_lag = Histogram(
            "kpysched_event_loop_lag_seconds",
            "How late the asyncio event loop woke a sleeping task, in seconds: time the loop "
            "spent busy with other work.",
            buckets=exponential_buckets(0.0005, 2, 14), registry=r)
        self._events_dropped = Counter(
            "kpysched_events_dropped_total",
            "Events not written because the recorder's bounded queue was full, by reason.",
            ["reason"], registry=r)
        self._write_queue = Gauge(
            "kpysched_write_queue_length",
            "Writes waiting to go out, by queue: events (bounded, overflow dropped) and "
            "pod_status (at most one coalesced patch per pod).", ["queue"], registry=r)
        for queue in ("events", "pod_status"):
            self._write_queue.labels(queue).set(0)
        self._slow_cycles = Counter(
            "kpysched_slow_cycles_total",
            "Scheduling cycles that held the scheduling loop longer than the slow-cycle "
            "threshold, by profile and by the plugin and extension point that took the "
            "most of it.", ["profile", "plugin", "extension_point"], registry=r)
        self._serving_throttled = Counter(
            "kpysched_serving_throttled_seconds_total",
            "Seconds the secure port's thread slept because it had used its share of CPU "
            "(kpysched/serving/cpu_budget.py): time clients of the port waited so the "
            "scheduling loop kept the GIL.", registry=r)

        # Series dashboards expect from the start, as upstream's queue and cache set them.
        for queue in PENDING_QUEUES + (GROUP_MEMBER_QUEUES if v137 else ()):
            self._pending.labels(queue).set(0)
        for kind in CACHE_TYPES:
            self._cache_size.labels(kind).set(0)

    # --- exposition --------------------------------------------------------------

    async def publish_forever(self, refresh: Callable[[], None],
                              interval: float = PUBLISH_SECONDS) -> None:
        """Run as a supervised task on the scheduler's loop: call `refresh` (which
        copies gauges off the queue, cache and informers) every `interval` seconds.
        render() runs on the health server's thread and must never walk the loop's
        live dictionaries itself; it reads only what the loop published here."""
        while True:
            try:
                refresh()
            except Exception:
                # Stale gauges are better than no scheduler: report it and go on.
                log.exception("metrics.publish_failed")
            await asyncio.sleep(interval)

    def render(self) -> bytes:
        """The registry in Prometheus text format 0.0.4 (see CONTENT_TYPE), with bucket
        bounds spelled as Go spells them so `le` matchers in dashboards keep working.
        Safe from any thread: prometheus_client locks each metric, and the text kept
        between reads (metrics_text.py) is only ever looked up or added to whole."""
        exposed = _WithoutCreated(self.registry, self.disabled)
        return _WHOLE_LE.sub(rb'le="\1"', self._text.render(exposed.collect()))

    # --- scheduling attempts ---------------------------------------------------------

    def schedule_attempt(self, result: AttemptResult, profile: str, seconds: float) -> None:
        """One scheduling attempt ended (profile_metrics.go observeScheduleAttemptAndLatency)."""
        self._attempt_duration.labels(result, profile).observe(seconds)
        self._schedule_attempts.labels(result, profile).inc()

    def pod_scheduled(self, attempts: int, since_first_attempt: float | None,
                      *, after_flush: bool = False) -> None:
        """A pod was assumed on a node: its attempt count and end-to-end (SLI) latency,
        measured from the first time it entered the queue (None when unknown)."""
        self._pod_attempts.observe(attempts)
        if since_first_attempt is not None:
            self._sli_duration.labels(attempts_label(attempts)).observe(since_first_attempt)
        if after_flush:
            self._scheduled_after_flush.inc()

    def algorithm_duration(self, seconds: float) -> None:
        self._algorithm_duration.observe(seconds)

    def extender_request(self, extender: str, verb: str, seconds: float) -> None:
        self._extender_request.labels(extender, verb).observe(seconds)

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One pod-group cycle: result is scheduled, unschedulable, waiting_on_preemption
        or error (upstream's labels)."""
        self._pod_group_attempts.labels(result, profile).inc()
        self._pod_group_attempt_duration.labels(result, profile).observe(seconds)

    def pod_group_algorithm_duration(self, seconds: float) -> None:
        self._pod_group_algorithm_duration.observe(seconds)

    def placements_generated(self, profile: str, count: int) -> None:
        self._generated_placements.labels(profile).inc(count)

    def placement_evaluated(self, result: str, profile: str, seconds: float) -> None:
        """One placement tried: result is feasible or infeasible (upstream's labels)."""
        self._placement_evaluations.labels(result, profile).inc()
        self._placement_evaluation_duration.labels(result, profile).observe(seconds)

    def event_handled(self, event: str, seconds: float) -> None:
        self._event_handling.labels(event).observe(seconds)

    # --- preemption ------------------------------------------------------------------

    def preemption_attempt(self) -> None:
        self._preemption_attempts.inc()

    def preemption_victims(self, count: int) -> None:
        self._preemption_victims.observe(count)

    def workload_preemption_attempt(self, result: str) -> None:
        """DefaultPreemption's PodGroupPostFilter ran; `result` its status code (Success,
        Unschedulable, ...)."""
        self._workload_preemption_attempts.labels(result).inc()

    def preemption_evaluation(self, preemptor: str, result: str, seconds: float) -> None:
        """Finding the victims took `seconds`; preemptor is "pod" or "podgroup"."""
        self._preemption_evaluation_duration.labels(preemptor, result).observe(seconds)

    def group_preemption_chosen(self, victims: int, disruptions: int,
                                pdb_violations: int) -> None:
        """A pod group's preemption is carried out (upstream's observeVictims): its
        victims, the units among them that disrupt a pod group, and its budget
        violations. (A single pod's victims are counted by preemption_victims where
        they are evicted, its violations by preemption_disruptions.)"""
        self._workload_preemption_victims.observe(victims)
        self.preemption_disruptions("podgroup", disruptions, pdb_violations)

    def preemption_disruptions(self, preemptor: str, disruptions: int,
                               pdb_violations: int) -> None:
        """observeVictims without the victims (a single pod's are counted by
        preemption_victims where they are evicted)."""
        if disruptions > 0:
            self._preemption_workload_disruptions.labels(preemptor).observe(disruptions)
        if pdb_violations > 0:
            self._preemption_pdb_violations.labels(preemptor).inc(pdb_violations)

    def preemption_execution(self, preemptor: str, result: str, seconds: float) -> None:
        """Removing the victims took `seconds`; result is success or error."""
        self._preemption_execution_duration.labels(preemptor, result).observe(seconds)

    # --- queue -----------------------------------------------------------------------

    def set_pending(self, counts: Mapping[str, int]) -> None:
        """Pods per queue: keys among active, backoff, unschedulable, gated."""
        for queue, count in counts.items():
            if queue not in PENDING_QUEUES:
                raise ValueError(f"unknown queue {queue!r}: expected one of {PENDING_QUEUES}")
            self._pending.labels(queue).set(count)
            # As v1.37, each queued pod is also a queued entity of type "pod" (until
            # set_queued_entities counts the pods in groups as their groups).
            self._set_queued_entity(queue, "pod", count)

    def incoming(self, queue: str, event: str) -> None:
        """A pod entered `queue` (active, backoff, unschedulable, gated) because of `event`
        (upstream's event label, e.g. PodAdd, ScheduleAttemptFailure, NodeAdd)."""
        self._incoming.labels(queue, event).inc()

    def incoming_entity(self, queue: str, event: str, kind: str = "pod") -> None:
        """As v1.37 counts an entity entering `queue`: a pod outside any group ("pod")
        or a pod group moving as one ("podgroup"); the queue decides when
        (SchedulingQueue.incoming_entities)."""
        self._incoming_entities.labels(queue, event, kind).inc()

    def set_queued_entities(self, counts: Mapping[tuple[str, str], int]) -> None:
        """v1.37's entities per (queue, type), after set_pending: pods in pod groups
        counted as their groups (SchedulingQueue.pending_entities)."""
        for (queue, kind), count in counts.items():
            self._set_queued_entity(queue, kind, count)

    def _set_queued_entity(self, queue: str, kind: str, count: int) -> None:
        if self.release < V1_37:
            return
        if count or (queue, kind) in self._queued_entity_series:
            self._queued_entity_series.add((queue, kind))
            self._queued_entities.labels(queue, kind).set(count)

    def queueing_hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """A plugin's queueing hint ran for one pod on one event (`event` is the event's
        upstream label, `hint` Queue, QueueSkip or Error)."""
        self._queueing_hint_duration.labels(plugin, event, hint).observe(seconds)

    def set_unschedulable(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Pods waiting in the unschedulable queue per (rejecting plugin, profile);
        pairs no longer present drop to 0, as upstream's gauge does."""
        seen = set(counts)
        for key in self._unschedulable_keys - seen:
            self._unschedulable.labels(*key).set(0)
        for (plugin, profile), count in counts.items():
            self._unschedulable.labels(plugin, profile).set(count)
        self._unschedulable_keys = self._unschedulable_keys | seen

    def unschedulable_changed(self, plugins: Iterable[str], profile: str, delta: int) -> None:
        """A pod entered (+1) or left (-1) the unschedulable pods, rejected by `plugins`."""
        for plugin in plugins:
            self._unschedulable.labels(plugin, profile).inc(delta)

    # --- framework -------------------------------------------------------------------

    def extension_point_duration(self, extension_point: str, status: str, profile: str,
                                 seconds: float) -> None:
        """`status` is the Status code as upstream spells it (Code.label: "Success")."""
        key = (extension_point, status, profile)
        self._child(0, self._extension_point_duration, key).observe(seconds)

    def _child(self, series: int, metric: Any, key: tuple[str, str, str]) -> Any:
        """The label child of `metric` for `key`, found once (see _children)."""
        child = self._children.get((series, key))
        if child is None:
            child = self._children[(series, key)] = metric.labels(*key)
        return child

    def should_sample(self) -> bool:
        """Whether this scheduling cycle records per-plugin durations: upstream samples
        pluginMetricsSamplePercent (10 %) of cycles to keep the overhead small."""
        return self._rng.randrange(100) < self._sample_percent

    def plugin_duration(self, plugin: str, extension_point: str, status: str,
                        seconds: float) -> None:
        """Record only in cycles where should_sample() said so."""
        key = (plugin, extension_point, status)
        self._child(1, self._plugin_duration, key).observe(seconds)

    def plugin_evaluated(self, plugin: str, extension_point: str, profile: str,
                         count: int = 1) -> None:
        """Upstream counts PreFilter, Filter, PreScore and Score runs (one per node for Filter
        and Score), whether or not the cycle is sampled."""
        key = (plugin, extension_point, profile)
        self._child(2, self._plugin_evaluation, key).inc(count)

    def permit_wait(self, result: str, seconds: float) -> None:
        """`result` is the Status code label of WaitOnPermit's outcome."""
        self._permit_wait.labels(result).observe(seconds)

    @contextmanager
    def in_flight(self, operation: str) -> Iterator[None]:
        """Counts a running task under scheduler_goroutines{operation} (upstream uses
        "binding" and "prioritizing_extender") while the block runs."""
        gauge = self._goroutines.labels(operation)
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()

    # --- cache -----------------------------------------------------------------------

    def set_cache_size(self, *, nodes: int, pods: int, assumed_pods: int) -> None:
        self._cache_size.labels("nodes").set(nodes)
        self._cache_size.labels("pods").set(pods)
        self._cache_size.labels("assumed_pods").set(assumed_pods)

    # --- leader election ---------------------------------------------------------------

    def set_leader(self, name: str, leading: bool) -> None:
        self._leader.labels(name).set(1.0 if leading else 0.0)

    def leader_slowpath(self, name: str) -> None:
        self._leader_slowpath.labels(name).inc()

    # --- kpysched's own ------------------------------------------------------------------

    def watch_restarted(self, resource: str) -> None:
        self._watch_restarts.labels(resource).inc()

    def relisted(self, resource: str) -> None:
        self._relists.labels(resource).inc()

    def slow_cycle(self, profile: str, plugin: str, extension_point: str) -> None:
        self._slow_cycles.labels(profile, plugin, extension_point).inc()

    def watch_stalled(self, resource: str) -> None:
        self._watch_stalls.labels(resource).inc()

    def set_informer_unavailable(self, resource: str, unavailable: bool) -> None:
        self._informer_unavailable.labels(resource).set(1.0 if unavailable else 0.0)

    def bind_finished(self, result: Literal["success", "error"], seconds: float) -> None:
        self._bind_duration.labels(result).observe(seconds)

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        self._volume_stage_errors.labels(operation).inc()

    def bind_failed(self, reason: str) -> None:
        self._bind_failures.labels(reason).inc()

    def serving_throttled(self, seconds: float) -> None:
        self._serving_throttled.inc(seconds)

    def event_dropped(self, reason: str) -> None:
        self._events_dropped.labels(reason).inc()

    def set_write_queues(self, *, events: int, pod_status: int) -> None:
        self._write_queue.labels("events").set(events)
        self._write_queue.labels("pod_status").set(pod_status)

    async def loop_lag_monitor(self, interval: float = 0.5) -> None:
        """Run as a supervised task: every `interval` seconds, observe how much later than
        asked the loop woke us. Lag means some callback held the loop (a slow scheduling
        cycle, a big decode), delaying every watch, bind and probe behind it."""
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time() + interval
            await asyncio.sleep(interval)
            self._loop_lag.observe(max(0.0, loop.time() - asked))


class NoMetrics(SchedulerMetrics):
    """Counts nothing: what a scheduler built without metrics (tests, `kpysched
    simulate`) is given, so the code that counts never asks whether it may."""

    def __init__(self) -> None:  # no registry, no collectors
        self.disabled = frozenset()

    def render(self) -> bytes:
        return b""

    def should_sample(self) -> bool:
        return False

    @contextmanager
    def in_flight(self, operation: str) -> Iterator[None]:
        yield

    async def publish_forever(self, refresh: Callable[[], None],
                              interval: float = PUBLISH_SECONDS) -> None:
        return

    async def loop_lag_monitor(self, interval: float = 0.5) -> None:
        return

    def _ignore(self, *_: Any, **__: Any) -> None:
        return None

    schedule_attempt = pod_scheduled = algorithm_duration = _ignore
    pod_group_attempt = pod_group_algorithm_duration = event_handled = _ignore
    placements_generated = placement_evaluated = _ignore
    preemption_attempt = preemption_victims = set_pending = incoming = _ignore
    incoming_entity = workload_preemption_attempt = preemption_evaluation = _ignore
    set_queued_entities = _ignore
    group_preemption_chosen = preemption_execution = preemption_disruptions = _ignore
    queueing_hint = set_unschedulable = unschedulable_changed = _ignore
    extension_point_duration = plugin_duration = plugin_evaluated = permit_wait = _ignore
    set_cache_size = set_leader = leader_slowpath = watch_restarted = relisted = _ignore
    slow_cycle = watch_stalled = bind_finished = volume_scheduling_stage_failed = _ignore
    bind_failed = serving_throttled = event_dropped = set_write_queues = _ignore
    extender_request = set_informer_unavailable = _ignore
