"""Consumable device capacity (DRAConsumableCapacity): how much of a shareable device a
request consumes under the device's request policy, and whether it still fits.

Amounts are exact fractions of their quantities (apimachinery's Quantity arithmetic is
exact, so comparing fractions decides the same way). An amount that goes into an
allocation result keeps the text it came from; only a value upstream computes
afresh (a request rounded up to a step) is written out anew: in binary-SI form in
v1.36, in the step's own format (decimal-SI, binary-SI or exponent) in v1.37.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from kpysched.objects.dra import CapacityRequirements, DeviceCapacity
from kpysched.objects.quantity import parse_quantity

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""

MAX_INT64 = 2**63 - 1
# v1.37's errors for a request its allocator will not act on: allocation stops with
# them (an Error for the pod) instead of passing over the device.
NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
NEGATIVE = "capacity value is negative"


class CapacityError(ValueError):
    """v1.37: a capacity request that cannot be represented, or a negative amount;
    str() is upstream's text from `capacity "<name>": ` on."""

ConsumedCapacity = dict[str, Fraction]
"""Capacity name -> amount consumed."""

ConsumedCapacityCollection = dict[DeviceID, ConsumedCapacity]
"""What is consumed of each shared device, summed over its allocations."""


@lru_cache(maxsize=4096)
def parse_amount(text: str) -> Fraction:
    """The exact amount a quantity string stands for."""
    quantity = parse_quantity(text)
    if quantity.scale >= 0:
        return Fraction(quantity.value * 10 ** quantity.scale)
    return Fraction(quantity.value, 10 ** -quantity.scale)


def _whole_units(amount: Fraction) -> int:
    """Quantity.Value(): rounded away from zero to whole units."""
    return math.ceil(amount) if amount >= 0 else math.floor(amount)


def _binary_si(number: int) -> str:
    """How resource.NewQuantity(number, BinarySI) prints."""
    if -1024 < number < 1024 or number == 0:
        return str(number)
    suffixes = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
    exponent = 0
    while exponent < len(suffixes) - 1 and number % 1024 == 0:
        number //= 1024
        exponent += 1
    return f"{number}{suffixes[exponent]}"


@dataclass(frozen=True, slots=True)
class Amount:
    exact: Fraction
    text: str

    @classmethod
    def of(cls, text: str) -> Amount:
        return cls(parse_amount(text), text)


def insert_consumed(collection: ConsumedCapacityCollection, device: DeviceID,
                    consumed: Mapping[str, Fraction]) -> None:
    """ConsumedCapacityCollection.Insert: add one allocation's consumption."""
    entry = collection.setdefault(device, {})
    for name, amount in consumed.items():
        entry[name] = entry.get(name, Fraction(0)) + amount


def remove_consumed(collection: ConsumedCapacityCollection, device: DeviceID,
                    consumed: Mapping[str, Fraction]) -> None:
    """ConsumedCapacityCollection.Remove: the entry goes once everything in it is zero."""
    entry = collection.get(device)
    if entry is None:
        return
    for name, amount in consumed.items():
        if name in entry:
            entry[name] -= amount
    if all(amount == 0 for amount in entry.values()):
        del collection[device]


def consumed_from_texts(consumed: Mapping[str, str]) -> ConsumedCapacity:
    """An allocation result's consumedCapacity as amounts."""
    return {name: parse_amount(text) for name, text in consumed.items()}


def _requested(requirements: CapacityRequirements | None, name: str) -> Amount | None:
    if requirements is None:
        return None
    text = requirements.requests.get(name)
    return None if text is None else Amount.of(text)


