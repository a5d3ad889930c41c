"""From a profile as written to the plugins each extension point runs.

This is upstream's v1 defaulting (default_plugins.go: mergePlugins) followed by
what its framework does when it builds a profile (framework/runtime/framework.go:
updatePluginList, expandMultiPointPlugins, getValidScoreWeights) and profile.go's
cross-profile check, carried over rule for rule:

- The defaults live in multiPoint. A user's multiPoint entry for a default plugin
  replaces it in place; other user entries are appended; `disabled` removes
  defaults by name, or all of them with "*".
- Each multiPoint plugin joins every extension point it implements, unless that
  point disables it (or "*"). An entry in a specific point takes precedence (its
  weight wins) and runs first; the rest of that point's entries run last.
- A score weight of 0 or none means 1.

kpysched additions: a default plugin missing from the registry is dropped with a
warning, never silently; a plugin the user names that is missing is an error.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_snake

from kpysched.config.errors import ConfigError, plural, problem, validation_problems
from kpysched.config.extenders import ignored_resources
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.features import (
    GANG_SCHEDULING,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    Features,
)
from kpysched.config.scheduler_config import (
    API_VERSION,
    PluginConfig,
    Plugins,
    Profile,
    SchedulerConfiguration,
)
from kpysched.framework.registry import EXTENSION_POINTS, PluginSpec

NODE_RESOURCES_FIT = "NodeResourcesFit"

# Upstream v1.36 getDefaultPlugins() with v1.36's default feature gates: DynamicResources
# (DynamicResourceAllocation, GA) and NodeDeclaredFeatures (beta, on); GangScheduling and
# TopologyAwareWorkloadScheduling are alpha and off. None = no weight given (scores 1).
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    ("NodeDeclaredFeatures", None),
)
DEFERRED_POD_SCHEDULING = "DeferredPodScheduling"
# v1.37's: NodeName runs before NodeUnschedulable; NodeDeclaredFeatures (GA) and
# DynamicResources (GA) as in v1.36. DeferredPodScheduling joins before NodeResourcesFit
# with InPlacePodVerticalScalingSchedulerPreemption on (alpha, off): default_multi_point.
DEFAULT_MULTI_POINT_V1_37: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    *DEFAULT_MULTI_POINT[4:],
)
RELEASE_MULTI_POINT: Mapping[int, tuple[tuple[str, int | None], ...]] = {
    36: DEFAULT_MULTI_POINT, 37: DEFAULT_MULTI_POINT_V1_37}


def default_multi_point(features: Features = DEFAULT_FEATURES) -> tuple[
        tuple[str, int | None], ...]:
    """Upstream's getDefaultPlugins() of `features.release` under its gates
    (applyFeatureGates): DeferredPodScheduling inserted before NodeResourcesFit in
    v1.37 with InPlacePodVerticalScalingSchedulerPreemption on, GangScheduling appended
    when it is on (its gate in v1.36, GenericWorkload in v1.37), then, in v1.37 with
    TopologyAwareWorkloadScheduling on, TopologyPlacementGenerator and
    PodGroupPodsCount (weight 1)."""
    plugins = list(RELEASE_MULTI_POINT[features.release])
    if features.release >= 37 and features.enabled(IPPVS_PREEMPTION):
        at = next((k for k, (name, _) in enumerate(plugins) if name == NODE_RESOURCES_FIT),
                  len(plugins))
        plugins.insert(at, (DEFERRED_POD_SCHEDULING, None))
    if features.gang_scheduling:
        plugins.append((GANG_SCHEDULING, None))
    if features.release >= 37 and features.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        # applyTopologyAwareWorkloadScheduling: the placement generator and scorer.
        plugins += [(TOPOLOGY_PLACEMENT_GENERATOR, None), (POD_GROUP_PODS_COUNT, 1)]
    return tuple(plugins)


IPPVS_PREEMPTION = "InPlacePodVerticalScalingSchedulerPreemption"
TOPOLOGY_PLACEMENT_GENERATOR = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
# Every in-tree plugin name kube-scheduler knows, per release
# (pkg/scheduler/framework/plugins/names of each).
RELEASE_UPSTREAM_PLUGINS: Mapping[int, frozenset[str]] = {
    36: frozenset(name for name, _ in DEFAULT_MULTI_POINT) | {
        "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"},
    37: frozenset(name for name, _ in DEFAULT_MULTI_POINT) | {
        "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount",
        DEFERRED_POD_SCHEDULING},
}
UPSTREAM_PLUGINS = RELEASE_UPSTREAM_PLUGINS[36]
# Extension points of v1 added after the oldest release: the release whose decoder
# first reads them (an older one rejects the field as unknown).
POINTS_SINCE: Mapping[str, int] = {"podGroupPostFilter": 37}
# Rejected by upstream's v1 validation: "was invalid in version kubescheduler.config.k8s.io/v1".
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
# Extension points of v1 that no kpysched plugin can implement.
UNSUPPORTED_POINTS = frozenset(Plugins.point_names()) - set(EXTENSION_POINTS) - {"multiPoint"}


@dataclass(frozen=True, slots=True)
class EffectiveProfile:
    """What one profile runs, after defaulting and multiPoint expansion."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None  # None: use the global setting
    # Extension point (as named in the YAML: "preFilter") -> plugin names, in running order.
    plugins: Mapping[str, tuple[str, ...]]
    score_weights: Mapping[str, int]  # for each plugin of plugins["score"]
    # Every plugin to instantiate -> its validated args (None if it takes none).
    args: Mapping[str, BaseModel | None]
    # Default plugins left out because the registry lacks them (also logged as a warning).
    unavailable_defaults: tuple[str, ...] = ()
    # For each plugin of plugins["placementScore"] (TopologyAwareWorkloadScheduling).
    placement_score_weights: Mapping[str, int] = field(default_factory=dict)

    def enabled(self, point: str) -> tuple[str, ...]:
        return self.plugins[point]


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    weight: int | None
    path: str | None  # where the user wrote it; None for a default


