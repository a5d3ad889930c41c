"""A claim's device constraints (matchAttribute, distinctAttribute) as the allocator
tracks them while it tries devices: `add` when a device is tentatively picked (False if
the constraint would break), `remove` when the search backs out of it.

Constraints are monotonic: once adding a device fails, adding more never helps, which
lets the search give up on a branch early.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kpysched.objects.dra import Device, DeviceAttribute

DeviceID = tuple[str, str, str]


class Constraint(Protocol):
    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        ...

    def remove(self, request: str, sub_request: str, device: Device,
               device_id: DeviceID) -> None:
        ...


def lookup_attribute(device: Device, device_id: DeviceID,
                     attribute_name: str) -> DeviceAttribute | None:
    """A fully qualified attribute of the device; the driver's own domain may be left off
    in the device's attribute map."""
    attribute = device.attributes.get(attribute_name)
    if attribute is not None:
        return attribute
    domain, slash, short_name = attribute_name.partition("/")
    if not slash or domain != device_id[0]:
        return None
    return device.attributes.get(short_name)


def _kind_and_value(attribute: DeviceAttribute) -> tuple[str, object] | None:
    """The attribute's type and value, in upstream's order of precedence."""
    if attribute.string is not None:
        return "string", attribute.string
    if attribute.int_value is not None:
        return "int", attribute.int_value
    if attribute.bool_value is not None:
        return "bool", attribute.bool_value
    if attribute.version is not None:
        return "version", attribute.version
    return None


def _applies(request_names: frozenset[str], request: str, sub_request: str) -> bool:
    """Whether a constraint limited to `request_names` covers this (sub)request."""
    if not request_names:
        return True
    if request in request_names:
        return True
    return bool(sub_request) and f"{request}/{sub_request}" in request_names


class MatchAttributeConstraint:
    """All devices of the covered requests share the attribute's value."""

    __slots__ = ("attribute_name", "num_devices", "request_names", "value")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        self.request_names = frozenset(request_names)
        self.attribute_name = attribute_name
        self.value: tuple[str, object] | None = None
        self.num_devices = 0

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        if not _applies(self.request_names, request, sub_request):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        value = _kind_and_value(attribute)
        if self.num_devices == 0:
            self.value = value
            self.num_devices = 1
            return True
        if value is None or value != self.value:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: Device,
               device_id: DeviceID) -> None:
        if _applies(self.request_names, request, sub_request):
            self.num_devices -= 1


class DistinctAttributeConstraint:
    """No two of the covered requests get devices with the same attribute value.

    v1.36 remembers values per request name, so two devices of the same request
    overwrite each other's entry (and backing out of one forgets the request's value);
    v1.37 (`per_device`) remembers every device's value, as a stack the search pushes
    and pops, so all devices of the covered requests must differ.
    """

    __slots__ = ("attribute_name", "num_devices", "per_device", "request_names", "stack",
                 "values")

    def __init__(self, request_names: list[str], attribute_name: str,
                 per_device: bool = False) -> None:
        self.request_names = frozenset(request_names)
        self.attribute_name = attribute_name
        self.per_device = per_device
        self.values: dict[str, tuple[str, object] | None] = {}
        self.stack: list[tuple[str, object] | None] = []
        self.num_devices = 0

    def add(self, request: str, sub_request: str, device: Device, device_id: DeviceID) -> bool:
        if not _applies(self.request_names, request, sub_request):
            return True
        attribute = lookup_attribute(device, device_id, self.attribute_name)
        if attribute is None:
            return False
        value = _kind_and_value(attribute)
        if self.per_device:
            if not self._distinct(value, self.stack):
                return False
            self.stack.append(value)
            return True
        if self.num_devices == 0:
            self.values[request] = value
            self.num_devices = 1
            return True
        if not self._distinct(value, self.values.values()):
            return False
        self.values[request] = value
        self.num_devices += 1
        return True

    @staticmethod
    def _distinct(value: tuple[str, object] | None,
                  held: Iterable[tuple[str, object] | None]) -> bool:
        for existing in held:
            if value is None:
                return False  # unknown type: never distinct
            if existing == value:
                return False
        return True

    def remove(self, request: str, sub_request: str, device: Device,
               device_id: DeviceID) -> None:
        if not _applies(self.request_names, request, sub_request):
            return
        if self.per_device:
            self.stack.pop()
            return
        self.values.pop(request, None)
        self.num_devices -= 1
