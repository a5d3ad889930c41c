"""backoff_seconds, as upstream's calculateBackoffDuration (initial << (count-1), capped)."""

from __future__ import annotations

import pytest

from kpysched.queue.backoff import backoff_seconds


@pytest.mark.parametrize(("attempts", "expected"), [
    pytest.param(1, 1.0, id="first failure waits the initial backoff"),
    pytest.param(2, 2.0, id="second doubles"),
    pytest.param(3, 4.0, id="third"),
    pytest.param(4, 8.0, id="fourth"),
    pytest.param(5, 10.0, id="fifth is capped at the maximum"),
    pytest.param(6, 10.0, id="sixth stays at the maximum"),
    pytest.param(64, 10.0, id="very many attempts stay at the maximum"),
])
def test_default_durations(attempts: int, expected: float) -> None:
    assert backoff_seconds(attempts, 1.0, 10.0) == expected


@pytest.mark.parametrize(("attempts", "initial", "maximum", "expected"), [
    pytest.param(1, 2.0, 3.0, 2.0, id="initial below maximum"),
    pytest.param(2, 2.0, 3.0, 3.0, id="doubling overshoots: capped"),
    pytest.param(1, 5.0, 3.0, 3.0, id="initial above maximum: capped at once"),
    pytest.param(3, 0.5, 60.0, 2.0, id="fractional initial doubles"),
    pytest.param(7, 1.0, 64.0, 64.0, id="exactly reaching the maximum is not capped early"),
])
def test_custom_durations(attempts: int, initial: float, maximum: float,
                          expected: float) -> None:
    assert backoff_seconds(attempts, initial, maximum) == expected
