"""DRA device selector CEL (plugins/dynamic_resources/cel.py), cases after upstream's
k8s.io/dynamic-resource-allocation/cel/compile_test.go."""

from __future__ import annotations

import pytest

from kpysched.objects.dra import Device, DeviceAttribute, DeviceCapacity
from kpysched.plugins.dynamic_resources.cel import (
    COST_LIMIT_EXCEEDED,
    CelCache,
    SelectorError,
)

DRIVER = "dra.example.com"


def _device(attributes: dict[str, DeviceAttribute] | None = None,
            capacity: dict[str, str] | None = None, multi: bool | None = None) -> Device:
    return Device(name="dev-0", attributes=attributes or {},
                  capacity={k: DeviceCapacity(value=v) for k, v in (capacity or {}).items()},
                  allow_multiple_allocations=multi)


GPU = _device(
    attributes={
        "model": DeviceAttribute(string="a100"),
        "cores": DeviceAttribute(int_value=108),
        "mig": DeviceAttribute(bool_value=True),
        "driverVersion": DeviceAttribute(version="1.2.3-rc.1"),
        "other.example.com/name": DeviceAttribute(string="fish"),
    },
    capacity={"memory": "80Gi", "other.example.com/slots": "4"},
)

MATCHES = [
    ("true", True),
    ("false", False),
    # Every attribute type, bare names in the driver's domain.
    (f'device.attributes["{DRIVER}"].model == "a100"', True),
    (f'device.attributes["{DRIVER}"].cores > 100', True),
    (f'device.attributes["{DRIVER}"].mig', True),
    (f'device.attributes["{DRIVER}"]["mig"]', True),
    (f'device.attributes["{DRIVER}"].driverVersion.isLessThan(semver("1.2.3"))', True),
    # Qualified names keep their own domain and do not appear in the driver's.
    ('device.attributes["other.example.com"].name == "fish"', True),
    (f'"name" in device.attributes["{DRIVER}"]', False),
    ('"other.example.com" in device.attributes', True),
    ('"no-such-domain" in device.attributes', False),
    (f'device.driver == "{DRIVER}"', True),
    ("device.allowMultipleAllocations", False),
    # Quantities compare exactly (apimachinery's Cmp).
    (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0', True),
    (f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("80Gi"))', False),
    (f'device.capacity["{DRIVER}"].memory == quantity("85899345920")', True),
    ('device.capacity["other.example.com"].slots.isLessThan(quantity("4001m"))', True),
    ('quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    ('quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    ('quantity("50k").asInteger() == 50000 && quantity("1.5").isInteger() == false', True),
    ('quantity("50k").sub(20000).asApproximateFloat() == 30000.0', True),
    ('sign(quantity("-1m")) == -1 && isQuantity("1Gi") && !isQuantity("200K")', True),
    # Semver.
    ('semver("1.2.3").isGreaterThan(semver("1.2.3-rc.1"))', True),
    ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),
    ('semver("1.2.3+build.5") == semver("1.2.3")', True),
    ('semver("v01.2", true).compareTo(semver("1.2.0")) == 0 && isSemver("v1", true)', True),
    (f'device.attributes["{DRIVER}"].driverVersion.minor() == 2', True),
    ('!isSemver("01.2.3")', True),
    # Extensions the environment enables.
    (f'cel.bind(dra, device.attributes["{DRIVER}"], dra.mig && dra.cores == 108)', True),
    (f'device.attributes["{DRIVER}"].model.upperAscii().startsWith("A1")', True),
    (f'device.attributes["{DRIVER}"].all(k, k != "")', True),
    # A domain the device lacks is an empty map, as upstream's default.
    ('has(device.attributes["no-such-domain"].model)', False),
    ('"model" in device.attributes["no-such-domain"]', False),
    ('false && device.attributes["no-such-domain"].model', False),
]


@pytest.mark.parametrize(("expression", "expected"), MATCHES)
def test_matches(expression: str, expected: bool) -> None:
    assert CelCache().compile(expression).matches(DRIVER, GPU) is expected


RUNTIME_ERRORS = [
    ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
     "no such key: noSuchAttr"),
    ('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
     "no such key: noSuchAttr"),
    (f'device.attributes["{DRIVER}"].noSuchAttr == 1', "no such key: noSuchAttr"),
    (f'device.attributes["{DRIVER}"].cores',
     "CEL result of type int could not be converted to bool: "
     "type conversion error from Int to 'bool'"),
    ('quantity("9999999999999999999999999999999999999G").asInteger() > 0',
     "cannot convert value to integer"),
    ('semver("01.2.3") == semver("1.2.3")', 'Major number must not contain leading zeroes "01"'),
    ('semver("1.2") == semver("1.2.0")', "No Major.Minor.Patch elements found"),
]


