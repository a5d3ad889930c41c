"""Shared pieces of typed plugin args (KubeSchedulerConfiguration v1 pluginConfig).

Field names and aliases follow kubescheduler.config.k8s.io/v1 exactly. Args may
carry the optional `apiVersion`/`kind` header upstream accepts; unknown fields
are rejected as upstream's strict decoder rejects them.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

API_VERSION = "kubescheduler.config.k8s.io/v1"

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_MAX_NAME_LENGTH = 63
_MAX_PREFIX_LENGTH = 253


class PluginArgs(BaseModel):
    """Base of every args model: the optional TypeMeta header, checked when present."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    api_version: str | None = Field(default=None, alias="apiVersion")
    kind: str | None = None

    @model_validator(mode="after")
    def _check_type_meta(self) -> Self:
        if self.api_version is not None and self.api_version != API_VERSION:
            raise ValueError(f"apiVersion must be {API_VERSION!r}, got {self.api_version!r}")
        expected_kind = type(self).__name__
        if self.kind is not None and self.kind != expected_kind:
            raise ValueError(f"kind must be {expected_kind!r}, got {self.kind!r}")
        return self


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
