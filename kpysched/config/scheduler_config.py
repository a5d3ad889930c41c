"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as pydantic models.

Field names are upstream's camelCase (as aliases; Python code reads snake_case),
unknown fields are rejected and types are strict, as kube-scheduler's strict
decoder does. Defaulting follows upstream's SetDefaults_KubeSchedulerConfiguration
(a zero value counts as unset, as it does for Go), except that the default profile
and the leader election Lease are named "kpysched": a second scheduler must never
take the default scheduler's name or contend for its Lease.

Validation here is everything upstream's ValidateKubeSchedulerConfiguration checks
that does not need the plugin registry; profiles.py checks the rest.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake

from kpysched.config.extenders import Extender, extenders_problems
from kpysched.config.model_base import GoDuration, format_duration, invalid
from kpysched.config.model_base import Model as _Model

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "kpysched"
DEFAULT_LEASE_NAME = "kpysched"
DEFAULT_LEASE_NAMESPACE = "kube-system"
# client-go's leaderelection.JitterFactor: renewDeadline must exceed retryPeriod times this.
LEADER_ELECTION_JITTER_FACTOR = 1.2

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
Int32 = Annotated[int, Field(ge=-_INT32_MAX - 1, le=_INT32_MAX)]

class ClientConnection(_Model):
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = Field(default=100, ge=0, le=_INT32_MAX)

    @field_validator("content_type", "qps", "burst")
    @classmethod
    def _zero_is_unset(cls, value: object, info: ValidationInfo) -> object:
        return value or cls._default_of(info)


class LeaderElection(_Model):
    leader_elect: bool = True
    lease_duration: GoDuration = 15.0
    renew_deadline: GoDuration = 10.0
    retry_period: GoDuration = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_LEASE_NAME
    resource_namespace: str = DEFAULT_LEASE_NAMESPACE

    @field_validator(
        "lease_duration", "renew_deadline", "retry_period",
        "resource_lock", "resource_name", "resource_namespace",
    )
    @classmethod
    def _zero_is_unset(cls, value: object, info: ValidationInfo) -> object:
        return value or cls._default_of(info)

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.leader_elect:  # upstream checks nothing else then
            return self
        errors: list[tuple[tuple[str | int, ...], str, object]] = []
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            value = getattr(self, name)
            if value <= 0:
                errors.append(((to_camel(name),), "must be greater than zero "
                               f"(got {format_duration(value)})", value))
        lease, renew, retry = self.lease_duration, self.renew_deadline, self.retry_period
        if lease > 0 and renew > 0 and lease <= renew:
            errors.append((("leaseDuration",), f"must be greater than renewDeadline "
                           f"({format_duration(lease)} <= {format_duration(renew)})", lease))
        if renew > 0 and retry > 0 and renew <= LEADER_ELECTION_JITTER_FACTOR * retry:
            errors.append((("renewDeadline",), "must be greater than retryPeriod * "
                           f"{LEADER_ELECTION_JITTER_FACTOR} ({format_duration(renew)} <= "
                           f"{format_duration(LEADER_ELECTION_JITTER_FACTOR * retry)})", renew))
        if self.resource_lock != "leases":
            errors.append((("resourceLock",), 'must be "leases" '
                           f'(got "{self.resource_lock}")', self.resource_lock))
        if errors:
            raise invalid(type(self).__name__, errors)
        return self


class PluginEntry(_Model):
    """One `{name, weight}` item of a PluginSet (upstream's v1.Plugin)."""

    name: str
    weight: Int32 | None = None


class PluginSet(_Model):
    enabled: list[PluginEntry] = Field(default_factory=list)
    disabled: list[PluginEntry] = Field(default_factory=list)


class Plugins(_Model):
    pre_enqueue: PluginSet = Field(default_factory=PluginSet)
    queue_sort: PluginSet = Field(default_factory=PluginSet)
    pre_filter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    post_filter: PluginSet = Field(default_factory=PluginSet)
    pre_score: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    pre_bind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    post_bind: PluginSet = Field(default_factory=PluginSet)
    multi_point: PluginSet = Field(default_factory=PluginSet)
    # In v1 since 1.36 for alpha workload-aware scheduling; kpysched has no such plugins.
    placement_generate: PluginSet = Field(default_factory=PluginSet)
    placement_score: PluginSet = Field(default_factory=PluginSet)
    # New in v1.37 (a pod group's PostFilter); v1.36's decoder rejects the field
    # (profiles.py, per release: POINTS_SINCE).
    pod_group_post_filter: PluginSet = Field(default_factory=PluginSet)

    @classmethod
    def point_names(cls) -> list[str]:
        """Every extension point as named in the YAML, multiPoint included."""
        return [to_camel(name) for name in cls.model_fields]

    def point(self, name: str) -> PluginSet:
        """The PluginSet of an extension point named as in the YAML ("preFilter")."""
        value = getattr(self, to_snake(name), None)
        if not isinstance(value, PluginSet):
            raise KeyError(name)
        return value


