"""Placements: the extension points of a pod group's topology-aware cycle.

With v1.37's alpha gate TopologyAwareWorkloadScheduling (which needs GenericWorkload)
a pod group is no longer tried on the whole cluster at once. PlacementGenerate plugins
cut the nodes into candidate placements (a placement is a named set of nodes, such as
the nodes of one rack); the group is tried inside each in turn; PlacementScore plugins
rank the placements where it fit, and the best one is taken. Upstream's
fwk.PlacementGeneratePlugin and fwk.PlacementScorePlugin (kube-scheduler/framework).

The core runs these points (framework/runtime/placement_points.py, and the pod-group
cycle in scheduling/); plugins implement the protocols below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kpysched.framework.interfaces import Plugin
from kpysched.framework.status import Status
from kpysched.objects.composite_pod_groups import CompositePodGroup
from kpysched.objects.pod import PodInfo
from kpysched.objects.scheduling import PodGroup

if TYPE_CHECKING:
    from kpysched.cache.node_info import NodeInfo
    from kpysched.cache.pod_groups import PodGroupState

# The range a PlacementScore plugin's scores must be in once normalized (upstream's
# MinScore and MaxScore).
MIN_PLACEMENT_SCORE = 0
MAX_PLACEMENT_SCORE = 100


@dataclass(frozen=True, slots=True)
class Placement:
    """A set of nodes a pod group may be placed within; `name` is its topology domain
    ("" for the parent placement the generator starts from)."""

    name: str
    nodes: tuple[NodeInfo, ...]


@dataclass(frozen=True, slots=True)
class ScheduledMember:
    """A member of the group already assumed or bound, and its node."""

    pod: PodInfo
    node_name: str


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """The pod group a placement point is asked about (upstream's fwk.PodGroupInfo)."""

    namespace: str
    name: str
    pod_group: PodGroup | None
    # The cycle's copy of the members (where those tried so far stand).
    members: PodGroupState
    # Members assumed or bound before this cycle, each with its node.
    scheduled: tuple[ScheduledMember, ...] = ()
    # A CompositePodGroup of a tree (v1.37's CompositePodGroup gate); then `pod_group`
    # is None, and `members` and `scheduled` are those of every PodGroup below it.
    composite: CompositePodGroup | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """A member this cycle placed on a node inside a placement."""

    pod: PodInfo
    node_name: str


@dataclass(frozen=True, slots=True)
class PodGroupAssignments:
    """Where the group's members went when it was tried inside `placement`."""

    placement: Placement
    proposed: tuple[ProposedAssignment, ...] = field(default_factory=tuple)


class PlacementGeneratePlugin(Plugin, Protocol):
    def generate_placements(self, group: PodGroupInfo,
                            parent: Placement) -> tuple[list[Placement], Status]:
        """The placements to try the group in, all within `parent`; an Error status
        fails the group's cycle."""
        ...


class PlacementScorePlugin(Plugin, Protocol):
    def score_placement(self, group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Status]:
        """A score for one placement where the group fit; without
        PlacementScoreExtensions it must already be within 0..100."""
        ...


class PlacementScoreExtensions(Protocol):
    def normalize_placement_scores(self, group: PodGroupInfo,
                                   scores: list[int]) -> Status:
        """Bring this plugin's scores (one per placement, in order) into 0..100, in
        place."""
        ...
