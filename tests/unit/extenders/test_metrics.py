"""kpysched_extender_request_duration_seconds{extender,verb}: one observation per
extender call, failed calls included."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kpysched.config.extenders import Extender
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.registry import Extenders
from kpysched.metrics import SchedulerMetrics
from tests.unit.builders import make_node
from tests.unit.extenders.server import FakeExtender, names_of, serving


def _counts(metrics: SchedulerMetrics) -> dict[tuple[str, str], float]:
    families = text_string_to_metric_families(metrics.render().decode())
    return {(sample.labels["extender"], sample.labels["verb"]): sample.value
            for family in families if family.name == "kpysched_extender_request_duration_seconds"
            for sample in family.samples if sample.name.endswith("_count")}


def test_each_call_is_observed_by_extender_and_verb() -> None:
    metrics = SchedulerMetrics()
    with serving(FakeExtender()) as extender:
        extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
        extender.answers["prioritize"] = lambda body: (500, None)
        extenders = Extenders([Extender(urlPrefix=extender.url, filterVerb="filter",
                                        prioritizeVerb="prioritize", weight=1,
                                        nodeCacheCapable=True)], metrics.extender_request)
        try:
            (one,) = extenders
            nodes = [make_node("n1").info()]
            for _ in range(2):
                extenders.wait(one.filter(b"{}", nodes))
            with pytest.raises(ExtenderError):
                extenders.wait(one.prioritize(b"{}", nodes))
        finally:
            asyncio.run(extenders.close())
    assert _counts(metrics) == {(extender.url, "filter"): 2.0,
                                (extender.url, "prioritize"): 1.0}
