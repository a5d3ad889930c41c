"""The stored bytes of a claim's opaque parameters, read from its protobuf encoding.

The API server keeps opaque parameters (a RawExtension) as the bytes their writer sent,
spaces included, and compares them byte for byte: the spec is immutable, and so is an
allocation once made. Its JSON encoding compacts them, so a claim read as JSON and
written back fails with "field is immutable" when its creator sent spaced JSON.
kube-scheduler reads and writes protobuf, where the bytes pass unchanged. kpysched
reads JSON, so before it writes back a claim that carries opaque parameters it reads
the claim once as protobuf and puts the stored bytes in place (they never change
while the claim stands: both places are immutable).

Only the few fields on the way to the parameters are walked (field numbers of
k8s.io/api/resource/v1's generated.proto); everything else is skipped by wire type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import msgspec

from kpysched.objects import dra as resource

PROTOBUF = "application/vnd.kubernetes.protobuf"
# The envelope: this magic, then a runtime.Unknown whose field 2 is the object.
_MAGIC = b"k8s\x00"
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5

_Config = TypeVar("_Config", resource.DeviceClaimConfiguration,
                  resource.DeviceAllocationConfiguration)


class ProtobufError(ValueError):
    """Bytes that are not the protobuf of a ResourceClaim."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(field number, bytes) of each length-delimited field; others are skipped."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            _, at = _varint(data, at)
        elif kind == _FIXED64:
            at += 8
        elif kind == _FIXED32:
            at += 4
        elif kind == _BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ProtobufError("truncated field")
            yield number, data[at:at + size]
            at += size
        else:
            raise ProtobufError(f"unsupported wire type {kind}")


def _field(data: bytes, number: int) -> bytes | None:
    return next((value for n, value in _fields(data) if n == number), None)


def _repeated(data: bytes | None, number: int) -> list[bytes]:
    return [] if data is None else [value for n, value in _fields(data) if n == number]


def _parameters(configuration: bytes | None) -> bytes | None:
    """DeviceConfiguration.opaque (1) .parameters (2) .raw (1)."""
    if configuration is None:
        return None
    opaque = _field(configuration, 1)
    parameters = None if opaque is None else _field(opaque, 2)
    return None if parameters is None else _field(parameters, 1)


def stored_parameters(body: bytes) -> tuple[list[bytes | None], list[bytes | None]]:
    """The opaque parameters' bytes of spec.devices.config and of
    status.allocation.devices.config, in order (None for an entry without them)."""
    if not body.startswith(_MAGIC):
        raise ProtobufError("no protobuf envelope")
    claim = _field(body[len(_MAGIC):], 2) or b""
    spec = _field(claim, 2)
    devices = None if spec is None else _field(spec, 1)
    from_spec = [_parameters(_field(entry, 2)) for entry in _repeated(devices, 3)]
    status = _field(claim, 3)
    allocation = None if status is None else _field(status, 1)
    allocated = None if allocation is None else _field(allocation, 1)
    from_allocation = [_parameters(_field(entry, 3)) for entry in _repeated(allocated, 2)]
    return from_spec, from_allocation


def has_parameters(claim: resource.ResourceClaim) -> bool:
    allocation = claim.status.allocation
    configs = [*claim.spec.devices.config,
               *(allocation.devices.config if allocation is not None else ())]
    return any(c.opaque is not None and bytes(c.opaque.parameters) for c in configs)


def _with_parameters(configs: list[_Config], stored: list[bytes | None]) -> list[_Config]:
    if len(stored) != len(configs):
        return configs  # another claim by now: the resourceVersion check will tell
    return [config if config.opaque is None or raw is None else msgspec.structs.replace(
                config, opaque=msgspec.structs.replace(config.opaque,
                                                       parameters=msgspec.Raw(raw)))
            for config, raw in zip(configs, stored, strict=True)]


def with_stored_parameters(claim: resource.ResourceClaim,
                           body: bytes) -> resource.ResourceClaim:
    """`claim` with the opaque parameters' bytes of its protobuf encoding `body`."""
    from_spec, from_allocation = stored_parameters(body)
    devices = claim.spec.devices
    spec = msgspec.structs.replace(claim.spec, devices=msgspec.structs.replace(
        devices, config=_with_parameters(devices.config, from_spec)))
    status = claim.status
    if status.allocation is not None:
        allocated = status.allocation.devices
        status = msgspec.structs.replace(status, allocation=msgspec.structs.replace(
            status.allocation, devices=msgspec.structs.replace(
                allocated, config=_with_parameters(allocated.config, from_allocation))))
    return msgspec.structs.replace(claim, spec=spec, status=status)
