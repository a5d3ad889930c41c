"""scripts/render-dashboard.py reads a panel as Grafana does: legend names from
legendFormat, values in the panel's unit, and every unit the dashboard uses is known."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "charts/kpysched/dashboards/kpysched.json"


@pytest.fixture(scope="module")
def renderer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_dashboard",
                                                  ROOT / "scripts/render-dashboard.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (0.25, "s", "250 ms"), (0.0004, "s", "400 µs"), (2.5, "s", "2.5 s"), (90, "s", "1.5 min"),
    (3.2, "ops", "3.2 ops/s"), (1500, "ops", "1.5 K ops/s"), (0.4, "percentunit", "40%"),
    (12, "percent", "12%"), (512 * 2**20, "bytes", "512 MiB"), (1536, "bytes", "1.5 KiB"),
    (2500, "short", "2.5 K"), (3, "short", "3"), (0, "s", "0 s"),
])
def test_values_read_in_the_panel_unit(renderer: ModuleType, value: float, unit: str,
                                       shown: str) -> None:
    assert renderer.format_value(value, unit) == shown


def test_legend_names_fill_legend_format_from_the_series_labels(renderer: ModuleType) -> None:
    labels = {"__name__": "x", "queue": "active", "event": "NodeAdd", "pod": "kpysched-0"}
    assert renderer.legend_name("{{queue}} / {{event}}", labels, "e") == "active / NodeAdd"
    assert renderer.legend_name("p99 {{ pod }}", labels, "e") == "p99 kpysched-0"
    assert renderer.legend_name(None, {"__name__": "up", "job": "a"}, "e") == 'up{job="a"}'


def test_every_dashboard_unit_is_one_the_renderer_formats(renderer: ModuleType) -> None:
    known = {"s", "ops", "percentunit", "percent", "bytes", "short"}
    panels = json.loads(DASHBOARD.read_text())["panels"]
    units = {p.get("fieldConfig", {}).get("defaults", {}).get("unit") for p in panels
             if p["type"] != "row"}
    assert units <= known, units - known


def test_legend_reads_row_by_row(renderer: ModuleType) -> None:
    # matplotlib fills columns first: this order puts a, b, c on the first row.
    assert renderer.row_major(["a", "b", "c", "d", "e"], 3) == ["a", "d", "b", "e", "c"]
