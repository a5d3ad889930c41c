"""DeviceTaintRules (DRADeviceTaintRules, GA and on in v1.37): a rule's taint is added
to every device its selector names, as upstream's ResourceSlice tracker does before the
scheduler sees the slices, so the allocator treats those devices as tainted (a
NoSchedule or NoExecute taint keeps them from requests that do not tolerate it).

A slice no rule touches is passed on as it is; a touched one is copied, so the
informer's objects stay as the API server sent them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from kpysched.objects.dra import DeviceTaintRule, ResourceSlice


def _matches_slice(rule: DeviceTaintRule, resource_slice: ResourceSlice) -> bool:
    selector = rule.spec.device_selector
    if selector is None:
        return False  # no selector matches no devices
    if selector.driver is not None and selector.driver != resource_slice.spec.driver:
        return False
    return selector.pool is None or selector.pool == resource_slice.spec.pool.name


def with_taint_rules(resource_slice: ResourceSlice,
                     rules: Sequence[DeviceTaintRule]) -> ResourceSlice:
    """The slice with the rules' taints appended to the devices they select."""
    patched: ResourceSlice | None = None
    for rule in rules:
        if not _matches_slice(rule, resource_slice):
            continue
        assert rule.spec.device_selector is not None
        wanted = rule.spec.device_selector.device
        for index, device in enumerate(resource_slice.spec.devices):
            if wanted is not None and wanted != device.name:
                continue
            if patched is None:
                patched = msgspec.structs.replace(resource_slice, spec=msgspec.structs.replace(
                    resource_slice.spec, devices=list(resource_slice.spec.devices)))
            current = patched.spec.devices[index]
            patched.spec.devices[index] = msgspec.structs.replace(
                current, taints=[*current.taints, rule.spec.taint])
    return resource_slice if patched is None else patched


def slices_with_taint_rules(slices: Iterable[ResourceSlice],
                            rules: Sequence[DeviceTaintRule]) -> list[ResourceSlice]:
    return [with_taint_rules(resource_slice, rules) for resource_slice in slices]
