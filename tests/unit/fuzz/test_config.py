"""Malformed KubeSchedulerConfiguration files: every field of a full, valid file, broken
one at a time (a wrong type, a number out of range, a value nobody defined, an unknown
key, a missing one), plus files that are not YAML at all.

The property: loading either succeeds, and then the scheduler can be built from what
was loaded, or raises ConfigError whose text names the field that was broken; never
another exception, which `kpysched run` would print as a traceback instead of exiting 2
with the reason. Two broken files go through the real CLI to see that.
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from kpysched.api.client import RawApi
from kpysched.app import build_scheduler
from kpysched.config import ConfigError, load_config
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.unit.api_double import RecordingApi

REGISTRY = full_registry(IN_TREE)
ROOT = Path(__file__).resolve().parents[3]

# Every field the loader knows, each set to a valid value other than its default, and
# the args of every default plugin that takes any.
FULL: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "parallelism": 8,
    "percentageOfNodesToScore": 50,
    "podInitialBackoffSeconds": 2,
    "podMaxBackoffSeconds": 20,
    "enableProfiling": False,
    "enableContentionProfiling": False,
    "delayCacheUntilActive": False,
    "leaderElection": {
        "leaderElect": True, "leaseDuration": "20s", "renewDeadline": "15s",
        "retryPeriod": "3s", "resourceLock": "leases", "resourceName": "fuzz",
        "resourceNamespace": "kube-system",
    },
    "clientConnection": {
        "kubeconfig": "/etc/kubeconfig", "acceptContentTypes": "application/json",
        "contentType": "application/json", "qps": 100.0, "burst": 200,
    },
    "profiles": [
        {
            "schedulerName": "kpysched",
            "percentageOfNodesToScore": 30,
            "plugins": {
                "preFilter": {"enabled": [{"name": "NodeAffinity"}]},
                "filter": {"disabled": [{"name": "NodePorts"}]},
                "score": {
                    "enabled": [{"name": "NodeResourcesFit", "weight": 3},
                                {"name": "ImageLocality", "weight": 2}],
                    "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                },
                "multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 4}],
                               "disabled": [{"name": "NodeDeclaredFeatures"}]},
                "queueSort": {"enabled": [], "disabled": []},
                "bind": {"enabled": [], "disabled": []},
                "postBind": {"enabled": [], "disabled": []},
            },
            "pluginConfig": [
                {"name": "NodeResourcesFit", "args": {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "NodeResourcesFitArgs",
                    "ignoredResources": ["example.com/ignored"],
                    "ignoredResourceGroups": ["example.org"],
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 2},
                                      {"name": "memory", "weight": 1}],
                        "requestedToCapacityRatio": {"shape": [
                            {"utilization": 0, "score": 0},
                            {"utilization": 100, "score": 10}]},
                    },
                }},
                {"name": "PodTopologySpread", "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [{
                        "maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 1,
                        "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore",
                        "matchLabelKeys": ["app"]}],
                }},
                {"name": "InterPodAffinity", "args": {
                    "hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}},
                {"name": "NodeAffinity", "args": {"addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pool", "operator": "In",
                                               "values": ["batch"]}]}]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 10, "preference": {"matchExpressions": [
                            {"key": "tier", "operator": "Exists"}]}}],
                }}},
                {"name": "DefaultPreemption", "args": {
                    "minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 50}},
                {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 300}},
                {"name": "DynamicResources", "args": {
                    "filterTimeout": "5s", "bindingTimeout": "2m"}},
                {"name": "NodeResourcesBalancedAllocation", "args": {
                    "resources": [{"name": "cpu", "weight": 1},
                                  {"name": "memory", "weight": 1}]}},
            ],
        },
        {"schedulerName": "second", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
    ],
}

Path_ = tuple[str | int, ...]

BAD_VALUES: tuple[Any, ...] = (
    "", "x", "日本語", "\x00", "-1", "1e3", "50%", "15", "15s", "-5s", "1h2q", "NaN",
    "99999999999999999999h", 0, -1, 1, 101, 2**31, 2**63, -(2**63) - 1, 10**30, 0.5, -0.5,
    1e300, float("nan"), float("inf"), float("-inf"), True, False, [], [1], ["x"], {},
    {"name": "x"}, {"unknownField": 1}, [{"name": "NoSuchPlugin"}], "x" * 300,
)
UNKNOWN_KEYS = ("unknownField", "Parallelism", "日本", "", "123", "true")


def field_paths(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every key and list item below `value`, as paths from the document's root."""
    if path:
        yield path
    items: Any = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        yield from field_paths(item, (*path, key))


PATHS = sorted(field_paths(FULL), key=str)


def args(plugin: str, *path: str | int) -> Path_:
    """The path of a field in `plugin`'s args in the first profile."""
    configs = FULL["profiles"][0]["pluginConfig"]
    index = next(i for i, config in enumerate(configs) if config["name"] == plugin)
    return ("profiles", 0, "pluginConfig", index, "args", *path)


