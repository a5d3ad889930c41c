from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from kpysched.config import (
    DEFAULT_MULTI_POINT,
    ConfigError,
    EffectiveProfile,
    build_profiles,
    parse_config,
)
from kpysched.config.features import Features
from kpysched.framework import interfaces as ep
from kpysched.framework.placement import PlacementScorePlugin
from kpysched.framework.registry import PluginSpec, full_registry
from kpysched.plugins import IN_TREE
from tests.unit.config.fakes import (
    REGISTRY,
    UNAVAILABLE_DEFAULTS,
    CoschedulingArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    ScoringStrategy,
    document,
)

DEFAULT_PLUGINS: dict[str, tuple[str, ...]] = {
    "preEnqueue": ("SchedulingGates",),
    "queueSort": ("PrioritySort",),
    "preFilter": ("NodeAffinity", "NodePorts", "NodeResourcesFit"),
    "filter": ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
               "NodeResourcesFit"),
    "postFilter": (),
    "preScore": ("TaintToleration", "NodeAffinity", "NodeResourcesFit",
                 "NodeResourcesBalancedAllocation"),
    "score": ("TaintToleration", "NodeAffinity", "NodeResourcesFit",
              "NodeResourcesBalancedAllocation", "ImageLocality"),
    "reserve": (),
    "permit": (),
    "preBind": (),
    "bind": ("DefaultBinder",),
    "postBind": (),
    # The fakes implement no placement point.
    "placementGenerate": (),
    "placementScore": (),
}
DEFAULT_WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                   "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}


# These tables are kube-scheduler v1.36.4's; v1.37.2's differences are tested beside them.
V1_36 = Features(release=36)
V1_37 = Features(release=37)


def _resolve(*profiles: dict[str, Any], registry: dict[str, PluginSpec] = REGISTRY,
             features: Features = V1_36) -> list[EffectiveProfile]:
    return build_profiles(parse_config(document(profiles=list(profiles)), features.release),
                          registry, features)


def _one(plugins: dict[str, Any] | None = None, **fields: Any) -> EffectiveProfile:
    (profile,) = _resolve({"plugins": plugins or {}, **fields})
    return profile


def test_defaults() -> None:
    profile = _one()
    assert profile.scheduler_name == "kpysched"
    assert profile.percentage_of_nodes_to_score is None
    assert profile.plugins == DEFAULT_PLUGINS
    assert profile.score_weights == DEFAULT_WEIGHTS
    assert profile.args == {
        "SchedulingGates": None, "PrioritySort": None, "NodeUnschedulable": None,
        "NodeName": None, "TaintToleration": None, "NodeAffinity": NodeAffinityArgs(),
        "NodePorts": None, "NodeResourcesFit": NodeResourcesFitArgs(),
        "NodeResourcesBalancedAllocation": None, "ImageLocality": None, "DefaultBinder": None,
    }
    assert profile.unavailable_defaults == UNAVAILABLE_DEFAULTS


# Extension points of each default plugin in kube-scheduler v1.36.
UPSTREAM_POINTS: dict[str, tuple[type[Any], ...]] = {
    "SchedulingGates": (ep.PreEnqueuePlugin,),
    "PrioritySort": (ep.QueueSortPlugin,),
    "NodeUnschedulable": (ep.FilterPlugin,),
    "NodeName": (ep.FilterPlugin,),
    "TaintToleration": (ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin),
    "NodeAffinity": (ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin),
    "NodePorts": (ep.PreFilterPlugin, ep.FilterPlugin),
    "NodeResourcesFit": (ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin,
                         PlacementScorePlugin),
    "VolumeRestrictions": (ep.PreFilterPlugin, ep.FilterPlugin),
    "NodeVolumeLimits": (ep.PreFilterPlugin, ep.FilterPlugin),
    "VolumeBinding": (ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin,
                      ep.ReservePlugin, ep.PreBindPlugin),
    "VolumeZone": (ep.PreFilterPlugin, ep.FilterPlugin),
    "PodTopologySpread": (ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin,
                          ep.ScorePlugin),
    "InterPodAffinity": (ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin),
    "DynamicResources": (ep.PreEnqueuePlugin, ep.PreFilterPlugin, ep.FilterPlugin,
                         ep.PostFilterPlugin, ep.ScorePlugin, ep.ReservePlugin,
                         ep.PreBindPlugin),
    "DefaultPreemption": (ep.PreEnqueuePlugin, ep.PostFilterPlugin),
    "NodeResourcesBalancedAllocation": (ep.PreScorePlugin, ep.ScorePlugin),
    "ImageLocality": (ep.ScorePlugin,),
    "DefaultBinder": (ep.BindPlugin,),
    "NodeDeclaredFeatures": (ep.PreFilterPlugin, ep.FilterPlugin),
}