@pytest.mark.parametrize(("expression", "message"), RUNTIME_ERRORS)
def test_runtime_errors(expression: str, message: str) -> None:
    selector = CelCache().compile(expression)
    with pytest.raises(SelectorError) as err:
        selector.matches(DRIVER, GPU)
    assert str(err.value) == message


COMPILE_ERRORS = [
    ("?!", "compilation failed: ERROR: <input>:1:1: Syntax error:"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ('"x"', "must evaluate to bool or the unknown type, not string"),
    ("[true]", "must evaluate to bool or the unknown type, not list(bool)"),
    ('quantity("1")', "must evaluate to bool or the unknown type, not kubernetes.Quantity"),
    ("noSuchFunction(1)",
     "compilation failed: ERROR: <input>:1:15: undeclared reference to 'noSuchFunction'"),
    ('quantity(1) == quantity("1")',
     "compilation failed: ERROR: <input>:1:9: found no matching overload for 'quantity'"),
]


@pytest.mark.parametrize(("expression", "prefix"), COMPILE_ERRORS)
def test_compile_errors(expression: str, prefix: str) -> None:
    cache = CelCache()
    with pytest.raises(SelectorError) as err:
        cache.compile(expression)
    assert str(err.value).startswith(prefix), str(err.value)
    with pytest.raises(SelectorError):  # failures are remembered too
        cache.compile(expression)


def _numbers(count: int) -> str:
    return "[" + ",".join(str(i) for i in range(count)) + "]"


def test_cost_limit_exceeded() -> None:
    # More cases, and selectors past cel-cpp's iteration budget: test_dra_cel_cost.py.
    hundred, fifty = _numbers(100), _numbers(50)
    # 10^6 iterations of a few operations each: over resourceapi.CELSelectorExpressionMaxCost.
    expensive = f"{hundred}.all(a, {hundred}.all(b, {hundred}.all(c, a + b + c >= 0)))"
    cheap = f"{fifty}.all(a, {fifty}.all(b, a + b >= 0))"
    cache = CelCache()
    with pytest.raises(SelectorError) as err:
        cache.compile(expensive).matches(DRIVER, GPU)
    assert str(err.value) == COST_LIMIT_EXCEEDED
    assert cache.compile(cheap).matches(DRIVER, GPU) is True
    with pytest.raises(SelectorError) as err:
        CelCache(cost_limit=10_000).compile(cheap).matches(DRIVER, GPU)
    assert str(err.value) == COST_LIMIT_EXCEEDED


def test_device_errors_fail_every_selector() -> None:
    bad_version = _device(attributes={"v": DeviceAttribute(version="1.2")})
    with pytest.raises(SelectorError) as err:
        CelCache().compile("true").matches(DRIVER, bad_version)
    assert str(err.value) == (
        "attribute v: parse semantic version: No Major.Minor.Patch elements found")
    empty = _device(attributes={"v": DeviceAttribute()})
    with pytest.raises(SelectorError) as err:
        CelCache().compile("true").matches(DRIVER, empty)
    assert str(err.value) == "attribute v: unsupported attribute value"


def test_cache_returns_same_object_and_evicts() -> None:
    cache = CelCache(max_size=2)
    first = cache.compile("true")
    assert cache.compile("true") is first
    cache.compile("false")
    cache.compile("1 == 1")  # evicts "true", the least recently used
    assert cache.compile("true") is not first


def test_driver_domain_and_device_identity() -> None:
    cache = CelCache()
    selector = cache.compile('device.attributes["a.example.com"].model == "a100"')
    assert selector.matches("a.example.com", GPU) is True
    with pytest.raises(SelectorError, match="no such key: model"):
        selector.matches("b.example.com", GPU)  # same object, other driver: other domain
    multi = _device(multi=True)
    assert cache.compile("device.allowMultipleAllocations").matches(DRIVER, multi) is True
    changed = _device(attributes={"model": DeviceAttribute(string="h100")})
    assert selector.matches("a.example.com", changed) is False
