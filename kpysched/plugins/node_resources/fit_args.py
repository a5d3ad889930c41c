"""NodeResourcesFitArgs: scoring strategy and ignored resources, validated as upstream's
ValidateNodeResourcesFitArgs does."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kpysched.plugins._shared.args import (
    UtilizationShapePoint,
    invalid,
    qualified_name_errors,
    shape_errors,
)
from kpysched.plugins.node_resources.resource_allocation import ResourceSpec, default_resource_specs

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


class RequestedToCapacityRatioParam(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    shape: list[UtilizationShapePoint] = Field(default_factory=list)


class ScoringStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=list)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, alias="requestedToCapacityRatio")


class NodeResourcesFitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    ignored_resource_groups: list[str] = Field(default_factory=list,
                                               alias="ignoredResourceGroups")
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: ScoringStrategy(type=LEAST_ALLOCATED), alias="scoringStrategy")

    @field_validator("scoring_strategy", mode="before")
    @classmethod
    def _default_strategy(cls, value: Any) -> Any:
        return ScoringStrategy(type=LEAST_ALLOCATED) if value is None else value

    @model_validator(mode="after")
    def _default_and_validate(self) -> Self:
        strategy = self.scoring_strategy
        strategy.resources = default_resource_specs(strategy.resources)
        errors: list[str] = []
        for index, name in enumerate(self.ignored_resources):
            errors += [f"ignoredResources[{index}]: {e}" for e in qualified_name_errors(name)]
        for index, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{index}]"
            if "/" in group:
                errors.append(f"{path}: Invalid value: {group!r}: "
                              "resource group name can't contain '/'")
            errors += [f"{path}: {e}" for e in qualified_name_errors(group)]
        if strategy.type not in _STRATEGIES:
            errors.append(f"scoringStrategy.type: Unsupported value: {strategy.type!r}: "
                          f"supported values: {', '.join(repr(s) for s in sorted(_STRATEGIES))}")
        for index, spec in enumerate(strategy.resources):
            if not 0 < spec.weight <= 100:
                errors.append(f"scoringStrategy.resources[{index}].weight: Invalid value: "
                              f"{spec.weight}: resource weight of {spec.name} not in valid "
                              "range (0, 100]")
        ratio = strategy.requested_to_capacity_ratio
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if ratio is None:
                errors.append("scoringStrategy.requestedToCapacityRatio: Required value: "
                              "must be specified when type is RequestedToCapacityRatio")
            else:
                errors += shape_errors(ratio.shape,
                                        "scoringStrategy.requestedToCapacityRatio.shape")
        elif ratio is not None:
            errors.append("scoringStrategy.requestedToCapacityRatio: Forbidden: "
                          "must be nil when type is not RequestedToCapacityRatio")
        if errors:
            raise invalid(errors)
        return self
