"""KubeSchedulerConfiguration `extenders:` (kubescheduler.config.k8s.io/v1 Extender).

Every field upstream accepts, with its spelling (`enableHTTPS`, `tlsConfig.caData`
as base64 like Go's []byte) and upstream's validateExtenders: a positive weight for
a prioritizer, at most one binder, managed resources that are extended resource
names and are not managed twice. An httpTimeout of zero means upstream's default
(5s), filled in here so the effective configuration (written, /configz) shows what
is used, as kube-scheduler's /configz does once it has built its extenders.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Final, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from kpysched.config.model_base import GoDuration, Model, invalid

# Upstream's DefaultExtenderTimeout, used when httpTimeout is zero or unset.
DEFAULT_HTTP_TIMEOUT_SECONDS: Final = 5.0
_INT64_MAX = 2**63 - 1

_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _base64(value: object) -> object:
    """Go decodes a []byte field from a base64 string; so does this."""
    if isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            pass
        else:
            return value
    raise PydanticCustomError("base64", "must be base64-encoded data")


Base64Data = Annotated[str, BeforeValidator(_base64)]


class ExtenderTLSConfig(Model):
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: Base64Data = ""
    key_data: Base64Data = ""
    ca_data: Base64Data = ""


class ExtenderManagedResource(Model):
    name: str
    ignored_by_scheduler: bool = False


class Extender(Model):
    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: int = Field(default=0, ge=-_INT64_MAX - 1, le=_INT64_MAX)
    bind_verb: str = ""
    enable_https: bool = Field(default=False, alias="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: GoDuration = DEFAULT_HTTP_TIMEOUT_SECONDS
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = Field(default_factory=list)
    ignorable: bool = False

    @field_validator("http_timeout")
    @classmethod
    def _zero_is_default(cls, value: float) -> float:
        return value or DEFAULT_HTTP_TIMEOUT_SECONDS

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.prioritize_verb and self.weight <= 0:
            raise invalid(type(self).__name__, [
                (("weight",), f"must have a positive weight applied to it (got {self.weight})",
                 self.weight)])
        return self


def extended_resource_name_errors(name: str) -> list[str]:
    """Upstream's validateExtendedResourceName: a qualified name outside the
    kubernetes.io namespace, usable as a quota's `requests.<name>`."""
    errors = _qualified_name_errors(name)
    if errors:
        return errors
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith("requests.") or _qualified_name_errors(f"requests.{name}"):
        return ["is an invalid extended resource name"]
    return []


def _qualified_name_errors(name: str) -> list[str]:
    prefix, slash, short = name.rpartition("/")
    if slash and not prefix:
        return ["prefix part must be non-empty"]
    errors = []
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        errors.append("prefix part must be a lowercase RFC 1123 subdomain")
    if "/" in prefix:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
                "with an optional DNS subdomain prefix and '/'"]
    if not short:
        errors.append("name part must be non-empty")
    elif len(short) > 63:
        errors.append("name part must be no more than 63 characters")
    elif not _NAME_PART.match(short):
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.', "
                      "and must start and end with an alphanumeric character")
    return errors


def extenders_problems(
        extenders: list[Extender]) -> list[tuple[tuple[str | int, ...], str, object]]:
    """What upstream's validateExtenders finds beyond a single extender's fields."""
    errors: list[tuple[tuple[str | int, ...], str, object]] = []
    managed: set[str] = set()
    for index, extender in enumerate(extenders):
        for position, resource in enumerate(extender.managed_resources):
            loc = ("extenders", index, "managedResources", position, "name")
            got = f' (got "{resource.name}")'
            errors.extend((loc, reason + got, resource.name)
                          for reason in extended_resource_name_errors(resource.name))
            if resource.name in managed:
                errors.append((loc, "duplicate extender managed resource name" + got,
                               resource.name))
            managed.add(resource.name)
    binders = sum(1 for extender in extenders if extender.bind_verb)
    if binders > 1:
        errors.append((("extenders",), f"only one extender can implement bind, found {binders}",
                       binders))
    return errors


def ignored_resources(extenders: list[Extender]) -> list[str]:
    """The managed resources NodeResourcesFit must not check (ignoredByScheduler)."""
    return [resource.name for extender in extenders
            for resource in extender.managed_resources if resource.ignored_by_scheduler]
