"""Go-semantics arithmetic, the shape function and default normalisation."""

from __future__ import annotations

import pytest

from kpysched.framework.interfaces import NodeScore
from kpysched.plugins._shared.args import is_int64, label_value_errors, qualified_name_errors
from kpysched.plugins._shared.go_math import default_normalize_score, go_div, round_ratio
from kpysched.plugins._shared.shape_score import ShapePoint, broken_linear


@pytest.mark.parametrize(("a", "b", "expected"), [
    pytest.param(7, 2, 3, id="positive"), pytest.param(-7, 2, -3, id="negative numerator"),
    pytest.param(7, -2, -3, id="negative denominator"), pytest.param(-7, -2, 3, id="both"),
    pytest.param(0, -5, 0, id="zero"),
])
def test_go_div_truncates(a: int, b: int, expected: int) -> None:
    assert go_div(a, b) == expected


@pytest.mark.parametrize(("a", "b", "expected"), [
    pytest.param(75, 2, 38, id="half rounds up"), pytest.param(73, 2, 37, id="36.5 -> 37"),
    pytest.param(10, 3, 3, id="down"), pytest.param(0, 4, 0, id="zero"),
])
def test_round_ratio(a: int, b: int, expected: int) -> None:
    assert round_ratio(a, b) == expected


def shape(*points: tuple[int, int]) -> list[ShapePoint]:
    return [ShapePoint(u, s) for u, s in points]


# Upstream's TestBrokenLinearFunction.
@pytest.mark.parametrize(("points", "assertions"), [
    pytest.param(shape((10, 1), (90, 9)),
                 [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9),
                  (99, 9), (100, 9), (110, 9)], id="increasing"),
    pytest.param(shape((0, 2), (40, 10), (100, 0)),
                 [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
                 id="up then down"),
    pytest.param(shape((0, 2), (40, 2), (100, 2)),
                 [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
                 id="flat"),
    pytest.param(shape((0, 100), (30, 0)), [(10, 67), (20, 34)],
                 id="decreasing segments truncate toward zero"),
])
def test_broken_linear(points: list[ShapePoint], assertions: list[tuple[int, int]]) -> None:
    for utilization, expected in assertions:
        assert broken_linear(points, utilization) == expected, utilization


@pytest.mark.parametrize(("raw", "reverse", "expected"), [
    pytest.param([0, 0, 0], False, [0, 0, 0], id="all zero"),
    pytest.param([0, 0, 0], True, [100, 100, 100], id="all zero reversed"),
    pytest.param([1, 2, 4], False, [25, 50, 100], id="scaled"),
    pytest.param([1, 2, 3], True, [67, 34, 0], id="reversed"),
])
def test_default_normalize_score(raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = [NodeScore(f"n{i}", value) for i, value in enumerate(raw)]
    default_normalize_score(scores, reverse=reverse)
    assert [entry.score for entry in scores] == expected


@pytest.mark.parametrize(("name", "valid"), [
    ("cpu", True), ("example.com/gpu", True), ("a/b/c", False), ("/x", False),
    ("Example.com/x", False), ("x" * 64, False), ("-x", False), ("under_score.dot-dash", True),
])
def test_qualified_name(name: str, valid: bool) -> None:
    assert (not qualified_name_errors(name)) is valid


@pytest.mark.parametrize(("value", "valid"), [
    ("", True), ("a", True), ("a b", False), ("x" * 64, False), ("a-", False),
])
def test_label_value(value: str, valid: bool) -> None:
    assert (not label_value_errors(value)) is valid


@pytest.mark.parametrize(("text", "valid"), [
    ("12", True), ("-3", True), ("+4", True), ("1.5", False), ("", False), ("1_000", False),
    (" 1", False), (str(2**63), False), (str(-(2**63)), True), ("٣", False),
])
def test_is_int64(text: str, valid: bool) -> None:
    assert is_int64(text) is valid
