"""Which devices are taken (upstream's claimTracker and allocatedDevices).

Three sources, all read by PreFilter to tell the allocator what it may not hand out:

- the informer's claims with an allocation, followed incrementally as the claims
  index reports changes (so a cycle never walks every claim in the cluster);
- claims PreBind has written, until the informer delivers that version or a newer
  one (upstream's assume cache): the next cycle must not wait for the watch;
- in-flight allocations: decided in Reserve, not yet written by PreBind. Pods that
  share such a claim count as "sharers"; the entry goes when the last of them
  binds or unreserves.

Devices held with admin access are never counted (they do not take the device),
and a device allocated with a shareID (consumable capacity) counts as that share and
its consumed capacity, not as the whole device.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kpysched.framework.cluster_events import ActionType
from kpysched.framework.interfaces import ObservedLister
from kpysched.objects import dra as resource
from kpysched.plugins.dynamic_resources.capacity import (
    ConsumedCapacityCollection,
    DeviceID,
    consumed_from_texts,
    insert_consumed,
)

SharedDeviceID = tuple[str, str, str, str]  # driver, pool, device, shareID


@dataclass
class _Holdings:
    """What one claim's allocation holds."""

    devices: list[DeviceID] = field(default_factory=list)
    shares: list[SharedDeviceID] = field(default_factory=list)
    consumed: list[tuple[DeviceID, dict[str, str]]] = field(default_factory=list)


def holdings(claim: resource.ResourceClaim) -> _Holdings:
    held = _Holdings()
    allocation = claim.status.allocation
    if allocation is None:
        return held
    for result in allocation.devices.results:
        if result.admin_access:
            continue
        device: DeviceID = (result.driver, result.pool, result.device)
        if result.share_id is not None:
            held.shares.append((*device, result.share_id))
            if result.consumed_capacity:
                held.consumed.append((device, result.consumed_capacity))
            continue
        held.devices.append(device)
    return held


@dataclass
class AllocatedSnapshot:
    """What is taken at the start of one scheduling cycle."""

    devices: set[DeviceID]
    shared_device_ids: set[SharedDeviceID]
    consumed_capacity: ConsumedCapacityCollection


@dataclass
class _InFlight:
    claim: resource.ResourceClaim
    sharers: int = 1


def _resource_version(claim: resource.ResourceClaim) -> int:
    try:
        return int(claim.metadata.resource_version)
    except ValueError:
        return 0