def _full_registry() -> dict[str, PluginSpec]:
    registry = {}
    for name, points in UPSTREAM_POINTS.items():
        plugin_class = type(name, points, {"NAME": name})
        registry[name] = PluginSpec(name, plugin_class, lambda args, handle: None)
    return registry


def test_every_default_available_expands_as_upstream() -> None:
    """Upstream's ExpandedPluginsV1 (pkg/scheduler/apis/config/testing/defaults, v1.36.4)."""
    (profile,) = _resolve({}, registry=_full_registry())
    volume_filters = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                      "PodTopologySpread", "InterPodAffinity", "DynamicResources",
                      "NodeDeclaredFeatures")
    assert profile.plugins == {
        "preEnqueue": ("SchedulingGates", "DynamicResources", "DefaultPreemption"),
        "queueSort": ("PrioritySort",),
        "preFilter": ("NodeAffinity", "NodePorts", "NodeResourcesFit", *volume_filters),
        "filter": ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                   "NodePorts", "NodeResourcesFit", *volume_filters),
        "postFilter": ("DynamicResources", "DefaultPreemption"),
        "preScore": ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding",
                     "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"),
        "score": ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding",
                  "PodTopologySpread", "InterPodAffinity", "DynamicResources",
                  "NodeResourcesBalancedAllocation", "ImageLocality"),
        "reserve": ("VolumeBinding", "DynamicResources"),
        "permit": (),
        "preBind": ("VolumeBinding", "DynamicResources"),
        "bind": ("DefaultBinder",),
        "postBind": (),
        "placementGenerate": (),
        "placementScore": ("NodeResourcesFit",),
    }
    assert profile.score_weights == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
        "PodTopologySpread": 2, "InterPodAffinity": 2, "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
    }
    assert profile.placement_score_weights == {"NodeResourcesFit": 1}
    assert profile.unavailable_defaults == ()
    assert [name for name, _ in DEFAULT_MULTI_POINT] == list(UPSTREAM_POINTS)


