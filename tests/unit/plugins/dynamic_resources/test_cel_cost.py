"""DRA selector cost (plugins/dynamic_resources/cel_cost.py, cel_meter.py) against
kube-scheduler v1.36.4.

The expected costs are what k8s.io/dynamic-resource-allocation/cel v0.36.4 reports for
the same selector and device: CompilationResult.DeviceMatches' EvalDetails.ActualCost(),
measured by running that module (cel-go v0.26.0) on these inputs. Over the limit it
answers "operation cancelled: actual cost limit exceeded"; an expired context
"operation interrupted: context deadline exceeded", which Filter reports as
"node <name>: timed out trying to allocate devices" (an Error status).
"""

from __future__ import annotations

import time

import msgspec
import pytest

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.dra import Device
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.allocator import AllocatedState, Allocator, Features
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from kpysched.plugins.dynamic_resources.cel import (
    COST_LIMIT_EXCEEDED,
    ITERATION_BUDGET_EXCEEDED,
    CelCache,
    SelectorError,
    SelectorTimeoutError,
    estimate_cost,
)
from tests.unit.api_double import RecordingApi
from tests.unit.builders import FakeHandle, make_node
from tests.unit.plugins.dynamic_resources.test_cel import DRIVER, GPU

ATTRS = f'device.attributes["{DRIVER}"]'
CAPACITY = f'device.capacity["{DRIVER}"]'


def _numbers(count: int) -> str:
    return "[" + ",".join(str(i) for i in range(count)) + "]"


def _terms(count: int) -> str:
    return " && ".join(f"a + b + {k} >= 0" for k in range(count))


L99, L100 = _numbers(99), _numbers(100)
EMOJI = "\U0001f600"  # one rune, four bytes in UTF-8


def _grown(replaces: int) -> str:
    """`s` (20 emojis) grown 20-fold by each replace."""
    return "s" + f'.replace("{EMOJI}", s)' * replaces


def _emojis(search: str) -> str:
    """`search` finds nothing in `s`'s growth: indexOf and lastIndexOf are priced by bytes
    (library.traversalCost), the rest by runes."""
    return f'cel.bind(s, "{EMOJI * 20}", {search} < 0)'


# A device with 32 attributes, the most the API admits (issue 33's selector).
WIDE = msgspec.convert({"name": "d0", "attributes": {f"a{i}": {"int": i} for i in range(32)}},
                       Device)

# name: (selector, verdict on GPU, upstream's actual cost)
UPSTREAM_COSTS = {
    "attribute-equals": (f'{ATTRS}.model == "a100"', True, 5),
    "and": (f"{ATTRS}.cores > 100 && {ATTRS}.mig", True, 9),
    "index": (f'{ATTRS}["mig"]', True, 4),
    "semver": (f'{ATTRS}.driverVersion.isLessThan(semver("1.2.3"))', True, 6),
    "in-map": (f'"name" in {ATTRS}', False, 4),
    "driver": (f'device.driver == "{DRIVER}"', True, 4),
    "quantity-compare": (f'{CAPACITY}.memory.compareTo(quantity("40Gi")) >= 0', True, 7),
    "quantity-equals": (f'{CAPACITY}.memory == quantity("85899345920")', True, 7),
    "bind": (f"cel.bind(dra, {ATTRS}, dra.mig && dra.cores == 108)", True, 8),
    "string-functions": (f'{ATTRS}.model.upperAscii().startsWith("A1")', True, 6),
    "all-over-map": (f'{ATTRS}.all(k, k != "")', True, 20),
    "has": ('has(device.attributes["other.example.com"].name)', True, 3),
    "concatenation": (
        f'{ATTRS}.model + "-" + device.attributes["other.example.com"].name == "a100-fish"',
        True, 11),
    "contains-matches": (
        f'{ATTRS}.model.contains("10") && {ATTRS}.model.matches("^a[0-9]+$")',
        True, 12),
    "replace-split-join": (
        f'{ATTRS}.model.replace("1", "2").split("0").join("+") == "a2++"',
        True, 8),
    "in-constant-lists": (f"{ATTRS}.cores in [1, 108] && !({ATTRS}.model in [])", True, 5),
    "conditional-key": (
        f'{ATTRS}[device.driver == "{DRIVER}" ? "model" : "cores"] == "a100"',
        True, 9),
    "conditional-arm": (f'(true ? {ATTRS}.model : "x") == "a100"', True, 4),
    "optional-or": (
        f'{ATTRS}.?model.orValue("") == "a100" && {ATTRS}.?nope.orValue("x") == "x"',
        True, 9),
    "split-index-optional-select": (
        '"a,b".split(",")[1] == "b" && {"k": 1}.?k.hasValue()',
        True, 7),
    "exists-one-over-map": (f'{ATTRS}.exists_one(k, k == "cores")', True, 15),
    "map-filter": (
        f'{ATTRS}.map(k, k + "!").size() == 4 && {ATTRS}.filter(k, k.size() > 4).size() == 3',
        True, 120),
    "failed-operand": (f"{ATTRS}.nope == 1 || true", True, 5),
    "filter-200": (f"{_numbers(200)}.filter(x, x > 100).size() == 99", True, 1690),
    "index-of-counts-bytes": (_emojis(f'{_grown(3)}.indexOf("b")'), True, 65689),
    "last-index-of-dyn-counts-bytes": (
        _emojis(f'dyn({_grown(3)}).lastIndexOf("b", 5)'), True, 65690),
    "exists-one-120x120": (
        f"{_numbers(120)}.exists_one(a, {_numbers(120)}.exists_one(b, a == 0 && b == 0))",
        True, 29286),
}


