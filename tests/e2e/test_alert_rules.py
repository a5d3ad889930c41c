"""The chart's alerting rules, checked by Prometheus's own promtool (built by the
harness from the Go module proxy, like the other upstream binaries).

- `promtool check rules` on the PrometheusRule the chart renders: PromQL parses,
  templates in annotations expand, no duplicate rules;
- `promtool test rules charts/kpysched/ci/alerts-test.yaml`: for every alert, series
  that make it fire (with the labels and annotations an operator then sees) and
  series that must keep it quiet;
- every alert the chart ships has both kinds of test case, so a new alert cannot land
  without them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster import build
from tests.e2e.test_deploy import CHART, LOCAL_IMAGE, helm

pytestmark = pytest.mark.e2e

ALERT_TESTS = CHART / "ci" / "alerts-test.yaml"
# The release the test cases' labels (job, namespace, Lease name) are written for:
# deploy/'s install, `helm install kpysched charts/kpysched -n kube-system`.
RELEASE, NAMESPACE = "kpysched", "kube-system"


def promtool(*args: str, cwd: Path) -> str:
    binary = build.binary_path("promtool")
    if not binary.is_file():
        raise AssertionError(f"promtool is not built at {binary}: run "
                             "`python -m tests.cluster build`")
    result = subprocess.run([str(binary), *args], cwd=cwd, capture_output=True, text=True,
                            timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"promtool {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result.stdout


def rendered_rules() -> dict[str, Any]:
    """The PrometheusRule's spec (a Prometheus rule file: `groups:`), as installed."""
    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *LOCAL_IMAGE,
               "--set", "prometheusRule.enabled=true",
               "--show-only", "templates/prometheusrule.yaml").stdout
    (rule,) = [doc for doc in yaml.safe_load_all(out) if doc]
    spec: dict[str, Any] = rule["spec"]
    return spec


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """rules.yaml (rendered) beside a copy of the test file that names it."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rendered_rules()))
    shutil.copy(ALERT_TESTS, tmp_path / ALERT_TESTS.name)
    return tmp_path


def test_promtool_check_rules_accepts_the_rendered_rule(rules_dir: Path) -> None:
    out = promtool("check", "rules", "rules.yaml", cwd=rules_dir)
    assert "SUCCESS" in out


def test_promtool_unit_tests_pass(rules_dir: Path) -> None:
    out = promtool("test", "rules", ALERT_TESTS.name, cwd=rules_dir)
    assert "SUCCESS" in out


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    alerts = {rule["alert"] for group in rendered_rules()["groups"] for rule in group["rules"]}
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(ALERT_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    assert alerts, "the chart renders no alert"
    assert alerts - firing == set(), "alerts without a test case where they fire"
    assert alerts - quiet == set(), "alerts without a test case where they stay quiet"
