"""The chart's Grafana dashboard passes Grafana's own dashboard linter, strictly.

The linter (github.com/grafana/dashboard-linter, built by the harness) holds the
conventions Grafana's mixins follow: a templated datasource, job and instance
variables whose "All" matches only present series (`.+`), every query filtered by
them, counters only under rate()/increase(), titles, descriptions and units on every
panel, and a dashboard that is not editable in place.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.cluster import build
from tests.e2e.test_deploy import DASHBOARD

pytestmark = pytest.mark.e2e


def test_dashboard_passes_the_dashboard_linter_strictly() -> None:
    binary = build.binary_path("dashboard-linter")
    if not binary.is_file():
        raise AssertionError(f"dashboard-linter is not built at {binary}: run "
                             "`python -m tests.cluster build`")
    result = subprocess.run([str(binary), "lint", "--strict", str(DASHBOARD)],
                            capture_output=True, text=True, timeout=60)
    findings = [re.sub(r"\x1b\[[0-9;]*m", "", line)
                for line in (result.stdout + result.stderr).splitlines()
                if "❌" in line or "⚠" in line]
    assert result.returncode == 0 and not findings, "\n".join(findings) or result.stderr
