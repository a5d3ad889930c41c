"""`kpysched run` refuses bad configuration before touching the cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CASES = {
    "unknown-plugin": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: kpysched\n  plugins:\n    filter:\n      enabled:\n"
        "      - name: NodeResourcesFitt\n",
        'profiles[0].plugins.filter.enabled[0].name: unknown plugin "NodeResourcesFitt"',
    ),
    "bad-arg": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: kpysched\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args:\n      scoringStrategy:\n        type: Cheapest\n",
        "profiles[0].pluginConfig[0].args",
    ),
    "unknown-field": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScor: 50\n",
        "percentageOfNodesToScor",
    ),
    "bad-yaml": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: [oops\n",
        "line",
    ),
    "negative-lease-duration": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaseDuration: -5s\n",
        "leaderElection.leaseDuration",
    ),
    "renew-deadline-not-below-lease": (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaseDuration: 15s\n  renewDeadline: 20s\n",
        "leaderElection.",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_config_exits_2_naming_the_field(case: str, tmp_path: Path) -> None:
    text, expected = CASES[case]
    path = tmp_path / "config.yaml"
    path.write_text(text)
    # The kubeconfig does not exist: start-up must stop at the config, before connecting.
    result = subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "run", "--config", str(path),
         "--kubeconfig", str(tmp_path / "absent")],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "scheduler.starting" not in result.stderr


@pytest.mark.parametrize(("flag", "value", "field"), [
    ("--secure-port", "70000", "secure_port"),
    ("--secure-port", "-1", "secure_port"),
])
def test_bad_setting_exits_2_naming_it(flag: str, value: str, field: str,
                                       tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "run", flag, value,
         "--kubeconfig", str(tmp_path / "absent")],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert field in result.stderr