def test_reconfigured_defaults_expand_as_upstream() -> None:
    """kube-scheduler v1.36.4 (-v=2) logged this expansion for the same profile."""
    (profile,) = _resolve({"plugins": {
        "multiPoint": {"enabled": [{"name": "NodeAffinity"}],
                       "disabled": [{"name": "PodTopologySpread"}]},
        "score": {"enabled": [{"name": "ImageLocality", "weight": 7}]},
    }}, registry=_full_registry())
    assert profile.plugins["preFilter"] == (
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "InterPodAffinity", "DynamicResources",
        "NodeDeclaredFeatures")
    assert profile.score_weights == {
        "ImageLocality": 7, "TaintToleration": 3, "NodeAffinity": 1, "NodeResourcesFit": 1,
        "VolumeBinding": 1, "InterPodAffinity": 2, "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1}
    assert tuple(profile.score_weights) == profile.plugins["score"]


def _with(**changes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {**DEFAULT_PLUGINS, **changes}


@pytest.mark.parametrize(("plugins", "expected", "weights"), [
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 5}]}},
        DEFAULT_PLUGINS, {**DEFAULT_WEIGHTS, "TaintToleration": 5},
        id="multipoint-weight-replaces-default-in-place"),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "NodeAffinity"}]}},
        DEFAULT_PLUGINS, {**DEFAULT_WEIGHTS, "NodeAffinity": 1},
        id="multipoint-relisted-without-weight-scores-1"),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "CustomScore", "weight": 4},
                                    {"name": "CustomFilter"}]}},
        _with(filter=(*DEFAULT_PLUGINS["filter"], "CustomFilter"),
              score=(*DEFAULT_PLUGINS["score"], "CustomScore")),
        {**DEFAULT_WEIGHTS, "CustomScore": 4},
        id="multipoint-appends-out-of-tree"),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "ImageLocality"}]}},
        _with(score=DEFAULT_PLUGINS["score"][:-1]),
        {name: w for name, w in DEFAULT_WEIGHTS.items() if name != "ImageLocality"},
        id="multipoint-disable-one"),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "*"}],
                        "enabled": [{"name": "DefaultBinder"}, {"name": "NodeName"},
                                    {"name": "PrioritySort"}]}},
        {point: () for point in DEFAULT_PLUGINS} | {
            "queueSort": ("PrioritySort",), "filter": ("NodeName",), "bind": ("DefaultBinder",)},
        {}, id="multipoint-disable-all"),
    pytest.param(
        {"score": {"disabled": [{"name": "TaintToleration"}]}},
        _with(score=DEFAULT_PLUGINS["score"][1:]),
        {name: w for name, w in DEFAULT_WEIGHTS.items() if name != "TaintToleration"},
        id="score-disable-one-keeps-its-filter"),
    pytest.param(
        {"score": {"disabled": [{"name": "*"}],
                   "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
        _with(score=("NodeResourcesFit",)), {"NodeResourcesFit": 5},
        id="score-disable-all-and-enable-one"),
    pytest.param(
        {"score": {"enabled": [{"name": "ImageLocality", "weight": 7}]}},
        _with(score=("ImageLocality", *DEFAULT_PLUGINS["score"][:-1])),
        {**DEFAULT_WEIGHTS, "ImageLocality": 7},
        id="score-entry-overrides-multipoint-and-runs-first"),
    pytest.param(
        {"score": {"enabled": [{"name": "ImageLocality", "weight": 0}]}},
        _with(score=("ImageLocality", *DEFAULT_PLUGINS["score"][:-1])), DEFAULT_WEIGHTS,
        id="weight-zero-scores-1"),
    pytest.param(
        {"filter": {"enabled": [{"name": "CustomFilter"}]}},
        _with(filter=(*DEFAULT_PLUGINS["filter"], "CustomFilter")), DEFAULT_WEIGHTS,
        id="specific-entry-runs-last"),
    pytest.param(
        {"filter": {"enabled": [{"name": "NodePorts"}, {"name": "CustomFilter"},
                                {"name": "NodeName"}]}},
        _with(filter=("NodePorts", "NodeName", "NodeUnschedulable", "TaintToleration",
                      "NodeAffinity", "NodeResourcesFit", "CustomFilter")),
        DEFAULT_WEIGHTS, id="overrides-first-in-written-order"),
    pytest.param(
        {"preFilter": {"disabled": [{"name": "NodeResourcesFit"}]}},
        _with(preFilter=("NodeAffinity", "NodePorts")), DEFAULT_WEIGHTS,
        id="prefilter-disable-one"),
    pytest.param(
        {"bind": {"disabled": [{"name": "DefaultBinder"}], "enabled": [{"name": "OtherBinder"}]}},
        _with(bind=("OtherBinder",)), DEFAULT_WEIGHTS, id="replace-binder"),
    pytest.param(
        {"bind": {"enabled": [{"name": "OtherBinder"}]}},
        _with(bind=("DefaultBinder", "OtherBinder")), DEFAULT_WEIGHTS,
        id="second-binder-after-default"),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "PrioritySort"}],
                        "enabled": [{"name": "Coscheduling"}]}},
        _with(queueSort=("Coscheduling",),
              preFilter=(*DEFAULT_PLUGINS["preFilter"], "Coscheduling"),
              postFilter=("Coscheduling",), reserve=("Coscheduling",), permit=("Coscheduling",)),
        DEFAULT_WEIGHTS, id="replace-queue-sort-everywhere"),
    pytest.param(
        {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "Coscheduling"}]}},
        _with(queueSort=("Coscheduling",)), DEFAULT_WEIGHTS,
        id="replace-queue-sort-at-its-point-only"),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "CustomScore"}]},
         "score": {"disabled": [{"name": "CustomScore"}]}},
        DEFAULT_PLUGINS, DEFAULT_WEIGHTS, id="multipoint-plugin-disabled-at-a-point"),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "VolumeBinding"}, {"name": "DefaultPreemption"}]}},
        DEFAULT_PLUGINS, DEFAULT_WEIGHTS, id="disable-unavailable-default"),
    pytest.param(
        {"placementScore": {"disabled": [{"name": "*"}]}},
        DEFAULT_PLUGINS, DEFAULT_WEIGHTS, id="placement-point-may-be-disabled"),
])
def test_expansion(
    plugins: dict[str, Any], expected: dict[str, tuple[str, ...]], weights: dict[str, int]
) -> None:
    profile = _one(plugins)
    assert profile.plugins == expected
    assert profile.score_weights == weights


