"""Quantities, with cases from apimachinery's resource.Quantity tests (quantity_test.go).

CPU is compared in millis (MilliValue) and everything else in units (Value); both
round fractions up, as upstream does.
"""

from __future__ import annotations

import pytest

from kpysched.objects.quantity import QuantityError, milli_value, value

KI, MI, GI, TI, PI, EI = (1024 ** n for n in range(1, 7))


@pytest.mark.parametrize(("text", "milli"), [
    pytest.param("100m", 100, id="100m"),
    pytest.param("1", 1000, id="1"),
    pytest.param("1.5", 1500, id="1.5"),
    pytest.param("0.5", 500, id="0.5"),
    pytest.param("3m", 3, id="3m"),
    pytest.param("0", 0, id="0"),
    pytest.param("0m", 0, id="0m"),
    pytest.param("0.1m", 1, id="0.1m rounds up to 1m"),
    pytest.param("1n", 1, id="1n rounds up to 1m"),
    pytest.param("1500u", 2, id="1500u rounds up to 2m"),
    pytest.param("2k", 2_000_000, id="2k"),
    pytest.param("1e3", 1_000_000, id="1e3"),
    pytest.param("1E-3", 1, id="1E-3"),
    pytest.param(".001", 1, id=".001"),
    pytest.param("1.", 1000, id="1."),
    pytest.param("+2", 2000, id="explicit plus"),
    pytest.param("-1", -1000, id="negative"),
])
def test_milli_value(text: str, milli: int) -> None:
    assert milli_value(text) == milli


@pytest.mark.parametrize(("text", "units"), [
    pytest.param("1Gi", GI, id="1Gi"),
    pytest.param("1Ki", KI, id="1Ki"),
    pytest.param("8Ki", 8 * KI, id="8Ki"),
    pytest.param("7Mi", 7 * MI, id="7Mi"),
    pytest.param("5Ti", 5 * TI, id="5Ti"),
    pytest.param("4Pi", 4 * PI, id="4Pi"),
    pytest.param("3Ei", 3 * EI, id="3Ei"),
    pytest.param("0.5Mi", 512 * KI, id="0.5Mi"),
    pytest.param("100.035Ki", 102436, id="100.035Ki rounds up"),
    pytest.param("1k", 1000, id="1k"),
    pytest.param("50k", 50_000, id="50k"),
    pytest.param("7M", 7_000_000, id="7M"),
    pytest.param("6G", 6 * 10 ** 9, id="6G"),
    pytest.param("5T", 5 * 10 ** 12, id="5T"),
    pytest.param("2P", 2 * 10 ** 15, id="2P"),
    pytest.param("1E", 10 ** 18, id="1E is exa, not an exponent"),
    # Beyond int64 with a decimal suffix: upstream's Value() gives 0 (checked against Go).
    pytest.param("12E", 0, id="12E overflows to 0 as upstream"),
    # apimachinery's ParseQuantity accepts these as zero (its own tests list ".").
    pytest.param(".", 0, id="only a dot is zero"),
    pytest.param("Gi", 0, id="a suffix alone is zero"),
    pytest.param("1e3", 1000, id="1e3"),
    pytest.param("1E6", 10 ** 6, id="1E6"),
    pytest.param("1.3E+6", 1_300_000, id="1.3E+6"),
    pytest.param("1.2e3", 1200, id="1.2e3"),
    pytest.param("0.5e-1", 1, id="0.5e-1 rounds up"),
    pytest.param("100.035k", 100_035, id="100.035k"),
    pytest.param("10.035M", 10_035_000, id="10.035M"),
    pytest.param("1.G", 10 ** 9, id="1.G"),
    pytest.param("0.0005k", 1, id="0.0005k rounds up"),
    pytest.param("100m", 1, id="100m rounds up to 1"),
    pytest.param("1500m", 2, id="1500m rounds up to 2"),
    pytest.param("9", 9, id="plain"),
    pytest.param("9Ei", 2 ** 63 - 1, id="9Ei saturates at the int64 maximum"),
])
def test_value(text: str, units: int) -> None:
    assert value(text) == units


@pytest.mark.parametrize(("raw", "milli", "units"), [
    pytest.param(2, 2000, 2, id="int"),
    pytest.param(0.25, 250, 1, id="float"),
])
def test_numbers_are_accepted(raw: int | float, milli: int, units: int) -> None:
    assert (milli_value(raw), value(raw)) == (milli, units)


@pytest.mark.parametrize("text", [
    pytest.param("", id="empty"),
    pytest.param("1.1.M", id="two dots"),
    pytest.param("1+1.0M", id="plus in the middle"),
    pytest.param("0.1mi", id="mi is not a suffix"),
    pytest.param("0.1am", id="unknown prefix"),
    pytest.param("aoeu", id="letters"),
    pytest.param(".5i", id="bare i"),
    pytest.param("1i", id="1i"),
    pytest.param("-3.01i", id="negative bare i"),
    pytest.param("-3.01e-", id="exponent without digits"),
    pytest.param("1K", id="capital K"),
    pytest.param("1ki", id="lowercase ki"),
    pytest.param(" 1", id="leading whitespace is forbidden"),
    pytest.param("1 ", id="trailing whitespace is forbidden"),
])
def test_invalid_quantities_raise(text: str) -> None:
    with pytest.raises(QuantityError):
        milli_value(text)
    with pytest.raises(QuantityError):
        value(text)


def test_quantity_error_is_a_value_error() -> None:
    assert issubclass(QuantityError, ValueError)
