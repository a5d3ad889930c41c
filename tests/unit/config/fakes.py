"""A small plugin registry for configuration tests: tiny classes that subclass the
extension-point protocols the upstream plugins of the same name implement."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kpysched.framework import interfaces as ep
from kpysched.framework.registry import PluginSpec


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True)


class ScoringStrategy(_Args):
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = (
        "LeastAllocated"
    )


class NodeResourcesFitArgs(_Args):
    ignored_resources: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy)


class NodeAffinityArgs(_Args):
    added_affinity: dict[str, Any] | None = None


class CoschedulingArgs(_Args):
    permit_waiting_time_seconds: int = 60


class ThresholdArgs(_Args):
    threshold: int  # no default: the plugin needs args


def _spec(name: str, *points: type[Any], args_model: type[BaseModel] | None = None) -> PluginSpec:
    plugin_class = type(name, points, {"NAME": name})
    return PluginSpec(name, plugin_class, lambda args, handle: plugin_class(), args_model)


REGISTRY: dict[str, PluginSpec] = {spec.name: spec for spec in [
    _spec("SchedulingGates", ep.PreEnqueuePlugin),
    _spec("PrioritySort", ep.QueueSortPlugin),
    _spec("NodeUnschedulable", ep.FilterPlugin),
    _spec("NodeName", ep.FilterPlugin),
    _spec("TaintToleration", ep.FilterPlugin, ep.PreScorePlugin, ep.ScorePlugin),
    _spec("NodeAffinity", ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin,
          ep.ScorePlugin, args_model=NodeAffinityArgs),
    _spec("NodePorts", ep.PreFilterPlugin, ep.FilterPlugin),
    _spec("NodeResourcesFit", ep.PreFilterPlugin, ep.FilterPlugin, ep.PreScorePlugin,
          ep.ScorePlugin, args_model=NodeResourcesFitArgs),
    _spec("NodeResourcesBalancedAllocation", ep.PreScorePlugin, ep.ScorePlugin),
    _spec("ImageLocality", ep.ScorePlugin),
    _spec("DefaultBinder", ep.BindPlugin),
    # Out-of-tree plugins, as a pip-installed package would register them.
    _spec("Coscheduling", ep.QueueSortPlugin, ep.PreFilterPlugin, ep.PostFilterPlugin,
          ep.PermitPlugin, ep.ReservePlugin, args_model=CoschedulingArgs),
    _spec("CustomFilter", ep.FilterPlugin),
    _spec("CustomScore", ep.ScorePlugin),
    _spec("Threshold", ep.FilterPlugin, args_model=ThresholdArgs),
    _spec("OtherBinder", ep.BindPlugin),
]}

# The v1.36 defaults this registry lacks, in upstream's order.
UNAVAILABLE_DEFAULTS = (
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
    "PodTopologySpread", "InterPodAffinity", "DynamicResources", "DefaultPreemption",
    "NodeDeclaredFeatures",
)


def document(**fields: Any) -> dict[str, Any]:
    """A KubeSchedulerConfiguration v1 document with the given top-level fields."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", **fields}
