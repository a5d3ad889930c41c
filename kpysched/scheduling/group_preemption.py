"""Preemption for Coscheduling's groups: all or nothing.

Upstream's pod-group cycle (WorkloadAwarePreemption off) lets each member preempt as it
is tried, so victims can die for a group that then does not fit. For scheduler-plugins'
PodGroups kpysched keeps two promises instead:

- A group preempts only when doing so places at least minMember of it. While the group
  is tried, the victims each member's PostFilter picks are only recorded, and taken out
  of the cycle's snapshot so the members after it see the room. They are deleted once
  the group's quorum is met, and spared otherwise.
- Victims from another group are taken whole or not at all: a victim that belongs to a
  Coscheduling group brings every placed member of its group along, provided each is
  of lower priority than the preemptor; otherwise that member may not preempt there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kpysched.cache.pod_groups import coscheduling_group_name
from kpysched.objects.pod import PodInfo
from kpysched.scheduling.context import CycleContext
from kpysched.scheduling.preemption_sink import DeferredPreemption, PreemptionSink

if TYPE_CHECKING:
    from kpysched.framework.interfaces import Handle


class GroupPreemption:
    """The preemptions of one group's cycle, recorded until the group's fate is known.

    Inside `with`, it is the context's preemption sink: what the members' PostFilters
    ask for is only recorded (`preempt`), then claimed or dropped member by member."""

    def __init__(self, context: CycleContext) -> None:
        self._context = context
        self._asked: list[DeferredPreemption] = []  # recorded, not claimed yet
        self._claimed: list[DeferredPreemption] = []
        self._outside: PreemptionSink | None = None  # the sink the trial stands in for

    def __enter__(self) -> GroupPreemption:
        self._outside = self._context.preemptions
        self._asked = []
        self._context.preemptions = self
        return self

    def __exit__(self, *_: object) -> None:
        assert self._outside is not None
        self._context.preemptions = self._outside
        self._outside = None

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        """A Coscheduling group's cycle: carried out only if the group goes ahead."""
        self._asked.append(DeferredPreemption(preemptor, node_name, list(victims), plugin))

    def claim(self, preemptor: PodInfo, undo: list[Callable[[], None]]) -> str:
        """Take the preemption `preemptor`'s PostFilter just asked for: its victims, and
        their groups' other placed members, leave the cycle's snapshot (their restore is
        pushed onto `undo`). Returns "" when taken, else why it may not be."""
        recorded = self._asked
        assert self._outside is not None, "claim() runs inside the group's cycle"
        asked = [p for p in recorded if p.preemptor.uid == preemptor.uid]
        recorded[:] = [p for p in recorded if p.preemptor.uid != preemptor.uid]
        wanted: list[DeferredPreemption] = []
        for preemption in asked:
            extra, refusal = self._whole_groups(preemption)
            if refusal:
                return refusal
            wanted.append(preemption)
            wanted.extend(extra)
        snapshot = self._context.snapshot
        for preemption in wanted:
            uids = {victim.uid for victim in preemption.victims}
            undo.append(snapshot.remove_pods(preemption.node_name, uids))
        self._claimed.extend(wanted)
        return ""

    def _whole_groups(self, preemption: DeferredPreemption
                      ) -> tuple[list[DeferredPreemption], str]:
        """The placed members of the victims' groups not among the victims, as
        preemptions on their own nodes; or why they may not be taken."""
        groups = self._context.cache.pod_groups
        preemptor = preemption.preemptor
        chosen = {victim.uid for victim in preemption.victims}
        chosen.update(v.uid for p in self._claimed for v in p.victims)
        by_node: dict[str, list[PodInfo]] = {}
        for victim in preemption.victims:
            name = coscheduling_group_name(victim.pod)
            if name is None or groups is None:
                continue
            for other in groups.get(victim.namespace, name).placed_pods():
                if other.uid in chosen:
                    continue
                if other.priority >= preemptor.priority:
                    return [], (f"pod group {victim.namespace}/{name} of victim "
                                f"{victim.key} cannot be preempted whole")
                chosen.add(other.uid)
                by_node.setdefault(other.node_name, []).append(other)
        return [DeferredPreemption(preemptor, node, victims, preemption.plugin)
                for node, victims in by_node.items()], ""

    def carry_out(self, handle: Handle) -> None:
        """The group's quorum is met: delete every victim claimed."""
        claimed, self._claimed = self._claimed, []
        for preemption in claimed:
            handle.preempt(preemption.preemptor, preemption.node_name, preemption.victims,
                           preemption.plugin)
