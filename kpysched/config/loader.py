"""Read a KubeSchedulerConfiguration file the way kube-scheduler does: strictly.

Duplicate keys and unknown fields are errors (upstream's strict decoder), a null
value means "unset" (as Go's JSON decoding leaves the field alone), and every
error names the field as written.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import IO, Any, cast

import structlog
import yaml
from pydantic import ValidationError

from kpysched.config.errors import ConfigError, join_path, problem, validation_problems
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.features import NEWEST_RELEASE, Features
from kpysched.config.profiles import EffectiveProfile, build_profiles
from kpysched.config.scheduler_config import API_VERSION, KIND, SchedulerConfiguration
from kpysched.framework.registry import PluginSpec


def _hints(release: int) -> dict[str, str]:
    removed = ("removed in kubescheduler.config.k8s.io/v1beta3; kube-scheduler "
               f"v1.{release} rejects it too")
    return {"healthzBindAddress": removed, "metricsBindAddress": removed}

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
    config = read_config(path, overrides, features.release)
    try:
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


def read_config(path: str | os.PathLike[str] | None,
                overrides: Mapping[str, Any] | None = None,
                release: int = NEWEST_RELEASE) -> SchedulerConfiguration:
    """The configuration in `path` (upstream defaults if None) with `overrides`, checked
    but without its profiles built (they need the release: load_config). Raises
    ConfigError naming the file and every problem."""
    source = None if path is None else os.fspath(path)
    try:
        if source is None:
            document: object = {"apiVersion": API_VERSION, "kind": KIND}
        else:
            document = read_yaml(source)
        if overrides and isinstance(document, Mapping):
            document = _merged(document, overrides)
        return parse_config(document, release)
    except ConfigError as err:
        raise (err.with_source(source) if source else err) from None


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


def parse_config(data: object, release: int = NEWEST_RELEASE) -> SchedulerConfiguration:
    """Validate a decoded document (a mapping) as KubeSchedulerConfiguration v1 of
    kube-scheduler 1.`release`."""
    if not isinstance(data, Mapping):
        raise ConfigError([f"expected a {KIND} mapping, got {_kind_of(data)}"])
    out_of_range: list[str] = []
    document = _normalize(data, "", out_of_range)
    if out_of_range:
        raise ConfigError(out_of_range)
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
                                   f'reads "{API_VERSION}", as kube-scheduler v1.{release} does')])
    try:
        return SchedulerConfiguration.model_validate(document)
    except ValidationError as err:
        raise ConfigError(validation_problems(err, hints=_hints(release))) from None


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


# go-yaml v2's bound on alias expansion (decode.go; sigs.k8s.io/yaml, which kube-scheduler
# reads its configuration with, wraps it): once more than 1,000 nodes have been decoded and
# more than 100 of them were reached through an alias, the share reached through aliases
# may not exceed 99% up to 400,000 decoded nodes, falling linearly to 10% at 4,000,000.
# A small file whose aliases multiply (a "billion laughs") fails within a few thousand
# nodes, before anything is built.
_ALIAS_RATIO_RANGE_LOW = 400_000
_ALIAS_RATIO_RANGE_HIGH = 4_000_000
_EXCESSIVE_ALIASING = "document contains excessive aliasing"
_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decoded >= _ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RATIO_RANGE_LOW) / (
        _ALIAS_RATIO_RANGE_HIGH - _ALIAS_RATIO_RANGE_LOW)


# Where an alias stands in the composed graph: (id of the parent node, position in it,
# role: 0 a sequence item, 1 a mapping key, 2 a mapping value). PyYAML's composer puts
# the anchored node itself there, so this is the only record that it was an alias.
_AliasSlot = tuple[int, int, int]


class _AliasBudget:
    """Walks a composed document as go-yaml's decoder does, every alias expanded, and
    fails as go-yaml does the moment the share of nodes reached through aliases passes
    its bound. The walk stops there, so its cost is bounded by the file's size."""

    def __init__(self, alias_slots: set[_AliasSlot]) -> None:
        self._alias_slots = alias_slots
        self._decoded = 0
        self._aliased = 0

    def check(self, root: yaml.Node) -> None:
        self._count(root, alias_depth=0)  # go-yaml decodes the document node too
        self._visit(root, alias_depth=0)

    def _count(self, node: yaml.Node, alias_depth: int) -> None:
        self._decoded += 1
        if alias_depth:
            self._aliased += 1
        if (self._aliased > 100 and self._decoded > 1000
                and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)):
            raise yaml.composer.ComposerError(
                None, None, _EXCESSIVE_ALIASING, cast(yaml.Mark | None, node.start_mark))

    def _visit(self, node: yaml.Node, alias_depth: int) -> None:
        self._count(node, alias_depth)
        if isinstance(node, yaml.SequenceNode):
            for position, item in enumerate(node.value):
                self._child(node, position, 0, item, alias_depth)
        elif isinstance(node, yaml.MappingNode):
            for position, (key, value) in enumerate(node.value):
                if key.tag == "tag:yaml.org,2002:merge" and isinstance(value, yaml.SequenceNode) \
                        and (id(node), position, 2) not in self._alias_slots:
                    # go-yaml decodes each map a merge key lists, not the list itself
                    for index, item in enumerate(value.value):
                        self._child(value, index, 0, item, alias_depth)
                    continue
                if key.tag != "tag:yaml.org,2002:merge":
                    self._child(node, position, 1, key, alias_depth)
                self._child(node, position, 2, value, alias_depth)

    def _child(self, parent: yaml.Node, position: int, role: int, child: yaml.Node,
               alias_depth: int) -> None:
        if (id(parent), position, role) in self._alias_slots:
            self._count(child, alias_depth)  # the alias node, then what it names
            self._visit(child, alias_depth + 1)
        else:
            self._visit(child, alias_depth)


