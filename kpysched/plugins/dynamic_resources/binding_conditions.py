"""Binding conditions (DRADeviceBindingConditions, beta and on in v1.36): a device that
must be prepared before the pod binds lists conditions in its allocation result; the
driver reports them in the claim's status.devices. Until all are true the pod waits
in PreBind; a true failure condition, or the binding timeout passing since the
allocation, makes the claim unusable so PostFilter can free it for another try."""

from __future__ import annotations

from datetime import UTC, datetime

from kpysched.objects import dra as resource


class BindingFailedError(Exception):
    """A failure condition is true; str() is upstream's text."""


def _device_status(claim: resource.ResourceClaim,
                   result: resource.DeviceRequestAllocationResult
                   ) -> resource.AllocatedDeviceStatus | None:
    for device in claim.status.devices:
        if (device.device, device.driver, device.pool) == (result.device, result.driver,
                                                           result.pool):
            return device
    return None


def _condition(status: resource.AllocatedDeviceStatus, kind: str) -> dict[str, object] | None:
    return next((c for c in status.conditions if c.get("type") == kind), None)


def claim_ready_for_binding(claim: resource.ResourceClaim) -> tuple[bool, str | None]:
    """(ready, failure text): ready when every binding condition of every device is
    true and no failure condition is (trivially so without conditions)."""
    allocation = claim.status.allocation
    if allocation is None:
        return False, None
    for result in allocation.devices.results:
        if not result.binding_conditions:
            continue
        status = _device_status(claim, result)
        if status is None:
            return False, None
        for kind in result.binding_failure_conditions:
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                return False, (f"device binding failed: claim={claim.metadata.name}, "
                               f"reason={failed.get('reason', '')}, "
                               f'message="{failed.get("message", "")}"')
        for kind in result.binding_conditions:
            met = _condition(status, kind)
            if met is None or met.get("status") != "True":
                return False, None
    return True, None


def has_binding_conditions(claim: resource.ResourceClaim) -> bool:
    allocation = claim.status.allocation
    return allocation is not None and any(r.binding_conditions
                                          for r in allocation.devices.results)


def claim_binding_timed_out(claim: resource.ResourceClaim, timeout_seconds: float) -> bool:
    allocation = claim.status.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    if not has_binding_conditions(claim):
        return False
    allocated_at = datetime.fromisoformat(allocation.allocation_timestamp.replace("Z", "+00:00"))
    return (datetime.now(UTC) - allocated_at).total_seconds() > timeout_seconds
