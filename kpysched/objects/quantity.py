"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3", "1E"), as apimachinery has them.

Upstream compares CPU in millicores (Quantity.MilliValue) and everything else in whole
units (Quantity.Value), and sums a pod's containers as quantities before converting.
Both conversions are int64 arithmetic whose results depend on how the quantity is held:
a small "int64Amount" (value * 10^scale) or an arbitrary-precision inf.Dec. Values that
fit round up (away from zero); values that do not fit come out the way Go computes them
("12E".Value() is 0, "9Ei".MilliValue() is -1000), because that is what kube-scheduler
acts on. The parser and arithmetic below follow resource/quantity.go, amount.go,
math.go and scale_int.go step by step so the results match bit for bit.
"""

from __future__ import annotations

import re
from functools import lru_cache

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NANO = -9
_MILLI = -3
# Scales kept exactly when rescaling an int64Amount (math.go positiveScaleInt64).
_FAST_SCALES = frozenset((1, 2, 3, 6, 9))
_LOG10_2 = 0.30103
# Longer digit strings and larger powers of ten are refused rather than computed: Go
# spends minutes on "1e2147483648" (so the API server never stored one), Python will
# not read more than 4300 digits into an int, and the loop must not stall.
_MAX_DIGITS = 4000
_MAX_POWER = 20_000

# apimachinery's scanner, as one expression: sign, leading zeros, integer digits, an
# optional fraction, then suffix letters, an optional sign and digits (checked later).
_SPLIT = re.compile(r"([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[+-]?0*([0-9]+)")

# suffix -> (base, exponent, binary)
_SUFFIXES: dict[str, tuple[int, int, bool]] = {
    "": (10, 0, False), "n": (10, -9, False), "u": (10, -6, False), "m": (10, -3, False),
    "k": (10, 3, False), "M": (10, 6, False), "G": (10, 9, False), "T": (10, 12, False),
    "P": (10, 15, False), "E": (10, 18, False),
    "Ki": (2, 10, True), "Mi": (2, 20, True), "Gi": (2, 30, True), "Ti": (2, 40, True),
    "Pi": (2, 50, True), "Ei": (2, 60, True),
}


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


def _wrap64(number: int) -> int:
    """Two's-complement int64 wrap-around, as Go's int64 arithmetic overflows."""
    return ((number - _INT64_MIN) & 0xFFFF_FFFF_FFFF_FFFF) + _INT64_MIN


def _wrap32(number: int) -> int:
    return ((number + (1 << 31)) & 0xFFFF_FFFF) - (1 << 31)


def _fits_int64(number: int) -> bool:
    return _INT64_MIN <= number <= _INT64_MAX


def _big_int64(number: int) -> int:
    """big.Int.Int64(): the low 64 bits of |x|, with x's sign applied."""
    low = _wrap64(abs(number))
    return _wrap64(-low) if number < 0 else low


def _pow10(exponent: int) -> int:
    if exponent > _MAX_POWER:
        raise QuantityError(f"quantity out of range (10^{exponent})")
    power: int = 10 ** exponent
    return power


def _div_away(number: int, divisor: int) -> int:
    """number / divisor rounded away from zero (inf.RoundUp, negativeScaleInt64)."""
    quotient, remainder = divmod(abs(number), divisor)
    if remainder:
        quotient += 1
    return -quotient if number < 0 else quotient


def _positive_scale(base: int, scale: int) -> tuple[int, bool]:
    """positiveScaleInt64: base * 10^scale, and whether that fit in an int64."""
    if scale == 0:
        return base, True
    if scale in _FAST_SCALES:  # int64MultiplyScale*: the product wraps on overflow
        if base in (0, 1):
            return base * 10 ** scale, True
        if base == _INT64_MIN:
            return 0, False
        product = base * 10 ** scale
        return _wrap64(product), _fits_int64(product)
    # Multiplies by ten once per step (none for a negative scale), giving 0 on overflow.
    if base == 0 or scale < 0:
        return base, True
    if scale > 19:
        return 0, False
    product = base * 10 ** scale
    return (product, True) if _fits_int64(product) else (0, False)