def test_plugin_named_anywhere_is_built() -> None:
    profile = _one({"multiPoint": {"enabled": [{"name": "CustomScore"}]},
                    "score": {"disabled": [{"name": "CustomScore"}]},
                    "queueSort": {"disabled": [{"name": "*"}],
                                  "enabled": [{"name": "Coscheduling"}]}})
    assert "CustomScore" in profile.args
    assert profile.args["Coscheduling"] == CoschedulingArgs()
    assert "PrioritySort" in profile.args  # still named by the default multiPoint


def test_percentage_per_profile() -> None:
    profiles = _resolve({"schedulerName": "a", "percentageOfNodesToScore": 20},
                        {"schedulerName": "b"})
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in profiles] == [
        ("a", 20), ("b", None)]


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param({"scoringStrategy": {"type": "MostAllocated"}},
                 NodeResourcesFitArgs(scoringStrategy=ScoringStrategy(type="MostAllocated")),
                 id="given"),
    pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs",
                  "ignoredResources": ["example.com/foo"]},
                 NodeResourcesFitArgs(ignoredResources=["example.com/foo"]), id="with-type-meta"),
    pytest.param(None, NodeResourcesFitArgs(), id="null-args-are-defaults"),
    pytest.param({}, NodeResourcesFitArgs(), id="empty-args-are-defaults"),
])
def test_plugin_args(args: dict[str, Any] | None, expected: NodeResourcesFitArgs) -> None:
    profile = _one(pluginConfig=[{"name": "NodeResourcesFit", "args": args}])
    assert profile.args["NodeResourcesFit"] == expected


def _warnings(*profiles: dict[str, Any]) -> list[dict[str, Any]]:
    with capture_logs() as logs:
        _resolve(*profiles)
    return [{k: v for k, v in log.items() if k != "log_level"}
            for log in logs if log["log_level"] == "warning"]


