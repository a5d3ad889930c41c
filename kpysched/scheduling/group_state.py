"""A pod group as explain shows it for one of its members: the quorum, which members
are placed, reserved (waiting at Permit or binding) and pending, and the group's last
scheduling cycle. For a scheduling.k8s.io PodGroup (GenericWorkload) the quorum is
its gang's minCount; for a scheduler-plugins PodGroup (Coscheduling) its minMember
and minResources.

Read from the HTTP server's thread while the loop runs: every read copies what it
walks (see app._queue_state for the retry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kpysched.cache.pod_groups import Member, coscheduling_group_name, group_name
from kpysched.objects import api

if TYPE_CHECKING:
    from kpysched.scheduling.scheduler import Scheduler

# Names listed per member state at most (a group of thousands is counted, not listed).
NAMES_SHOWN = 50


def group_state_of(scheduler: Scheduler, pod: api.Pod) -> dict[str, Any] | None:
    groups = scheduler.cache.pod_groups
    if groups is None:
        return None
    key = groups.key_of(pod)
    if key is None:
        return None
    namespace, name = key.split("/", 1)
    state = groups.get(namespace, name)
    body: dict[str, Any] = {"name": key}
    handle = next(iter(scheduler.frameworks.values())).handle
    if group_name(pod) is not None:
        body["api"] = "scheduling.k8s.io"
        group = handle.pod_group(namespace, name)
        gang = group.spec.scheduling_policy.gang if group is not None else None
        body["exists"] = group is not None
        if gang is not None:
            body["minCount"] = gang.min_count
    elif coscheduling_group_name(pod) is not None:
        body["api"] = "scheduling.x-k8s.io"
        found = handle.coscheduling_pod_group(namespace, name)
        body["exists"] = found is not None
        if found is not None:
            body["minMember"] = found.spec.min_member
            if found.spec.min_resources:
                body["minResources"] = {k: str(v) for k, v in found.spec.min_resources.items()}
    names = state.member_names()
    for member, field_name in ((Member.ASSIGNED, "bound"), (Member.ASSUMED, "reserved"),
                               (Member.UNSCHEDULED, "pending")):
        listed = names[member]
        body[field_name] = {"count": len(listed), "pods": listed[:NAMES_SHOWN]}
    cycle = None if scheduler.pod_groups is None else scheduler.pod_groups.last_cycles.get(key)
    if cycle is not None:
        body["lastCycle"] = dict(cycle)
    return body