def build_profiles(
    config: SchedulerConfiguration, registry: Mapping[str, PluginSpec],
    features: Features = DEFAULT_FEATURES,
) -> list[EffectiveProfile]:
    """Every profile of a validated configuration; ConfigError lists what is wrong."""
    problems: list[str] = []
    profiles: list[EffectiveProfile] = []
    for index, profile in enumerate(config.profiles):
        builder = _ProfileBuilder(index, profile, registry, features,
                                  ignored_resources(config.extenders))
        built = builder.build()
        problems.extend(builder.problems)
        if built is not None:
            profiles.append(built)
    if not problems:
        problems.extend(_queue_sort_differences(profiles))
    if problems:
        raise ConfigError(problems)
    return profiles


def _queue_sort_differences(profiles: list[EffectiveProfile]) -> list[str]:
    """All profiles share one queue, so they must sort it alike (upstream's profile.go)."""
    problems = []
    first = profiles[0]
    for index, profile in enumerate(profiles[1:], start=1):
        (name,), (first_name,) = profile.plugins["queueSort"], first.plugins["queueSort"]
        if name != first_name:
            problems.append(problem(
                f"profiles[{index}].plugins.queueSort",
                f'must use the same queueSort plugin as profiles[0] ("{first_name}"), '
                f'got "{name}"',
            ))
        elif profile.args[name] != first.args[first_name]:
            problems.append(problem(
                f"profiles[{index}].pluginConfig",
                f'args of queueSort plugin "{name}" must be the same as in profiles[0]',
            ))
    return problems