@pytest.mark.parametrize(("profile", "expected"), [
    pytest.param({}, [{"event": "config.default_plugins_unavailable", "profile": "kpysched",
                       "plugins": list(UNAVAILABLE_DEFAULTS),
                       "reason": "not in the plugin registry; the profile runs without them"}],
                 id="unavailable-defaults"),
    pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": n} for n in
                                                          UNAVAILABLE_DEFAULTS]}}},
                 [], id="unavailable-defaults-disabled"),
    pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": n} for n in
                                                          UNAVAILABLE_DEFAULTS]}},
                  "pluginConfig": [{"name": "Coscheduling",
                                    "args": {"permitWaitingTimeSeconds": 5}}]},
                 [{"event": "config.plugin_args_unused", "profile": "kpysched",
                   "plugin": "Coscheduling",
                   "reason": "the plugin is not enabled in this profile"}],
                 id="args-of-plugin-not-enabled"),
    pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": n} for n in
                                                          UNAVAILABLE_DEFAULTS]}},
                  "pluginConfig": [{"name": "PodTopologySpread",
                                    "args": {"defaultingType": "List"}}]},
                 [{"event": "config.plugin_args_unused", "profile": "kpysched",
                   "plugin": "PodTopologySpread",
                   "reason": "the plugin is not available in kpysched"}],
                 id="args-of-unavailable-plugin"),
    pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": n} for n in
                                                          UNAVAILABLE_DEFAULTS]}},
                  "pluginConfig": [{"name": "ImageLocality", "args": {"foo": 1}}]},
                 [{"event": "config.plugin_args_ignored", "profile": "kpysched",
                   "plugin": "ImageLocality", "reason": "the plugin takes no args"}],
                 id="args-of-plugin-without-args"),
])
def test_warnings(profile: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert _warnings(profile) == expected


def _problems(*profiles: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _resolve(*profiles)
    return list(caught.value.problems)


@pytest.mark.parametrize(("profile", "expected"), [
    pytest.param(
        {"plugins": {"score": {"enabled": [{"name": "CustomScore"},
                                           {"name": "NodeResourcesFitt"}]}}},
        ['profiles[0].plugins.score.enabled[1].name: unknown plugin "NodeResourcesFitt" '
         '(did you mean "NodeResourcesFit"?)'], id="unknown-plugin"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "Zzz"}]}}},
        ['profiles[0].plugins.filter.enabled[0].name: unknown plugin "Zzz"'],
        id="unknown-plugin-no-suggestion"),
    pytest.param(
        {"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduler"}]}}},
        ['profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "Coscheduler" '
         '(did you mean "Coscheduling"?)'], id="unknown-plugin-multipoint"),
    pytest.param(
        {"plugins": {"score": {"disabled": [{"name": "ImageLocalty"}]}}},
        ['profiles[0].plugins.score.disabled[0].name: unknown plugin "ImageLocalty" '
         '(did you mean "ImageLocality"?)'], id="unknown-disabled-plugin"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}},
        ['profiles[0].plugins.filter.enabled[0].name: plugin "EBSLimits" was removed in '
         "kubescheduler.config.k8s.io/v1 (NodeVolumeLimits covers its volumes)"],
        id="removed-plugin"),
    pytest.param(
        {"plugins": {"placementGenerate": {"enabled": [{"name": "NodeResourcesFit"}]}}},
        ['profiles[0].plugins.placementGenerate.enabled[0].name: plugin "NodeResourcesFit" '
         "does not implement placementGenerate"], id="placement-point"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}},
        ['profiles[0].plugins.filter.enabled[0].name: plugin "ImageLocality" does not '
         "implement filter"], id="does-not-implement"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "CustomFilter"}]}}},
        ['profiles[0].plugins.filter.enabled[1].name: plugin "CustomFilter" is enabled twice '
         "for filter"], id="twice-in-a-point"),
    pytest.param(
        {"plugins": {"multiPoint": {"enabled": [{"name": "CustomFilter"},
                                                {"name": "CustomFilter"}]}}},
        ['profiles[0].plugins.multiPoint.enabled[1].name: plugin "CustomFilter" is enabled '
         "twice in multiPoint"], id="twice-in-multipoint"),
    pytest.param(
        {"plugins": {"multiPoint": {"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}}},
        ['profiles[0].plugins.multiPoint.enabled[0].name: plugin "NodeName" is enabled '
         "twice in multiPoint"], id="default-twice-in-multipoint"),
    pytest.param(
        {"plugins": {"score": {"enabled": [{"name": "ImageLocality"},
                                           {"name": "TaintToleration", "weight": -3}]}}},
        ["profiles[0].plugins.score.enabled[1].weight: must not be negative (got -3)"],
        id="negative-weight"),
    pytest.param(
        {"plugins": {"multiPoint": {"enabled": [{"name": "CustomScore", "weight": -1}]}}},
        ["profiles[0].plugins.multiPoint.enabled[0].weight: must not be negative (got -1)"],
        id="negative-multipoint-weight"),
    pytest.param(
        {"plugins": {"multiPoint": {"disabled": [{"name": "PrioritySort"}]}}},
        ["profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, got 0"],
        id="no-queue-sort"),
    pytest.param(
        {"plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]}}},
        ["profiles[0].plugins.queueSort: exactly one queueSort plugin must be enabled, "
         'got 2: "PrioritySort", "Coscheduling"'], id="two-queue-sorts"),
    pytest.param(
        {"plugins": {"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}}},
        ["profiles[0].plugins.bind: at least one bind plugin must be enabled"], id="no-bind"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFitt", "args": {}}]},
        ['profiles[0].pluginConfig[0].name: unknown plugin "NodeResourcesFitt" '
         '(did you mean "NodeResourcesFit"?)'], id="args-for-unknown-plugin"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]},
        ['profiles[0].pluginConfig[1].name: duplicate pluginConfig for plugin "NodeResourcesFit" '
         "(first at profiles[0].pluginConfig[0])"], id="duplicate-args"),
    pytest.param(
        {"pluginConfig": [{"name": "GCEPDLimits"}]},
        ['profiles[0].pluginConfig[0].name: plugin "GCEPDLimits" was removed in '
         "kubescheduler.config.k8s.io/v1 (NodeVolumeLimits covers its volumes)"],
        id="args-for-removed-plugin"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFit",
                           "args": {"scoringStrategy": {"type": "Least"}}}]},
        ["profiles[0].pluginConfig[0].args.scoringStrategy.type: Input should be "
         "'LeastAllocated', 'MostAllocated' or 'RequestedToCapacityRatio' (got \"Least\")"],
        id="args-invalid-value"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"typ": "x"}}}]},
        ['profiles[0].pluginConfig[0].args.scoringStrategy: unknown field "typ"'],
        id="args-unknown-field"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "InterPodAffinityArgs"}}]},
        ["profiles[0].pluginConfig[0].args.kind: args for plugin NodeResourcesFit must be of kind "
         '"NodeResourcesFitArgs" (got "InterPodAffinityArgs")'], id="args-wrong-kind"),
    pytest.param(
        {"pluginConfig": [{"name": "NodeResourcesFit",
                           "args": {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}}]},
        ['profiles[0].pluginConfig[0].args.apiVersion: must be "kubescheduler.config.k8s.io/v1" '
         '(got "kubescheduler.config.k8s.io/v1beta3")'], id="args-wrong-api-version"),
    pytest.param(
        {"pluginConfig": [{"name": "Threshold", "args": {"threshold": "high"}}]},
        ["profiles[0].pluginConfig[0].args.threshold: Input should be a valid integer, unable "
         'to parse string as an integer (got "high")'], id="args-of-plugin-not-enabled-checked"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "Threshold"}]}}},
        ['profiles[0].pluginConfig: plugin "Threshold" needs args: args.threshold: required '
         "field is missing"], id="required-args-missing"),
    pytest.param(
        {"plugins": {"filter": {"enabled": [{"name": "Zzz"}, {"name": "ImageLocalty"}]}}},
        ['profiles[0].plugins.filter.enabled[0].name: unknown plugin "Zzz"',
         'profiles[0].plugins.filter.enabled[1].name: unknown plugin "ImageLocalty" '
         '(did you mean "ImageLocality"?)'], id="all-problems-reported"),
])
def test_invalid_profile(profile: dict[str, Any], expected: list[str]) -> None:
    assert _problems(profile) == expected