class ClaimTracker:
    """The claims as the scheduler must see them: informer, assumed writes and
    in-flight allocations."""

    def __init__(self, claims: ObservedLister[resource.ResourceClaim]) -> None:
        self._claims = claims
        self._held: dict[str, _Holdings] = {}  # claim uid -> what the informer's copy holds
        # The entries of _held that consume capacity (few: shares of shareable devices).
        self._consuming: dict[str, _Holdings] = {}
        self._device_counts: Counter[DeviceID] = Counter()
        self._share_counts: Counter[SharedDeviceID] = Counter()
        # The keys of the two counters as plain sets: copying a set reuses its stored
        # hashes, while a set made from a Counter hashes every device ID tuple again
        # (most of allocated()'s time with a thousand devices held).
        self._devices: set[DeviceID] = set()
        self._shares: set[SharedDeviceID] = set()
        self._assumed: dict[str, resource.ResourceClaim] = {}  # namespace/name
        # id(claim) -> (claim, holdings) of the assumed and in-flight claims last counted.
        self._extra_holdings: dict[int, tuple[resource.ResourceClaim, _Holdings]] = {}
        self._in_flight: dict[str, _InFlight] = {}  # claim uid
        for claim in claims.values():
            self._observe(ActionType.ADD, None, claim)
        claims.observers.append(self._observe)

    # ---- the informer's claims -------------------------------------------------------

    def _observe(self, action: ActionType, old: Any, new: Any) -> None:
        if old is not None:
            self._forget(old.metadata.uid)
        if new is not None:
            self._remember(new)
            key = f"{new.metadata.namespace}/{new.metadata.name}"
            assumed = self._assumed.get(key)
            if assumed is not None and _resource_version(new) >= _resource_version(assumed):
                del self._assumed[key]
        elif old is not None:
            self._assumed.pop(f"{old.metadata.namespace}/{old.metadata.name}", None)

    def _remember(self, claim: resource.ResourceClaim) -> None:
        held = holdings(claim)
        if not (held.devices or held.shares):
            return
        self._held[claim.metadata.uid] = held
        if held.consumed:
            self._consuming[claim.metadata.uid] = held
        self._device_counts.update(held.devices)
        self._share_counts.update(held.shares)
        self._devices.update(held.devices)
        self._shares.update(held.shares)

    def _forget(self, uid: str) -> None:
        held = self._held.pop(uid, None)
        if held is None:
            return
        self._consuming.pop(uid, None)
        self._device_counts.subtract(held.devices)
        self._share_counts.subtract(held.shares)
        for device in held.devices:
            if self._device_counts[device] <= 0:
                del self._device_counts[device]
                self._devices.discard(device)
        for share in held.shares:
            if self._share_counts[share] <= 0:
                del self._share_counts[share]
                self._shares.discard(share)

    # ---- reads ---------------------------------------------------------------------

    def get(self, key: str) -> resource.ResourceClaim | None:
        """A claim by namespace/name, PreBind's written version while the informer
        lags behind it."""
        return self._assumed.get(key) or self._claims.get(key)

    def pending_allocation(self, uid: str) -> resource.AllocationResult | None:
        in_flight = self._in_flight.get(uid)
        return None if in_flight is None else in_flight.claim.status.allocation

    def allocated(self) -> AllocatedSnapshot:
        snapshot = AllocatedSnapshot(self._devices.copy(), self._shares.copy(), {})
        for held in self._consuming.values():
            self._add_consumed(snapshot, held)
        # Assumed and in-flight claims count unless the informer's copy of the same
        # claim already holds an allocation (which is then the same one).
        seen: set[str] = set()
        extra = [*self._assumed.values(),
                 *(in_flight.claim for in_flight in self._in_flight.values())]
        # While the informer lags behind PreBind's writes, hundreds of claims can be
        # assumed: what each holds is kept from the last cycle (by the claim object).
        memo, kept = self._extra_holdings, {}
        held_by_uid = self._held
        for claim in extra:
            uid = claim.metadata.uid
            if uid in held_by_uid or uid in seen:
                continue
            seen.add(uid)
            entry = memo.get(id(claim))
            held = entry[1] if entry is not None and entry[0] is claim else holdings(claim)
            kept[id(claim)] = (claim, held)
            snapshot.devices.update(held.devices)
            if held.shares:
                snapshot.shared_device_ids.update(held.shares)
            if held.consumed:
                self._add_consumed(snapshot, held)
        self._extra_holdings = kept
        return snapshot

    @staticmethod
    def _add_consumed(snapshot: AllocatedSnapshot, held: _Holdings) -> None:
        for device, consumed in held.consumed:
            insert_consumed(snapshot.consumed_capacity, device, consumed_from_texts(consumed))

    # ---- writes by Reserve, Unreserve and PreBind --------------------------------------

    def signal_pending_allocation(self, claim: resource.ResourceClaim) -> None:
        """Reserve: `claim` carries the allocation it was given."""
        in_flight = self._in_flight.get(claim.metadata.uid)
        if in_flight is not None:
            in_flight.sharers += 1
        else:
            self._in_flight[claim.metadata.uid] = _InFlight(claim)

    def maybe_remove_pending_allocation(self, uid: str, force: bool = False) -> bool:
        """True when the in-flight entry went (its last sharer, or forced)."""
        in_flight = self._in_flight.get(uid)
        if in_flight is None:
            return False
        if force or in_flight.sharers == 1:
            del self._in_flight[uid]
            return True
        in_flight.sharers -= 1
        return False

    def assume(self, claim: resource.ResourceClaim) -> bool:
        """PreBind: the version the API server answered with. False where upstream's
        assume cache refuses it: the informer has a newer version (which stands), or
        does not know the claim yet (kept all the same, so that a claim PreBind just
        created holds its devices before the informer delivers it)."""
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        stored = self._claims.get(key)
        if stored is not None and _resource_version(stored) > _resource_version(claim):
            return False
        if stored is None or _resource_version(stored) < _resource_version(claim):
            self._assumed[key] = claim
        return stored is not None

    def restore(self, key: str) -> None:
        self._assumed.pop(key, None)


def tracker_for(claims: ObservedLister[resource.ResourceClaim]) -> ClaimTracker:
    """The tracker already following these claims, else a new one: the DynamicResources
    plugin of every profile and NodeResourcesFit's and BalancedAllocation's scoring of
    DRA-backed extended resources share one view, as upstream's shared DRA manager."""
    for observer in claims.observers:
        owner = getattr(observer, "__self__", None)
        if isinstance(owner, ClaimTracker):
            return owner
    return ClaimTracker(claims)
