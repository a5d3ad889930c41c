"""Read a KubeSchedulerConfiguration file the way kube-scheduler does: strictly.

Duplicate keys and unknown fields are errors (upstream's strict decoder), a null
value means "unset" (as Go's JSON decoding leaves the field alone), and every
error names the field as written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import IO, Any, cast

import structlog
import yaml
from pydantic import ValidationError

from kpysched.config.errors import ConfigError, problem, validation_problems
from kpysched.config.profiles import EffectiveProfile, build_profiles
from kpysched.config.scheduler_config import API_VERSION, KIND, SchedulerConfiguration
from kpysched.features import DEFAULT as DEFAULT_FEATURES
from kpysched.features import Features
from kpysched.framework.registry import PluginSpec

_REMOVED_FIELD_HINT = (
    "removed in kubescheduler.config.k8s.io/v1beta3; kube-scheduler v1.36 rejects it too"
)
_HINTS = {"healthzBindAddress": _REMOVED_FIELD_HINT, "metricsBindAddress": _REMOVED_FIELD_HINT}
# The Lease the default scheduler holds: sharing it makes the two schedulers take turns.
_KUBE_SCHEDULER_LEASE = ("kube-system", "kube-scheduler")


def load_config(
    path: str | os.PathLike[str] | None, registry: Mapping[str, PluginSpec],
    overrides: Mapping[str, Any] | None = None, features: Features = DEFAULT_FEATURES,
) -> tuple[SchedulerConfiguration, list[EffectiveProfile]]:
    """The configuration in `path` (upstream defaults if None) and its profiles,
    resolved against `registry`. `overrides` (fields as written in the file, e.g. from
    command-line flags) replace the file's. Raises ConfigError naming the file and
    every problem."""
    source = None if path is None else os.fspath(path)
    try:
        if source is None:
            document: object = {"apiVersion": API_VERSION, "kind": KIND}
        else:
            document = read_yaml(source)
        if overrides and isinstance(document, Mapping):
            document = _merged(document, overrides)
        config = parse_config(document)
        profiles = build_profiles(config, registry, features)
    except ConfigError as err:
        raise (err.with_source(source) if source else err) from None
    _warn_ignored(config)
    election = config.leader_election
    if election.leader_elect and (
        (election.resource_namespace, election.resource_name) == _KUBE_SCHEDULER_LEASE
    ):
        structlog.get_logger().warning(
            "config.lease_shared_with_kube_scheduler", lease="kube-system/kube-scheduler",
            reason="kpysched and kube-scheduler would take turns being leader; "
            "set leaderElection.resourceName unless kpysched replaces kube-scheduler",
        )
    return config, profiles


# Fields kube-scheduler acts on that kpysched accepts (so upstream files load) but
# does not act on, and why: said once at start-up rather than silently ignored.
_IGNORED_FIELDS: tuple[tuple[str, Callable[[SchedulerConfiguration], bool], str], ...] = (
    ("parallelism", lambda c: c.parallelism != 16,
     "kpysched decides on one asyncio loop; numpy columns replace the worker goroutines"),
    ("enableProfiling", lambda c: c.enable_profiling,
     "kpysched serves no /debug/pprof endpoints"),
    ("enableContentionProfiling", lambda c: bool(c.enable_contention_profiling),
     "kpysched serves no /debug/pprof endpoints"),
    ("delayCacheUntilActive", lambda c: c.delay_cache_until_active,
     "informers start before leader election, so a standby's cache is warm"),
)


def _warn_ignored(config: SchedulerConfiguration) -> None:
    fields = type(config).model_fields
    written = {fields[name].alias or name for name in config.model_fields_set}
    for field, in_effect, reason in _IGNORED_FIELDS:
        if field in written and in_effect(config):
            structlog.get_logger().warning("config.field_ignored", field=field, reason=reason)


def _merged(document: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(document)
    for key, value in overrides.items():
        current = merged.get(key)
        merged[key] = (_merged(current, value)
                       if isinstance(current, Mapping) and isinstance(value, Mapping)
                       else value)
    return merged


def parse_config(data: object) -> SchedulerConfiguration:
    """Validate a decoded document (a mapping) as KubeSchedulerConfiguration v1."""
    if not isinstance(data, Mapping):
        raise ConfigError([f"expected a {KIND} mapping, got {_kind_of(data)}"])
    document = _normalize(data)
    missing = [
        problem(field, f'required field is missing (expected "{expected}")')
        for field, expected in (("apiVersion", API_VERSION), ("kind", KIND))
        if field not in document
    ]
    if missing:
        raise ConfigError(missing)
    api_version = document["apiVersion"]
    if api_version != API_VERSION:
        raise ConfigError([problem("apiVersion", f'unsupported version "{api_version}": kpysched '
                                   f'reads "{API_VERSION}", as kube-scheduler v1.36 does')])
    try:
        return SchedulerConfiguration.model_validate(document)
    except ValidationError as err:
        raise ConfigError(validation_problems(err, hints=_HINTS)) from None


def read_yaml(path: str) -> object:
    try:
        with open(path, encoding="utf-8") as stream:
            return yaml.load(stream, Loader=_StrictLoader)  # a SafeLoader
    except OSError as err:
        raise ConfigError([f"cannot read the file: {err.strerror}"], path) from None
    except UnicodeDecodeError as err:
        raise ConfigError([f"the file is not UTF-8 text: {err.reason}"], path) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError([f"invalid YAML at {where}{err.problem or err.context}"], path) from None
    except yaml.YAMLError as err:
        raise ConfigError([f"invalid YAML: {err}"], path) from None
    except RecursionError:
        raise ConfigError(["invalid YAML: nested too deeply"], path) from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping, and an alias inside the
    node it names (a value that contains itself), as upstream's YAML decoder does."""

    def __init__(self, stream: str | bytes | IO[str]) -> None:
        super().__init__(stream)
        self._open_anchors: set[str] = set()

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = event.anchor if isinstance(event, yaml.NodeEvent) else None
        if isinstance(event, yaml.AliasEvent):
            if anchor in self._open_anchors:
                raise yaml.composer.ComposerError(
                    None, None, f"anchor '{anchor}' value contains itself",
                    cast(yaml.Mark | None, event.start_mark))
            return super().compose_node(parent, index)
        if anchor is None:
            return super().compose_node(parent, index)
        self._open_anchors.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._open_anchors.discard(anchor)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f'duplicate key "{key}"', key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _normalize(value: object) -> Any:
    """Drop null values (unset, for Go's decoder) and turn keys into strings as YAML-to-JSON
    conversion does, so an odd key is reported as an unknown field by its name."""
    if isinstance(value, Mapping):
        return {_key(key): _normalize(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_normalize(item) for item in value]
    return value


def _key(key: object) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _kind_of(value: object) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"
