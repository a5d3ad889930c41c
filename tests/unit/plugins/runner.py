"""Drive one plugin through its extension points the way the framework would.

Plugins subclass the (not runtime-checkable) protocols, so the MRO says which
points a plugin implements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore, PreFilterPlugin, PreScorePlugin
from kpysched.framework.status import Code, Status
from kpysched.objects.pod import PodInfo


def run_filter(plugin: Any, pod: PodInfo, node: NodeInfo,
               nodes: Sequence[NodeInfo] = ()) -> Status:
    """PreFilter (if the plugin has one) then Filter; a skipped plugin passes."""
    state = CycleState()
    if PreFilterPlugin in type(plugin).__mro__:
        _, status = plugin.pre_filter(state, pod, nodes or [node])
        if status.code == Code.SKIP:
            return Status()
        if not status.ok:
            return status
    return plugin.filter(state, pod, node)


def run_scores(plugin: Any, pod: PodInfo, nodes: Sequence[NodeInfo], *,
               pre_score: bool = True, normalize: bool = True) -> list[int] | Status:
    """Raw (or normalised) scores per node in order; the PreScore status if not Success."""
    state = CycleState()
    if pre_score and PreScorePlugin in type(plugin).__mro__:
        status = plugin.pre_score(state, pod, nodes)
        if not status.ok:
            return status
    scores = []
    for node in nodes:
        value, status = plugin.score(state, pod, node)
        assert status.ok, status
        scores.append(NodeScore(node.name, value))
    if normalize and hasattr(plugin, "normalize_score"):
        assert plugin.normalize_score(state, pod, scores).ok
    return [entry.score for entry in scores]
