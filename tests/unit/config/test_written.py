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