class PluginConfig(_Model):
    name: str
    args: dict[str, Any] | None = None


class Profile(_Model):
    """One KubeSchedulerProfile; schedulerName is only defaulted when it is the only one."""

    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = Field(default=None, ge=0, le=100)
    plugins: Plugins = Field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = Field(default_factory=list)


class SchedulerConfiguration(_Model):
    api_version: Literal["kubescheduler.config.k8s.io/v1"] = API_VERSION
    kind: Literal["KubeSchedulerConfiguration"] = KIND
    parallelism: int = Field(default=16, gt=0, le=_INT32_MAX)
    leader_election: LeaderElection = Field(default_factory=LeaderElection)
    client_connection: ClientConnection = Field(default_factory=ClientConnection)
    enable_profiling: bool = True
    # Defaults to enableProfiling, as upstream's does.
    enable_contention_profiling: bool | None = Field(default=None, validate_default=True)
    percentage_of_nodes_to_score: int = Field(default=0, ge=0, le=100)  # 0 = adaptive
    pod_initial_backoff_seconds: int = Field(default=1, gt=0, le=_INT64_MAX)
    pod_max_backoff_seconds: int = Field(default=10, gt=0, le=_INT64_MAX)
    profiles: list[Profile] = Field(default_factory=list, validate_default=True)
    extenders: list[Extender] = Field(default_factory=list)
    delay_cache_until_active: bool = False

    @field_validator("enable_contention_profiling")
    @classmethod
    def _contention_follows_profiling(cls, value: bool | None, info: ValidationInfo) -> bool:
        if value is not None:
            return value
        return bool(info.data.get("enable_profiling", True))

    @field_validator("profiles")
    @classmethod
    def _default_profile(cls, profiles: list[Profile]) -> list[Profile]:
        if not profiles:
            return [Profile(schedulerName=DEFAULT_SCHEDULER_NAME)]
        if len(profiles) == 1 and profiles[0].scheduler_name is None:
            return [profiles[0].model_copy(update={"scheduler_name": DEFAULT_SCHEDULER_NAME})]
        return profiles

    @model_validator(mode="after")
    def _check(self) -> Self:
        errors: list[tuple[tuple[str | int, ...], str, object]] = []
        if self.pod_max_backoff_seconds < self.pod_initial_backoff_seconds:
            errors.append((("podMaxBackoffSeconds",), "must be greater than or equal to "
                           f"podInitialBackoffSeconds ({self.pod_initial_backoff_seconds})",
                           self.pod_max_backoff_seconds))
        errors.extend(extenders_problems(self.extenders))
        seen: dict[str, int] = {}
        for index, profile in enumerate(self.profiles):
            name = profile.scheduler_name
            loc: tuple[str | int, ...] = ("profiles", index, "schedulerName")
            if name is None:
                errors.append((loc, "required field is missing (every profile needs a "
                               "schedulerName when there are several)", None))
            elif not name:
                errors.append((loc, "must not be empty", name))
            elif name in seen:
                errors.append((loc, f'duplicate schedulerName "{name}" '
                               f"(already used by profiles[{seen[name]}])", name))
            else:
                seen[name] = index
        errors.extend(self._queue_sort_differences())
        if errors:
            raise invalid(type(self).__name__, errors)
        return self

    def _queue_sort_differences(self) -> list[tuple[tuple[str | int, ...], str, object]]:
        """Upstream's validateCommonQueueSort: the queueSort sets as written must match.
        (profiles.py also checks the queueSort plugin each profile ends up with.)"""

        def written(profile: Profile) -> tuple[object, ...]:
            queue_sort = profile.plugins.queue_sort
            return (tuple((p.name, p.weight or 0) for p in queue_sort.enabled),
                    tuple(p.name for p in queue_sort.disabled))

        first = written(self.profiles[0])
        return [
            (("profiles", index, "plugins", "queueSort"),
             "must be the same for all profiles (as in profiles[0])", None)
            for index, profile in enumerate(self.profiles[1:], start=1)
            if written(profile) != first
        ]