def get(document: Any, path: Path_) -> Any:
    for part in path:
        document = document[part]
    return document


def named_by(path: Path_) -> tuple[str, ...]:
    """The names an error about `path` may use: its nearest key or the one above (a rule
    between fields, such as queueSort alike in every profile, names the field it binds)."""
    return tuple(part for part in reversed(path) if isinstance(part, str))[:2]


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return "non-finite"  # JSON has no such number: upstream cannot read it
    return "bool" if isinstance(value, bool) else type(value).__name__


def must_refuse(original: Any, value: Any) -> bool:
    """A value of another JSON type than the field's (an integer is a float's too): the
    strict decoder refuses it; None only unsets the field."""
    was, now = json_kind(original), json_kind(value)
    return now not in ("null", was) and (was, now) != ("float", "int")


@dataclass(frozen=True)
class Mutation:
    document: dict[str, Any]
    names: tuple[str, ...]  # one of them must be in the error
    refused: bool  # the file must not load


def replace(path: Path_, value: Any) -> Mutation:
    document = copy.deepcopy(FULL)
    original = get(document, path)
    get(document, path[:-1])[path[-1]] = value
    return Mutation(document, named_by(path), must_refuse(original, value))


def delete(path: Path_) -> Mutation:
    document = copy.deepcopy(FULL)
    del get(document, path[:-1])[path[-1]]
    return Mutation(document, named_by(path), refused=False)


def add_key(path: Path_, key: str) -> Mutation:
    document = copy.deepcopy(FULL)
    get(document, path)[key] = 1
    return Mutation(document, (key,), refused=True)  # strict: no unknown fields


DICT_PATHS = [path for path in [(), *PATHS] if isinstance(get(FULL, path), dict)]

mutations = st.one_of(
    st.builds(replace, st.sampled_from(PATHS), st.sampled_from(BAD_VALUES)),
    st.builds(delete, st.sampled_from(PATHS)),
    st.builds(add_key, st.sampled_from(DICT_PATHS), st.sampled_from(UNKNOWN_KEYS)),
)


def write(document: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


def check(path: Path, mutation: Mutation) -> None:
    """Loading refuses the file naming the field, or loads it and builds the scheduler."""
    try:
        config, profiles = load_config(path, REGISTRY)
    except ConfigError as error:
        assert str(error).startswith(f"{path}: ")
        assert any(name in str(error) for name in mutation.names), (
            f"the error names none of {mutation.names}: {error}")
        return
    assert not mutation.refused, "a value of the wrong type was accepted"
    # Accepted: the plugins must accept their args too when the scheduler is built.
    build_scheduler(config, profiles, REGISTRY, cast(RawApi, RecordingApi()))


def test_the_full_file_is_valid(tmp_path: Path) -> None:
    check(write(FULL, tmp_path), Mutation(FULL, (), refused=False))


@given(mutations)
@example(replace(("clientConnection", "qps"), float("nan")))
@example(replace(("leaderElection", "leaseDuration"), "99999999999999999999h"))
@example(replace(args("DynamicResources", "filterTimeout"), 5))
@example(replace(args("VolumeBinding", "bindTimeoutSeconds"), "15"))
@example(add_key(args("NodeAffinity", "addedAffinity"), "unknownField"))
@example(replace(("profiles", 0, "plugins", "queueSort", "enabled"), [{"name": "x"}]))
def test_a_broken_field_is_named_or_harmless(tmp_path_factory: pytest.TempPathFactory,
                                             mutation: Mutation) -> None:
    check(write(mutation.document, tmp_path_factory.mktemp("config")), mutation)


@given(st.one_of(
    st.binary(max_size=200),
    st.text(alphabet="[]{}:,- \n\t&*!|>'\"#%@`ab1", max_size=200).map(str.encode),
))
@example(b"[" * 5000)
@example(b"a: &a [*a]\n")
@example(b"\xff\xfe")
def test_a_file_that_is_not_a_configuration_is_a_config_error(
        tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError):
        load_config(path, REGISTRY)


@pytest.mark.parametrize(("mutation", "expected"), [
    pytest.param(replace(args("NodeResourcesFit", "scoringStrategy", "type"), "Fastest"),
                 "profiles[0].pluginConfig[0].args: scoringStrategy.type: Unsupported value: "
                 "'Fastest'", id="plugin-args"),
    pytest.param(replace(("leaderElection", "leaseDuration"), "99999999999999999999h"),
                 'leaderElection.leaseDuration: must be a duration such as "15s"',
                 id="duration-overflow"),
])
def test_the_cli_exits_2_naming_the_field(tmp_path: Path, mutation: Mutation,
                                          expected: str) -> None:
    path = write(mutation.document, tmp_path)
    run = subprocess.run([sys.executable, "-m", "kpysched.cli", "run", "--config", str(path)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert f"error: {path}: {expected}" in run.stderr, run.stderr