@pytest.mark.parametrize(("expression", "matches", "cost"), UPSTREAM_COSTS.values(),
                         ids=UPSTREAM_COSTS.keys())
def test_metered_cost_is_upstreams_actual_cost(expression: str, matches: bool,
                                               cost: int) -> None:
    evaluation = CelCache(unmetered_max_cost=0).compile(expression).evaluate(DRIVER, GPU)
    assert (evaluation.matches, evaluation.cost) == (matches, cost)


# Valid selectors past cel-cpp's 10,000 comprehension iterations (issue 33) or with a
# worst case past the unmetered bound: they evaluate, at upstream's cost.
WITHIN_LIMIT = {
    "triple-map32": (f"{ATTRS}.all(a, {ATTRS}.all(b, {ATTRS}.all(c, true)))", 105_700),
    "nested-100x100": (f"{L100}.all(a, {L100}.all(b, a + b >= 0))", 70_401),
    "lit-99x99-10terms": (f"{L99}.all(a, {L99}.all(b, {_terms(10)}))", 519_850),
    "bind-99x99-12terms": (f"cel.bind(l, {L99}, l.all(a, l.all(b, {_terms(12)})))",
                           617_960),
    "comprehension-10k": (f"{L100}.all(x, {L100}.all(y, true))", 30_401),
    "replace-16MB": (f'"{"a" * 4000}".replace("a", "{"a" * 4000}").size() > 0', None),
}


@pytest.mark.parametrize(("expression", "cost"), WITHIN_LIMIT.values(), ids=WITHIN_LIMIT.keys())
def test_selectors_within_the_limit_evaluate(expression: str, cost: int | None) -> None:
    evaluation = CelCache().compile(expression).evaluate(DRIVER, WIDE)
    assert evaluation.matches is True
    assert evaluation.cost == cost  # None: the worst case (802) needs no meter


def _split_range(count: int) -> str:
    return '"' + ",".join(["a"] * count) + '".split(",")'


def _doubling(times: int) -> str:
    binds = "".join(f"cel.bind(s{i}, s{i - 1} + s{i - 1}, " for i in range(1, times + 1))
    return f'cel.bind(s0, "aaaaaaaa", {binds}size(s{times}) > 0' + ")" * (times + 1)


OVER_LIMIT = {
    "nested-3x100": f"{L100}.all(x, {L100}.all(y, {L100}.all(z, true)))",
    "split-ranges": f"{_split_range(2000)}.all(x, {_split_range(2000)}.all(y, true))",
    "bind-99x99-100terms": f"cel.bind(l, {L99}, l.all(a, l.all(b, {_terms(100)})))",
    # Charged before each concatenation: stops with strings of a few MiB, not 128.
    "bind-string-doubling-24": _doubling(24),
    # The API server admits it: its estimate (353,700) counts indexOf's runes.
    "index-of-3.2M-emojis": _emojis(f'{_grown(4)}.indexOf("b")'),
}


@pytest.mark.parametrize("expression", OVER_LIMIT.values(), ids=OVER_LIMIT.keys())
def test_selectors_over_the_limit_fail_with_upstreams_error(expression: str) -> None:
    selector = CelCache().compile(expression)
    with pytest.raises(SelectorError) as err:
        selector.matches(DRIVER, WIDE)
    assert str(err.value) == COST_LIMIT_EXCEEDED
    with pytest.raises(SelectorError):  # and again: the driven loops are remembered
        selector.matches(DRIVER, WIDE)


