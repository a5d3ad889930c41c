"""PodGroupPodsCount: a placement scores the group's pods it would hold.

The raw score counts the members already assumed or bound plus those this cycle
placed inside the placement. Counting the placed ones too keeps the differences
between placements small next to the group's size, so a placement one pod short is
not thrown far behind. Normalizing divides by the best placement's count (not by the
gang's minCount), scaled to 0..100 with integer division, as upstream does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kpysched.framework.cluster_events import ClusterEventWithHint
from kpysched.framework.interfaces import Handle
from kpysched.framework.placement import (
    MAX_PLACEMENT_SCORE,
    MIN_PLACEMENT_SCORE,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
)
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status

NAME = "PodGroupPodsCount"

# Upstream's error when every placement's count is 0 (it relies on GangScheduling to
# let no group with nothing placed through).
NO_PODS_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount(PlacementScorePlugin, PlacementScoreExtensions):
    NAME: ClassVar[str] = NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return ()  # it never rejects a pod

    def score_placement(self, group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status]:
        return group.members.scheduled_count() + len(assignments.proposed), SUCCESS

    def normalize_placement_scores(self, group: PodGroupInfo, scores: list[int]) -> Status:
        highest = max(scores, default=0)
        if highest == 0:
            return Status.error(NO_PODS_ASSIGNED, NAME)
        span = MAX_PLACEMENT_SCORE - MIN_PLACEMENT_SCORE
        for index, score in enumerate(scores):
            scores[index] = MIN_PLACEMENT_SCORE + score * span // highest
        return SUCCESS


def new(_args: None, _handle: Handle) -> PodGroupPodsCount:
    return PodGroupPodsCount()


SPEC = PluginSpec(NAME, PodGroupPodsCount, new)
