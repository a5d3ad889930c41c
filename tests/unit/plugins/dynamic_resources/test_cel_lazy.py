"""LazyCelCache: CelCache's answers, the cache built on the first selector."""

from __future__ import annotations

import pytest

from kpysched.objects.dra import Device
from kpysched.plugins.dynamic_resources.cel import CelCache
from kpysched.plugins.dynamic_resources.cel import SelectorError as CelSelectorError
from kpysched.plugins.dynamic_resources.cel_errors import SelectorError
from kpysched.plugins.dynamic_resources.cel_lazy import LazyCelCache

DEVICE = Device(name="gpu-0")


def test_it_compiles_as_a_cel_cache_does_once_asked() -> None:
    lazy = LazyCelCache(4)
    assert lazy._cache is None  # nothing built before the first selector
    for expression, expected in (('device.driver == "gpu.example.com"', True),
                                 ('device.driver == "other"', False)):
        assert lazy.compile(expression).matches("gpu.example.com", DEVICE) is expected
        assert CelCache(4).compile(expression).matches("gpu.example.com", DEVICE) is expected
    assert isinstance(lazy._cache, CelCache)


def test_its_errors_are_the_ones_callers_catch() -> None:
    assert SelectorError is CelSelectorError
    with pytest.raises(SelectorError) as raised:
        LazyCelCache(4).compile("device.driver ==")
    with pytest.raises(SelectorError) as direct:
        CelCache(4).compile("device.driver ==")
    assert str(raised.value) == str(direct.value)