def test_the_bound_decides_what_is_metered() -> None:
    cache = CelCache()
    cheap = cache.compile(f'{ATTRS}.exists(k, k == "model")')
    assert cheap.evaluate(DRIVER, GPU).cost is None
    assert estimate_cost(cheap._program.serialize()) == 32 * 6 + 4  # 32 keys at most
    wide = cache.compile(WITHIN_LIMIT["triple-map32"][0])
    assert estimate_cost(wide._program.serialize()) == 105_700  # every loop runs out


def test_a_lower_limit_applies() -> None:
    expression = WITHIN_LIMIT["nested-100x100"][0]
    with pytest.raises(SelectorError, match=COST_LIMIT_EXCEEDED):
        CelCache(cost_limit=70_400).compile(expression).matches(DRIVER, GPU)
    assert CelCache(cost_limit=70_401).compile(expression).matches(DRIVER, GPU) is True


def test_a_loop_that_cannot_leave_cel_cpp_keeps_its_iteration_budget() -> None:
    # Its range would hand optional values to Python (cel-expr-python cannot convert
    # them); upstream evaluates it (cost 60,432).
    expression = (f'cel.bind(m, {{"k": optional.none()}}, {L100}.all(x, {L100}.all(y, '
                  f"m.size() == 1)))")
    with pytest.raises(SelectorError) as err:
        CelCache().compile(expression).matches(DRIVER, GPU)
    assert str(err.value) == ITERATION_BUDGET_EXCEEDED


def test_deadline_interrupts_metered_evaluation_only() -> None:
    cache = CelCache()
    metered = cache.compile(WITHIN_LIMIT["nested-100x100"][0])
    with pytest.raises(SelectorTimeoutError) as err:
        metered.matches(DRIVER, GPU, deadline=time.monotonic() - 1)
    assert str(err.value) == "operation interrupted: context deadline exceeded"
    assert metered.matches(DRIVER, GPU) is True
    cheap = cache.compile(f'{ATTRS}.model == "a100"')
    assert cheap.matches(DRIVER, GPU, deadline=time.monotonic() - 1) is True


class _InterruptedOnce:
    def __init__(self) -> None:
        self.calls = 0

    def matches(self, driver: str, device: Device, deadline: float | None = None) -> bool:
        self.calls += 1
        if self.calls == 1:
            raise SelectorTimeoutError("operation interrupted: context deadline exceeded")
        return True


def test_an_interrupted_evaluation_is_not_remembered() -> None:
    allocator = Allocator(Features(), AllocatedState(set(), set(), {}), lambda _: None, [],
                          CelCache())
    selector = _InterruptedOnce()
    with pytest.raises(SelectorTimeoutError):
        allocator.selector_matches("x", selector, DRIVER, GPU, deadline=0)
    assert allocator.selector_matches("x", selector, DRIVER, GPU) is True
    assert allocator.selector_matches("x", selector, DRIVER, GPU) is True
    assert selector.calls == 2


def test_filter_timeout_ends_filter_inside_the_device_scan() -> None:
    """repros/dra/cel_timeout.py: 120 devices, none matching, each costing ~520,000 to
    check; with filterTimeout 1s Filter gives up on the node with upstream's text."""
    gpu = "gpu.example.com"
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "x"}}}
               for i in range(120)]
    resource_slice = msgspec.convert(
        {"metadata": {"name": "n1-slice"},
         "spec": {"driver": gpu, "nodeName": "n1", "devices": devices,
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}}},
        resource.ResourceSlice)
    selector = (f"{L99}.all(a, {L99}.all(b, {_terms(10)})) && "
                f'device.attributes["{gpu}"].model == "a100"')
    device_class = msgspec.convert(
        {"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": selector}}]}},
        resource.DeviceClass)
    claim = msgspec.convert(
        {"metadata": {"name": "c", "namespace": "d", "uid": "uid-c", "resourceVersion": "5"},
         "spec": {"devices": {"requests": [{"name": "gpu",
                                            "exactly": {"deviceClassName": "gpu"}}]}}},
        resource.ResourceClaim)
    pod = PodInfo.of(msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d", "uid": "uid-p"},
         "spec": {"containers": [{"name": "c"}],
                  "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}}, api.Pod))
    handle = FakeHandle(api_client=RecordingApi())
    listers = handle.resource_listers
    listers.resource_slices.on_add(resource_slice)
    listers.device_classes.on_add(device_class)
    listers.resource_claims.on_add(claim)
    plugin = dynamic_resources.DynamicResources(
        handle, DynamicResourcesArgs.model_validate({"filterTimeout": "1s"}))
    node = make_node("n1").info()
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [node])
    assert status.ok, status.message()
    verdict = plugin.filter(state, pod, node)
    assert (verdict.code, verdict.message()) == (
        Code.ERROR, "node n1: timed out trying to allocate devices")
