"""Validation helpers for typed plugin args (KubeSchedulerConfiguration v1 pluginConfig).

Args models use the v1 field names as aliases and reject unknown fields, as
upstream's strict decoder does; the config loader strips the optional
apiVersion/kind header before validating. Problems are reported the way
upstream's field validation words them ("field.path: Invalid value: ...").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec.inspect
from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

from kpysched.plugins._shared.shape_score import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_MAX_NAME_LENGTH = 63
_MAX_PREFIX_LENGTH = 253


def invalid(problems: Sequence[str]) -> PydanticCustomError:
    """One validation error carrying every problem found (raise it from a model validator)."""
    return PydanticCustomError("invalid_plugin_args", "{problems}",
                               {"problems": "; ".join(problems)})


def qualified_name_errors(value: str) -> list[str]:
    """Why `value` is not a qualified name ([prefix/]name), as upstream's IsQualifiedName."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return [f"{value!r}: prefix part must be non-empty"]
        if len(prefix) > _MAX_PREFIX_LENGTH or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return [f"{value!r}: prefix part must be a lowercase RFC 1123 subdomain"]
    else:
        return [f"{value!r}: a qualified name must have at most one '/'"]
    if not name:
        return [f"{value!r}: name part must be non-empty"]
    if len(name) > _MAX_NAME_LENGTH:
        return [f"{value!r}: name part must be no more than {_MAX_NAME_LENGTH} characters"]
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        return [f"{value!r}: name part must consist of alphanumerics, '-', '_' or '.', "
                "and must start and end with an alphanumeric character"]
    return []


def label_value_errors(value: str) -> list[str]:
    if len(value) > _MAX_NAME_LENGTH:
        return [f"{value!r}: a label value must be no more than {_MAX_NAME_LENGTH} characters"]
    if not _LABEL_VALUE.fullmatch(value):
        return [f"{value!r}: a label value must be empty or consist of alphanumerics, '-', '_' "
                "or '.', and must start and end with an alphanumeric character"]
    return []


def is_int64(text: str) -> bool:
    """Whether Go's strconv.ParseInt(text, 10, 64) accepts `text`."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return False
    return -(2**63) <= int(text) < 2**63


def unknown_fields(value: object, kind: msgspec.inspect.Type, path: str = "") -> list[str]:
    """Keys of `value` that the wire struct `kind` does not declare, as paths. The API
    structs ignore unknown fields (a newer server may send more); args are decoded
    strictly upstream, so a misspelt field there is an error, not silently dropped."""
    if isinstance(kind, msgspec.inspect.UnionType):
        nested = [t for t in kind.types if not isinstance(t, msgspec.inspect.NoneType)]
        return unknown_fields(value, nested[0], path) if len(nested) == 1 else []
    if isinstance(kind, msgspec.inspect.ListType) and isinstance(value, list):
        return [problem for index, item in enumerate(value)
                for problem in unknown_fields(item, kind.item_type, f"{path}[{index}]")]
    if isinstance(kind, msgspec.inspect.StructType) and isinstance(value, Mapping):
        fields = {field.encode_name: field.type for field in kind.fields}
        problems: list[str] = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key in fields:
                problems += unknown_fields(item, fields[key], where)
            else:
                reason = f'unknown field "{key}"'
                problems.append(f"{path}: {reason}" if path else reason)
        return problems
    return []


class UtilizationShapePoint(BaseModel):
    """One point of a configured utilization shape (v1 UtilizationShapePoint)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    utilization: int = 0
    score: int = 0


def shape_errors(shape: Sequence[UtilizationShapePoint], path: str) -> list[str]:
    """Upstream's validateFunctionShape, shared by NodeResourcesFit's
    RequestedToCapacityRatio and VolumeBinding's shape: at least one point, utilization
    strictly increasing, each value in range; `path` names the shape's field."""
    if not shape:
        return [f"{path}: Required value: at least one point must be specified"]
    errors: list[str] = []
    for index in range(1, len(shape)):
        if shape[index - 1].utilization >= shape[index].utilization:
            errors.append(f"{path}[{index}].utilization: Invalid value: "
                          f"{shape[index].utilization}: values must be sorted in increasing order")
            break
    for index, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(f"{path}[{index}].utilization: Invalid value: {point.utilization}: "
                          f"not in valid range [0, {MAX_UTILIZATION}]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(f"{path}[{index}].score: Invalid value: {point.score}: "
                          f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return errors
