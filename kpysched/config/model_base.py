"""The pieces every KubeSchedulerConfiguration model shares: the strict, camelCase,
frozen base model, Go durations, and errors that name exact fields."""

from __future__ import annotations

import contextlib
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from kpysched.config.errors import INVALID
from kpysched.objects.durations import parse_go_duration


def format_duration(seconds: float) -> str:
    return f"{seconds:g}s"


def _go_duration(value: object) -> object:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return parse_go_duration(value)
    raise PydanticCustomError("go_duration", 'must be a duration such as "15s" or "1m30s"')


GoDuration = Annotated[float, BeforeValidator(_go_duration)]


def invalid(title: str, errors: list[tuple[tuple[str | int, ...], str, object]]) -> ValidationError:
    """A ValidationError naming exact fields, raised from a model validator: pydantic
    prefixes the nested location, so the message names the field as written."""
    return ValidationError.from_exception_data(title, [
        InitErrorDetails(
            type=PydanticCustomError(INVALID, "{reason}", {"reason": reason}),
            loc=loc,
            input=value,
        )
        for loc, reason, value in errors
    ])


class Model(BaseModel):
    # No NaN or infinity: upstream reads the file as JSON, which has neither.
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, alias_generator=to_camel,
        allow_inf_nan=False,
    )

    @classmethod
    def _default_of(cls, info: ValidationInfo) -> object:
        assert info.field_name is not None
        return cls.model_fields[info.field_name].get_default(call_default_factory=True)
