"""v1.37's pod groups as queue entities, kept over kpysched's per-pod pools.

kube-scheduler v1.37 (GenericWorkload on) queues a pod group as one entity: its
members wait together in one place (active, backoff, or among the unschedulable), are
popped together, and come back together. kpysched keeps every member in its own pool
entry, as before, and this module holds what the entity shares, so the queue can move
all of a group's waiting members as one (pod_group_moves.py):

- The backoff is the group's: its failures are counted once per attempt of the whole
  group (an error streak or rejections, as a pod's), from the time the attempt came
  back, and capped at the maximum backoff times the square root of the members then
  queued (group_backoff_seconds). The expiry is computed once per failure and kept,
  so a member arriving later waits out the same backoff.
- An attempt in which the group was placed (its quorum met) clears the failures, and
  the members left over are queued at once.
- One member held back by PreEnqueue holds the whole group (`holder`: the plugin
  holding it); only that plugin's events (or a wildcard) are asked to move it.
- A group none of whose members waits (all in flight, or newly seen) starts afresh:
  the first member to come starts a new entity with no failures.

With CompositePodGroup on, a tree of groups is one entity, its root's: the members
of every PodGroup under the root CompositePodGroup share one backoff (counted once
per attempt of the whole tree, capped by the tree's size) and wait, move and are held
together. A PodGroup whose root is not seen yet (or is gone) is an entity of its own
until it is; its members then move to the root's entity (`regroup`).

v1.36 and plain pods never reach this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kpysched.queue.backoff import NO_BACKOFF, FailureCounts

# A group: (namespace, PodGroup name), or for a tree of groups (CompositePodGroup)
# (namespace, "compositepodgroup/<root's name>"), which no PodGroup name can be.
GroupKey = tuple[str, str]
TREE_PREFIX = "compositepodgroup/"


def tree_key(namespace: str, root: str) -> GroupKey:
    """The entity of the tree whose root is the CompositePodGroup `root`."""
    return (namespace, TREE_PREFIX + root)

_NANOSECONDS = 1_000_000_000


def group_backoff_seconds(count: int, initial: float, maximum: float, size: int) -> float:
    """initial * 2^(count-1), capped at maximum * sqrt(size) for a group of more than
    one pod (upstream's calculateBackoffDuration); computed in whole nanoseconds as
    upstream's durations are, so the cap truncates as upstream's does."""
    if count <= 0:
        return 0.0
    initial_ns = round(initial * _NANOSECONDS)
    cap_ns = round(maximum * _NANOSECONDS)
    if size > 1:
        cap_ns = int(cap_ns * math.sqrt(size))
    shift = count - 1
    if initial_ns > cap_ns >> shift:
        return cap_ns / _NANOSECONDS
    return (initial_ns << shift) / _NANOSECONDS


@dataclass(slots=True)
class GroupEntity:
    """What a queued pod group's members share."""

    # Members the queue holds (waiting or in flight), by uid, in the order they came.
    members: dict[str, None] = field(default_factory=dict)
    counts: FailureCounts = field(default_factory=FailureCounts)
    # When the group's last attempt came back (or its first member came), and the
    # one before (kept by an attempt that placed the group: its QueueSort order).
    timestamp: float = 0.0
    previous_timestamp: float = 0.0
    # The backoff's end, computed at the first look after a failure and kept.
    expiry: float | None = None
    # The scheduling cycle that popped the group last, and the one whose failure is
    # counted (a group's attempt fails once, however many members come back).
    attempt: int = 0
    counted: int = -1
    # The PreEnqueue plugin holding the whole group ("" when none), and the members
    # it (or another PreEnqueue plugin) turned away themselves.
    holder: str = ""
    turned_away: set[str] = field(default_factory=set)
    # A member last seen waiting: where it waits is where the group waits (so that a
    # member joining need not look at every other one).
    anchor: str = ""

    def start_afresh(self, now: float) -> None:
        self.counts = FailureCounts()
        self.timestamp = now
        self.expiry = None
        self.holder = ""
        self.turned_away.clear()


class PodGroupEntities:
    def __init__(self, initial_backoff_seconds: float, max_backoff_seconds: float) -> None:
        self._initial = initial_backoff_seconds
        self._max = max_backoff_seconds
        self._groups: dict[GroupKey, GroupEntity] = {}
        self._group_of: dict[str, GroupKey] = {}
        # Member uid -> the attempt (scheduling cycle) that took it out of the queue.
        self._attempt_of: dict[str, int] = {}

    def get(self, key: GroupKey) -> GroupEntity | None:
        return self._groups.get(key)

    def items(self) -> list[tuple[GroupKey, GroupEntity]]:
        return list(self._groups.items())

    def join(self, key: GroupKey, uid: str) -> GroupEntity:
        entity = self._groups.setdefault(key, GroupEntity())
        entity.members[uid] = None
        self._group_of[uid] = key
        return entity

    def key_of(self, uid: str) -> GroupKey | None:
        return self._group_of.get(uid)

    def regroup(self, uids: list[str], key: GroupKey) -> None:
        """These members now wait in `key`'s entity (their tree's root was seen, or is
        gone). An entity made for them starts with no failures, as upstream's root
        entity made for pods that waited for their tree; its time is the one they
        left, and so is its hold (the members stay where PreEnqueue put them until the
        entity is asked again)."""
        for uid in uids:
            old = self._group_of.get(uid)
            if old is None or old == key:
                continue
            left = self._groups[old]
            left.members.pop(uid, None)
            entity = self._groups.get(key)
            if entity is None:
                entity = self._groups[key] = GroupEntity(timestamp=left.timestamp,
                                                         holder=left.holder)
            entity.members[uid] = None
            if uid in left.turned_away:
                left.turned_away.discard(uid)
                entity.turned_away.add(uid)
            if not left.members:
                del self._groups[old]
            self._group_of[uid] = key

    def leave(self, uid: str) -> tuple[GroupKey, GroupEntity] | None:
        """The member left the queue (deleted, or bound); the group it left, if any."""
        key = self._group_of.pop(uid, None)
        self._attempt_of.pop(uid, None)
        if key is None:
            return None
        entity = self._groups[key]
        entity.members.pop(uid, None)
        entity.turned_away.discard(uid)
        if not entity.members:
            del self._groups[key]
        return key, entity

    def taken(self, uid: str, cycle: int, *, first: bool) -> None:
        """The member was popped for scheduling cycle `cycle`: `first` when the loop
        popped it (a new attempt of its group), else with the group's first."""
        key = self._group_of.get(uid)
        if key is None:
            return
        entity = self._groups[key]
        if first:
            entity.attempt = cycle
        self._attempt_of[uid] = entity.attempt

    def attempt_members(self, key: GroupKey) -> list[str]:
        """The members taken in the group's last attempt."""
        entity = self._groups.get(key)
        if entity is None:
            return []
        return [uid for uid in entity.members if self._attempt_of.get(uid) == entity.attempt]

    def past_permit(self, uid: str) -> None:
        """Permit let the member through: it left its group's attempt for its binding
        cycle, whose failure is no failure of the group (upstream requeues it alone
        into its group's entity)."""
        self._attempt_of.pop(uid, None)

    def failed(self, uid: str, *, error: bool, now: float) -> tuple[bool, bool]:
        """A member came back: (whether from its group's attempt, whether the first of
        that attempt, which counts the group's failure and restarts its backoff)."""
        key = self._group_of.get(uid)
        attempt = self._attempt_of.pop(uid, None)
        if key is None or attempt is None:
            return False, False
        entity = self._groups[key]
        if entity.counted == attempt:
            return True, False
        entity.counted = attempt
        entity.counts.record(error=error)
        entity.previous_timestamp = entity.timestamp
        entity.timestamp = now
        entity.expiry = None
        entity.anchor = uid
        return True, True

    def placed(self, key: GroupKey) -> float | None:
        """The group's attempt placed it: its failures are forgotten, and it keeps the
        time it had before the attempt (its place in the active queue). That time,
        or None for a group the queue does not hold."""
        entity = self._groups.get(key)
        if entity is None:
            return None
        entity.counts = FailureCounts()
        entity.expiry = None
        entity.timestamp = entity.previous_timestamp
        return entity.timestamp

    def expiry(self, entity: GroupEntity, size: int) -> float:
        """When the group's backoff ends (upstream's getBackoffTime for an entity of
        `size` pods); kept once computed, until the group fails again."""
        count = entity.counts.backoff_count
        if self._max == 0 or count == 0:
            return NO_BACKOFF
        if entity.expiry is None:
            entity.expiry = entity.timestamp + group_backoff_seconds(
                count, self._initial, self._max, size)
        return entity.expiry