class _ProfileBuilder:
    def __init__(self, index: int, profile: Profile, registry: Mapping[str, PluginSpec],
                 features: Features = DEFAULT_FEATURES,
                 extender_ignored_resources: Sequence[str] = ()) -> None:
        self.profile = profile
        # Extenders' ignoredByScheduler resources replace NodeResourcesFit's
        # ignoredResources in every profile, as upstream's buildExtenders does.
        self.extender_ignored_resources = list(extender_ignored_resources)
        self.features = features
        self.defaults = default_multi_point(features)
        self.upstream = RELEASE_UPSTREAM_PLUGINS[features.release]
        self.registry = registry
        self.base = f"profiles[{index}]"
        self.name = profile.scheduler_name or ""
        self.problems: list[str] = []
        # Upstream plugins named explicitly but missing here -> where they were named.
        self.missing_upstream: dict[str, str] = {}
        self._points = {name: frozenset(spec.extension_points())
                        for name, spec in registry.items()}

    def build(self) -> EffectiveProfile | None:
        self._check_names()
        if self.problems:
            return None
        multi_point, unavailable = self._merged_multi_point()
        unavailable = tuple(dict.fromkeys([*unavailable, *self.missing_upstream]))
        if unavailable:
            structlog.get_logger().warning(
                "config.default_plugins_unavailable", profile=self.name,
                plugins=list(unavailable),
                reason="not in the plugin registry; the profile runs without them",
            )
        plugins = {point: self._expand(point, multi_point) for point in EXTENSION_POINTS}
        if self.problems:
            return None
        self._check_counts(plugins)
        weights = self._score_weights(plugins["score"], multi_point)
        placement_weights = self._score_weights(plugins["placementScore"], multi_point,
                                                "placementScore")
        # Every plugin named anywhere is built (as upstream's pluginsNeeded), even one
        # that every point it implements disables.
        needed = list(dict.fromkeys(
            [entry.name for entry in multi_point]
            + [entry.name for point in EXTENSION_POINTS
               for entry in self.profile.plugins.point(point).enabled
               if entry.name in self.registry]
        ))
        args = self._args(needed)
        if GANG_SCHEDULING in needed and not self.features.gang_scheduling:
            # Its PodGroups are served, and informed, only with the gates on: without
            # them the plugin could only hold every member forever.
            gates = ("GenericWorkload" if self.features.release >= 37
                     else "GenericWorkload and GangScheduling")
            flag = ",".join(f"{gate}=true" for gate in gates.split(" and "))
            self._fail(f"{self.base}.plugins", f"{GANG_SCHEDULING} needs the feature "
                       f"gate{'s' if ' and ' in gates else ''} {gates} on "
                       f"(--feature-gates={flag})")
        if self.problems:
            return None
        return EffectiveProfile(
            scheduler_name=self.name,
            percentage_of_nodes_to_score=self.profile.percentage_of_nodes_to_score,
            plugins=plugins,
            score_weights=weights,
            args=args,
            unavailable_defaults=unavailable,
            placement_score_weights=placement_weights,
        )

    def _fail(self, path: str, reason: str) -> None:
        self.problems.append(problem(path, reason))

    def _check_names(self) -> None:
        written = self.profile.plugins.model_fields_set
        for point, since in POINTS_SINCE.items():
            if self.features.release >= since or to_snake(point) not in written:
                continue
            plugin_set = self.profile.plugins.point(point)
            if plugin_set.enabled or plugin_set.disabled:
                self._fail(f"{self.base}.plugins.{point}", "unknown field (kube-scheduler "
                           f"v1.{self.features.release} has no {point}; it came in "
                           f"v1.{since})")
            else:
                # What a v1.37 --write-config-to writes ("{}"): kube-scheduler v1.36's
                # strict decoder refuses even that; kpysched lets a file written by the
                # newer release load as the older one, and says so.
                structlog.get_logger().warning(
                    "config.field_ignored", field=f"{self.base}.plugins.{point}",
                    reason=f"empty, and kube-scheduler v1.{self.features.release} has no "
                    f"{point} (it came in v1.{since}; v1.{self.features.release} itself "
                    "would refuse the field)")
        for point in Plugins.point_names():
            plugin_set = self.profile.plugins.point(point)
            for k, entry in enumerate(plugin_set.enabled):
                path = f"{self.base}.plugins.{point}.enabled[{k}].name"
                if entry.name in REMOVED_PLUGINS:
                    self._fail(path, _removed(entry.name))
                elif point in UNSUPPORTED_POINTS:
                    self._fail(path, f"the {point} extension point is not supported by kpysched")
                elif entry.name not in self.registry:
                    if entry.name in self.upstream:
                        # An upstream plugin kpysched lacks (e.g. the volume plugins in a
                        # config copied from kube-scheduler): run without it, and say so.
                        self.missing_upstream.setdefault(entry.name, path)
                    else:
                        self._fail(path, self._unknown(entry.name))
            for k, entry in enumerate(plugin_set.disabled):
                # Disabling a plugin kpysched lacks anyway is harmless; a name nobody knows
                # is a typo that would leave the intended plugin running.
                if (entry.name != "*" and entry.name not in self.registry
                        and entry.name not in self.upstream):
                    self._fail(f"{self.base}.plugins.{point}.disabled[{k}].name",
                               self._unknown(entry.name))

    def _unknown(self, name: str) -> str:
        if name in self.upstream:
            return f'plugin "{name}" is not available in kpysched (not in the plugin registry)'
        reason = f'unknown plugin "{name}"'
        close = difflib.get_close_matches(name, [*self.registry, *self.upstream], n=1)
        return reason + (f' (did you mean "{close[0]}"?)' if close else "")

    def _merged_multi_point(self) -> tuple[list[_Entry], tuple[str, ...]]:
        """Upstream's mergePluginSet of the defaults and the user's multiPoint."""
        custom = self.profile.plugins.multi_point
        disabled = {entry.name for entry in custom.disabled}
        path = f"{self.base}.plugins.multiPoint.enabled"
        # A name given twice replaces the default with its last entry; the other is appended
        # (and reported as a duplicate by _expand, as upstream's framework reports it).
        last_index = {entry.name: k for k, entry in enumerate(custom.enabled)}
        merged: list[_Entry] = []
        replaced: set[int] = set()
        unavailable: list[str] = []
        if "*" not in disabled:
            for name, weight in self.defaults:
                if name in disabled:
                    continue
                if name not in self.registry:
                    if name in last_index:
                        replaced.add(last_index[name])
                    unavailable.append(name)
                elif name in last_index:
                    k = last_index[name]
                    replaced.add(k)
                    merged.append(_Entry(name, custom.enabled[k].weight, f"{path}[{k}]"))
                elif name in self.registry:
                    merged.append(_Entry(name, weight, None))
                else:
                    unavailable.append(name)
        merged.extend(
            _Entry(entry.name, entry.weight, f"{path}[{k}]")
            for k, entry in enumerate(custom.enabled)
            if k not in replaced and entry.name in self.registry
        )
        return merged, tuple(unavailable)

    def _expand(self, point: str, multi_point: list[_Entry]) -> tuple[str, ...]:
        plugin_set = self.profile.plugins.point(point)
        specific: list[str] = []
        for k, entry in enumerate(plugin_set.enabled):
            path = f"{self.base}.plugins.{point}.enabled[{k}].name"
            if entry.name not in self.registry:
                continue  # an upstream plugin kpysched lacks: warned about above
            if point not in self._points[entry.name]:
                self._fail(path, f'plugin "{entry.name}" does not implement {point}')
            elif entry.name in specific:
                self._fail(path, f'plugin "{entry.name}" is enabled twice for {point}')
            else:
                specific.append(entry.name)
        disabled = {entry.name for entry in plugin_set.disabled}
        if "*" in disabled:
            return tuple(specific)
        overrides: set[str] = set()
        expanded: list[str] = []
        for candidate in multi_point:
            name = candidate.name
            if point not in self._points[name] or name in disabled:
                continue
            if name in specific:
                overrides.add(name)
            elif name in expanded:
                self._fail(f"{candidate.path or self.base + '.plugins.multiPoint'}.name",
                           f'plugin "{name}" is enabled twice in multiPoint')
            else:
                expanded.append(name)
        first = [name for name in specific if name in overrides]
        last = [name for name in specific if name not in overrides]
        return (*first, *expanded, *last)

    def _check_counts(self, plugins: Mapping[str, tuple[str, ...]]) -> None:
        queue_sort = plugins["queueSort"]
        if len(queue_sort) != 1:
            got = f": {plural(queue_sort)}" if queue_sort else ""
            self._fail(f"{self.base}.plugins.queueSort",
                       f"exactly one queueSort plugin must be enabled, got {len(queue_sort)}{got}")
        if not plugins["bind"]:
            self._fail(f"{self.base}.plugins.bind", "at least one bind plugin must be enabled")

    def _score_weights(self, score: tuple[str, ...], multi_point: list[_Entry],
                       point: str = "score") -> dict[str, int]:
        """A score (or placementScore) point entry's weight wins over the multiPoint
        one; 0 or none means 1."""
        path = f"{self.base}.plugins.{point}.enabled"
        entries = [_Entry(entry.name, entry.weight, f"{path}[{k}]")
                   for k, entry in enumerate(self.profile.plugins.point(point).enabled)]
        weights: dict[str, int] = {}
        for entry in [*entries, *multi_point]:
            if entry.name not in score or entry.name in weights:
                continue
            if entry.weight is not None and entry.weight < 0:
                # Upstream fails too, if obscurely: "total score of Score plugins could overflow".
                self._fail(f"{entry.path}.weight", f"must not be negative (got {entry.weight})")
            weights[entry.name] = entry.weight or 1
        return {name: weights[name] for name in score}

    def _args(self, needed: list[str]) -> dict[str, BaseModel | None]:
        written: dict[str, tuple[str, PluginConfig]] = {}
        for j, config in enumerate(self.profile.plugin_config):
            path = f"{self.base}.pluginConfig[{j}]"
            if config.name in written:
                self._fail(f"{path}.name", f'duplicate pluginConfig for plugin "{config.name}" '
                           f"(first at {written[config.name][0]})")
                continue
            written[config.name] = (path, config)
            if config.name in REMOVED_PLUGINS:
                self._fail(f"{path}.name", _removed(config.name))
            elif config.name not in self.registry and config.name not in self.upstream:
                self._fail(f"{path}.name", self._unknown(config.name))
            elif config.name not in needed:
                # Upstream accepts (and ignores) args of a plugin it does not run, but still
                # validates them; so does kpysched, and says so.
                available = config.name in self.registry
                if available:
                    self._parse_args(config.name, config.args, path)
                structlog.get_logger().warning(
                    "config.plugin_args_unused", profile=self.name, plugin=config.name,
                    reason="the plugin is not enabled in this profile" if available
                    else "the plugin is not available in kpysched",
                )
        args: dict[str, BaseModel | None] = {}
        for name in needed:
            if name in written:
                path, config = written[name]
                args[name] = self._parse_args(name, config.args, path)
            else:
                args[name] = self._parse_args(name, None, None)
        return args

    def _parse_args(
        self, name: str, raw: Mapping[str, object] | None, path: str | None
    ) -> BaseModel | None:
        spec = self.registry[name]
        data = dict(raw or {})
        if name == NODE_RESOURCES_FIT and self.extender_ignored_resources:
            data["ignoredResources"] = self.extender_ignored_resources
        args_path = f"{path}.args" if path else f"{self.base}.pluginConfig"
        api_version, kind = data.pop("apiVersion", None), data.pop("kind", None)
        allowed = [API_VERSION, *([spec.args_api_version] if spec.args_api_version else [])]
        if api_version is not None and api_version not in allowed:
            wanted = " or ".join(f'"{version}"' for version in allowed)
            self._fail(f"{args_path}.apiVersion", f'must be {wanted} (got "{api_version}")')
        if kind is not None and kind != f"{name}Args":
            self._fail(f"{args_path}.kind", f'args for plugin {name} must be of kind '
                       f'"{name}Args" (got "{kind}")')
        if spec.args_model is None:
            if data:
                structlog.get_logger().warning(
                    "config.plugin_args_ignored", profile=self.name, plugin=name,
                    reason="the plugin takes no args",
                )
            return None
        try:
            # The args models read the release and its gates from the validation
            # context (VolumeBindingArgs' shape follows StorageCapacityScoring).
            return spec.args_model.model_validate(data, context={"features": self.features})
        except ValidationError as err:
            if path is not None:
                self.problems.extend(validation_problems(err, args_path))
            else:
                self.problems.extend(
                    problem(args_path, f'plugin "{name}" needs args: {reason}')
                    for reason in validation_problems(err, "args")
                )
            return None


def _removed(name: str) -> str:
    return (f'plugin "{name}" was removed in {API_VERSION} '
            "(NodeVolumeLimits covers its volumes)")

