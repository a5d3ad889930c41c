"""A v1.37 pod group's preemption policy, and the check that its members agree with it.

With the alpha PodGroupPreemptionPolicy gate off (the default), a group's policy is its
members': Never if any member has preemptionPolicy Never, else PreemptLowerPriority,
and every member must have the first one's policy. With it on, the policy is the
PodGroup's own spec.preemptionPolicy (the API server defaults it to
PreemptLowerPriority then; PreemptLowerPriority too when a PodGroup was written
without the gate and has none), and every member, queued or placed, must have that
policy, checked in the same pass as the priority (upstream's validatePodGroup and
resolvePreemptionPolicy, pkg/scheduler of v1.37.2). For a tree of groups
(CompositePodGroup) the root CompositePodGroup's priority and policy are the group's.
"""

from __future__ import annotations

from collections.abc import Iterable

from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup

GATE = "PodGroupPreemptionPolicy"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
NEVER = "Never"


def pod_policy(pod: PodInfo) -> str:
    """The pod's spec.preemptionPolicy, PreemptLowerPriority when unset."""
    return pod.pod.spec.preemption_policy or PREEMPT_LOWER_PRIORITY


def pod_group_policy(pod_group: PodGroup | CompositePodGroup | None) -> str:
    """The PodGroup's spec.preemptionPolicy, PreemptLowerPriority when unset."""
    if pod_group is None or not pod_group.spec.preemption_policy:
        return PREEMPT_LOWER_PRIORITY
    return pod_group.spec.preemption_policy


def group_policy(pod_group: PodGroup | None, members: Iterable[PodInfo], *,
                 gate: bool) -> str:
    """The policy the group preempts by: the PodGroup's with the gate on, else Never
    when any member has it."""
    if gate:
        return pod_group_policy(pod_group)
    if any(pod_policy(member) == NEVER for member in members):
        return NEVER
    return PREEMPT_LOWER_PRIORITY


def tree_policy(root: CompositePodGroup, members: Iterable[PodInfo], *, gate: bool) -> str:
    """The policy a tree of groups preempts by (upstream's resolveCompositePreemptionPolicy):
    with the gate on the root CompositePodGroup's own, where any value other than
    PreemptLowerPriority means Never and none means PreemptLowerPriority; else Never
    when any member of the tree has it."""
    if gate:
        own = root.spec.preemption_policy
        return NEVER if own and own != PREEMPT_LOWER_PRIORITY else PREEMPT_LOWER_PRIORITY
    return group_policy(None, members, gate=False)


def invalid_group(members: Iterable[PodInfo], placed: Iterable[PodInfo],
                  pod_group: PodGroup | CompositePodGroup | None) -> str | None:
    """v1.37's validatePodGroup beyond the scheduler name with the gate on, member by
    member (the queued ones, then those placed): the group's priority, then the
    PodGroup's policy. The error's text, or None. (Gate off:
    pod_group_placement.invalid_group.)"""
    priority = (pod_group.spec.priority or 0) if pod_group is not None else 0
    policy = pod_group_policy(pod_group)
    for pod in [*members, *placed]:
        if pod.priority != priority:
            return ("all pods in a single pod group should have the same priority as "
                    f"the pod group's priority, got {pod.priority} and {priority}")
        if pod_policy(pod) != policy:
            return ("all pods in a single pod group should have the same preemption "
                    "policy as the pod group's preemption policy, got "
                    f"{pod_policy(pod)} and {policy}")
    return None
