"""Which pods a pod group's scheduling cycle decides for, and under which profile.

When the loop pops a member of a group, every other member still waiting in the queue
is taken out with it, in upstream's order (higher priority first, then the longest
waiting). The whole group must have one profile; as v1.37 also the group's priority
and one preemption policy (pod_group_placement.invalid_group; with
PodGroupPreemptionPolicy on, the PodGroup's: pod_group_policy.invalid_group), an error
written on the PodGroup too. Members being deleted, or already assumed or bound, are not
tried again.
"""

from __future__ import annotations

from collections.abc import Iterable

from kpysched.cache.pod_groups import group_name
from kpysched.framework.interfaces import QueuedPodInfo
from kpysched.framework.pod_group_tree import GroupTree
from kpysched.framework.runtime import Framework
from kpysched.framework.status import Status
from kpysched.objects import scheduling
from kpysched.objects.pod import PodInfo
from kpysched.scheduling import pod_group_placement as placement
from kpysched.scheduling import pod_group_policy as policy
from kpysched.scheduling.attempt import Attempts
from kpysched.scheduling.context import CycleContext


class GroupMembers:
    def __init__(self, context: CycleContext, attempts: Attempts) -> None:
        self._context = context
        self._attempts = attempts

    def take(self, first: QueuedPodInfo) -> list[QueuedPodInfo]:
        context = self._context
        pod = first.pod_info
        groups = context.cache.pod_groups
        assert groups is not None, "pod-group cycles run only with GenericWorkload on"
        live = groups.get(pod.namespace, groups.name_of(pod.pod) or "")
        return self._with_waiting(first, live.unscheduled_pods())

    def take_tree(self, first: QueuedPodInfo, tree: GroupTree) -> list[QueuedPodInfo]:
        """`first` and every member waiting in any PodGroup of its tree (v1.37's
        CompositePodGroup), in upstream's order."""
        context = self._context
        groups = context.cache.pod_groups
        assert groups is not None
        return self._with_waiting(first, (
            other for leaf in tree.leaves()
            for other in groups.get(leaf.key.namespace, leaf.key.name).unscheduled_pods()))

    def _with_waiting(self, first: QueuedPodInfo,
                      unscheduled: Iterable[PodInfo]) -> list[QueuedPodInfo]:
        """`first` and those of `unscheduled` still waiting in the queue (taken out of
        it), in upstream's order: higher priority first, then the longest waiting."""
        members = [first]
        for other in unscheduled:
            if other.uid == first.pod_info.uid:
                continue
            taken = self._context.queue.pop_specific(other.uid)
            if taken is not None:
                members.append(taken)
        members.sort(key=lambda q: (-q.pod_info.priority,
                                    q.initial_attempt_timestamp or 0.0))
        return members

    def framework(self, members: list[QueuedPodInfo],
                  tree: GroupTree | None = None) -> Framework | None:
        """The one profile of the whole group (or tree); members of a mixed group all
        fail."""
        frameworks = self._context.frameworks
        names = list(dict.fromkeys(m.pod_info.pod.spec.scheduler_name for m in members))
        if len(names) == 1 and names[0] in frameworks:
            chosen = frameworks[names[0]]
            invalid = (self._invalid_as_37(chosen, members) if tree is None
                       else self._invalid_tree(chosen, members, tree))
            if invalid is None:
                return chosen
            reason = invalid
        else:
            reason = (f"all pods in a single pod group should have the same "
                      f'.spec.schedulerName set, got: "{names[-1]}" and "{names[0]}"'
                      if len(names) > 1
                      else f'profile not found for scheduler name "{names[0]}"')
        for member in members:
            framework = frameworks.get(member.pod_info.pod.spec.scheduler_name)
            if framework is None:
                self._context.queue.done(member.pod_info.uid)
                continue
            self._attempts.failed(self._attempts.new(framework, member),
                                  Status.error(reason), "")
        return None

    def _invalid_as_37(self, framework: Framework,
                       members: list[QueuedPodInfo]) -> str | None:
        """v1.37 also requires the group's priority and one preemption policy of every
        member; the error is written on the PodGroup too. None when valid (or 1.36)."""
        if (framework.handle.features.release < placement.PLACEMENT_FEASIBLE_FROM
                or group_name(members[0].pod_info.pod) is None):
            return None
        first = members[0].pod_info
        groups = self._context.cache.pod_groups
        assert groups is not None
        name = group_name(first.pod) or ""
        pod_group = framework.handle.pod_group(first.namespace, name)
        # PodGroupPreemptionPolicy on: the PodGroup's own policy is the members'.
        check = (policy.invalid_group if framework.handle.features.enabled(policy.GATE)
                 else placement.invalid_group)
        invalid = check((m.pod_info for m in members),
                        groups.get(first.namespace, name).placed_pods(), pod_group)
        writer = self._context.writes.pod_groups
        if invalid is not None and pod_group is not None and writer is not None:
            writer.set_scheduled_condition(pod_group, "False",
                                           scheduling.REASON_SCHEDULER_ERROR, invalid)
        return invalid

    def _invalid_tree(self, framework: Framework, members: list[QueuedPodInfo],
                      tree: GroupTree) -> str | None:
        """validatePodGroup for a tree: every member, queued or placed in any of its
        PodGroups, has the root's priority and one preemption policy (the root's with
        PodGroupPreemptionPolicy on); the error is written on every PodGroup."""
        root = tree.composite
        groups = self._context.cache.pod_groups
        assert root is not None and groups is not None
        placed = [pod for leaf in tree.leaves()
                  for pod in groups.get(leaf.key.namespace, leaf.key.name).placed_pods()]
        check = (policy.invalid_group if framework.handle.features.enabled(policy.GATE)
                 else placement.invalid_group)
        invalid = check((m.pod_info for m in members), placed, root)
        writer = self._context.writes.pod_groups
        if invalid is not None and writer is not None:
            for leaf in tree.leaves():
                if leaf.pod_group is not None:
                    writer.set_scheduled_condition(
                        leaf.pod_group, "False", scheduling.REASON_SCHEDULER_ERROR, invalid)
        return invalid

    def without_skipped(self, members: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
        """Members being deleted, or already assumed or bound, are not tried again."""
        context = self._context
        kept = []
        for member in members:
            pod = member.pod_info
            if pod.terminating or context.cache.has_pod(pod.uid):
                if pod.terminating:
                    self._attempts.skip_terminating(pod, pod.pod.spec.scheduler_name)
                context.queue.done(pod.uid)
            else:
                kept.append(member)
        return kept