class Quantity:
    """A parsed quantity: `value * 10**scale`, held as an int64Amount or as an inf.Dec.

    Immutable; the whole-unit and milli conversions are computed on first use.
    """

    __slots__ = ("_milli", "_units", "is_dec", "scale", "value")

    def __init__(self, value: int, scale: int, is_dec: bool = False) -> None:
        self.value = value
        self.scale = scale
        self.is_dec = is_dec
        self._milli: int | None = None
        self._units: int | None = None

    def __repr__(self) -> str:
        kind = "dec" if self.is_dec else "int64"
        shown = self.value if self.value.bit_length() < 64 else f"<{self.value.bit_length()} bits>"
        return f"Quantity({shown}e{self.scale}, {kind})"

    def milli_value(self) -> int:
        """Quantity.MilliValue(): ceil(q * 1000) as Go computes it (how CPU is compared)."""
        if self._milli is None:
            self._milli = self._scaled_value(_MILLI)
        return self._milli

    def units(self) -> int:
        """Quantity.Value(): ceil(q) as Go computes it (memory, storage, pods, extended)."""
        if self._units is None:
            self._units = self._scaled_value(0)
        return self._units

    def _scaled_value(self, target: int) -> int:
        """Quantity.ScaledValue(target)."""
        if not self.is_dec:  # int64Amount.AsScaledInt64
            if self.scale < target:
                return _div_away(self.value, 10 ** (target - self.scale))
            return _positive_scale(self.value, _wrap32(self.scale - target))[0]
        unscaled = self.value
        if unscaled == 0:
            return 0
        # scale_int.go scaledValue, with inf's upside-down scales.
        shift = target - self.scale
        if shift == 0:
            return _big_int64(unscaled)
        if shift < 0:
            # int64(math.Pow10(n)) is out of range past 10^18; amd64 yields MinInt64.
            factor = 10 ** -shift if -shift <= 18 else _INT64_MIN
            return _wrap64(_big_int64(unscaled) * factor)
        if unscaled < _INT64_MAX and shift < 19:
            low = _big_int64(unscaled)
            divisor: int = 10 ** shift
            quotient = abs(low) // divisor
            quotient = -quotient if low < 0 else quotient  # Go's / truncates toward zero
            return quotient + 1 if low != quotient * divisor else quotient
        if shift > unscaled.bit_length():  # |unscaled| < 10^shift: floor is 0 or -1
            quotient, remainder = (0, unscaled) if unscaled > 0 else (-1, 1)
        else:
            quotient, remainder = divmod(unscaled, 10 ** shift)
        return _big_int64(quotient + 1 if remainder else quotient)

    def __add__(self, other: Quantity) -> Quantity:
        """Quantity.Add: int64 arithmetic while it fits, exact inf.Dec arithmetic after."""
        if not self.is_dec and not other.is_dec:
            total = _add_int64_amounts(self, other)
            if total is not None:
                return total
        if self.scale == other.scale:
            return Quantity(self.value + other.value, self.scale, True)
        low, high = (self, other) if self.scale < other.scale else (other, self)
        return Quantity(low.value + high.value * _pow10(high.scale - low.scale), low.scale, True)

    def compare(self, other: Quantity) -> int:
        """Quantity.Cmp: -1, 0 or 1, exactly."""
        sign = (self.value > 0) - (self.value < 0)
        other_sign = (other.value > 0) - (other.value < 0)
        if sign != other_sign or sign == 0:
            return (sign > other_sign) - (sign < other_sign)
        # Same sign, both non-zero: orders of magnitude settle far-apart scales cheaply.
        magnitude = self.value.bit_length() * _LOG10_2 + self.scale
        other_magnitude = other.value.bit_length() * _LOG10_2 + other.scale
        if abs(magnitude - other_magnitude) > 2:
            return sign if magnitude > other_magnitude else -sign
        low = min(self.scale, other.scale)
        mine: int = self.value * 10 ** (self.scale - low)
        theirs: int = other.value * 10 ** (other.scale - low)
        return (mine > theirs) - (mine < theirs)

    def as_dec(self) -> Quantity:
        """The same amount held as an inf.Dec (Quantity.AsDec)."""
        return self if self.is_dec else Quantity(self.value, self.scale, True)