class OutOfRange:
    """A number in the file that fits no 64-bit integer or float (go-yaml keeps such a
    literal as a string, which no numeric field accepts). Reported with the field's path
    once the document is walked, rather than failing where the path is unknown."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal

    def __str__(self) -> str:
        digits = self.literal
        if len(digits) <= 24:
            return digits
        return f"{digits[:10]}...{digits[-10:]} ({len(digits)} characters)"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping, an alias inside the node
    it names (a value that contains itself) and excessive aliasing, as upstream's YAML
    decoder does, and keeps numbers that fit nothing as OutOfRange."""

    def __init__(self, stream: str | bytes | IO[str]) -> None:
        super().__init__(stream)
        self._open_anchors: set[str] = set()
        self._alias_slots: set[_AliasSlot] = set()

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _AliasBudget(self._alias_slots).check(node)
        return self.construct_document(node)

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = event.anchor if isinstance(event, yaml.NodeEvent) else None
        if isinstance(event, yaml.AliasEvent):
            if anchor in self._open_anchors:
                raise yaml.composer.ComposerError(
                    None, None, f"anchor '{anchor}' value contains itself",
                    cast(yaml.Mark | None, event.start_mark))
            if parent is not None:
                # PyYAML passes None for a mapping key, the key node for its value.
                role = 0 if isinstance(parent, yaml.SequenceNode) else 1 if index is None else 2
                self._alias_slots.add((id(parent), len(parent.value), role))
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


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float | OutOfRange:
    try:
        value: int = loader.construct_yaml_int(node)
    except ValueError:  # past Python's 4,300-digit limit on int(str)
        return OutOfRange(str(node.value))
    if _INT64_MIN <= value <= _UINT64_MAX:
        return value
    try:
        return float(value)  # go-yaml's reading of an integer no 64-bit integer holds
    except OverflowError:
        return OutOfRange(str(node.value))


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | OutOfRange:
    value: float = loader.construct_yaml_float(node)
    if math.isinf(value) and not str(node.value).lower().lstrip("+-").startswith(".inf"):
        return OutOfRange(str(node.value))  # a finite literal past float64's range
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def _normalize(value: object, path: str, out_of_range: list[str]) -> Any:
    """Drop null values (unset, for Go's decoder) and turn keys into strings as YAML-to-JSON
    conversion does, so an odd key is reported as an unknown field by its name. Numbers
    that fit nothing are added to `out_of_range` as problems naming their field."""
    if isinstance(value, Mapping):
        return {_key(key): _normalize(item, join_path(path, _key(key)), out_of_range)
                for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_normalize(item, join_path(path, index), out_of_range)
                for index, item in enumerate(value)]
    if isinstance(value, OutOfRange):
        out_of_range.append(problem(path, f"the number {value} does not fit in a 64-bit "
                                          "integer or float"))
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
