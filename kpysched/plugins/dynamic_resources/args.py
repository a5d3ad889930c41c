"""DynamicResourcesArgs (v1 pluginConfig): filterTimeout and bindingTimeout, with
upstream's defaults for v1.36's gates (DRASchedulerFilterTimeout on; binding
conditions on) and its validation."""

from __future__ import annotations

from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from kpysched.objects.durations import go_duration, parse_go_duration
from kpysched.plugins._shared.args import invalid

DEFAULT_FILTER_TIMEOUT_SECONDS = 10.0
DEFAULT_BINDING_TIMEOUT_SECONDS = 600.0


def _seconds(value: Any, default: float) -> Any:
    # An explicit null is an unset pointer upstream, which defaulting fills in.
    if value is None:
        return default
    if not isinstance(value, str):
        # A metav1.Duration is written as a string; upstream refuses a bare number.
        raise ValueError('must be a duration such as "10s"')
    try:
        return parse_go_duration(value)
    except ValueError as error:
        raise ValueError(str(error)) from None


class DynamicResourcesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    # How long Filter may search one node for devices; 0 is no limit.
    filter_timeout_seconds: float = Field(default=DEFAULT_FILTER_TIMEOUT_SECONDS,
                                          alias="filterTimeout")
    # How long PreBind waits for devices' binding conditions.
    binding_timeout_seconds: float = Field(default=DEFAULT_BINDING_TIMEOUT_SECONDS,
                                           alias="bindingTimeout")

    @field_serializer("filter_timeout_seconds", "binding_timeout_seconds")
    def _as_duration(self, seconds: float) -> str:
        # Written back (--write-config-to, /configz) as the metav1.Duration it was read as.
        return go_duration(seconds)

    @field_validator("filter_timeout_seconds", mode="before")
    @classmethod
    def _filter_timeout(cls, value: Any) -> Any:
        return _seconds(value, DEFAULT_FILTER_TIMEOUT_SECONDS)

    @field_validator("binding_timeout_seconds", mode="before")
    @classmethod
    def _binding_timeout(cls, value: Any) -> Any:
        return _seconds(value, DEFAULT_BINDING_TIMEOUT_SECONDS)

    @model_validator(mode="after")
    def _validate(self) -> Self:
        errors: list[str] = []
        if self.filter_timeout_seconds < 0:
            shown = go_duration(self.filter_timeout_seconds)
            errors.append(f'filterTimeout: Invalid value: "{shown}": must be zero or positive')
        if self.binding_timeout_seconds < 1:
            shown = go_duration(self.binding_timeout_seconds)
            errors.append(f'bindingTimeout: Invalid value: "{shown}": must be at least 1 second')
        if errors:
            raise invalid(errors)
        return self


def parse_args(args: object) -> DynamicResourcesArgs:
    return args if isinstance(args, DynamicResourcesArgs) else DynamicResourcesArgs()
