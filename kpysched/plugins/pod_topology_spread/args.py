"""PodTopologySpreadArgs (v1 pluginConfig) and upstream's validation of it.

`defaultingType: System` (the default) spreads pods of a Service, RC, RS or
StatefulSet over hostnames (maxSkew 3) and zones (maxSkew 5), both
ScheduleAnyway; `List` uses `defaultConstraints`, which must not carry a
labelSelector since it is deduced per pod.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kpysched.objects import api
from kpysched.plugins._shared.args import invalid, qualified_name_errors
from kpysched.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    SCHEDULE_ANYWAY,
)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

SYSTEM_DEFAULT_CONSTRAINTS = (
    api.TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME,
                                 when_unsatisfiable=SCHEDULE_ANYWAY),
    api.TopologySpreadConstraint(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE,
                                 when_unsatisfiable=SCHEDULE_ANYWAY),
)


class DefaultConstraint(BaseModel):
    """A v1 TopologySpreadConstraint as written in defaultConstraints (Go zero values)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    max_skew: int = Field(default=0, alias="maxSkew")
    topology_key: str = Field(default="", alias="topologyKey")
    when_unsatisfiable: str = Field(default="", alias="whenUnsatisfiable")
    label_selector: dict[str, Any] | None = Field(default=None, alias="labelSelector")
    min_domains: int | None = Field(default=None, alias="minDomains")
    node_affinity_policy: str | None = Field(default=None, alias="nodeAffinityPolicy")
    node_taints_policy: str | None = Field(default=None, alias="nodeTaintsPolicy")
    match_label_keys: list[str] = Field(default_factory=list, alias="matchLabelKeys")

    def to_api(self) -> api.TopologySpreadConstraint:
        return api.TopologySpreadConstraint(
            max_skew=self.max_skew, topology_key=self.topology_key,
            when_unsatisfiable=self.when_unsatisfiable, min_domains=self.min_domains,
            node_affinity_policy=self.node_affinity_policy,
            node_taints_policy=self.node_taints_policy,
            match_label_keys=list(self.match_label_keys))


def _constraint_errors(constraints: list[DefaultConstraint], index: int) -> list[str]:
    constraint = constraints[index]
    path = f"defaultConstraints[{index}]"
    errors: list[str] = []
    if constraint.max_skew <= 0:
        errors.append(f"{path}.maxSkew: Invalid value: {constraint.max_skew}: "
                      "not in valid range (0, inf)")
    if not constraint.topology_key:
        errors.append(f"{path}.topologyKey: Required value: can not be empty")
    else:
        errors += [f"{path}.topologyKey: Invalid value: {e}"
                   for e in qualified_name_errors(constraint.topology_key)]
    action = constraint.when_unsatisfiable
    if not action:
        errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
    elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        errors.append(f"{path}.whenUnsatisfiable: Unsupported value: {action!r}: supported "
                      f"values: {DO_NOT_SCHEDULE!r}, {SCHEDULE_ANYWAY!r}")
    if constraint.label_selector is not None:
        errors.append(f"{path}.labelSelector: Forbidden: constraint must not define a "
                      "selector, as they deduced for each pod")
    for other in constraints[:index]:
        if (other.topology_key, other.when_unsatisfiable) == (constraint.topology_key, action):
            errors.append(f"{path}: Duplicate value: "
                          f"'{{{constraint.topology_key}, {action}}}'")
            break
    return errors


class PodTopologySpreadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    default_constraints: list[DefaultConstraint] = Field(default_factory=list,
                                                         alias="defaultConstraints")
    defaulting_type: str = Field(default=SYSTEM_DEFAULTING, alias="defaultingType")

    @field_validator("default_constraints", mode="before")
    @classmethod
    def _no_constraints(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("defaulting_type", mode="before")
    @classmethod
    def _default_type(cls, value: Any) -> Any:
        return SYSTEM_DEFAULTING if value in (None, "") else value

    @model_validator(mode="after")
    def _validate(self) -> Self:
        errors: list[str] = []
        kind = self.defaulting_type
        if kind not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errors.append(f"defaultingType: Unsupported value: {kind!r}: supported values: "
                          f"{SYSTEM_DEFAULTING!r}, {LIST_DEFAULTING!r}")
        elif kind == SYSTEM_DEFAULTING and self.default_constraints:
            errors.append(f"defaultingType: Invalid value: {kind!r}: "
                          "when .defaultConstraints are not empty")
        for index in range(len(self.default_constraints)):
            errors += _constraint_errors(self.default_constraints, index)
        if errors:
            raise invalid(errors)
        return self

    def effective_defaults(self) -> tuple[api.TopologySpreadConstraint, ...]:
        """The constraints pods without their own get (before their selector is deduced)."""
        if self.defaulting_type == SYSTEM_DEFAULTING:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return tuple(c.to_api() for c in self.default_constraints)
