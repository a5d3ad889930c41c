"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as integers.

Upstream compares CPU in millicores and everything else in whole units, rounding
fractions up (Quantity.MilliValue / Quantity.Value), and so do we.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]i?|)$")


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


def parse_quantity(text: str | int | float) -> Decimal:
    if isinstance(text, int | float):
        return Decimal(str(text))
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise QuantityError(f"invalid quantity {text!r}") from None
    if suffix[:1] in ("e", "E"):
        return value * (Decimal(10) ** int(suffix[1:]))
    if suffix not in _SUFFIXES:  # e.g. "ki" or "ni": binary suffixes are Ki, Mi, ... only
        raise QuantityError(f"invalid quantity suffix in {text!r}")
    return value * _SUFFIXES[suffix]


def milli_value(text: str | int | float) -> int:
    """The quantity in thousandths, rounded up (how CPU is compared)."""
    return int((parse_quantity(text) * 1000).to_integral_value(rounding=ROUND_CEILING))


def value(text: str | int | float) -> int:
    """The quantity in whole units, rounded up (memory, storage, pods, extended)."""
    return int(parse_quantity(text).to_integral_value(rounding=ROUND_CEILING))