_DECIMAL_SUFFIXES = {0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def _decimal(number: int, exponent_form: bool) -> str:
    """How resource.NewQuantity(number, DecimalSI) prints (DecimalExponent with
    `exponent_form`): trailing zeros folded into a power of ten that is a multiple of 3."""
    if number == 0:
        return "0"
    exponent = 0
    while number % 10 == 0:
        number //= 10
        exponent += 1
    while exponent % 3:
        number *= 10
        exponent -= 1
    if exponent_form:
        return f"{number}e{exponent}" if exponent else str(number)
    return f"{number}{_DECIMAL_SUFFIXES[exponent]}"


def _in_format_of(number: int, text: str) -> str:
    """NewQuantity(number, format of the quantity `text` parsed): binary-SI for a
    binary suffix, the exponent form for an exponent, else decimal-SI."""
    if text.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")):
        return _binary_si(number)
    return _decimal(number, exponent_form="e" in text or "E" in text.rstrip("E"))


def _round_up_range(requested: Amount, capacity: DeviceCapacity,
                    step_format: bool = False) -> Amount:
    """roundUpRange; `step_format` is v1.37's, which also refuses (ValueError with
    upstream's text) a request or a rounded amount past MaxInt64."""
    policy = capacity.request_policy
    assert policy is not None and policy.valid_range is not None
    valid_range = policy.valid_range
    assert valid_range.min is not None
    minimum = Amount.of(valid_range.min)
    if requested.exact < minimum.exact:
        return minimum
    if valid_range.step is None:
        return requested
    if step_format and requested.exact > MAX_INT64:
        raise ValueError(f"{NOT_REPRESENTABLE}: request {requested.text} exceeds MaxInt64")
    value = _whole_units(requested.exact)
    step = _whole_units(parse_amount(valid_range.step))
    lowest = _whole_units(minimum.exact)
    steps, remainder = _go_divmod(value - lowest, step)
    if remainder != 0:
        steps += 1
    if step_format and lowest >= 0 and steps > (MAX_INT64 - lowest) // step:
        raise ValueError(f"{NOT_REPRESENTABLE}: rounding request {requested.text} up to the "
                         "next step passes MaxInt64")
    rounded = lowest + step * steps
    # v1.36 writes the rounded amount in binary-SI form, v1.37 in the step's format.
    text = _in_format_of(rounded, valid_range.step) if step_format else _binary_si(rounded)
    return Amount(Fraction(rounded), text)


def _go_divmod(dividend: int, divisor: int) -> tuple[int, int]:
    """Go's integer / and %: the quotient truncates toward zero."""
    quotient = abs(dividend) // abs(divisor)
    if (dividend < 0) != (divisor < 0):
        quotient = -quotient
    return quotient, dividend - quotient * divisor


def _round_up_valid_values(requested: Amount, valid_values: list[str]) -> Amount:
    for text in valid_values:
        valid = Amount.of(text)
        if requested.exact <= valid.exact:
            return valid
    return requested


def consumed_amount(requested: Amount | None, capacity: DeviceCapacity,
                    step_format: bool = False) -> Amount:
    """calculateConsumedCapacity: what a request takes of one capacity (`step_format`:
    v1.37's text for an amount rounded up to a step)."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return Amount.of(policy.default)
        return Amount.of(capacity.value)
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, capacity, step_format)
    if policy.valid_values:
        return _round_up_valid_values(requested, policy.valid_values)
    return requested


def _violates_policy(consumed: Amount, capacity: DeviceCapacity) -> bool:
    policy = capacity.request_policy
    if policy is None:
        return False
    # The default is valid by API validation, so equal to it means allowed.
    if policy.default is not None and consumed.exact == parse_amount(policy.default):
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and consumed.exact > parse_amount(valid_range.max):
            return True
        if valid_range.step is not None:
            lowest = _whole_units(parse_amount(valid_range.min or "0"))
            step = _whole_units(parse_amount(valid_range.step))
            if _go_divmod(_whole_units(consumed.exact) - lowest, step)[1] != 0:
                return True
        return False
    if policy.valid_values:
        return all(consumed.exact != parse_amount(v) for v in policy.valid_values)
    return False


def _checked(requirements: CapacityRequirements | None,
             capacities: Mapping[str, DeviceCapacity]) -> dict[str, Amount]:
    """v1.37: every capacity's consumed amount, worked out before any is compared, so
    that a request it cannot represent (or a negative amount) is refused whatever the
    order; raises CapacityError."""
    consumed: dict[str, Amount] = {}
    for name, capacity in capacities.items():
        try:
            amount = consumed_amount(_requested(requirements, name), capacity, True)
        except ValueError as error:
            raise CapacityError(f'capacity "{name}": {error}') from None
        if amount.exact < 0:
            raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        consumed[name] = amount
    return consumed


def request_fits_capacity(
    already_consumed: Mapping[str, Fraction],
    requirements: CapacityRequirements | None,
    capacities: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Fraction],
    strict: bool = False,
) -> bool | None:
    """CmpRequestOverCapacity: whether the request fits next to what allocated claims and
    the allocation in progress already consume. None when the request names a capacity
    the device does not have (upstream's callers skip the device). `strict` (v1.37)
    raises CapacityError for a request it cannot represent or a negative amount."""
    if requirements is not None and any(name not in capacities
                                        for name in requirements.requests):
        return None
    checked = _checked(requirements, capacities) if strict else None
    for name, capacity in capacities.items():
        consumed = (checked[name] if checked is not None
                    else consumed_amount(_requested(requirements, name), capacity))
        if _violates_policy(consumed, capacity):
            return False
        total = already_consumed.get(name, Fraction(0)) + consumed.exact
        total += allocating.get(name, Fraction(0))
        if total > parse_amount(capacity.value):
            return False
    return True


def consumed_by_request(requirements: CapacityRequirements | None,
                        capacities: Mapping[str, DeviceCapacity],
                        step_format: bool = False) -> dict[str, Amount]:
    """GetConsumedCapacityFromRequest: what the request takes of each capacity
    (`step_format`: v1.37's, which raises CapacityError as request_fits_capacity)."""
    consumed: dict[str, Amount] = {}
    for name, capacity in capacities.items():
        try:
            consumed[name] = consumed_amount(_requested(requirements, name), capacity,
                                             step_format)
        except ValueError as error:
            raise CapacityError(f'capacity "{name}": {error}') from None
    return consumed