COSCHEDULING = {"multiPoint": {"disabled": [{"name": "PrioritySort"}],
                               "enabled": [{"name": "Coscheduling"}]}}


@pytest.mark.parametrize(("profiles", "expected"), [
    pytest.param(
        [{"schedulerName": "a"},
         {"schedulerName": "b", "plugins": {"score": {"enabled": [{"name": "Nope"}]}}}],
        ['profiles[1].plugins.score.enabled[0].name: unknown plugin "Nope"'],
        id="path-names-the-profile"),
    pytest.param(
        [{"schedulerName": "a"}, {"schedulerName": "b", "plugins": COSCHEDULING}],
        ['profiles[1].plugins.queueSort: must use the same queueSort plugin as profiles[0] '
         '("PrioritySort"), got "Coscheduling"'], id="different-queue-sort"),
    pytest.param(
        [{"schedulerName": "a", "plugins": COSCHEDULING},
         {"schedulerName": "b", "plugins": COSCHEDULING,
          "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 5}}]}],
        ['profiles[1].pluginConfig: args of queueSort plugin "Coscheduling" must be the same as '
         "in profiles[0]"], id="different-queue-sort-args"),
])
def test_invalid_profiles(profiles: list[dict[str, Any]], expected: list[str]) -> None:
    assert _problems(*profiles) == expected


def test_same_queue_sort_in_every_profile_is_fine() -> None:
    profiles = _resolve({"schedulerName": "a", "plugins": COSCHEDULING},
                        {"schedulerName": "b", "plugins": COSCHEDULING})
    assert [p.plugins["queueSort"] for p in profiles] == [("Coscheduling",)] * 2


def test_placement_plugins_named_by_hand_expand_with_their_weight() -> None:
    """A config copied from kube-scheduler may name the topology-aware placement plugins
    (alpha, TopologyAwareWorkloadScheduling) whatever the gate: they are in kpysched's
    registry and expand to the placement points, the scorer with its weight."""
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                           "kind": "KubeSchedulerConfiguration",
                           "profiles": [{"schedulerName": "kpysched", "plugins": {
                               "multiPoint": {"enabled": [
                                   {"name": "TopologyPlacementGenerator"},
                                   {"name": "PodGroupPodsCount", "weight": 4}]}}}]})
    [profile] = build_profiles(config, full_registry(IN_TREE), V1_37)
    assert profile.plugins["placementGenerate"] == ("TopologyPlacementGenerator",)
    assert profile.plugins["placementScore"] == ("NodeResourcesFit", "PodGroupPodsCount")
    assert profile.placement_score_weights == {"NodeResourcesFit": 1, "PodGroupPodsCount": 4}
    assert not profile.unavailable_defaults


