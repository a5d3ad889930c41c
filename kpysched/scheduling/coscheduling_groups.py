"""What scheduler-plugins' PodGroups (scheduling.x-k8s.io/v1alpha1) are told: an event on
the PodGroup after each group scheduling cycle, the text its held-back members get, and
the group's status.

The status is what scheduler-plugins' PodGroup controller writes (phase, running,
succeeded, failed, occupiedBy), plus what its scheduler used to write before the
controller took over (phase Scheduled once minMember are placed, and
scheduleStartTime when the group starts being scheduled), so that a cluster needs no
second component for `kubectl get podgroups` to be right. Phases, as the controller's:

    Pending     fewer than minMember pods exist
    Scheduling  enough pods, fewer than minMember placed
    Scheduled   at least minMember placed (bound or being bound)
    Running     running + succeeded >= minMember
    Finished    succeeded >= minMember          (final)
    Failed      some failed, and failed + running + succeeded >= minMember   (final)

Writes are merge patches of podgroups/status, off the loop and coalesced per group
(PodStatusWriter's machinery), only when the status would change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kpysched.api.times import api_time
from kpysched.cache.pod_groups import coscheduling_group_name
from kpysched.informers.listers import CoschedulingListers
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.writes.coscheduling_status import GroupStatusWriter
from kpysched.writes.event_recorder import EventRecorder

if TYPE_CHECKING:
    from kpysched.scheduling.attempt import GroupOutcome

# The group's own events (on the PodGroup), beside the members' Scheduled and
# FailedScheduling.
SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"


def verdict(namespace: str, name: str, group: cs.PodGroup | None,
            outcome: GroupOutcome) -> str:
    """One line saying how the group fared and, when it did not fit, which member
    failed first and why."""
    placed = sum(1 for member in outcome.members if member.permit is not None)
    tried = len(outcome.members)
    minimum = group.spec.min_member if group is not None else 0
    text = f"PodGroup {namespace}/{name}: {placed} of {tried} pods fit, minMember {minimum}"
    failed = next((m for m in outcome.members if m.permit is None), None)
    if failed is not None:
        why = (failed.diagnosis.message() if failed.diagnosis is not None
               else failed.status.message())
        text += f"; pod {failed.attempt.queued.pod_info.pod.metadata.name}: {why}"
    return text


@dataclass(slots=True)
class _Member:
    phase: str
    node_name: str
    owners: list[str]  # namespace/name of each owner


@dataclass(slots=True)
class _Group:
    members: dict[str, _Member] = field(default_factory=dict)  # by pod uid


class CoschedulingGroups:
    def __init__(self, listers: CoschedulingListers, recorder: EventRecorder,
                 writer: GroupStatusWriter, is_assumed: Callable[[str], bool]) -> None:
        self._listers = listers
        self._recorder = recorder
        self.writer = writer
        self._is_assumed = is_assumed
        self._groups: dict[str, _Group] = {}  # by namespace/name
        # The last status written per PodGroup uid: the informer may not show it yet.
        self._written: dict[str, dict[str, Any]] = {}
        listers.pod_groups.observers.append(self._group_changed)

    # --- members: an informer of its own on labelled pods, every phase -------------
    # (the scheduler's pod informer lists no finished pods, and the status counts them)

    def on_add(self, pod: api.Pod) -> None:
        name = coscheduling_group_name(pod)
        if name is None:
            return
        key = f"{pod.metadata.namespace}/{name}"
        group = self._groups.setdefault(key, _Group())
        group.members[pod.metadata.uid] = _Member(
            pod.status.phase or "Pending", pod.spec.node_name or "",
            [f"{pod.metadata.namespace}/{owner.name}" for owner in pod.metadata.owner_references])
        self.refresh(pod.metadata.namespace, name)

    def on_update(self, old: api.Pod, new: api.Pod) -> None:
        if coscheduling_group_name(old) != coscheduling_group_name(new):
            self.on_delete(old)
        self.on_add(new)

    def on_delete(self, pod: api.Pod) -> None:
        name = coscheduling_group_name(pod)
        if name is None:
            return
        key = f"{pod.metadata.namespace}/{name}"
        group = self._groups.get(key)
        if group is None:
            return
        group.members.pop(pod.metadata.uid, None)
        if not group.members:
            del self._groups[key]
        self.refresh(pod.metadata.namespace, name)

    def _group_changed(self, action: object, old: cs.PodGroup | None,
                       new: cs.PodGroup | None) -> None:
        if new is None:
            if old is not None:
                self._written.pop(old.metadata.uid, None)
                # Members of a deleted group that finished would otherwise stay forever.
                self._groups.pop(f"{old.metadata.namespace}/{old.metadata.name}", None)
            return
        self.refresh(new.metadata.namespace, new.metadata.name)

    # --- after a group scheduling cycle -----------------------------------------------

    def report(self, controller: str, namespace: str, name: str,
               outcome: GroupOutcome) -> None:
        group = self._listers.pod_groups.get(f"{namespace}/{name}")
        if group is None:
            return
        if outcome.status.ok:
            self._recorder.object_event(
                cs.KIND, cs.API_VERSION, group.metadata, controller, "Normal", SCHEDULED,
                "Scheduling", verdict(namespace, name, group, outcome))
        else:
            self._recorder.object_event(
                cs.KIND, cs.API_VERSION, group.metadata, controller, "Warning",
                FAILED_SCHEDULING, "Scheduling", verdict(namespace, name, group, outcome))
        self.refresh(namespace, name)

    def held_back(self, namespace: str, name: str, outcome: GroupOutcome) -> str:
        """The FailedScheduling text of a member that fit while its group did not."""
        return verdict(namespace, name, self._listers.pod_groups.get(f"{namespace}/{name}"),
                       outcome)

    # --- status ---------------------------------------------------------------------------

    def refresh(self, namespace: str, name: str) -> None:
        group = self._listers.pod_groups.get(f"{namespace}/{name}")
        if group is None:
            return
        members = self._groups.get(f"{namespace}/{name}", _Group()).members
        current = self._written.get(group.metadata.uid) or _as_patch(group.status)
        wanted = desired_status(group.spec.min_member, current, members, self._is_assumed)
        change = {key: value for key, value in wanted.items() if current.get(key) != value}
        if not change:
            return
        self._written[group.metadata.uid] = {**current, **change}
        self.writer.write(group, change)


def _as_patch(status: cs.PodGroupStatus) -> dict[str, Any]:
    return {"phase": status.phase, "running": status.running,
            "succeeded": status.succeeded, "failed": status.failed,
            "occupiedBy": status.occupied_by,
            "scheduleStartTime": status.schedule_start_time}


def desired_status(minimum: int, current: dict[str, Any], members: dict[str, _Member],
                   is_assumed: Callable[[str], bool]) -> dict[str, Any]:
    """The status scheduler-plugins' controller (and its old scheduler) would give a
    group of minMember `minimum` whose status is `current`; see the module docstring."""
    if current.get("phase") in cs.FINAL_PHASES:
        return dict(current)
    running = sum(1 for m in members.values() if m.phase == "Running")
    succeeded = sum(1 for m in members.values() if m.phase == "Succeeded")
    failed = sum(1 for m in members.values() if m.phase == "Failed")
    placed = sum(1 for uid, m in members.items() if m.node_name or is_assumed(uid))
    if len(members) < minimum:
        phase = cs.PENDING
    elif succeeded >= minimum:
        phase = cs.FINISHED
    elif failed and failed + running + succeeded >= minimum:
        phase = cs.FAILED
    elif running + succeeded >= minimum:
        phase = cs.RUNNING
    elif placed >= minimum:
        phase = cs.SCHEDULED
    else:
        phase = cs.SCHEDULING
    patch = {**current, "phase": phase, "running": running, "succeeded": succeeded,
             "failed": failed}
    if phase != cs.PENDING and not current.get("scheduleStartTime"):
        patch["scheduleStartTime"] = api_time()
    if not current.get("occupiedBy") and len(members) >= minimum:
        owners = next((m.owners for m in members.values() if m.owners), [])
        patch["occupiedBy"] = ",".join(sorted(owners))
    return patch
