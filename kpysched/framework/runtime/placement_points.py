"""The runners of the placement points (TopologyAwareWorkloadScheduling): upstream's
RunPlacementGeneratePlugins and RunPlacementScorePlugins, with their error wording.

- PlacementGenerate: only the profile's first generator runs, given the parent
  placement (the nodes the cycle may use); no generator means that one placement. A
  generator that finds none makes the group Unschedulable ("no feasible placements
  found").
- PlacementScore: every plugin scores every placement, those with
  PlacementScoreExtensions normalize their list, each score must then be within
  0..100, and the weighted sum is the placement's total.
"""

from __future__ import annotations

from collections.abc import Sequence

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.placement import (
    MAX_PLACEMENT_SCORE,
    MIN_PLACEMENT_SCORE,
    Placement,
    PlacementGeneratePlugin,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
)
from kpysched.framework.runtime.guard import plugin_raised
from kpysched.framework.status import SUCCESS, Status

NO_FEASIBLE_PLACEMENTS = "no feasible placements found"


class PlacementPoints:
    """Mixed into Framework, which fills these from the profile."""

    placement_generate_plugins: list[PlacementGeneratePlugin]
    placement_score_plugins: list[PlacementScorePlugin]
    # Plugin name -> weight, for each of placement_score_plugins.
    placement_weights: dict[str, int]

    def run_placement_generate(self, group: PodGroupInfo, nodes: Sequence[NodeInfo]
                               ) -> tuple[list[Placement], Status]:
        """The placements to try `group` in, from the parent placement of `nodes`."""
        parent = Placement("", tuple(nodes))
        if not self.placement_generate_plugins:
            return [parent], SUCCESS
        plugin = self.placement_generate_plugins[0]
        try:
            placements, status = plugin.generate_placements(group, parent)
        except Exception as error:
            return [], plugin_raised(plugin.NAME, "PlacementGenerate", error)
        if not status.ok:
            return [], status.with_plugin(plugin.NAME)
        if not placements:
            return [], Status.unschedulable(NO_FEASIBLE_PLACEMENTS, plugin=plugin.NAME)
        return placements, SUCCESS

    def run_placement_score(self, group: PodGroupInfo,
                            assignments: Sequence[PodGroupAssignments]
                            ) -> tuple[list[int], Status]:
        """Each placement's total score, in the order of `assignments`."""
        plugins = self.placement_score_plugins
        totals = [0] * len(assignments)
        scores: dict[str, list[int]] = {}
        for assignment in assignments:
            for plugin in plugins:
                try:
                    value, status = plugin.score_placement(group, assignment)
                except Exception as error:
                    value, status = 0, plugin_raised(plugin.NAME, "PlacementScore", error)
                if not status.ok:
                    return totals, Status.error(
                        f'running PlacementScore plugins: plugin "{plugin.NAME}" failed '
                        f"with: {status.message()}", plugin.NAME)
                scores.setdefault(plugin.NAME, []).append(value)
        for plugin in plugins:
            if PlacementScoreExtensions not in type(plugin).__mro__:
                continue
            normalizer: PlacementScoreExtensions = plugin  # type: ignore[assignment]
            try:
                status = normalizer.normalize_placement_scores(group, scores[plugin.NAME])
            except Exception as error:
                status = plugin_raised(plugin.NAME, "NormalizePlacementScore", error)
            if not status.ok:
                return totals, Status.error(
                    "running NormalizePlacementScore on PlacementScore plugins: plugin "
                    f'"{plugin.NAME}" failed with: {status.message()}', plugin.NAME)
        for index in range(len(assignments)):
            for plugin in plugins:
                value = scores[plugin.NAME][index]
                if not MIN_PLACEMENT_SCORE <= value <= MAX_PLACEMENT_SCORE:
                    # Upstream's wording, "should in the range" included.
                    return totals, Status.error(
                        "applying score defaultWeights on PlacementScore plugins: plugin "
                        f'"{plugin.NAME}" returns an invalid score {value}, it should in '
                        f"the range of [{MIN_PLACEMENT_SCORE}, {MAX_PLACEMENT_SCORE}] "
                        "after normalizing", plugin.NAME)
                totals[index] += value * self.placement_weights.get(plugin.NAME, 1)
        return totals, SUCCESS
