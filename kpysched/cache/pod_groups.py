"""What the scheduler knows of each pod group's members.

A pod joins a group through spec.schedulingGroup.podGroupName (upstream's
GenericWorkload) or, when a profile enables Coscheduling, through scheduler-plugins'
label scheduling.x-k8s.io/pod-group; the group is named namespace/name. The field wins
when a pod has both. For every group the cache tracks each member as unscheduled,
assumed (reserved by a scheduling cycle, not bound yet) or assigned (bound), as
upstream's podGroupState does. GangScheduling asks it whether a gang has its
minCount of members (PreEnqueue) and of placed members (Permit); a pod-group
scheduling cycle works on a copy, so what it assumes while trying the group is
never seen outside the cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from kpysched.objects import api
from kpysched.objects.coscheduling import POD_GROUP_LABEL
from kpysched.objects.pod import PodInfo

# Which group a pod belongs to (its name, in the pod's namespace), or None.
GroupNameOf = Callable[[api.Pod], str | None]


class Member(Enum):
    UNSCHEDULED = "unscheduled"
    ASSUMED = "assumed"
    ASSIGNED = "assigned"


def group_name(pod: api.Pod) -> str | None:
    """The scheduling.k8s.io PodGroup `pod` belongs to (spec.schedulingGroup), or None."""
    group = pod.spec.scheduling_group
    return group.pod_group_name if group is not None and group.pod_group_name else None


def coscheduling_group_name(pod: api.Pod) -> str | None:
    """The scheduler-plugins PodGroup `pod` belongs to (its label), or None."""
    return pod.metadata.labels.get(POD_GROUP_LABEL) or None


def membership(*, generic_workload: bool, coscheduling: bool) -> GroupNameOf | None:
    """How pods name their group, given which APIs are on; None when neither is."""
    if generic_workload and coscheduling:
        return lambda pod: group_name(pod) or coscheduling_group_name(pod)
    if generic_workload:
        return group_name
    if coscheduling:
        return coscheduling_group_name
    return None


class PodGroupState:
    """The members of one pod group and where each stands."""

    __slots__ = ("_pods", "_where", "cycle_data")

    def __init__(self) -> None:
        self._pods: dict[str, PodInfo] = {}  # by uid, as the informer last reported it
        self._where: dict[str, Member] = {}
        # A pod-group scheduling cycle's copy: what plugins keep for the whole cycle,
        # each under its own key (upstream's pod-group CycleState).
        self.cycle_data: dict[str, Any] = {}

    def add(self, pod: PodInfo) -> None:
        self._pods[pod.uid] = pod
        self._where[pod.uid] = Member.ASSIGNED if pod.node_name else Member.UNSCHEDULED

    def update(self, pod: PodInfo) -> None:
        """A newer version of a member; binding moves it to assigned."""
        if pod.uid not in self._pods:
            self.add(pod)
            return
        self._pods[pod.uid] = pod
        if pod.node_name:
            self._where[pod.uid] = Member.ASSIGNED

    def delete(self, uid: str) -> None:
        self._pods.pop(uid, None)
        self._where.pop(uid, None)

    def assume(self, pod: PodInfo) -> None:
        """A cycle reserved `pod` on a node; a member deleted meanwhile is left out."""
        stored = self._pods.get(pod.uid)
        if stored is None:
            return
        self._where[pod.uid] = Member.ASSIGNED if stored.node_name else Member.ASSUMED

    def forget(self, uid: str) -> None:
        """The reservation was undone: the member is unscheduled again, unless bound."""
        if self._where.get(uid) is Member.ASSUMED:
            self._where[uid] = Member.UNSCHEDULED

    def empty(self) -> bool:
        return not self._pods

    def copy(self) -> PodGroupState:
        clone = PodGroupState()
        clone._pods = dict(self._pods)
        clone._where = dict(self._where)
        return clone

    def _uids(self, member: Member) -> list[str]:
        return [uid for uid, where in self._where.items() if where is member]

    def all_count(self) -> int:
        return len(self._pods)

    def all_pods(self) -> list[PodInfo]:
        return list(self._pods.values())

    def scheduled_count(self) -> int:
        """Members assumed or assigned."""
        return sum(1 for where in self._where.values() if where is not Member.UNSCHEDULED)

    def unscheduled_pods(self) -> list[PodInfo]:
        return [self._pods[uid] for uid in self._uids(Member.UNSCHEDULED)]

    def placed_pods(self) -> list[PodInfo]:
        """Members assumed or bound, as the informer last reported them."""
        return [self._pods[uid] for uid, where in self._where.items()
                if where is not Member.UNSCHEDULED]

    def assumed_uids(self) -> list[str]:
        return self._uids(Member.ASSUMED)

    def where(self, uid: str) -> Member | None:
        return self._where.get(uid)

    def member_names(self) -> dict[Member, list[str]]:
        """Each member's pod name, by where it stands (names sorted)."""
        found: dict[Member, list[str]] = {member: [] for member in Member}
        for uid, where in list(self._where.items()):
            pod = self._pods.get(uid)
            if pod is not None:
                found[where].append(pod.pod.metadata.name)
        return {member: sorted(names) for member, names in found.items()}


class PodGroupStates:
    """Every pod group with at least one known member, by namespace/name."""

    def __init__(self, name_of: GroupNameOf = group_name) -> None:
        self._groups: dict[str, PodGroupState] = {}
        # The group each member was last filed under: a pending pod's group label may
        # change, and it must leave the group it was in (scheduler-plugins lists a
        # group's members by label every time, so a relabelled pod is no longer one).
        self._key_of_uid: dict[str, str] = {}
        self.name_of = name_of

    def key_of(self, pod: api.Pod) -> str | None:
        """namespace/name of `pod`'s pod group, or None."""
        name = self.name_of(pod)
        return None if name is None else f"{pod.metadata.namespace}/{name}"

    def get(self, namespace: str, name: str) -> PodGroupState:
        """The group's state; an empty one when no member is known."""
        return self._groups.get(f"{namespace}/{name}") or PodGroupState()

    def add_or_update(self, pod: PodInfo) -> None:
        key = self.key_of(pod.pod)
        filed = self._key_of_uid.get(pod.uid)
        if filed is not None and filed != key:
            self._leave(filed, pod.uid)
        if key is None:
            return
        state = self._groups.get(key)
        if state is None:
            state = self._groups[key] = PodGroupState()
        state.update(pod)
        self._key_of_uid[pod.uid] = key

    def delete(self, pod: api.Pod) -> None:
        # The group it was filed under, whatever its last labels say.
        key = self._key_of_uid.get(pod.metadata.uid) or self.key_of(pod)
        if key is not None:
            self._leave(key, pod.metadata.uid)

    def _leave(self, key: str, uid: str) -> None:
        self._key_of_uid.pop(uid, None)
        state = self._groups.get(key)
        if state is None:
            return
        state.delete(uid)
        if state.empty():
            del self._groups[key]

    def assume(self, pod: PodInfo) -> None:
        key = self._key_of_uid.get(pod.uid)
        state = self._groups.get(key) if key is not None else None
        if state is not None:
            state.assume(pod)

    def forget(self, pod: PodInfo) -> None:
        key = self._key_of_uid.get(pod.uid)
        state = self._groups.get(key) if key is not None else None
        if state is not None:
            state.forget(pod.uid)

    def __len__(self) -> int:
        return len(self._groups)
