"""Wiring: build the API client, frameworks, cache, queue, informers and the loop,
and run them as one supervised task group until a signal asks us to stop."""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import structlog
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import ConfigException
from prometheus_client import Gauge

from kpysched import gc_policy
from kpysched.api.client import RawApi, make_api_client
from kpysched.api.response import TRANSPORT_ERROR
from kpysched.cache.cache import Cache
from kpysched.cache.dump import cache_dump, dump_from
from kpysched.cache.pod_groups import membership
from kpysched.config import EffectiveProfile, SchedulerConfiguration, Settings, kubeconfig_path
from kpysched.config.features import (
    COMPOSITE_POD_GROUP,
    NEWEST_RELEASE,
    RELEASES,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    Features,
)
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.release import Choice, for_server, undetected
from kpysched.config.written import effective_document
from kpysched.decisions.api import DecisionLookup, PodAnswer
from kpysched.decisions.endpoint import cleared_lease_annotations
from kpysched.decisions.store import DecisionStore
from kpysched.extenders.registry import Extenders
from kpysched.extenders.steps import EXTENDER_PLUGIN
from kpysched.framework.cluster_events import (
    EVERYTHING,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from kpysched.framework.cluster_events import Resource as EventResource
from kpysched.framework.deferred_resize import IN_PLACE_RESIZE_PREEMPTION_GATE
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import Status
from kpysched.informers import Reflector, node_reflector, pod_reflector
from kpysched.informers.listers import Index, Listers
from kpysched.leader import LeaderElector, LeaseLostError
from kpysched.metrics import NoMetrics, SchedulerMetrics
from kpysched.objects import api
from kpysched.objects import coscheduling as cs_api
from kpysched.objects.coscheduling import POD_GROUP_LABEL
from kpysched.objects.pod import PodInfo
from kpysched.queue.hints import QueueingHints
from kpysched.queue.scheduling_queue import UNSCHEDULABLE_MAX_SECONDS, SchedulingQueue
from kpysched.scheduling.algorithm import Algorithm
from kpysched.scheduling.attempt import Attempts
from kpysched.scheduling.binding_cycle import BindingCycle
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.coscheduling_groups import CoschedulingGroups
from kpysched.scheduling.event_handlers import NodeEventHandler, PodEventHandler
from kpysched.scheduling.group_state import group_state_of
from kpysched.scheduling.pod_group_cycle import PodGroupCycle
from kpysched.scheduling.preemption_sink import ImmediatePreemption
from kpysched.scheduling.scheduler import DEFAULT_SLOW_CYCLE_SECONDS, Scheduler
from kpysched.scheduling.shared_handle import SchedulerHandle
from kpysched.serving import DelegationOptions, TlsOptions
from kpysched.serving.requestheader import RequestHeaderOptions
from kpysched.serving.server import HealthCheck, Server, ServerConfig, progress_check
from kpysched.serving.server_thread import ServerThread
from kpysched.writes.binding import Binder
from kpysched.writes.bundle import Writes
from kpysched.writes.leader_label import LeaderLabel

log = structlog.get_logger(__name__)

SHUTDOWN_GRACE_SECONDS = 10.0
NAMESPACE_CHANGE = ClusterEvent(EventResource.NAMESPACE, ActionType.ADD | ActionType.UPDATE,
                                "NamespaceChange")


# scheduler-plugins' plugin of this name turns on its PodGroup API (by name: the
# wiring does not reach into plugins).
COSCHEDULING = "Coscheduling"


def uses_coscheduling(profiles: Sequence[EffectiveProfile]) -> bool:
    """Whether any profile enables Coscheduling: then its PodGroup CRD is read."""
    return any(COSCHEDULING in profile.args for profile in profiles)


def build_scheduler(
    config: SchedulerConfiguration,
    profiles: Sequence[EffectiveProfile],
    registry: Mapping[str, PluginSpec],
    raw: RawApi,
    listers: Listers | None = None,
    metrics: SchedulerMetrics | None = None,
    *,
    max_unschedulable_seconds: float = UNSCHEDULABLE_MAX_SECONDS,
    decision_records: int = 0,
    tie_break_seed: int | None = None,
    features: Features = DEFAULT_FEATURES,
    slow_cycle_seconds: float = DEFAULT_SLOW_CYCLE_SECONDS,
) -> Scheduler:
    """Build the loop and everything it drives, each object whole and in order: the
    handle (the plugins' view), the frameworks built with it, the queue, the writers,
    the cycle context, then the steps and the loop."""
    coscheduling = uses_coscheduling(profiles)
    if listers is None:
        listers = Listers(generic_workload=features.generic_workload, coscheduling=coscheduling,
                          device_taint_rules=features.release >= 37, release=features.release,
                          composite_pod_groups=features.enabled(COMPOSITE_POD_GROUP))
    if metrics is None:
        metrics = NoMetrics()
    binder = Binder(raw, release=features.release)
    handle = SchedulerHandle(binder, listers, raw, features)
    frameworks = {
        profile.scheduler_name: Framework(
            ProfileSpec(profile.scheduler_name, profile.plugins, profile.score_weights,
                        profile.args, profile.percentage_of_nodes_to_score,
                        profile.placement_score_weights),
            registry, handle, metrics)
        for profile in profiles
    }
    queue = _build_queue(config, frameworks, handle, metrics, features,
                         max_unschedulable_seconds)
    # When a preemption finishes, its preemptor's PreEnqueue hold must be re-checked.
    writes = Writes.build(raw, binder, queue.nominator, on_preempted=queue.activate_gated,
                          pod_groups=features.generic_workload, coscheduling=coscheduling,
                          drops=metrics, release=features.release)
    group_of = membership(generic_workload=features.generic_workload,
                          coscheduling=coscheduling)
    context = CycleContext(
        frameworks, queue, Cache(group_of=group_of),
        Algorithm(config.percentage_of_nodes_to_score, rng=random.Random(tie_break_seed),
                  extenders=Extenders(config.extenders, metrics.extender_request)
                  if config.extenders else None),
        writes, metrics,
        ImmediatePreemption(frameworks, writes.preemption, metrics,
                            lambda pods: queue.activate([pod.uid for pod in pods])),
        decisions=DecisionStore(decision_records) if decision_records > 0 else None)
    # The frameworks (built with the handle) are in the context: only now can the
    # handle reach them, the queue and the snapshot.
    handle.serve(context)
    attempts = Attempts(context)
    binding = BindingCycle(context, attempts)
    pod_groups = None
    if group_of is not None:
        groups = None
        if coscheduling:
            assert listers.coscheduling is not None, "Coscheduling needs its PodGroup listers"
            assert writes.coscheduling is not None
            groups = CoschedulingGroups(listers.coscheduling, writes.events,
                                        writes.coscheduling, context.cache.is_assumed)
        pod_groups = PodGroupCycle(context, attempts, binding, groups)
    return Scheduler(context, attempts, binding, pod_groups=pod_groups,
                     slow_cycle_seconds=slow_cycle_seconds)


def _build_queue(config: SchedulerConfiguration, frameworks: Mapping[str, Framework],
                 handle: SchedulerHandle, metrics: SchedulerMetrics, features: Features,
                 max_unschedulable_seconds: float) -> SchedulingQueue:
    """The one queue all profiles share (so they must share one QueueSort: checked in
    config), asking each pod's framework at PreEnqueue."""
    first = next(iter(frameworks.values()))

    def pre_enqueue(pod: PodInfo) -> Status:
        return frameworks[pod.pod.spec.scheduler_name].run_pre_enqueue(pod)

    # With extenders, upstream registers their pseudo-plugin for every cluster event: a
    # pod an extender rejected may fit after any change.
    extender = ({EXTENDER_PLUGIN: (ClusterEventWithHint(EVERYTHING),)}
                if config.extenders else {})
    hints = QueueingHints(
        {name: {**framework.registrations, **extender} for name, framework in frameworks.items()},
        # Timing each hint costs a clock read per call: only when someone counts.
        observe=None if isinstance(metrics, NoMetrics) else metrics.queueing_hint)
    return SchedulingQueue(
        first.less, pre_enqueue, hints,
        initial_backoff_seconds=config.pod_initial_backoff_seconds,
        max_backoff_seconds=config.pod_max_backoff_seconds,
        max_unschedulable_seconds=max_unschedulable_seconds,
        pod_groups=features.generic_workload,
        namespace_labels=handle.namespace_labels,
        release=features.release,
        deferred_resize=features.enabled(IN_PLACE_RESIZE_PREEMPTION_GATE),
        tree_root=handle.composite_root,
    )


def _wire_metrics(metrics: SchedulerMetrics, scheduler: Scheduler,
                  reflectors: Sequence[Reflector[Any]]) -> Callable[[], None]:
    """The refresh the loop runs every second: gauges and counters read off the queue,
    cache, writers and informers. It must run on the loop, never on the scrape thread,
    which would race the dictionaries it walks."""
    seen_incoming: dict[tuple[str, str], int] = {}
    seen_entities: dict[tuple[str, str, str], int] = {}
    seen_restarts: dict[str, int] = {}
    seen_relists: dict[str, int] = {}
    seen_stalls: dict[str, int] = {}

    def refresh() -> None:
        queue, cache = scheduler.queue, scheduler.cache
        metrics.set_pending(queue.pending_counts())
        metrics.set_queued_entities(queue.pending_entities())
        metrics.set_unschedulable(queue.unschedulable_by_plugin())
        metrics.set_cache_size(nodes=cache.node_count(), pods=cache.pod_count(),
                               assumed_pods=cache.assumed_count())
        writes = scheduler.context.writes
        metrics.set_write_queues(events=writes.events.queued, pod_status=writes.status.queued)
        for key, total in list(queue.incoming.items()):
            for _ in range(total - seen_incoming.get(key, 0)):
                metrics.incoming(*key)
            seen_incoming[key] = total
        for entity_key, total in list(queue.incoming_entities.items()):
            for _ in range(total - seen_entities.get(entity_key, 0)):
                metrics.incoming_entity(*entity_key)
            seen_entities[entity_key] = total
        for reflector in reflectors:
            name = reflector.resource
            for _ in range(reflector.watch_restarts - seen_restarts.get(name, 0)):
                metrics.watch_restarted(name)
            seen_restarts[name] = reflector.watch_restarts
            for _ in range(reflector.relists - seen_relists.get(name, 0)):
                metrics.relisted(name)
            seen_relists[name] = reflector.relists
            for _ in range(reflector.stalls - seen_stalls.get(name, 0)):
                metrics.watch_stalled(name)
            seen_stalls[name] = reflector.stalls
            if reflector.optional_impact is not None:
                metrics.set_informer_unavailable(name, reflector.unavailable is not None)

    return refresh


# How long start-up waits for the API server's /version before taking the newest release:
# one try for --write-config-to; the scheduler itself keeps asking for a while (an API
# server restarting as kpysched starts must not make it pick the wrong release).
VERSION_TIMEOUT_SECONDS = 10.0
RUN_VERSION_DEADLINE_SECONDS = 60.0
VERSION_RETRY_SECONDS = 2.0


async def detect_release(kubeconfig: Path | None, master: str | None,
                         timeout: float = VERSION_TIMEOUT_SECONDS,
                         deadline: float = 0.0) -> Choice:
    """The release to behave as from the API server's /version (config.release.for_server,
    which raises ReleaseError for a control plane older than the oldest release); the
    newest when there is no API server to ask (no credentials, or no answer: asked
    again every VERSION_RETRY_SECONDS until `deadline` seconds have passed)."""
    try:
        api_client = await make_api_client(kubeconfig, master)
    except (ConfigException, OSError, ValueError) as error:  # no credentials to use
        return undetected(f"no API server configured: {error}")
    loop = asyncio.get_running_loop()
    give_up = loop.time() + deadline
    async with api_client:
        raw = RawApi(api_client)
        while True:
            response = await raw.request("GET", "/version", timeout=timeout, throttle=False)
            # Only no answer, or a server not ready yet, is worth asking again.
            worth_retrying = response.status in (TRANSPORT_ERROR, 429) or response.status >= 500
            if not worth_retrying or loop.time() + VERSION_RETRY_SECONDS > give_up:
                break
            log.info("release.waiting_for_api_server", status=response.status)
            await asyncio.sleep(VERSION_RETRY_SECONDS)
    if not response.ok:
        return undetected(f"GET /version: {response.status} "
                          f"{response.body[:200].decode(errors='replace')}")
    try:
        info = msgspec.json.decode(response.body)
    except msgspec.DecodeError as error:
        return undetected(f"GET /version: not JSON ({error})")
    if not isinstance(info, dict):
        return undetected("GET /version: not a JSON object")
    return for_server(info)


def log_release(choice: Choice) -> None:
    """The release chosen, logged once at start as release.selected (its fields are
    stable: tests and operators read them), with a warning when it is not the
    cluster's own."""
    log.info("release.selected", release=choice.version,
             kube_scheduler=RELEASES[choice.release], source=choice.source,
             api_server=choice.server_version)
    if choice.warning is not None:
        log.warning("release.skew" if choice.source == "cluster" else "release.undetected",
                    reason=choice.warning)


def export_release(metrics: SchedulerMetrics, features: Features) -> None:
    """The release kpysched behaves as, as kube-scheduler v1.37.2 exposes its emulation
    (component-base compatversion): version_info{component="kube", binary, emulation,
    min_compat} = 1, and its gates (featuregate): kubernetes_feature_enabled{name,
    stage}. kpysched's "binary" is the newest release it implements; emulation is the
    release chosen (flag or cluster), min_compat its default (one minor before)."""
    Gauge("version_info", "[ALPHA] Provides the compatibility version info of the "
          "component. The component label is the name of the component, usually kube, but "
          "is relevant for aggregated-apiservers.",
          ["component", "binary", "emulation", "min_compat"], registry=metrics.registry,
          ).labels("kube", RELEASES[NEWEST_RELEASE].removeprefix("v"), features.version,
                   f"1.{features.release - 1}").set(1)
    # component-base's featuregate metrics: every gate of the release, its stage and
    # whether it is on.
    enabled = Gauge("kubernetes_feature_enabled", "[BETA] This metric records the data "
                    "about the stage and enablement of a k8s feature.", ["name", "stage"],
                    registry=metrics.registry)
    for gate, (stage, on) in features.all_gates().items():
        enabled.labels(gate, stage).set(1 if on else 0)


async def run(
    settings: Settings,
    config: SchedulerConfiguration,
    profiles: Sequence[EffectiveProfile],
    registry: Mapping[str, PluginSpec],
    features: Features | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until leadership is lost (exit 1).
    `features`: the release chosen at start and its gates (settings' by default)."""
    gc_policy.tune()
    api_client = await make_api_client(kubeconfig_path(settings, config), settings.master)
    async with api_client:
        connection = config.client_connection
        raw = RawApi(api_client, qps=connection.qps, burst=connection.burst)
        if features is None:
            features = settings.features
        coscheduling = uses_coscheduling(profiles)
        if coscheduling and not await _coscheduling_crd_served(raw):
            return 1
        # The podgroup metrics count Coscheduling's group cycles too.
        metrics = SchedulerMetrics(disabled=frozenset(settings.disabled_metrics),
                                   generic_workload=features.generic_workload or coscheduling,
                                   release=features.release,
                                   topology_aware=features.enabled(
                                       TOPOLOGY_AWARE_WORKLOAD_SCHEDULING))
        export_release(metrics, features)
        listers = Listers(generic_workload=features.generic_workload,
                          coscheduling=coscheduling,
                          device_taint_rules=features.release >= 37,
                          composite_pod_groups=features.enabled(COMPOSITE_POD_GROUP),
                          release=features.release)
        scheduler = build_scheduler(
            config, profiles, registry, raw, listers, metrics,
            max_unschedulable_seconds=settings.pod_max_in_unschedulable_pods_duration,
            decision_records=settings.decision_records,
            tie_break_seed=settings.tie_break_seed, features=features,
            slow_cycle_seconds=settings.slow_cycle_seconds)
        # A new member may complete its gang: the held members' PreEnqueue is asked again.
        informers = _connect_informers(api_client, scheduler, listers, settings,
                                       gang_scheduling=features.gang_scheduling or coscheduling)
        publish_metrics = _wire_metrics(metrics, scheduler, informers.all)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        leadership = _Leadership(api_client, raw, config, settings, metrics, scheduler,
                                 informers.pod_handler, profiles)
        if leadership.label is not None:
            await leadership.label.mark(False)  # a restarted container's pod may still say so
        server = _build_server(settings, metrics, scheduler, informers, leadership, stop,
                               effective_document(config, kubeconfig_path(settings, config),
                                                  features.release, profiles=profiles,
                                                  features=features))
        log.info("scheduler.starting", profiles=[p.scheduler_name for p in profiles],
                 leader_elect=leadership.elector is not None)
        exit_code = 0
        # As kube-scheduler: --secure-port=0 serves no endpoint at all.
        http = ServerThread(server) if settings.secure_port != 0 else None
        if http is not None:
            http.start()
        if leadership.elector is not None:
            # Clears the serving address earlier versions wrote for `kpysched explain`:
            # anyone able to write the Lease could point it elsewhere and collect the
            # credentials explain sent there. Explain now goes through the API server's
            # aggregation layer (kpysched.decisions.api) and reads nothing from the Lease.
            leadership.elector.annotate(cleared_lease_annotations())
        try:
            await _supervise(scheduler, informers, leadership, metrics, publish_metrics, stop)
        except* LeaseLostError as lost:
            # As upstream: a leader that cannot renew stops at once and exits non-zero.
            log.error("leader.lost", reason=str(lost.exceptions[0]))
            exit_code = 1
        finally:
            if http is not None:
                http.stop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
    log.info("scheduler.stopped", exit_code=exit_code)
    return exit_code


async def _coscheduling_crd_served(raw: RawApi) -> bool:
    """False (and why, logged) when the API server does not serve scheduler-plugins'
    PodGroups; True when it does or cannot be asked now."""
    if await _serves(raw, cs_api.API_VERSION, "podgroups") is not False:
        return True
    # Without its CRD the PodGroup informer could never sync, and kpysched would
    # sit unready with no word why (as kube-scheduler with an uninstalled CRD).
    log.error("coscheduling.crd_missing",
              reason=f"a profile enables Coscheduling, but the API server does not "
                     f"serve podgroups.{cs_api.API_VERSION}: install the PodGroup "
                     "CRD (deploy/crds/scheduling.x-k8s.io_podgroups.yaml, or the "
                     "chart's coscheduling.installCRD=true) and start again")
    return False


@dataclass(slots=True)
class _Informers:
    pod_handler: PodEventHandler
    pods: Reflector[Any]
    nodes: Reflector[Any]
    all: list[Reflector[Any]]  # the two above and the listers'

    def synced(self) -> bool:
        return all(r.has_synced for r in self.all)


def _connect_informers(api_client: ApiClient, scheduler: Scheduler, listers: Listers,
                       settings: Settings, *, gang_scheduling: bool) -> _Informers:
    """The informers, each feeding the cache and the queue (the listers' changes move
    the pods they may help)."""
    move_on_event = scheduler.queue.move_on_event
    # A namespace's labels decide namespaceSelector matches (InterPodAffinity).
    listers.namespaces = Index(
        lambda _, old, new: move_on_event(NAMESPACE_CHANGE, old, new))
    listers.storage.requeue_with(move_on_event)
    listers.resources.requeue_with(move_on_event)
    if listers.workloads is not None:
        listers.workloads.requeue_with(move_on_event)
    if listers.coscheduling is not None:
        listers.coscheduling.requeue_with(move_on_event)
    pod_handler = PodEventHandler(scheduler, scheduler.context.writes.events,
                                  gang_scheduling=gang_scheduling)
    # Scheduler extenders are sent whole pods and nodes: keep the JSON they came in.
    extenders = scheduler.context.algorithm.extenders
    pods = pod_reflector(api_client, pod_handler,
                         keep_raw=extenders.raw_pods.keep if extenders else None)
    scheduler.context.pods = lambda: pods.store
    nodes = node_reflector(api_client, NodeEventHandler(scheduler),
                           keep_raw=extenders.raw_nodes.keep if extenders else None)
    if extenders is not None:
        extenders.raw_pods.follow(lambda: pods.store)
        extenders.raw_nodes.follow(lambda: nodes.store)
    reflectors: list[Reflector[Any]] = [nodes, pods, *listers.reflectors(api_client)]
    groups = scheduler.pod_groups.coscheduling if scheduler.pod_groups else None
    if groups is not None:
        # Group members in every phase, finished ones too, for the PodGroup's status.
        reflectors.append(pod_reflector(
            api_client, groups, field_selector=None,
            label_selector=POD_GROUP_LABEL))
    for reflector in reflectors:
        reflector.progress_deadline = settings.watch_progress_deadline_seconds
    return _Informers(pod_handler, pods, nodes, reflectors)


class _Leadership:
    """Whether this replica may schedule: the elector (None when leader election is
    off), the label the leader puts on its pod, and what leading runs."""

    def __init__(self, api_client: ApiClient, raw: RawApi, config: SchedulerConfiguration,
                 settings: Settings, metrics: SchedulerMetrics, scheduler: Scheduler,
                 pod_handler: PodEventHandler, profiles: Sequence[EffectiveProfile]) -> None:
        self._scheduler = scheduler
        self._pod_handler = pod_handler
        self._profiles = profiles
        election = config.leader_election
        self.elector = LeaderElector(
            api_client, namespace=election.resource_namespace, name=election.resource_name,
            lease_duration=election.lease_duration, renew_deadline=election.renew_deadline,
            retry_period=election.retry_period, on_started_leading=self.lead, metrics=metrics,
        ) if election.leader_elect else None
        # Only a replica among others needs its leadership visible to the Service.
        self.label = LeaderLabel.of(raw, settings.pod_namespace, settings.pod_name) \
            if self.elector is not None and settings.enable_decision_endpoint else None

    def leading(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def checks(self) -> list[HealthCheck]:
        return [HealthCheck("leaderElection", self.elector.check)] if self.elector else []

    async def lead(self) -> None:
        """Runs only while this replica may schedule (holds the Lease)."""
        scheduler, elector, label = self._scheduler, self.elector, self.label
        log.info("scheduler.started", profiles=[p.scheduler_name for p in self._profiles])
        self._pod_handler.on_leading()
        labelling = None if label is None else asyncio.get_running_loop().create_task(
            label.mark(True), name="leader label")
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(scheduler.run(), name="scheduling loop")
                group.create_task(scheduler.queue.run_flushers(), name="queue flushers")
        finally:
            scheduler.stop()
            if elector is not None and elector.lost:
                await scheduler.abort_writes()  # another replica may lead already
            else:
                # Only placements hold up the Lease's release: queued events and
                # status patches are drained after it (_supervise), so a standby takes
                # over within a retryPeriod even when the event queue is long.
                await scheduler.drain_placements(SHUTDOWN_GRACE_SECONDS)
            if labelling is not None and label is not None:
                labelling.cancel()
                await label.mark(False)


def _build_server(settings: Settings, metrics: SchedulerMetrics, scheduler: Scheduler,
                  informers: _Informers, leadership: _Leadership,
                  stop: asyncio.Event, effective_config: Mapping[str, Any]) -> Server:
    """The secure port's endpoints: health, metrics, decisions, the cache dump and
    /configz (`effective_config`, the document --write-config-to writes)."""

    def waiting() -> int:
        """Pods the loop owes a decision: queued ones plus the one in the cycle."""
        if not leadership.leading():
            return 0
        return scheduler.queue.pending_counts()["active"] + (
            1 if scheduler.busy_since is not None else 0)

    def last_progress() -> float:
        busy = scheduler.busy_since
        return busy if busy is not None else scheduler.last_progress

    leader_checks = leadership.checks()
    events = scheduler.context.writes.events
    return Server(
        server_config(settings), metrics,
        healthz=leader_checks,
        livez=[progress_check(last_progress, waiting,
                              stall_seconds=settings.liveness_stall_seconds)],
        readyz=[*leader_checks,
                HealthCheck.of("sched-handler-sync", informers.synced,
                               "handlers are not fully synchronized"),
                HealthCheck.of("shutdown", lambda: not stop.is_set(),
                               "process is shutting down")],
        decisions=_decision_lookup(scheduler, leadership.leading)
        if settings.enable_decision_endpoint
        else None,
        cache_dump=dump_from(asyncio.get_running_loop(), lambda: cache_dump(
            scheduler.cache, scheduler.queue.pending_counts,
            scheduler.bindings_in_flight, lambda: events.in_flight))
        if settings.enable_cache_endpoint else None,
        effective_config=effective_config)


async def _supervise(scheduler: Scheduler, informers: _Informers, leadership: _Leadership,
                     metrics: SchedulerMetrics, publish_metrics: Callable[[], None],
                     stop: asyncio.Event) -> None:
    """Informers and metrics in the background; once synced, lead (or campaign) until
    a signal; then hand over the Lease and drain the writes."""
    elector = leadership.elector
    async with asyncio.TaskGroup() as group:
        background = [group.create_task(r.run(), name=f"informer {r.resource}")
                      for r in informers.all]
        background.append(group.create_task(metrics.loop_lag_monitor(),
                                            name="loop lag monitor"))
        background.append(group.create_task(metrics.publish_forever(publish_metrics),
                                            name="metrics publisher"))
        await _wait_synced_or_stopped(stop, *(r.synced for r in informers.all))
        work: asyncio.Task[None] | None = None
        if not stop.is_set():
            log.info("scheduler.informers_synced", nodes=len(informers.nodes.store),
                     pods=len(informers.pods.store))
            gc_policy.freeze_synced_cache()
            work = group.create_task(elector.run() if elector else leadership.lead(),
                                     name="leader election" if elector else "lead")
            await _first_of(stop.wait(), work)
        log.info("scheduler.stopping")
        if work is not None and not work.done():
            if elector is not None:
                await elector.release()  # drains bindings, then hands the Lease over
            else:
                work.cancel()
            await asyncio.gather(work, return_exceptions=True)
        elif work is not None and work.exception() is not None:
            raise work.exception()  # type: ignore[misc]
        await scheduler.drain_writes(SHUTDOWN_GRACE_SECONDS)
        extenders = scheduler.context.algorithm.extenders
        if extenders is not None:
            await extenders.close()  # their kept-alive connections and loop thread
        for task in background:
            task.cancel()


async def _serves(raw: RawApi, group_version: str, resource: str) -> bool | None:
    """Whether the API server serves `resource` in `group_version` (discovery); None when
    it cannot be asked now (the informers will keep trying)."""
    response = await raw.request("GET", f"/apis/{group_version}")
    if response.status == 404:
        return False
    if not response.ok:
        return None
    try:
        listed = msgspec.json.decode(response.body)
    except msgspec.DecodeError:
        return None
    resources = listed.get("resources", []) if isinstance(listed, dict) else []
    return any(isinstance(r, dict) and r.get("name") == resource for r in resources)


def _decision_lookup(scheduler: Scheduler, leading: Callable[[], bool]) -> DecisionLookup:
    """None while not leading: a standby says so (503) rather than "not found"."""
    store = scheduler.context.decisions
    if store is None:
        log.warning("decisions.endpoint_empty", reason="--decision-records=0: no attempt "
                    "is recorded, so explain shows only where a pending pod waits")

    def lookup(namespace: str, name: str) -> PodAnswer | None:
        if not leading():
            return None
        decisions = [] if store is None else store.for_pod(namespace, name)
        uid = decisions[-1]["uid"] if decisions else ""
        pod = _pod(scheduler, namespace, name, uid)
        uid = uid or (pod.metadata.uid if pod is not None else "")
        return PodAnswer(decisions, _read_racing(lambda: _queue_state(scheduler, uid)),
                         _read_racing(lambda: None if pod is None
                                      else group_state_of(scheduler, pod)))

    return lookup


# The server's thread reads the queue, the cache and the pod store while the scheduling
# loop changes them: a read that meets a dict or set changing size raises RuntimeError
# and is simply tried again.
_RACE_RETRIES = 3


def _read_racing(read: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
    for _ in range(_RACE_RETRIES):
        try:
            return read()
        except RuntimeError:
            continue
    return None


def _pod(scheduler: Scheduler, namespace: str, name: str, uid: str) -> api.Pod | None:
    """The pod from the pod informer's store: by uid when a record names it, else by
    name (a pod never tried: gated, or waiting its first turn)."""
    pods = scheduler.context.pods
    if pods is None:
        return None
    for _ in range(_RACE_RETRIES):
        try:
            store = pods()
            if uid:
                return store.get(uid)
            return next((pod for pod in store.values()
                         if pod.metadata.name == name and pod.metadata.namespace == namespace),
                        None)
        except RuntimeError:
            continue
    return None


def _queue_state(scheduler: Scheduler, uid: str) -> dict[str, Any] | None:
    state = scheduler.queue.state_of(uid) if uid else None
    return None if state is None else state.to_json()


def server_config(settings: Settings) -> ServerConfig:
    """The secure port as configured; plain HTTP only with --insecure-serving."""
    if settings.insecure_serving:
        log.warning("server.insecure", reason="--insecure-serving: plain HTTP, no "
                    "authentication or authorization; for local runs only")
        tls, access = None, None
    else:
        tls = TlsOptions(settings.tls_cert_file, settings.tls_private_key_file,
                         settings.cert_dir, settings.tls_min_version)
        access = DelegationOptions(
            authentication_kubeconfig=settings.authentication_kubeconfig,
            authorization_kubeconfig=settings.authorization_kubeconfig,
            token_cache_ttl=settings.authentication_token_webhook_cache_ttl,
            allowed_cache_ttl=settings.authorization_webhook_cache_authorized_ttl,
            denied_cache_ttl=settings.authorization_webhook_cache_unauthorized_ttl,
            always_allow_paths=settings.authorization_always_allow_paths,
            client_ca_file=settings.client_ca_file,
            skip_lookup=settings.authentication_skip_lookup,
            tolerate_lookup_failure=settings.authentication_tolerate_lookup_failure,
            request_header=RequestHeaderOptions(
                settings.requestheader_client_ca_file, settings.requestheader_allowed_names,
                settings.requestheader_username_headers, settings.requestheader_uid_headers,
                settings.requestheader_group_headers,
                settings.requestheader_extra_headers_prefix))
    return ServerConfig(settings.bind_address, settings.secure_port, tls, access,
                        reuse_address=settings.permit_address_sharing,
                        reuse_port=settings.permit_port_sharing)


async def _first_of(waitable: Awaitable[Any], task: asyncio.Task[None]) -> None:
    waiter = asyncio.ensure_future(waitable)
    try:
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


async def _wait_synced_or_stopped(stop: asyncio.Event, *synced: asyncio.Event) -> None:
    async def all_synced() -> None:
        for event in synced:
            await event.wait()

    waiters = {asyncio.ensure_future(all_synced()), asyncio.ensure_future(stop.wait())}
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
