"""Quantity conversions and sums where Go's int64 arithmetic shows, with results taken
from apimachinery v0.36.4 itself (resource.ParseQuantity, Add, Cmp, Value, MilliValue
run on the same strings)."""

from __future__ import annotations

import pytest

from kpysched.objects.quantity import QuantityError, milli_value, parse_quantity, value

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)


@pytest.mark.parametrize(("text", "units", "milli"), [
    pytest.param("1E", 10 ** 18, 0, id="1E: MilliValue overflows to 0"),
    pytest.param("1e18", 10 ** 18, 0, id="1e18: MilliValue overflows to 0"),
    pytest.param("1e19", 0, 0, id="1e19: Value overflows to 0"),
    pytest.param("3Ei", 3 * 2 ** 60, INT64_MIN, id="3Ei: MilliValue wraps"),
    pytest.param("9Ei", INT64_MAX, -1000, id="9Ei: capped, MilliValue wraps"),
    pytest.param("-9Ei", -INT64_MAX, 1000, id="-9Ei: capped, MilliValue wraps"),
    pytest.param("9223372036854775808", INT64_MIN, 0, id="2^63 wraps"),
    pytest.param("99999999999999999999", 7766279631452241919, 200376420520688664,
                 id="20 nines wrap"),
    pytest.param("999999999999999999", 999999999999999999, 3875820019684211736,
                 id="18 nines: MilliValue wraps"),
    pytest.param("-1.5", -2, -1500, id="negative rounds away from zero"),
    pytest.param("-1.0001Ki", -1023, -1024101, id="negative inf.Dec rounds toward +inf"),
    pytest.param("-0.0000000001", 1, 1, id="negative below a nano"),
    pytest.param("123456789.123456789123", 123456790, 123456789124, id="rounded to nanos"),
    pytest.param("0.1Ki", 103, 102400, id="binary fraction"),
    pytest.param("1e-100", 1, 1, id="tiny rounds up to a nano"),
    pytest.param("1e4294967297", 10, 10000, id="exponent wraps to int32"),
    pytest.param("1e2147483647", 0, 1, id="scale arithmetic wraps to int32"),
    pytest.param("1.5e-2147483648", 0, 15, id="fraction shifts the int32 scale around"),
])
def test_go_int64_results(text: str, units: int, milli: int) -> None:
    assert (value(text), milli_value(text)) == (units, milli)


@pytest.mark.parametrize("text", [
    pytest.param("1e", id="bare e"),
    pytest.param("1ee3", id="double e"),
    pytest.param("1e_3", id="underscore in exponent"),
    pytest.param("1e0x3", id="hex exponent"),
    pytest.param("1e99999999999999999999", id="exponent beyond int64"),
    pytest.param("1Mi3", id="digits after a suffix"),
    pytest.param("1m1", id="digits after m"),
    pytest.param("1KiB", id="trailing B"),
    pytest.param("e-100", id="exponent without a number"),
    pytest.param(".e-10", id="dot and exponent only"),
    pytest.param("1e2147483648", id="would take Go minutes to build"),
])
def test_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        value(text)


@pytest.mark.parametrize(("texts", "units", "milli"), [
    pytest.param(("0.5", "0.5"), 1, 1000, id="sums before rounding"),
    pytest.param(("0.5m", "0.5m"), 1, 1, id="half millis add up to one"),
    pytest.param(("0.1Gi", "0.1Gi"), 214748365, 214748364800, id="fractional bytes"),
    pytest.param(("6E", "6E"), 0, 0, id="int64Amount sum overflows on conversion"),
    pytest.param(("5000000000000000000", "5000000000000000000"), -8446744073709551616,
                 1864712049423024128, id="int64 overflow moves the sum to inf.Dec"),
])
def test_sums(texts: tuple[str, ...], units: int, milli: int) -> None:
    first, *rest = (parse_quantity(text) for text in texts)
    for amount in rest:
        first = first + amount
    assert (first.units(), first.milli_value()) == (units, milli)


@pytest.mark.parametrize(("left", "right", "order"), [
    pytest.param("12E", "9Ei", 1, id="beyond the cap"),
    pytest.param("1Gi", "1073741824", 0, id="equal across formats"),
    pytest.param("999m", "1", -1, id="millis"),
    pytest.param("-1", "1n", -1, id="signs"),
    pytest.param("1e1000000", "9Ei", 1, id="far apart scales"),
])
def test_compare(left: str, right: str, order: int) -> None:
    assert parse_quantity(left).compare(parse_quantity(right)) == order
    assert parse_quantity(right).compare(parse_quantity(left)) == -order
