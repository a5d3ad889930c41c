"""How the scheduling queue moves a v1.37 pod group's members as one entity.

The queue (scheduling_queue.SchedulingQueue) keeps every member in its per-pod pools;
pod_group_entities.py holds what the group shares (its backoff, its holder); the methods
here move all of a group's waiting members together, as kube-scheduler v1.37's queue
moves a group entity: where a new member joins, how a group comes back from its attempt,
how PreEnqueue holds it whole, how an event moves it, what its PodGroup's deletion
does, where the members a placement left over go, and how many entities wait where (for
v1.37's queue metrics). A mixin of SchedulingQueue: it reads the queue's pools and
places pods with the queue's own steps, declared below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kpysched.cache.pod_groups import group_name
from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.queue.backoff import BackoffQueue
from kpysched.queue.gated import GatedPods
from kpysched.queue.hints import QueueingHints, Strategy
from kpysched.queue.in_flight import InFlightEvents
from kpysched.queue.labels import POD_ENTITY, POD_GROUP_ENTITY, SCHEDULE_ATTEMPT_FAILURE
from kpysched.queue.pod_group_entities import (
    TREE_PREFIX,
    GroupEntity,
    GroupKey,
    PodGroupEntities,
    tree_key,
)
from kpysched.queue.unschedulable import UnschedulablePods

# (namespace, PodGroup name) -> the name of its tree's root CompositePodGroup, or None
# for a PodGroup that is its own root or whose root is not seen (yet).
TreeRoot = Callable[[str, str], str | None]


class PodGroupMoves:
    # The queue's state and steps these methods use (SchedulingQueue has them).
    _entities: PodGroupEntities | None
    _tree_root: TreeRoot | None
    _backoff: BackoffQueue
    _unschedulable: UnschedulablePods
    _gated: GatedPods
    _in_flight_events: InFlightEvents
    _clock: Callable[[], float]
    hints: QueueingHints

    def where(self, uid: str) -> str | None:
        raise NotImplementedError

    def _info_in(self, queue: str, uid: str) -> QueuedPodInfo | None:
        raise NotImplementedError

    def _deferred(self, pod: PodInfo) -> bool:
        raise NotImplementedError

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> Status:
        raise NotImplementedError

    def _place_active(self, info: QueuedPodInfo, event: str,
                      strategy: Strategy | None) -> None:
        raise NotImplementedError

    def _place_backoff(self, info: QueuedPodInfo, expiry: float, event: str,
                       strategy: Strategy | None, *, early: bool) -> None:
        raise NotImplementedError

    def _park(self, info: QueuedPodInfo, event: str, *, gated: bool,
              strategy: Strategy | None = None) -> None:
        raise NotImplementedError

    def _leave_active(self, uid: str) -> None:
        raise NotImplementedError

    def _count_entity(self, queue: str, event: str, strategy: Strategy | None,
                      kind: str) -> None:
        raise NotImplementedError

    def activate(self, uids: Iterable[str]) -> None:
        raise NotImplementedError

    def pending_counts(self) -> dict[str, int]:
        raise NotImplementedError

    def _group_key(self, pod: PodInfo) -> GroupKey | None:
        """The v1.37 group whose entity the pod waits in; None for a plain pod, for
        v1.36, and for a deferred resize (tried alone, never as its group's member)."""
        if self._entities is None:
            return None
        name = group_name(pod.pod)
        if name is None or self._deferred(pod):
            return None
        root = self._tree_root(pod.namespace, name) if self._tree_root is not None else None
        key = (pod.namespace, name) if root is None else tree_key(pod.namespace, root)
        self._regroup(pod.uid, key)
        return key

    def _regroup(self, uid: str, key: GroupKey) -> None:
        """The member's entity is no longer the one it joined (its tree's root was
        seen, or went): it moves there, and with it every member of its PodGroup's own
        entity (they share the PodGroup, so the root too)."""
        assert self._entities is not None
        old = self._entities.key_of(uid)
        if old is None or old == key:
            return
        entity = self._entities.get(old)
        lone = not old[1].startswith(TREE_PREFIX)
        self._entities.regroup(list(entity.members) if lone and entity is not None else [uid],
                               key)

    def _trees_seen(self, namespace: str, pod_group: str | None = None) -> None:
        """A PodGroup (`pod_group`) or a CompositePodGroup of `namespace` was seen: the
        entities of PodGroups whose tree's root is now known move to the root's, so
        that the tree waits, is held and is asked as one from now on."""
        assert self._entities is not None and self._tree_root is not None
        if pod_group is not None:
            # Only this PodGroup's own entity can have found its root.
            entity = self._entities.get((namespace, pod_group))
            candidates = [] if entity is None else [((namespace, pod_group), entity)]
        else:
            candidates = self._entities.items()
        for key, entity in candidates:
            if key[0] != namespace or key[1].startswith(TREE_PREFIX):
                continue
            if (root := self._tree_root(namespace, key[1])) is not None:
                self._entities.regroup(list(entity.members), tree_key(namespace, root))

    def _members_of_pod_group(self, namespace: str, name: str) -> list[QueuedPodInfo]:
        """The queued members (waiting or in flight) of one PodGroup, whichever entity
        holds them."""
        assert self._entities is not None
        found = []
        for key, entity in self._entities.items():
            if key[0] != namespace:
                continue
            for uid in entity.members:
                info = self._info_anywhere(uid)
                if info is not None and group_name(info.pod_info.pod) == name:
                    found.append(info)
        return found

    def _entity(self, key: GroupKey) -> GroupEntity | None:
        return self._entities.get(key) if self._entities is not None else None

    def _group_expiry(self, entity: GroupEntity, size: int) -> float:
        assert self._entities is not None
        return self._entities.expiry(entity, size)

    def _info_anywhere(self, uid: str) -> QueuedPodInfo | None:
        queue = self.where(uid)
        return self._info_in(queue, uid) if queue is not None else None

    def _waiting_in(self, uid: str) -> str | None:
        """The queue the member waits in; None when it is in flight or gone."""
        queue = self.where(uid)
        return None if queue == "in_flight" else queue

    def _waiting_members(self, key: GroupKey) -> list[QueuedPodInfo]:
        """The group's members waiting in the queue (not in flight), in arrival order."""
        entity = self._entity(key)
        if entity is None:
            return []
        found = []
        for uid in entity.members:
            queue = self._waiting_in(uid)
            if queue is not None and (info := self._info_in(queue, uid)) is not None:
                found.append(info)
        return found

    def _group_add(self, key: GroupKey, info: QueuedPodInfo, event: str) -> None:
        """A new member joins its group where the group waits (upstream's
        addPodGroupMember): the active queue or backoff (PreEnqueue asked of every
        member), or among the unschedulable, where it waits with them unasked. With
        no member waiting, it starts the group's entity afresh."""
        assert self._entities is not None
        entity = self._entities.join(key, info.pod_info.uid)
        queue = self._group_queue(entity)
        if queue is None:
            entity.start_afresh(info.timestamp)
            self._group_to(key, [info], event, None)
            return
        if queue == "active":
            self._group_requeue(key, Strategy.IMMEDIATELY, event, joining=info)
        elif queue == "backoff":
            self._group_requeue(key, Strategy.AFTER_BACKOFF, event, joining=info)
        else:
            if entity.holder:
                info.gating_plugin = entity.holder
            self._park(info, event, gated=bool(entity.holder), strategy=Strategy.SKIP)

    def _group_attempt_failed(self, key: GroupKey, info: QueuedPodInfo, *,
                              error: bool) -> None:
        """A member of the group's attempt came back (upstream puts it with its group,
        which goes back whole once the attempt is over): the attempt's first counts
        the group's failure; the group backs off as one entity of all its members."""
        assert self._entities is not None
        uid = info.pod_info.uid
        self._in_flight_events.done(uid)
        in_attempt = len(self._entities.attempt_members(key))
        from_attempt, first = self._entities.failed(uid, error=error, now=info.timestamp)
        entity = self._entity(key)
        if not from_attempt or entity is None:
            # Failed in its binding cycle: it rejoins its group as a new member would.
            self._group_add(key, info, SCHEDULE_ATTEMPT_FAILURE)
        elif first:
            size = in_attempt + len(self._waiting_members(key))
            self._group_requeue(key, Strategy.AFTER_BACKOFF, SCHEDULE_ATTEMPT_FAILURE,
                                joining=info, size=size, back_from_attempt=True)
        else:
            self._group_rejoin(key, entity, info)

    def _group_rejoin(self, key: GroupKey, entity: GroupEntity, info: QueuedPodInfo) -> None:
        """A later member of the same attempt comes back where the first ones went.
        Nothing changed meanwhile (the group's cycle holds the loop), so only its own
        PreEnqueue is asked: the whole group's answer is the same as upstream's, asked
        once for all, without asking every member again for each one back."""
        event = SCHEDULE_ATTEMPT_FAILURE
        queue = self._group_queue(entity)
        turned_away = self._ask_pre_enqueue(entity, info)
        if entity.holder:
            if not info.gated:
                info.gating_plugin = entity.holder
            self._park(info, event, gated=True, strategy=None)
        elif turned_away:
            self._group_hold(entity, [*self._waiting_members(key), info], turned_away,
                             event, None)
        elif queue == "backoff":
            self._place_backoff(info, self._group_expiry(entity, len(entity.members)),
                                event, None, early=False)
        elif queue == "active":
            self._place_active(info, event, None)
        else:
            self._group_requeue(key, Strategy.AFTER_BACKOFF, event, joining=info)

    def _group_queue(self, entity: GroupEntity) -> str | None:
        """Where the group waits (the queue of a member waiting, its anchor first);
        None when no member waits."""
        if entity.anchor and (queue := self._waiting_in(entity.anchor)) is not None:
            return queue
        for uid in entity.members:
            if (queue := self._waiting_in(uid)) is not None:
                entity.anchor = uid
                return queue
        return None

    def _group_requeue(self, key: GroupKey, strategy: Strategy, event: str, *,
                       joining: QueuedPodInfo | None = None, size: int | None = None,
                       back_from_attempt: bool = False) -> bool:
        """Upstream's requeueEntityWithQueueingStrategy for a whole group; whether it
        went to the active queue or backoff. `back_from_attempt`: the group comes back
        from its attempt (counted as an entity wherever it goes, as upstream's
        AddAttemptedPodGroupIfNeeded counts it)."""
        entity = self._entity(key)
        members = self._waiting_members(key)
        if joining is not None and joining not in members:
            members.append(joining)
        if entity is None or not members:
            return False
        if strategy is Strategy.SKIP:
            return False
        expiry = self._group_expiry(entity, size if size is not None else len(members))
        backoff = (strategy is Strategy.AFTER_BACKOFF
                   and self._backoff.is_backing_off(expiry, self._clock()))
        return self._group_to(key, members, event, None if back_from_attempt else strategy,
                              backoff=backoff)

    def _group_to(self, key: GroupKey, members: list[QueuedPodInfo], event: str,
                  strategy: Strategy | None, *, backoff: bool = False,
                  ask_pre_enqueue: bool = True) -> bool:
        """Every member to the active queue (or backoff) if PreEnqueue lets each one
        through; one turned away holds them all (upstream's runPreEnqueuePlugins for
        an entity). Whether they went."""
        entity = self._entity(key)
        if entity is None or not members:
            return False
        if ask_pre_enqueue and (holder := self._ask_each_pre_enqueue(entity, members)):
            self._group_hold(entity, members, holder, event, strategy)
            return False
        entity.holder = ""
        self._count_entity("backoff" if backoff else "active", event, strategy, POD_GROUP_ENTITY)
        if backoff:
            expiry = self._group_expiry(entity, len(members))
            for info in members:
                if info.pod_info.uid not in self._backoff:
                    # A group's backoff is waited out even by an idle scheduler: its
                    # entity carries no rejecting plugin (upstream's error backoff).
                    self._place_backoff(info, expiry, event, strategy, early=False)
        else:
            for info in members:
                self._place_active(info, event, strategy)
        return True

    def _group_hold(self, entity: GroupEntity, members: list[QueuedPodInfo], holder: str,
                    event: str, strategy: Strategy | None) -> None:
        """PreEnqueue turned a member away: the whole group waits among the gated."""
        entity.holder = holder
        if any(info.pod_info.uid not in self._unschedulable
               and info.pod_info.uid not in self._gated for info in members):
            self._count_entity("unschedulable", event, strategy, POD_GROUP_ENTITY)
        for info in members:
            if not info.gated:
                # Held by its group: kept under the holder, whose events are the ones
                # asked to move the group (its own hints unchanged).
                info.gating_plugin = holder
            self._leave_active(info.pod_info.uid)
            self._backoff.remove(info.pod_info.uid)
            self._park(info, event, gated=True, strategy=strategy)

    def _ask_each_pre_enqueue(self, entity: GroupEntity, members: list[QueuedPodInfo]) -> str:
        """PreEnqueue for every member, none skipped (each one's gate is recorded); the
        plugin turning away the last member turned away, or "" when all went through."""
        holder = ""
        for info in members:
            holder = self._ask_pre_enqueue(entity, info) or holder
        return holder

    def _ask_pre_enqueue(self, entity: GroupEntity, info: QueuedPodInfo) -> str:
        """PreEnqueue for one member; the plugin turning it away, or ""."""
        status = self._run_pre_enqueue(info)
        uid = info.pod_info.uid
        if status.ok:
            entity.turned_away.discard(uid)
            return ""
        entity.turned_away.add(uid)
        return status.plugin or "PreEnqueue"

    def _group_strategy(self, key: GroupKey, event: ClusterEvent, old: object,
                        new: object) -> Strategy:
        """Upstream's isEntityWorthRequeuing: the strongest answer of any member."""
        best = Strategy.SKIP
        for info in self._waiting_members(key):
            best = max(best, self.hints.strategy(info, event, old, new))
            if best is Strategy.IMMEDIATELY:
                break
        return best

    def _move_group(self, key: GroupKey, event: ClusterEvent, old: object,
                    new: object) -> int:
        """A cluster event asks a waiting group once; a held group only hears its
        holder's events (or a wildcard). How many members left."""
        entity = self._entity(key)
        members = self._waiting_members(key)
        if entity is None or not members:
            return 0
        profile = members[0].pod_info.pod.spec.scheduler_name
        if (entity.holder and not event.is_wildcard
                and not self.hints.hears(profile, entity.holder, event)):
            return 0
        strategy = self._group_strategy(key, event, old, new)
        if strategy is Strategy.SKIP:
            return 0
        return len(members) if self._group_requeue(key, strategy, event.queue_label()) else 0

    def _group_lost_its_pod_group(self, namespace: str, name: str, event: str) -> None:
        """Upstream takes a deleted PodGroup's members out of its queue until the
        PodGroup is seen again (incompletePodGroupPods): here PreEnqueue is asked
        again, and GangScheduling's, which waits for the PodGroup, holds the group
        wherever it waited (a backoff ending would otherwise send it to a cycle). In a
        tree, its members leave the tree's entity first (the rest of the tree waits
        on where it was)."""
        key: GroupKey = (namespace, name)
        if self._tree_root is not None:
            for info in self._members_of_pod_group(namespace, name):
                key = self._group_key(info.pod_info) or key
        self._ask_again(key, event)

    def _tree_lost_a_composite(self, namespace: str, event: str) -> None:
        """A CompositePodGroup of `namespace` was deleted: the members under it leave
        their tree's entity (upstream takes them aside until it is seen again), and
        PreEnqueue is asked again of the entities they went to, as for a deleted
        PodGroup."""
        assert self._entities is not None
        left: set[GroupKey] = set()
        for key, entity in self._entities.items():
            if key[0] != namespace or not key[1].startswith(TREE_PREFIX):
                continue
            for uid in list(entity.members):
                info = self._info_anywhere(uid)
                now = self._group_key(info.pod_info) if info is not None else None
                if now is not None and now != key:
                    left.add(now)
        for key in left:
            self._ask_again(key, event)

    def _ask_again(self, key: GroupKey, event: str) -> None:
        """PreEnqueue for every waiting member of the entity; one turned away holds it
        whole wherever it waited."""
        entity = self._entity(key)
        members = self._waiting_members(key)
        if entity is None or not members:
            return
        if holder := self._ask_each_pre_enqueue(entity, members):
            self._group_hold(entity, members, holder, event, None)

    def _group_member_deleted(self, key: GroupKey, entity: GroupEntity) -> None:
        """Without the member PreEnqueue turned away, a held group is held no more; as
        upstream's, it stays among the unschedulable until an event (or the flush)
        moves it."""
        if not entity.holder or entity.turned_away or not entity.members:
            return
        entity.holder = ""
        for info in self._waiting_members(key):
            uid = info.pod_info.uid
            if self._gated.pop(uid) is not None:
                info.gated = False
                info.gating_plugin = ""
                self._unschedulable.put(info)

    def activate_left_over(self, uids: Iterable[str]) -> None:
        """A pod group was placed (its quorum met) and these members were left over: as
        v1.37, its failures are forgotten and they go to the active queue at once."""
        uids = list(uids)
        if self._entities is not None:
            placed: dict[GroupKey, float | None] = {}
            for uid in uids:
                info = self._info_anywhere(uid)
                if info is None or (key := self._group_key(info.pod_info)) is None:
                    continue
                if key not in placed:
                    placed[key] = self._entities.placed(key)
                if (timestamp := placed[key]) is not None:
                    # Ahead of pods that came during its attempt, as upstream's
                    # group keeps its timestamp when members were left over.
                    info.timestamp = timestamp
        self.activate(uids)

    def entity_of(self, uid: str) -> GroupKey | None:
        """The entity the queued pod waits in (its PodGroup's, or its tree's root's);
        None for a pod outside any v1.37 group or not queued."""
        info = self._info_anywhere(uid)
        return None if info is None else self._group_key(info.pod_info)

    def pending_entities(self) -> dict[tuple[str, str], int]:
        """(queue, type) -> entities waiting there (v1.37's scheduler_queued_entities):
        pods outside any group as "pod", each v1.37 group whose members wait as one
        "podgroup" (held groups count as gated)."""
        counts = {(queue, POD_ENTITY): count for queue, count in self.pending_counts().items()}
        if self._entities is None:
            return counts
        for _, entity in self._entities.items():
            queue = self._group_queue(entity)
            if queue is None:
                continue
            members = sum(1 for uid in entity.members if self.where(uid) == queue)
            counts[(queue, POD_ENTITY)] -= members
            counts[(queue, POD_GROUP_ENTITY)] = counts.get((queue, POD_GROUP_ENTITY), 0) + 1
        return counts
