"""kpysched.api.times: the two timestamp formats the API server writes."""

import datetime as dt
import re

from kpysched.api.times import api_time, micro_time

MOMENT = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)


def test_a_moment_in_each_format() -> None:
    assert api_time(MOMENT) == "2026-01-02T03:04:05Z"
    assert micro_time(MOMENT) == "2026-01-02T03:04:05.123456Z"


def test_now_in_each_format() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", api_time())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", micro_time())
