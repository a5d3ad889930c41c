"""DeviceTaintRules (v1.37: DRADeviceTaintRules GA, on by default): which devices a
rule's taint goes onto (upstream's tracker: driver, pool, device, each optional; no
selector, no device), and the plugin allocating around a tainted device in v1.37 only."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kpysched.config.features import Features
from kpysched.framework.status import Code
from kpysched.informers.listers import Index
from kpysched.objects import dra as r
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from kpysched.plugins.dynamic_resources.taint_rules import (
    slices_with_taint_rules,
    with_taint_rules,
)
from tests.unit.api_double import RecordingApi
from tests.unit.builders import FakeHandle
from tests.unit.plugins.dynamic_resources.test_plugin import (
    DRIVER,
    World,
    _claim,
    _class,
    _pod,
    _slice,
    _uses,
)


def _rule(name: str, selector: dict[str, str] | None, effect: str = "NoSchedule",
          **spec: Any) -> r.DeviceTaintRule:
    body: dict[str, Any] = {"taint": {"key": "broken", "value": name, "effect": effect,
                                      "timeAdded": "2026-11-27T10:00:00Z"}, **spec}
    if selector is not None:
        body["deviceSelector"] = selector
    return msgspec.convert({"metadata": {"name": name}, "spec": body}, r.DeviceTaintRule)


def _taints(resource_slice: r.ResourceSlice) -> dict[str, list[str]]:
    return {device.name: [taint.value for taint in device.taints]
            for device in resource_slice.spec.devices}


SLICE = _slice("n1", "gpu-0", "gpu-1")


@pytest.mark.parametrize(("selector", "tainted"), [
    (None, []),  # no selector: no device
    ({}, ["gpu-0", "gpu-1"]),  # an empty selector: every device
    ({"driver": DRIVER}, ["gpu-0", "gpu-1"]),
    ({"driver": "other.example.com"}, []),
    ({"pool": "n1"}, ["gpu-0", "gpu-1"]),
    ({"pool": "n2"}, []),
    ({"device": "gpu-1"}, ["gpu-1"]),
    ({"driver": DRIVER, "pool": "n1", "device": "gpu-0"}, ["gpu-0"]),
    ({"driver": DRIVER, "pool": "n2", "device": "gpu-0"}, []),
])
def test_rule_selector(selector: dict[str, str] | None, tainted: list[str]) -> None:
    patched = with_taint_rules(SLICE, [_rule("r", selector)])
    assert _taints(patched) == {name: ["r"] if name in tainted else []
                                for name in ("gpu-0", "gpu-1")}
    # The informer's slice is left as it came.
    assert _taints(SLICE) == {"gpu-0": [], "gpu-1": []}
    if not tainted:
        assert patched is SLICE


def test_rules_add_to_the_devices_own_taints_in_order() -> None:
    own = msgspec.structs.replace(SLICE, spec=msgspec.structs.replace(SLICE.spec, devices=[
        msgspec.structs.replace(SLICE.spec.devices[0],
                                taints=[r.DeviceTaint(key="k", value="own", effect="NoSchedule")]),
        SLICE.spec.devices[1]]))
    patched = slices_with_taint_rules([own], [_rule("a", {"device": "gpu-0"}),
                                              _rule("b", {})])
    assert _taints(patched[0]) == {"gpu-0": ["own", "a", "b"], "gpu-1": ["b"]}


def _world(release: int, *rules: r.DeviceTaintRule) -> World:
    world = World.__new__(World)
    # The rules' index goes onto the listers before the plugin is made, as the
    # informers' wiring would put it there.
    world.handle = FakeHandle(api_client=RecordingApi())
    world.handle.features_value = Features(release=release)
    listers = world.handle.resource_listers
    index: Index[r.DeviceTaintRule] = Index()
    listers.device_taint_rules = index  # type: ignore[attr-defined]
    for obj in (_claim("c"), _class(), _slice("n1", "gpu-0")):
        {r.ResourceClaim: listers.resource_claims, r.ResourceSlice: listers.resource_slices,
         r.DeviceClass: listers.device_classes}[type(obj)].on_add(obj)
    for rule in rules:
        index.on_add(rule)
    world.plugin = dynamic_resources.DynamicResources(world.handle, DynamicResourcesArgs())
    return world


@pytest.mark.parametrize(("release", "fits"), [(36, True), (37, False)])
def test_a_noschedule_rule_keeps_the_device_from_a_claim(release: int, fits: bool) -> None:
    world = _world(release, _rule("r", {"device": "gpu-0"}))
    _, verdicts = world.cycle(_pod([_uses("c")]), "n1")
    if fits:
        assert verdicts["n1"].ok
    else:
        assert (verdicts["n1"].code, verdicts["n1"].message()) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")


def test_a_rule_change_is_seen_by_the_next_cycle() -> None:
    world = _world(37)
    pod = _pod([_uses("c")])
    assert world.cycle(pod, "n1")[1]["n1"].ok
    rules: Index[r.DeviceTaintRule] = world.handle.resource_listers.device_taint_rules
    rule = _rule("r", {"device": "gpu-0"})
    rules.on_add(rule)
    assert not world.cycle(pod, "n1")[1]["n1"].ok
    rules.on_delete(rule)
    assert world.cycle(pod, "n1")[1]["n1"].ok


def test_a_rule_with_effect_none_does_not_keep_the_device() -> None:
    world = _world(37, _rule("r", {"device": "gpu-0"}, effect="None"))
    assert world.cycle(_pod([_uses("c")]), "n1")[1]["n1"].ok