def _add_int64_amounts(first: Quantity, second: Quantity) -> Quantity | None:
    """int64Amount.Add; None where upstream falls back to inf.Dec."""
    if second.value == 0:
        return first
    if first.value == 0:
        return second
    if first.scale == second.scale:
        total = first.value + second.value
        return Quantity(total, first.scale) if _fits_int64(total) else None
    if first.scale > second.scale:
        low, high = second, first
    else:
        low, high = first, second
    rescaled, fits = _positive_scale(high.value, _wrap32(high.scale - low.scale))
    total = low.value + rescaled
    return Quantity(total, low.scale) if fits and _fits_int64(total) else None


def _invalid(text: str, why: str) -> QuantityError:
    return QuantityError(f"invalid quantity {text!r}: {why}")


def _suffix(text: str, suffix: str) -> tuple[int, int, bool]:
    """suffixer.interpret: (base, exponent, binary) of a suffix or an e/E exponent."""
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if len(suffix) > 1 and suffix[0] in "eE":
        match = _EXPONENT.fullmatch(suffix, 1)
        if match is not None and len(match.group(1)) <= 19:
            exponent = int(suffix[1:])
            if _fits_int64(exponent):
                return 10, _wrap32(exponent), False
    raise _invalid(text, "unable to parse quantity's suffix")


def _parse(text: str) -> Quantity:
    """resource.ParseQuantity."""
    match = _SPLIT.fullmatch(text) if text else None
    if match is None:
        raise _invalid(text, "quantities must be <sign><number><suffix>, with no spaces")
    sign, zeros, num, denom, suffix = match.groups()
    negative = sign == "-"
    has_digits = bool(zeros or num or denom)
    num = num or "0"
    denom = denom or ""
    if len(num) + len(denom) > _MAX_DIGITS:
        raise _invalid(text, "too many digits")
    base, exponent, binary = _suffix(text, suffix)

    # The int64 fast path, taken whenever the digits surely fit.
    if binary:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - exponent * 3 // 10 - 1 if not denom else -1
    else:
        scale, mantissa = exponent, 1
        precision = 18 - len(num) - len(denom)
    if precision >= 0:
        scale = _wrap32(scale - len(denom))
        if scale >= _NANO:
            amount = int(num + denom) * mantissa
            if amount <= _INT64_MAX:
                return Quantity(-amount if negative else amount, scale)

    # inf.Dec: the exact value, rounded up to whole nanos, binary values capped at int64.
    if not has_digits:
        raise _invalid(text, "unable to parse numeric part of quantity")
    unscaled = int(num + denom)
    if negative:
        unscaled = -unscaled
    if base == 10:
        dec_scale = _wrap32(len(denom) + _wrap32(-exponent))  # digits after the point
    else:
        unscaled <<= exponent
        dec_scale = len(denom)
    if unscaled == 0:
        return Quantity(0, -dec_scale, True)
    if dec_scale <= -_NANO:
        nanos = unscaled * _pow10(-_NANO - dec_scale)
    elif dec_scale + _NANO > unscaled.bit_length():  # less than one nano: rounds to one
        nanos = -1 if unscaled < 0 else 1
    else:
        nanos = _div_away(unscaled, 10 ** (dec_scale + _NANO))
    if binary and abs(nanos) > _INT64_MAX * 10 ** -_NANO:
        return Quantity(-_INT64_MAX if negative else _INT64_MAX, 0, True)
    return Quantity(nanos, _NANO, True)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    return _parse(text)


def parse_quantity(quantity: str | int | float | Quantity) -> Quantity:
    """A quantity from its string (or a JSON number, read as its text)."""
    if isinstance(quantity, Quantity):
        return quantity
    return _parse_text(quantity if isinstance(quantity, str) else str(quantity))


def milli_value(quantity: str | int | float | Quantity) -> int:
    """The quantity in thousandths, rounded up (how CPU is compared)."""
    return parse_quantity(quantity).milli_value()


def value(quantity: str | int | float | Quantity) -> int:
    """The quantity in whole units, rounded up (memory, storage, pods, extended)."""
    return parse_quantity(quantity).units()
