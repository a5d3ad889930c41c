"""--write-config-to: the effective configuration loads back to the same profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kpysched.config import load_config
from kpysched.config.written import write_config
from kpysched.framework.registry import full_registry
from kpysched.objects.durations import go_duration, parse_go_duration
from kpysched.plugins import IN_TREE

SOURCE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 20
leaderElection:
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 500ms
profiles:
- schedulerName: binpack
  percentageOfNodesToScore: 50
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: spread
"""


@pytest.mark.parametrize("overrides", [
    pytest.param(None, id="as-written"),
    pytest.param({"leaderElection": {"leaseDuration": "1m30s", "leaderElect": False}},
                 id="with-flag-overrides"),
])
def test_written_configuration_loads_back_to_the_same_profiles(
        tmp_path: Path, overrides: dict[str, object] | None) -> None:
    source = tmp_path / "source.yaml"
    source.write_text(SOURCE)
    registry = full_registry(IN_TREE)
    config, profiles = load_config(source, registry, overrides)
    written = tmp_path / "written.yaml"
    write_config(written, config, Path("/etc/kubernetes/scheduler.conf"))

    again, profiles_again = load_config(written, registry)
    assert profiles_again == profiles
    assert again.model_copy(update={"client_connection": config.client_connection}) == config
    document = yaml.safe_load(written.read_text())
    assert document["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"
    assert document["leaderElection"]["retryPeriod"] == "500ms"


@pytest.mark.parametrize(("seconds", "text"), [
    (15, "15s"), (90, "1m30s"), (3600, "1h0m0s"), (0.5, "500ms"), (1.5, "1.5s"), (0, "0s"),
    (300, "5m0s"), (-2, "-2s"),
], ids=str)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
    assert parse_go_duration(text) == seconds


@pytest.mark.parametrize("release", [36, 37])
def test_written_as_upstream_defaults_it_and_loads_back(tmp_path: Path, release: int) -> None:
    from kpysched.config.features import Features

    source = tmp_path / "source.yaml"
    source.write_text(SOURCE)
    registry = full_registry(IN_TREE)
    features = Features(release=release)
    config, profiles = load_config(source, registry, None, features)
    written = tmp_path / "written.yaml"
    write_config(written, config, None, release, profiles=profiles, features=features)
    document = yaml.safe_load(written.read_text())
    binpack, spread = document["profiles"]
    # The default plugins in multiPoint, in the release's order, weights written.
    names = [entry["name"] for entry in spread["plugins"]["multiPoint"]["enabled"]]
    unschedulable, node_name = names.index("NodeUnschedulable"), names.index("NodeName")
    assert (unschedulable < node_name) == (release == 36)
    assert {"name": "TaintToleration", "weight": 3} in spread["plugins"]["multiPoint"]["enabled"]
    # The configured point kept as written; every plugin that takes args given them.
    assert binpack["plugins"]["score"] == {
        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
        "disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    configured = [entry["name"] for entry in binpack["pluginConfig"]]
    assert configured[0] == "NodeResourcesFit"  # as configured, first
    assert configured[1:] == sorted(configured[1:])  # then the defaults, by name
    fit = binpack["pluginConfig"][0]["args"]
    assert fit["kind"] == "NodeResourcesFitArgs"
    assert fit["scoringStrategy"]["type"] == "MostAllocated"
    assert fit["scoringStrategy"]["resources"] == [{"name": "cpu", "weight": 1},
                                                   {"name": "memory", "weight": 1}]
    by_name = {entry["name"]: entry["args"] for entry in spread["pluginConfig"]}
    assert by_name["DynamicResources"]["bindingTimeout"] == "10m0s"
    # StorageCapacityScoring (on in v1.37) defaults VolumeBinding's shape.
    assert ("shape" in by_name["VolumeBinding"]) == (release == 37)
    _, profiles_again = load_config(written, registry, None, features)
    assert profiles_again == profiles
