"""charts/kpysched/values.schema.json: a mistyped or ill-typed value stops `helm
install`, `helm template` and `helm lint` with the field's path, instead of being
ignored (helm validates values against it before rendering; checked with template,
which needs no cluster)."""

from __future__ import annotations

import pytest

from tests.e2e.test_deploy import CHART, LOCAL_IMAGE, NONDEFAULT_VALUES, helm

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("option", "message"), [
    ("replica=3", "additional properties 'replica' not allowed"),
    ("replicas=two", "at '/replicas': got string, want integer"),
    ("leaderElection.leaseDuration=15", "at '/leaderElection/leaseDuration': got number"),
    ("image.pullPolicy=Sometimes", "at '/image/pullPolicy'"),
    ("logLevel=verbose", "at '/logLevel'"),
    ("serviceMonitor.enable=true", "additional properties 'enable' not allowed"),
    ("prometheusRule.errorRatio=5", "at '/prometheusRule/errorRatio'"),
    ("networkPolicy.scrapers[0].podSelectr.matchLabels.a=b",
     "additional properties 'podSelectr' not allowed"),
    ("networkPolicy.enabled=yes", "at '/networkPolicy/enabled'"),
    ("serviceMonitor.tls.ca=x", "additional properties 'ca' not allowed"),
], ids=["misspelt-key", "string-for-int", "number-for-duration", "pull-policy", "log-level",
        "misspelt-nested", "ratio-over-1", "misspelt-selector", "string-for-bool",
        "misspelt-tls"])
def test_bad_values_fail_naming_the_field(option: str, message: str) -> None:
    result = helm("template", "kpysched", str(CHART), *LOCAL_IMAGE,
                  "--set", option, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("values", [(), ("-f", str(NONDEFAULT_VALUES))],
                         ids=["default", "nondefault"])
def test_shipped_values_meet_the_schema(values: tuple[str, ...]) -> None:
    helm("template", "kpysched", str(CHART), *LOCAL_IMAGE, *values)
