"""Framework: one profile's plugins, run extension point by extension point.

Built from an EffectiveProfile (ordered plugin names per extension point,
weights, validated args) and the registry. It holds no cluster state of its own:
every decision reads the snapshot the scheduler hands it through the Handle.
The runners of the extension points live in scheduling_points.py and
binding_points.py; this module builds the plugins and checks the profile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kpysched.framework import interfaces as fw
from kpysched.framework import placement
from kpysched.framework.cluster_events import (
    EVERYTHING,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Resource,
    with_hints,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime.binding_points import BindingPoints
from kpysched.framework.runtime.guard import plugin_raised
from kpysched.framework.runtime.handle import ProfileHandle
from kpysched.framework.runtime.instrumented import MetricsSink
from kpysched.framework.runtime.placement_points import PlacementPoints
from kpysched.framework.runtime.scheduling_points import SchedulingPoints
from kpysched.framework.runtime.waiting import PodInPreBind, WaitingPod
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

# Only plugins at these points can reject a pod, so only their registrations count
# (upstream's shouldHaveEnqueueExtensions).
_REJECTING_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit")
_ANYTHING = (ClusterEventWithHint(EVERYTHING),)
_NODE_TAINT_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)


# v1.37's buildQueueingHintMap dropped the stopgap below (see _registrations).
_STOPGAP_DROPPED_IN = 37


def _registrations(plugin: fw.Plugin, release: int) -> tuple[ClusterEventWithHint, ...]:
    """The plugin's events with hints, plus (v1.36 only) upstream's stopgap for
    kubernetes#109437: a plugin that hears Node/Add but not Node/UpdateNodeTaint also
    hears the latter, without a hint. v1.37 registers only what the plugin asks for."""
    registered = with_hints(plugin.events_to_register())
    if release >= _STOPGAP_DROPPED_IN:
        return registered
    node_actions = ActionType(0)
    for registration in registered:
        if registration.event.resource is Resource.NODE:
            node_actions |= registration.event.action
    if ActionType.ADD & node_actions and not ActionType.UPDATE_NODE_TAINT & node_actions:
        registered += (ClusterEventWithHint(_NODE_TAINT_UPDATE),)
    return registered


class FrameworkError(ValueError):
    """A profile that cannot be built (unknown plugin, wrong extension point)."""


@dataclass(slots=True)
class ProfileSpec:
    """What the framework needs from configuration for one profile."""

    scheduler_name: str
    plugins: Mapping[str, Sequence[str]]  # extension point -> ordered plugin names
    weights: Mapping[str, int] = field(default_factory=dict)
    args: Mapping[str, Any] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    # PlacementScore plugin -> weight (TopologyAwareWorkloadScheduling).
    placement_weights: Mapping[str, int] = field(default_factory=dict)


class Framework(SchedulingPoints, BindingPoints, PlacementPoints):
    def __init__(self, profile: ProfileSpec, registry: Mapping[str, PluginSpec],
                 shared: fw.SharedHandle, metrics: MetricsSink) -> None:
        self.profile_name = profile.scheduler_name
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        self.shared = shared
        # kpysched.metrics.NoMetrics where nothing is kept (the simulator, tests).
        self.metrics = metrics
        self.handle: fw.Handle = ProfileHandle(shared, self)
        handle = self.handle
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.pods_in_pre_bind: dict[str, PodInPreBind] = {}
        self._instances: dict[str, Any] = {}
        names = {name for point in profile.plugins.values() for name in point}
        for name in sorted(names):
            spec = registry.get(name)
            if spec is None:
                raise FrameworkError(f"profile {profile.scheduler_name!r}: unknown plugin {name!r}")
            self._instances[name] = spec.factory(profile.args.get(name), handle)
        self.weights = {name: profile.weights.get(name, 1) for name in profile.plugins.get(
            "score", ())}

        def instances(point: str, protocol: type[Any]) -> list[Any]:
            chosen = []
            for name in profile.plugins.get(point, ()):
                plugin = self._instances[name]
                if protocol not in type(plugin).__mro__:
                    raise FrameworkError(
                        f"profile {profile.scheduler_name!r}: plugin {name!r} does not "
                        f"implement {point}")
                chosen.append(plugin)
            return chosen

        self.pre_enqueue_plugins: list[fw.PreEnqueuePlugin] = instances(
            "preEnqueue", fw.PreEnqueuePlugin)
        sorters = instances("queueSort", fw.QueueSortPlugin)
        if len(sorters) != 1:
            raise FrameworkError(
                f"profile {profile.scheduler_name!r}: exactly one queueSort plugin is required, "
                f"got {len(sorters)}")
        self.queue_sort: fw.QueueSortPlugin = sorters[0]
        self.pre_filter_plugins: list[fw.PreFilterPlugin] = instances(
            "preFilter", fw.PreFilterPlugin)
        # The PreFilter plugins with AddPod/RemovePod, asked per pod in preemption's
        # dry runs and the nominated-pods pass: found once here, not per call.
        self.pre_filter_extension_plugins: list[fw.PreFilterPlugin] = [
            p for p in self.pre_filter_plugins if fw.PreFilterExtensions in type(p).__mro__]
        self.filter_plugins: list[fw.FilterPlugin] = instances("filter", fw.FilterPlugin)
        self.node_only_filter_names: frozenset[str] = frozenset(
            p.NAME for p in self.filter_plugins if fw.NodeOnlyFilterPlugin in type(p).__mro__)
        self.pod_totals_filter_names: frozenset[str] = frozenset(
            p.NAME for p in self.filter_plugins if fw.PodTotalsFilterPlugin in type(p).__mro__)
        self.vector_filter_plugins: list[fw.VectorFilterPlugin] = [
            cast(fw.VectorFilterPlugin, p) for p in self.filter_plugins
            if fw.VectorFilterPlugin in type(p).__mro__]
        self.post_filter_plugins: list[fw.PostFilterPlugin] = instances(
            "postFilter", fw.PostFilterPlugin)
        self.pre_score_plugins: list[fw.PreScorePlugin] = instances("preScore", fw.PreScorePlugin)
        self.score_plugins: list[fw.ScorePlugin] = instances("score", fw.ScorePlugin)
        self.reserve_plugins: list[fw.ReservePlugin] = instances("reserve", fw.ReservePlugin)
        self.permit_plugins: list[fw.PermitPlugin] = instances("permit", fw.PermitPlugin)
        self.pre_bind_plugins: list[fw.PreBindPlugin] = instances("preBind", fw.PreBindPlugin)
        self.bind_plugins: list[fw.BindPlugin] = instances("bind", fw.BindPlugin)
        self.post_bind_plugins: list[fw.PostBindPlugin] = instances(
            "postBind", fw.PostBindPlugin)
        self.placement_generate_plugins: list[placement.PlacementGeneratePlugin] = instances(
            "placementGenerate", placement.PlacementGeneratePlugin)
        self.placement_score_plugins: list[placement.PlacementScorePlugin] = instances(
            "placementScore", placement.PlacementScorePlugin)
        self.placement_weights = {name: profile.placement_weights.get(name, 1)
                                  for name in profile.plugins.get("placementScore", ())}
        if not self.bind_plugins:
            raise FrameworkError(
                f"profile {profile.scheduler_name!r}: at least one bind plugin is needed")
        rejecting = {name for point in _REJECTING_POINTS
                     for name in profile.plugins.get(point, ())}
        self._registrations: dict[str, tuple[ClusterEventWithHint, ...]] = {
            name: _registrations(self._instances[name], shared.features.release)
            for name in sorted(rejecting)}

    def plugin(self, name: str) -> Any:
        return self._instances[name]

    @property
    def registrations(self) -> dict[str, tuple[ClusterEventWithHint, ...]]:
        """Plugin name -> the events (and hints) that may undo its rejections (upstream's
        queueingHintMap of this profile, by plugin)."""
        return dict(self._registrations)

    def hints_for(self, plugin: str) -> tuple[ClusterEventWithHint, ...]:
        # A plugin we do not know (e.g. from a removed profile) wakes on anything.
        return self._registrations.get(plugin, _ANYTHING)

    # --- queue-time points -------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue_plugins:
            try:
                status = plugin.pre_enqueue(pod)
            except Exception as error:
                status = plugin_raised(plugin.NAME, "PreEnqueue", error)
            if not status.ok:
                return status.with_plugin(plugin.NAME)
        return SUCCESS

    def less(self, a: fw.QueuedPodInfo, b: fw.QueuedPodInfo) -> bool:
        return self.queue_sort.less(a, b)

    # --- scheduling cycle --------------------------------------------------------

