"""The scheduling queue: activeQ, backoffQ, unschedulable pods and gated pods.

- activeQ: a heap ordered by the profile's QueueSort `less`; pop() waits on it, and
  takes a plugin-rejected pod from backoffQ when it is empty (SchedulerPopFromBackoffQ).
- backoffQ: pods that failed and wait out their backoff (see backoff.py).
- unschedulable: pods rejected by plugins; they move back when a cluster event comes
  that a rejecting plugin's queueing hint says may help (hints.py), or after 5 minutes.
- gated: pods a PreEnqueue plugin (e.g. SchedulingGates) keeps out (upstream keeps
  them among the unschedulable pods).

A pod is in at most one of these, or "in flight" between pop() and done(). Events that
arrive while pods are in flight are logged (in_flight.py): a pod that comes back
rejected is judged by the hints against what happened during its attempt.

As v1.37 (GenericWorkload), a pod group's members wait, back off and move together as
one entity (pod_group_entities.py, pod_group_moves.py); with CompositePodGroup, a
whole tree of groups is one entity, its root's (`tree_root` finds it).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kpysched.cache.pod_groups import coscheduling_group_name, group_name
from kpysched.config.features import OLDEST_RELEASE
from kpysched.framework.cluster_events import (
    FORCE_ACTIVATE,
    TARGET_POD_RELEASE,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    Resource,
    pod_update_events,
    release_label,
)
from kpysched.framework.deferred_resize import is_pod_resize_deferred
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.status import Status
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.coscheduling import PodGroup as CoschedulingPodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup
from kpysched.queue.backoff import BackoffQueue, FailureCounts, Less
from kpysched.queue.gated import GatedPods
from kpysched.queue.hints import QueueingHints, Strategy, rejectors
from kpysched.queue.in_flight import InFlightEvents
from kpysched.queue.labels import (
    BACKOFF_COMPLETE,
    POD_ENTITY,
    POD_GROUP_ENTITY,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
)
from kpysched.queue.nominator import Nominator
from kpysched.queue.pod_group_entities import (
    TREE_PREFIX,
    GroupEntity,
    GroupKey,
    PodGroupEntities,
)
from kpysched.queue.pod_group_moves import PodGroupMoves, TreeRoot
from kpysched.queue.pod_state import PodQueueState, triggers, wall_clock
from kpysched.queue.unschedulable import UnschedulablePods

UNSCHEDULABLE_MAX_SECONDS = 300.0  # upstream's podMaxInUnschedulablePodsDuration
BACKOFF_FLUSH_SECONDS = 1.0
UNSCHEDULABLE_FLUSH_SECONDS = 30.0
# The plugin whose PreEnqueue holds a preemptor while its victims are being removed;
# the executor's finish releases those pods alone (activate_gated).
DEFAULT_PREEMPTION = "DefaultPreemption"

# The queue each hint answer sends a pod to, as v1.37's strategyToQueueLabel names it.
_STRATEGY_QUEUE = {Strategy.SKIP: "unschedulable", Strategy.AFTER_BACKOFF: "backoff",
                   Strategy.IMMEDIATELY: "active"}

# The PreEnqueue plugins of the pod's profile, run as one (app.py wires the framework's).
PreEnqueue = Callable[[PodInfo], Status]
# Which unschedulable pods an event may move at all (upstream's PreEnqueueCheck).
PreCheck = Callable[[PodInfo], bool]
NamespaceLabels = Callable[[str], Mapping[str, str] | None]

# The one plugin whose rejection any pod of the namespace may lift by being placed
# (a new spread domain count); upstream's queue names it too.
_POD_TOPOLOGY_SPREAD = "PodTopologySpread"


@dataclass(slots=True)
class _HeapEntry:
    info: QueuedPodInfo
    less: Less
    removed: bool = False

    def __lt__(self, other: _HeapEntry) -> bool:
        return self.less(self.info, other.info)


# From v1.37 a pod group preempts as one (scheduling/pod_group_preemption.py), and
# the queue keeps it as one entity (pod_group_entities.py).
GROUP_PREEMPTION_RELEASE = 37
GROUP_ENTITY_RELEASE = 37


class SchedulingQueue(PodGroupMoves):
    def __init__(
        self,
        less: Less,
        pre_enqueue: PreEnqueue,
        hints: QueueingHints,
        *,
        initial_backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 10.0,
        max_unschedulable_seconds: float = UNSCHEDULABLE_MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        pod_groups: bool = False,
        namespace_labels: NamespaceLabels = lambda _: None,
        release: int = OLDEST_RELEASE,
        deferred_resize: bool = False,
        tree_root: TreeRoot | None = None,
    ) -> None:
        self._less = less
        # The kube-scheduler minor this queue behaves as (pod updates' events differ).
        self.release = release
        # InPlacePodVerticalScalingSchedulerPreemption: bound pods whose resize was
        # deferred are queued too (the event handlers and the cycle read this as well).
        self.deferred_resize = deferred_resize
        self._namespace_labels = namespace_labels
        # GenericWorkload: members of pod groups retry after backoff, whatever happened
        # while they were tried (upstream has no event-based requeue for groups yet).
        self._pod_groups = pod_groups
        # As v1.37: a pod group's members wait, back off and move as one entity.
        self._entities = (PodGroupEntities(initial_backoff_seconds, max_backoff_seconds)
                          if pod_groups and release >= GROUP_ENTITY_RELEASE else None)
        # CompositePodGroup: the root of a PodGroup's tree, whose entity its members
        # wait in (pod_group_moves._group_key).
        self._tree_root = tree_root
        self._max_unschedulable_seconds = max_unschedulable_seconds
        self._pre_enqueue = pre_enqueue
        self.hints = hints
        self._clock = clock
        self._active: list[_HeapEntry] = []
        self._active_by_uid: dict[str, _HeapEntry] = {}
        self._backoff = BackoffQueue(less, initial_backoff_seconds, max_backoff_seconds)
        self._unschedulable = UnschedulablePods(_needs_assigned_pods)
        self._gated = GatedPods()
        # Gated pods DefaultPreemption holds (a subset of _gated, by uid): a finished
        # preemption asks only these again, however many pods other gates hold.
        self._held_for_preemption: set[str] = set()
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._in_flight_events = InFlightEvents()
        self._failures: dict[str, FailureCounts] = {}
        self._flushed_at: dict[str, float] = {}  # upstream's FlushTimestamp
        self._wakeup = asyncio.Event()
        self.nominator = Nominator()
        self.scheduling_cycle = 0
        self._closed = False
        # (queue, event) -> count, for scheduler_queue_incoming_pods_total.
        self.incoming: dict[tuple[str, str], int] = {}
        # (queue, event, type) -> count, for v1.37's
        # scheduler_queue_incoming_entities_total: type "pod" for a pod outside any
        # group, "podgroup" for a v1.37 group moving as one entity.
        self.incoming_entities: dict[tuple[str, str, str], int] = {}

    # --- moving pods between the queues ------------------------------------------

    def _count(self, queue: str, event: str, strategy: Strategy | None = None, *,
               entity: bool = True) -> None:
        """A pod entered `queue`. `strategy` is the queueing hint's answer when a hint
        sent it there: v1.37 counts the entity only when it lands in a queue other than
        the one the answer names (recordIncomingEntitiesMetrics), i.e. a pod whose hint
        said "after backoff" but whose backoff was over. A v1.37 group's member is no
        entity of its own (`entity=False`): its group is counted once (_count_entity)."""
        label = (release_label(event, self.release) if self.release >= TARGET_POD_RELEASE
                 else event)
        key = (queue, label)
        self.incoming[key] = self.incoming.get(key, 0) + 1
        if entity:
            self._count_entity(queue, event, strategy, POD_ENTITY)

    def _count_entity(self, queue: str, event: str, strategy: Strategy | None,
                      kind: str) -> None:
        if self.release >= TARGET_POD_RELEASE:
            event = release_label(event, self.release)
        if strategy is None or _STRATEGY_QUEUE[strategy] != queue:
            key = (queue, event, kind)
            self.incoming_entities[key] = self.incoming_entities.get(key, 0) + 1

    def _backoff_expiry(self, info: QueuedPodInfo) -> float:
        key = self._group_key(info.pod_info)
        if key is not None and (entity := self._entity(key)) is not None:
            return self._group_expiry(entity, len(entity.members))
        return self._backoff.expiry(info, self._failures.get(info.pod_info.uid, FailureCounts()))

    def _park(self, info: QueuedPodInfo, event: str, *, gated: bool,
              strategy: Strategy | None = None) -> None:
        """Keep the pod among the unschedulable (or gated) pods."""
        if gated and self._gated.holds_as_is(info):
            # Held again by the plugin that held it (every event its gating plugin hears
            # asks PreEnqueue again: each node of the initial LIST, for every held pod).
            return
        uid = info.pod_info.uid
        if uid not in self._unschedulable and uid not in self._gated:
            self._count("unschedulable", event, strategy,
                        entity=self._group_key(info.pod_info) is None)
        self._unschedulable.pop(uid)
        self._gated.pop(uid)
        if gated:
            self._gated.put(info)
        else:
            self._unschedulable.put(info)

    def _admitted(self, info: QueuedPodInfo, event: str,
                  strategy: Strategy | None = None) -> bool:
        """Run PreEnqueue; a pod it turns away waits among the gated pods."""
        if not self._run_pre_enqueue(info).ok:
            self._park(info, event, gated=True, strategy=strategy)
            return False
        self._unschedulable.pop(info.pod_info.uid)
        self._gated.pop(info.pod_info.uid)
        return True

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> Status:
        """PreEnqueue's answer for the pod, noted on it (gated, and by which plugin) and
        in the pods DefaultPreemption holds (activate_gated asks only those again)."""
        status = self._pre_enqueue(info.pod_info)
        info.gated = not status.ok
        info.gating_plugin = "" if status.ok else status.plugin
        if not status.ok and status.plugin == DEFAULT_PREEMPTION:
            self._held_for_preemption.add(info.pod_info.uid)
        else:
            self._held_for_preemption.discard(info.pod_info.uid)
        return status

    def _to_active(self, info: QueuedPodInfo, event: str, *,
                   from_backoff: bool = False, strategy: Strategy | None = None) -> bool:
        # PreEnqueue already ran when the pod entered backoffQ.
        if not from_backoff and not self._admitted(info, event, strategy):
            return False
        self._place_active(info, event, strategy)
        return True

    def _place_active(self, info: QueuedPodInfo, event: str,
                      strategy: Strategy | None) -> None:
        """Into the active queue, PreEnqueue passed (or not asked); a pod already
        there stays where it is."""
        uid = info.pod_info.uid
        if uid in self._active_by_uid:
            return
        self._unschedulable.pop(uid)
        self._gated.pop(uid)
        self._backoff.remove(uid)
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._clock()
        entry = _HeapEntry(info, self._less)
        heapq.heappush(self._active, entry)
        self._active_by_uid[uid] = entry
        self._count("active", event, strategy, entity=self._group_key(info.pod_info) is None)
        self._wakeup.set()

    def _leave_active(self, uid: str) -> None:
        if (entry := self._active_by_uid.pop(uid, None)) is not None:
            entry.removed = True

    def _place_backoff(self, info: QueuedPodInfo, expiry: float, event: str,
                       strategy: Strategy | None, *, early: bool) -> None:
        uid = info.pod_info.uid
        self._unschedulable.pop(uid)
        self._gated.pop(uid)
        self._leave_active(uid)
        self._backoff.add(info, expiry, early=early)
        self._count("backoff", event, strategy, entity=self._group_key(info.pod_info) is None)
        if self._backoff.has_rejected():
            self._wakeup.set()  # pop() may take it if the active queue is empty

    def _requeue(self, info: QueuedPodInfo, strategy: Strategy, event: str, *,
                 early: bool = True) -> bool:
        """Upstream's requeuePodWithQueueingStrategy; whether the pod left the
        unschedulable and gated pods. `early=False`: a pod sent to backoff waits it out
        even on an idle scheduler."""
        if (key := self._group_key(info.pod_info)) is not None:
            return self._group_requeue(key, strategy, event)
        if strategy is Strategy.SKIP:
            self._park(info, event, gated=info.gated, strategy=strategy)
            return False
        # PreEnqueue first, as both queues ask it: a pod it holds needs no backoff time.
        if not self._admitted(info, event, strategy):
            return False
        if (strategy is Strategy.AFTER_BACKOFF
                and self._backoff.is_backing_off(expiry := self._backoff_expiry(info),
                                                 self._clock())):
            self._place_backoff(info, expiry, event, strategy, early=early)
        else:
            self._place_active(info, event, strategy)
        return True

    # --- informer-facing API -----------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        if self.contains(pod.uid):
            self.update(pod)
            return
        self.nominator.add_from_status(pod)
        self._enqueue_new(pod, UNSCHEDULED_POD_ADD.queue_label())

    def _enqueue_new(self, pod: PodInfo, event: str) -> None:
        info = QueuedPodInfo(pod, timestamp=self._clock())
        if (key := self._group_key(pod)) is not None:
            self._group_add(key, info, event)
        else:
            self._to_active(info, event)

    def update(self, pod: PodInfo, previously_nominated: str = "") -> None:
        """A pending pod changed; `previously_nominated` is the status.nominatedNodeName
        of its previous version."""
        uid = pod.uid
        self.nominator.add_from_status(pod, previously_nominated)
        if (info := self._in_flight.get(uid)) is not None:
            # Kept for when it comes back: the update may be what would have let it fit.
            self._in_flight_events.record_for(
                uid, pod_update_events(info.pod_info, pod, target=True, release=self.release),
                info.pod_info, pod)
            info.pod_info = pod
            return
        if (entry := self._active_by_uid.get(uid)) is not None:
            # QueueSort may order the new version differently (Coscheduling reads its
            # group label): pushed again, as upstream's heap Update fixes its place.
            entry.removed = True
            entry.info.pod_info = pod
            fresh = _HeapEntry(entry.info, self._less)
            heapq.heappush(self._active, fresh)
            self._active_by_uid[uid] = fresh
            return
        if (info := self._backoff.get(uid)) is not None:
            info.pod_info = pod
            self._backoff.reorder(uid)
            return
        if (info := self._gated.get(uid) or self._unschedulable.get(uid)) is not None:
            # The update may be what a rejecting (or gating) plugin waits for; its hints
            # judge every change the update carries (no gating pre-filter, as upstream).
            old = info.pod_info
            info.pod_info = pod
            key = self._group_key(pod)
            for event in pod_update_events(old, pod, target=True, release=self.release):
                # A group's members are asked together: the strongest answer moves all.
                strategy = (self._group_strategy(key, event, old, pod) if key is not None
                            else self.hints.strategy(info, event, old, pod))
                if self._requeue(info, strategy, event.queue_label()):
                    return
            return
        # Not queued anywhere: v1.37 adds it as a new pod (its addPod), v1.36 as updated.
        event = (UNSCHEDULED_POD_ADD if self.release >= TARGET_POD_RELEASE
                 else UNSCHEDULED_POD_UPDATE)
        self._enqueue_new(pod, event.queue_label())

    def delete(self, uid: str) -> None:
        if (entry := self._active_by_uid.pop(uid, None)) is not None:
            entry.removed = True
        self._backoff.remove(uid)
        self._unschedulable.pop(uid)
        self._gated.pop(uid)
        self._held_for_preemption.discard(uid)
        left = self._forget(uid)
        if left is not None:
            self._group_member_deleted(*left)
        self.nominator.delete(uid)

    def _forget(self, uid: str) -> tuple[GroupKey, GroupEntity] | None:
        """Drop what the queue kept about the pod; the group it left, if any."""
        self._in_flight.pop(uid, None)
        self._in_flight_events.done(uid)
        self._failures.pop(uid, None)
        self._flushed_at.pop(uid, None)
        return self._entities.leave(uid) if self._entities is not None else None

    def contains(self, uid: str) -> bool:
        return (uid in self._active_by_uid or uid in self._backoff
                or uid in self._unschedulable or uid in self._gated or uid in self._in_flight)

    # --- scheduling-loop API -----------------------------------------------------

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule; None once the queue is closed."""
        while True:
            if self._closed:
                return None
            while self._active:
                entry = heapq.heappop(self._active)
                if not entry.removed:
                    del self._active_by_uid[entry.info.pod_info.uid]
                    return self._start(entry.info, first=True)
            # An idle scheduler need not sit out a rejected pod's backoff.
            if (info := self._backoff.pop_rejected()) is not None:
                self._count("active", POP_FROM_BACKOFF_Q)
                return self._start(info, first=True)
            self._wakeup.clear()
            await self._wakeup.wait()

    def _start(self, info: QueuedPodInfo, *, first: bool) -> QueuedPodInfo:
        """`first`: popped by the loop (else taken with the group of the pod it popped)."""
        info.attempts += 1
        self.scheduling_cycle += 1
        self._in_flight[info.pod_info.uid] = info
        self._in_flight_events.start(info.pod_info.uid)
        if self._entities is not None:
            self._entities.taken(info.pod_info.uid, self.scheduling_cycle, first=first)
        return info

    def done(self, uid: str) -> None:
        """The scheduling attempt for `uid` finished (bound or requeued)."""
        self._in_flight.pop(uid, None)
        self._in_flight_events.done(uid)
        if not self.contains(uid):
            self._forget(uid)

    def release_events(self, uid: str) -> None:
        """Permit let the pod through: no plugin can reject it any more, so stop keeping
        events for it (upstream calls Done here to free them early). Should its binding
        still fail, it goes back after backoff."""
        self._in_flight_events.done(uid)
        if self._entities is not None:
            self._entities.past_permit(uid)

    def add_unschedulable(self, info: QueuedPodInfo, *, error: bool = False) -> None:
        """Requeue a pod whose attempt failed; `error` means it was not a plugin rejection."""
        uid = info.pod_info.uid
        if uid not in self._in_flight:
            return  # deleted while in flight: nothing to requeue
        del self._in_flight[uid]
        if error:
            info.unschedulable_plugins = set()
            info.pending_plugins = set()
        rejected = bool(info.unschedulable_plugins or info.pending_plugins)
        self._failures.setdefault(uid, FailureCounts()).record(error=error)
        info.timestamp = self._clock()
        self._flushed_at.pop(uid, None)
        if (key := self._group_key(info.pod_info)) is not None:
            self._group_attempt_failed(key, info, error=error)
            return
        # A pod group's member retries after its backoff whatever happens, and waits
        # that backoff out even when the scheduler is idle: taken at once, a group
        # that cannot fit would be tried back to back, burning a core for nothing.
        group_member = (self._pod_groups and group_name(info.pod_info.pod) is not None
                        and not self._deferred(info.pod_info))
        # A failure no plugin owns retries after backoff, or it would wait for the flush.
        if not rejected or group_member:
            strategy = Strategy.AFTER_BACKOFF
        else:
            strategy = self._in_flight_strategy(info)
        self._in_flight_events.done(uid)
        self._requeue(info, strategy, SCHEDULE_ATTEMPT_FAILURE, early=not group_member)

    def _deferred(self, pod: PodInfo) -> bool:
        """A deferred resize is tried alone, never as its group's member (upstream's
        isPodGroupMember): the pod is already running, only its size changes."""
        return self.deferred_resize and is_pod_resize_deferred(pod.pod)

    def _in_flight_strategy(self, info: QueuedPodInfo) -> Strategy:
        """Upstream's determineSchedulingHintForInFlightPod: the strongest answer the
        rejecting plugins give for the events logged during the attempt."""
        logged = self._in_flight_events.since_start(info.pod_info.uid)
        if logged is None:
            return Strategy.AFTER_BACKOFF  # not tracked any more: retry rather than strand
        result = Strategy.SKIP
        for entry in logged:
            strategy = self.hints.strategy(info, entry.event, entry.old, entry.new)
            if strategy is Strategy.IMMEDIATELY:
                return strategy
            if strategy is Strategy.AFTER_BACKOFF:
                if not info.pending_plugins:
                    return strategy
                result = strategy
        return result

    def move_on_event(self, event: ClusterEvent, old: object = None, new: object = None, *,
                      pre_check: PreCheck | None = None) -> int:
        """Move the unschedulable (and gated) pods this event may help, as the rejecting
        plugins' hints judge it from the event's `old` and `new` objects (see
        Plugin.events_to_register for which objects each resource brings); only pods
        passing `pre_check`, if given. Returns how many left."""
        if event.resource is Resource.COSCHEDULING_POD_GROUP and event.action & (
                ActionType.ADD | ActionType.DELETE) and self._orders_members_of(
                    new if new is not None else old):
            self.reorder()
        if (self._tree_root is not None and self._entities is not None
                and event.action & ActionType.ADD
                and isinstance(new, PodGroup | CompositePodGroup)):
            meta = new.metadata
            self._trees_seen(meta.namespace,
                             meta.name if isinstance(new, PodGroup) else None)
        if (self._entities is not None and event.resource is Resource.POD_GROUP
                and event.action & ActionType.DELETE and isinstance(old, PodGroup)):
            meta = old.metadata
            self._group_lost_its_pod_group(meta.namespace, meta.name, event.queue_label())
        if (self._tree_root is not None and self._entities is not None
                and event.action & ActionType.DELETE and isinstance(old, CompositePodGroup)):
            self._tree_lost_a_composite(old.metadata.namespace, event.queue_label())
        if not self.hints.interested(event):
            return 0  # no plugin listens: not even in-flight pods need it
        if not self._waiting():
            return self._move([], event, old, new)
        candidates = [info for info in (*self._unschedulable.hearing(event, self.hints.hears),
                                        *self._gated.hearing(event, self.hints.hears))
                      if pre_check is None or pre_check(info.pod_info)]
        return self._move(candidates, event, old, new)

    def _orders_members_of(self, group: object) -> bool:
        """Whether a heap holds a pod of this Coscheduling PodGroup, whose creation time
        (appearing or gone) orders its members: only then did a key in the heaps change.
        A look at each entry's labels costs far less than rebuilding the heaps with
        QueueSort's `less` (each PodGroup of an initial LIST asked that, over every
        pending pod). Entries removed lazily count too: their place orders the others."""
        if not isinstance(group, CoschedulingPodGroup):
            return True  # nothing to tell by: rebuild, as always
        namespace, name = group.metadata.namespace, group.metadata.name
        queued = itertools.chain((entry.info for entry in self._active),
                                 self._backoff.in_rejected_heap())
        return any(info.pod_info.namespace == namespace
                   and coscheduling_group_name(info.pod_info.pod) == name for info in queued)

    def reorder(self) -> None:
        """Rebuild the heaps: what QueueSort reads for queued pods changed. Coscheduling
        orders members by their PodGroup's creation time, which appears (or goes) with
        the PodGroup; a heap whose keys change under it pops out of order."""
        heapq.heapify(self._active)
        self._backoff.reorder()

    def move_members_on_event(self, uids: Iterable[str], event: ClusterEvent,
                              old: object = None, new: object = None) -> int:
        """move_on_event for these pods only (a new member can only complete its own
        group, so GangScheduling's move on an unscheduled pod's add asks only the
        group's members): costs what the group has, not what the whole pool has."""
        if not self.hints.interested(event):
            return 0
        uids = list(uids)
        if (self._tree_root is not None and isinstance(new, PodInfo)
                and (key := self._group_key(new)) is not None and key[1].startswith(TREE_PREFIX)):
            # In a tree the new member may complete any group of it: its entity's
            # members (the new one among them) are asked, as upstream asks the entity.
            uids += [info.pod_info.uid for info in self._waiting_members(key)]
        candidates = [info for uid in dict.fromkeys(uids)
                      if (info := self._unschedulable.get(uid) or self._gated.get(uid))
                      is not None]
        return self._move(candidates, event, old, new)

    def move_on_assigned_pod(self, event: ClusterEvent, old: PodInfo | None,
                             new: PodInfo) -> int:
        """Upstream's AssignedPodAdded and AssignedPodUpdated: a pod placed or changed on
        a node can only help pods that a spread constraint held back in its namespace,
        or whose required pod affinity selects it; the others are not even asked
        (a scale-down frees resources, so it asks them all). Placing a plain pod thus
        costs nothing per unschedulable pod, however many wait."""
        if event.action in (ActionType.UPDATE_POD_SCALE_DOWN, ActionType.UPDATE_POD_SCALE_UP):
            # A scale-up may take the room a deferred resize waits for (NodeResourcesFit
            # hears it with InPlacePodVerticalScalingSchedulerPreemption).
            return self.move_on_event(event, old, new)
        if not self.hints.interested(event):
            return 0
        if not self._waiting():
            return self._move([], event, old, new)
        labels = self._namespace_labels(new.namespace) or {}
        candidates = [info for info in (*self._unschedulable.needing_assigned_pods(),
                                        *self._gated.hearing(event, self.hints.hears))
                      if _may_be_helped_by(info, new, labels)]
        return self._move(candidates, event, old, new)

    def _waiting(self) -> bool:
        """Whether any pod waits for an event (unschedulable or gated). None does while
        an informer's initial LIST is delivered before the first cycle (every listed
        node, bound pod and object is an event), nor on a scheduler keeping up: such a
        move only logs the event for the pods in flight."""
        return bool(self._unschedulable) or bool(self._gated)

    def _move(self, candidates: list[QueuedPodInfo], event: ClusterEvent, old: object,
              new: object) -> int:
        """Upstream's movePodsToActiveOrBackoffQueue."""
        moved = 0
        groups_asked: set[GroupKey] = set()
        # Every candidate's entity first: one whose tree's root the event brought moves
        # to the root's entity before that entity is asked.
        keys = [self._group_key(info.pod_info) for info in candidates]
        for info, key in zip(candidates, keys, strict=True):
            if key is not None:
                # A group is asked once, as a whole, for the event.
                if key not in groups_asked:
                    groups_asked.add(key)
                    moved += self._move_group(key, event, old, new)
                continue
            # A gated pod can only be released by its gating plugin's events (or a
            # wildcard, so that wrong hints cannot keep it forever).
            if (info.gated and not event.is_wildcard and not self.hints.hears(
                    info.pod_info.pod.spec.scheduler_name, info.gating_plugin, event)):
                continue
            strategy = self.hints.strategy(info, event, old, new)
            if strategy is not Strategy.SKIP:
                moved += self._requeue(info, strategy, event.queue_label())
        self._in_flight_events.record(event, old, new)
        return moved

    def activate(self, uids: Iterable[str]) -> None:
        """Upstream's Activate: pods waiting among the unschedulable (PreEnqueue runs
        again for gated ones) or in backoff go to the active queue now. A pod in the
        middle of its cycle gets a ForceActivate event meant for it alone, so that if
        the cycle fails it is requeued rather than parked among the unschedulable (the
        case of a preemption whose API calls end while its preemptor is in flight)."""
        for uid in uids:
            if self._activate_waiting(uid):
                continue
            if (info := self._in_flight.get(uid)) is not None:
                self._in_flight_events.record_for(uid, (FORCE_ACTIVATE,), None, info.pod_info)

    def _activate_waiting(self, uid: str) -> bool:
        """Upstream's activate: the pod to the active queue if it waits somewhere."""
        event = FORCE_ACTIVATE.queue_label()
        if (info := self._unschedulable.get(uid) or self._gated.get(uid)) is not None:
            if (key := self._group_key(info.pod_info)) is not None:
                self._group_to(key, self._waiting_members(key), event, None)
            else:
                self._to_active(info, event)
        elif (info := self._backoff.get(uid)) is not None:
            if (key := self._group_key(info.pod_info)) is not None:
                # As a pod from backoffQ, the group skips PreEnqueue (run on entry).
                self._group_to(key, self._waiting_members(key), event, None,
                               ask_pre_enqueue=False)
            else:
                self._to_active(info, event, from_backoff=True)
        else:
            return False
        return True

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Take this pod out of the queue for the scheduling cycle under way (upstream's
        PopSpecificPod: activate it, then take it from the active queue); None when it
        is not there to take (in flight, deleted, or held by PreEnqueue)."""
        self._activate_waiting(uid)
        entry = self._active_by_uid.pop(uid, None)
        if entry is None:
            return None
        entry.removed = True
        return self._start(entry.info, first=False)

    def activate_gated(self) -> None:
        """A preemption finished: re-run PreEnqueue for the pods DefaultPreemption holds
        while their victims are being removed. Normally a victim's delete event has
        already released its preemptor (as upstream's does); this covers the event
        that came before the executor was done. Pods other gates hold are not asked:
        their own events release them, and asking 10,000 of them cost 78 ms a
        preemption."""
        event = UNSCHEDULED_POD_UPDATE.queue_label()
        for uid in list(self._held_for_preemption):
            info = self._gated.get(uid)
            if info is None:
                self._held_for_preemption.discard(uid)
                continue
            # As v1.37, a pod group held while its group preempts goes back as the
            # group entity does, to the backoff no idle scheduler pops early.
            whole_group = (self.release >= GROUP_PREEMPTION_RELEASE and self._pod_groups
                           and group_name(info.pod_info.pod) is not None)
            self._requeue(info, Strategy.AFTER_BACKOFF, event, early=not whole_group)

    def flush_backoff_completed(self) -> int:
        completed = self._backoff.pop_completed(self._clock())
        groups: set[GroupKey] = set()
        for info in completed:
            self._to_active(info, BACKOFF_COMPLETE, from_backoff=True)
            if (key := self._group_key(info.pod_info)) is not None and key not in groups:
                groups.add(key)
                self._count_entity("active", BACKOFF_COMPLETE, None, POD_GROUP_ENTITY)
        return len(completed)

    def was_flushed(self, uid: str) -> bool:
        """Whether the 5-minute flush ever moved this pod (upstream's
        WasFlushedFromUnschedulable, for scheduler_pod_scheduled_after_flush_total)."""
        return uid in self._flushed_at

    def flush_unschedulable_leftover(self) -> int:
        """Move pods unschedulable (or gated) for over podMaxInUnschedulablePodsDuration
        (5 minutes unless the flag says otherwise), as upstream's
        flushUnschedulablePodsLeftover."""
        now = self._clock()
        stale: list[QueuedPodInfo] = []
        for info in (*self._unschedulable.values(), *self._gated.values()):
            uid = info.pod_info.uid
            since = max(info.timestamp, self._flushed_at.get(uid, info.timestamp))
            if now - since > self._max_unschedulable_seconds:
                self._flushed_at[uid] = now
                stale.append(info)
        return self._move(stale, UNSCHEDULABLE_TIMEOUT, None, None) if stale else 0

    async def run_flushers(self) -> None:
        """Periodic moves from backoffQ and (after 5 minutes) from unschedulable."""
        last_unschedulable_flush = self._clock()
        while not self._closed:
            await asyncio.sleep(BACKOFF_FLUSH_SECONDS)
            self.flush_backoff_completed()
            if self._clock() - last_unschedulable_flush >= UNSCHEDULABLE_FLUSH_SECONDS:
                self.flush_unschedulable_leftover()
                last_unschedulable_flush = self._clock()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    # --- introspection (metrics, tests) ------------------------------------------

    def unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """(rejecting plugin, scheduler name) -> pods waiting as unschedulable."""
        counts: dict[tuple[str, str], int] = {}
        for info in list(self._unschedulable.values()):
            profile = info.pod_info.pod.spec.scheduler_name
            for plugin in info.unschedulable_plugins | info.pending_plugins:
                counts[(plugin, profile)] = counts.get((plugin, profile), 0) + 1
        return counts

    def pending_counts(self) -> dict[str, int]:
        return {
            "active": len(self._active_by_uid),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable),
            "gated": len(self._gated),
        }

    def state_of(self, uid: str) -> PodQueueState | None:
        """Where the pod is and what would move it on (for explain); None when the
        queue does not hold it (bound, not ours, or deleted)."""
        # Read from the HTTP server's thread too: the pod may move between the two
        # looks, so look again once.
        for _ in range(2):
            queue = self.where(uid)
            if queue is None:
                return None
            info = self._info_in(queue, uid)
            if info is not None:
                break
        else:
            return None
        now = self._clock()
        wall = wall_clock(now)
        state = PodQueueState("inFlight" if queue == "in_flight" else queue, info.attempts,
                              sorted(info.unschedulable_plugins),
                              sorted(info.pending_plugins), info.gating_plugin if info.gated
                              else "", nominated_node=self.nominator.node_of(uid))
        if queue == "backoff":
            state.backoff_until = wall(self._backoff_expiry(info))
        if queue in ("unschedulable", "gated"):
            since = max(info.timestamp, self._flushed_at.get(uid, info.timestamp))
            state.waiting_since = wall(info.timestamp)
            state.moved_by_flush_at = wall(since + self._max_unschedulable_seconds)
            profile = info.pod_info.pod.spec.scheduler_name
            for plugin in sorted(rejectors(info)):
                state.requeue_on += triggers(plugin, self.hints.registered(profile, plugin))
        return state

    def _info_in(self, queue: str, uid: str) -> QueuedPodInfo | None:
        found: QueuedPodInfo | None
        if queue == "active":
            entry = self._active_by_uid.get(uid)
            found = entry.info if entry is not None else None
        elif queue == "backoff":
            found = self._backoff.get(uid)
        elif queue == "unschedulable":
            found = self._unschedulable.get(uid)
        elif queue == "gated":
            found = self._gated.get(uid)
        else:
            found = self._in_flight.get(uid)
        return found

    def where(self, uid: str) -> str | None:
        for name, holder in (("active", self._active_by_uid), ("backoff", self._backoff),
                             ("unschedulable", self._unschedulable), ("gated", self._gated),
                             ("in_flight", self._in_flight)):
            if uid in holder:
                return name
        return None


def _needs_assigned_pods(waiting: QueuedPodInfo) -> bool:
    """Whether any assigned pod's add or update may help `waiting` (_may_be_helped_by
    with no placed pod in view): a spread constraint held it back, or it has required
    pod affinity."""
    return (_POD_TOPOLOGY_SPREAD in waiting.unschedulable_plugins
            or bool(waiting.pod_info.pod_affinity.required))


def _may_be_helped_by(waiting: QueuedPodInfo, placed: PodInfo,
                      namespace_labels: Mapping[str, str]) -> bool:
    """Upstream's getUnschedulablePodsWithCrossTopologyTerm, for one waiting pod."""
    if (_POD_TOPOLOGY_SPREAD in waiting.unschedulable_plugins
            and waiting.pod_info.namespace == placed.namespace):
        return True
    return any(term.matches(placed.pod, namespace_labels)
               for term in waiting.pod_info.pod_affinity.required)