def test_placement_plugin_at_a_point_it_does_not_implement_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        _resolve({"plugins": {"filter": {"enabled": [{"name": "TopologyPlacementGenerator"}]}}},
                 registry=full_registry(IN_TREE))
    assert list(caught.value.problems) == [
        'profiles[0].plugins.filter.enabled[0].name: plugin "TopologyPlacementGenerator" '
        "does not implement filter"]


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param({"filterTimeout": float("nan")},
                 'profiles[0].pluginConfig[0].args.filterTimeout: Value error, must be a duration '
                 'such as "10s" (got NaN)', id="nan-filter-timeout"),
    pytest.param({"bindingTimeout": 30},
                 'profiles[0].pluginConfig[0].args.bindingTimeout: Value error, must be a duration '
                 'such as "10s" (got 30)', id="number-binding-timeout"),
    pytest.param({"bindingTimeout": "99999999999999999999h"},
                 'profiles[0].pluginConfig[0].args.bindingTimeout: Value error, invalid duration '
                 '"99999999999999999999h" (got "99999999999999999999h")', id="overflowing-timeout"),
])
def test_dynamic_resources_timeouts_are_duration_strings(args: dict[str, Any],
                                                         expected: str) -> None:
    """Found by tests/unit/fuzz: DynamicResources took a number (a YAML .nan or .inf too)
    where upstream's metav1.Duration only reads a string."""
    with pytest.raises(ConfigError) as caught:
        _resolve({"pluginConfig": [{"name": "DynamicResources", "args": args}]},
                 registry=full_registry(IN_TREE))
    assert caught.value.problems == (expected,)


@pytest.mark.parametrize(("plugin", "args", "expected"), [
    pytest.param("VolumeBinding", {"bindTimeoutSeconds": "15"},
                 'args.bindTimeoutSeconds: Input should be a valid integer (got "15")',
                 id="string-for-integer"),
    pytest.param("NodeResourcesFit", {"scoringStrategy": {"resources": [
                     {"name": "cpu", "weight": True}]}},
                 "args.scoringStrategy.resources[0].weight: Input should be a valid integer "
                 "(got true)", id="bool-for-integer"),
    pytest.param("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
                     {"maxSkew": "1", "topologyKey": "zone",
                      "whenUnsatisfiable": "DoNotSchedule"}]},
                 'args.defaultConstraints[0].maxSkew: Input should be a valid integer (got "1")',
                 id="nested-string-for-integer"),
])
def test_plugin_args_are_decoded_strictly(plugin: str, args: dict[str, Any],
                                          expected: str) -> None:
    """As upstream's strict decoder: found by tests/unit/fuzz, which saw "15" and true
    taken for integers."""
    with pytest.raises(ConfigError) as caught:
        _resolve({"pluginConfig": [{"name": plugin, "args": args}]},
                 registry=full_registry(IN_TREE))
    assert caught.value.problems == (f"profiles[0].pluginConfig[0].{expected}",)


def test_gang_scheduling_joins_the_default_profile_only_with_its_gate() -> None:
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                           "kind": "KubeSchedulerConfiguration"})
    registry = full_registry(IN_TREE)
    off = build_profiles(config, registry, V1_36)[0]
    on = build_profiles(config, registry,
                        Features(generic_workload=True, gang_scheduling=True, release=36))[0]
    assert "GangScheduling" not in off.args
    # Appended last, as upstream's applyGangScheduling.
    assert on.enabled("preEnqueue")[-1] == "GangScheduling"
    assert on.enabled("preEnqueue")[:-1] == off.enabled("preEnqueue")
    assert on.enabled("permit")[-1] == "GangScheduling"


