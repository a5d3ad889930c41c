"""The ported allocator cases again, with the real CEL (cel.CelCache) instead of the test
stand-in: the allocator and the CEL helper agree on the selectors upstream's table uses.
Cases about the stand-in's own error texts are left out; upstream's CEL errors follow."""

from __future__ import annotations

import pytest

from kpysched.plugins.dynamic_resources.allocator import AllocationError
from kpysched.plugins.dynamic_resources.cel import CelCache
from tests.unit.plugins.dynamic_resources import (
    test_allocator,
    test_allocator_capacity,
    test_allocator_features,
    test_allocator_pools,
)
from tests.unit.plugins.dynamic_resources.allocator_builders import (
    CLAIM0,
    CLASS_A,
    DRIVER_A,
    NODE1,
    POOL1,
    REQ0,
    SLICE1,
    Case,
    all_request,
    cel,
    claim,
    device_class,
    one_device_slice,
    request,
    simple_claim,
)

CASES = {
    name: case
    for module in (test_allocator, test_allocator_features,
                   test_allocator_capacity, test_allocator_pools)
    for name, case in module.CASES.items()
    if not (case.error and "CEL" in case.error)
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate_with_real_cel(case: Case) -> None:
    case.check(CelCache())


SLICES = [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)]
UNDECLARED = ("CEL compile error: compilation failed: ERROR: <input>:1:1: undeclared "
              "reference to 'noSuchVar' (in container '')")


@pytest.mark.parametrize(("case", "prefix"), [
    (Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, cel("noSuchVar")))],
          classes=[device_class(CLASS_A, DRIVER_A)], slices=SLICES),
     "claim claim-0: selector #0: "),
    (Case(claims=[simple_claim(CLAIM0, REQ0, CLASS_A)],
          classes=[device_class(CLASS_A, DRIVER_A, expression="noSuchVar")], slices=SLICES),
     "class class-a: selector #0: "),
    (Case(claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, cel("noSuchVar")))],
          classes=[device_class(CLASS_A, DRIVER_A)], slices=SLICES),
     "claim claim-0: selector #0: "),
], ids=["invalid-CEL-one-device", "invalid-CEL-one-device-class", "invalid-CEL-all-devices"])
def test_cel_compile_errors_name_the_claim_or_class(case: Case, prefix: str) -> None:
    with pytest.raises(AllocationError) as raised:
        case.allocator(CelCache()).allocate(case.node, case.claims)
    assert str(raised.value).startswith(prefix + UNDECLARED)
    assert not raised.value.on_node
