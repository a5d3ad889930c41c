"""The CI soak: the "ci" plan (200 KWOK nodes, every fault once, four minutes of
churn) against two kpysched replicas and kube-scheduler, with every invariant
asserted. scripts/test.sh runs it on its own after the main suite (`-m soak`), so
nothing else competes for the machine while it measures pending times."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.soak.plan import PLANS
from tests.soak.run import run

pytestmark = pytest.mark.soak


async def test_ci_soak_keeps_every_invariant(tmp_path: Path) -> None:
    # KPYSCHED_SOAK_REPORT keeps the report and the schedulers' logs somewhere known.
    out = Path(os.environ.get("KPYSCHED_SOAK_REPORT") or tmp_path / "report")
    report = await run(PLANS["ci"], tmp_path / "cluster", out)
    (out / "report.json").write_text(report.to_json())
    print(report.to_markdown())
    figures = report.figures
    # The soak did what it claims: pods of both schedulers placed, every fault run.
    assert figures["podsPlacedByKpysched"] > 500, figures
    assert figures["podsPlacedByKubeScheduler"] > 100, figures
    assert [f["fault"] for f in report.faults] == list(PLANS["ci"].faults)
    assert report.verdict() == [], report.to_markdown()
    assert figures["doubleBinds"] == 0 and figures["lostPods"] == 0