def test_gang_scheduling_named_without_its_gate_stops_start_up() -> None:
    config = parse_config({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "s",
                      "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}]})
    with pytest.raises(ConfigError, match="GangScheduling needs the feature gates "
                                          "GenericWorkload and GangScheduling on"):
        build_profiles(config, full_registry(IN_TREE), V1_36)
    with pytest.raises(ConfigError, match=r"GangScheduling needs the feature gate "
                                          r"GenericWorkload on \(--feature-gates="
                                          r"GenericWorkload=true\)"):
        build_profiles(config, full_registry(IN_TREE), V1_37)


def test_v1_37_runs_node_name_before_node_unschedulable() -> None:
    (profile,) = _resolve({}, registry=_full_registry(), features=V1_37)
    assert profile.plugins["filter"][:3] == ("NodeName", "NodeUnschedulable", "TaintToleration")
    (older,) = _resolve({}, registry=_full_registry(), features=V1_36)
    assert older.plugins["filter"][:3] == ("NodeUnschedulable", "NodeName", "TaintToleration")
    assert {point: set(names) for point, names in profile.plugins.items()} == {
        point: set(names) for point, names in older.plugins.items()}


def test_v1_37_defaults_with_deferred_pod_scheduling_and_gang_scheduling() -> None:
    from kpysched.config.profiles import default_multi_point

    gate = "InPlacePodVerticalScalingSchedulerPreemption"
    names = [name for name, _ in default_multi_point(Features(release=37, overrides={gate: True}))]
    assert names[names.index("DeferredPodScheduling") + 1] == "NodeResourcesFit"
    assert "DeferredPodScheduling" not in [name for name, _ in default_multi_point(V1_37)]
    # The gate does not exist in v1.36: no plugin there whatever it says.
    assert "DeferredPodScheduling" not in [
        name for name, _ in default_multi_point(Features(release=36, overrides={gate: True}))]
    gang = default_multi_point(Features.from_gates({"GenericWorkload": True}, release=37))
    assert gang[-1] == ("GangScheduling", None)


def test_pod_group_post_filter_is_a_v1_37_field() -> None:
    profile = {"plugins": {"podGroupPostFilter": {"disabled": [{"name": "*"}]}}}
    _resolve(profile, features=V1_37)
    with pytest.raises(ConfigError) as caught:
        _resolve(profile, features=V1_36)
    assert caught.value.problems == (
        "profiles[0].plugins.podGroupPostFilter: unknown field (kube-scheduler v1.36 has no "
        "podGroupPostFilter; it came in v1.37)",)


def test_an_empty_pod_group_post_filter_as_v1_37_writes_it_loads_as_v1_36_with_a_warning(
) -> None:
    with capture_logs() as logs:
        _resolve({"plugins": {"podGroupPostFilter": {}}}, features=V1_36)
    assert [(e["event"], e["field"]) for e in logs if e["event"] == "config.field_ignored"] == [
        ("config.field_ignored", "profiles[0].plugins.podGroupPostFilter")]


def test_deferred_pod_scheduling_is_an_upstream_plugin_of_v1_37_only() -> None:
    profile = {"plugins": {"filter": {"enabled": [{"name": "DeferredPodScheduling"}]}}}
    registry = {name: spec for name, spec in REGISTRY.items() if name != "DeferredPodScheduling"}
    with capture_logs() as logs:
        _resolve(profile, registry=registry, features=V1_37)
    assert any(e["event"] == "config.default_plugins_unavailable" for e in logs)
    with pytest.raises(ConfigError, match='unknown plugin "DeferredPodScheduling"'):
        _resolve(profile, registry=registry, features=V1_36)


def test_volume_binding_shape_follows_storage_capacity_scoring_per_release() -> None:
    config = {"pluginConfig": [{"name": "VolumeBinding", "args": {
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}}]}
    _resolve(config, registry=full_registry(IN_TREE), features=V1_37)
    with pytest.raises(ConfigError, match="turn on the feature gate StorageCapacityScoring"):
        _resolve(config, registry=full_registry(IN_TREE), features=V1_36)
