"""VolumeBindingArgs (v1 pluginConfig) with upstream's defaults and validation.

`shape` belongs to storage capacity scoring, behind the StorageCapacityScoring gate:
alpha and off in v1.36, beta and on in v1.37. With the gate off upstream rejects any
shape, so a configuration written for a later release does not silently change
behaviour; with it on an unset (or empty) shape takes DEFAULT_SHAPE, as upstream's
defaulting fills it in before validation.

Which way the gate is set comes from the validation context: the loader passes
`context={"features": <kpysched.config.features.Features>}` to model_validate; without
one the gate is at its v1.36 default (off).
"""

from __future__ import annotations

import json
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from kpysched.plugins._shared.args import UtilizationShapePoint, invalid
from kpysched.plugins._shared.args import shape_errors as _shared_shape_errors
from kpysched.plugins._shared.shape_score import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION

# The StorageCapacityScoring feature gate, and its v1.36 default (used when the
# validation context names no Features).
STORAGE_CAPACITY_SCORING_GATE = "StorageCapacityScoring"
STORAGE_CAPACITY_SCORING = False
# The key of the Features in model_validate's context.
FEATURES_CONTEXT_KEY = "features"
DEFAULT_BIND_TIMEOUT_SECONDS = 600


# Upstream's default when the gate is on: prefer nodes whose volumes are least used.
DEFAULT_SHAPE = (UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
                 UtilizationShapePoint(utilization=MAX_UTILIZATION, score=0))


def shape_errors(shape: list[UtilizationShapePoint] | None, *,
                 storage_capacity_scoring: bool) -> list[str]:
    """Upstream's ValidateVolumeBindingArgsWithOptions for the shape."""
    if not storage_capacity_scoring:
        if shape is None:
            return []
        # Go renders the internal (untagged) points as JSON.
        shown = json.dumps([{"Utilization": p.utilization, "Score": p.score} for p in shape],
                           separators=(",", ":"))
        return [f"shape: Invalid value: {shown}: unexpected field `shape`, remove it or "
                "turn on the feature gate StorageCapacityScoring"]
    return _shared_shape_errors(shape or [], "shape")


def capacity_scoring_in(context: Any) -> bool:
    """Whether StorageCapacityScoring is on for the Features a validation context
    carries (its v1.36 default without one)."""
    features = context.get(FEATURES_CONTEXT_KEY) if isinstance(context, dict) else None
    if features is None:
        return STORAGE_CAPACITY_SCORING
    return bool(features.enabled(STORAGE_CAPACITY_SCORING_GATE))


class VolumeBindingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    # How long PreBind waits for the PV controller; 0 gives up at once.
    bind_timeout_seconds: int = Field(default=DEFAULT_BIND_TIMEOUT_SECONDS,
                                      alias="bindTimeoutSeconds")
    shape: list[UtilizationShapePoint] | None = None

    @field_validator("bind_timeout_seconds", mode="before")
    @classmethod
    def _default_timeout(cls, value: Any) -> Any:
        # An explicit null is an unset pointer upstream, which defaulting fills in.
        return DEFAULT_BIND_TIMEOUT_SECONDS if value is None else value

    @model_validator(mode="after")
    def _validate(self, info: ValidationInfo) -> Self:
        errors: list[str] = []
        if self.bind_timeout_seconds < 0:
            errors.append(f"bindTimeoutSeconds: Invalid value: {self.bind_timeout_seconds}: "
                          "invalid BindTimeoutSeconds, should not be a negative value")
        scoring = capacity_scoring_in(info.context)
        if not (scoring and not self.shape):  # an unset shape is defaulted, not checked
            errors += shape_errors(self.shape, storage_capacity_scoring=scoring)
        if errors:
            raise invalid(errors)
        if scoring and not self.shape:
            # Upstream's defaulting fills it in (SetDefaults_VolumeBindingArgs), so the
            # args as run, and as written back (--write-config-to, /configz), carry it.
            self.shape = list(DEFAULT_SHAPE)
        return self

    def scoring_shape(self) -> tuple[UtilizationShapePoint, ...]:
        """The shape storage capacity scoring uses: the configured one or the default."""
        return tuple(self.shape) if self.shape else DEFAULT_SHAPE
