"""Kept row scores (plugins/node_resources/row_scores.py) against scoring afresh: NodeResourcesFit's
strategies and BalancedAllocation over cycles that change some nodes, narrow to
random windows of rows, alternate pod shapes, rebuild the node order and add nodes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.plugins.node_resources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from kpysched.plugins.node_resources.fit import NodeResourcesFit, NodeResourcesFitArgs
from tests.unit.builders import make_node, make_pod, make_snapshot

SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
FIT_STRATEGIES = [
    {"type": "LeastAllocated"},
    {"type": "MostAllocated"},
    {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": SHAPE}},
]


def _node(rng: random.Random, name: str) -> NodeInfo:
    existing = [make_pod(f"{name}-e{i}").req(cpu=f"{rng.randrange(0, 3000)}m",
                                             memory=str(rng.randrange(0, 6000)))
                for i in range(rng.randrange(0, 3))]
    return make_node(name).capacity(cpu=f"{rng.choice([0, 2000, 4000])}m",
                                    memory=str(rng.choice([0, 8000, 16000])),
                                    pods="110").info(*existing)


def _plugins() -> list[NodeResourcesFit | NodeResourcesBalancedAllocation]:
    fits = [NodeResourcesFit(NodeResourcesFitArgs.model_validate({"scoringStrategy": s}),
                             lambda *_: None) for s in FIT_STRATEGIES]
    return [*fits, NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs())]


@pytest.mark.parametrize("seed", range(6))
def test_kept_scores_equal_fresh_scores_across_cycles(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i:03d}" for i in range(60)]
    snapshot = make_snapshot(*(_node(rng, name) for name in names))
    shapes = [make_pod("a").req(cpu="300m", memory="1000").info(),
              make_pod("b").req(cpu="1", memory="20").info(),
              make_pod("c").info()]  # no requests: Fit scores the non-zero defaults
    plugins = _plugins()
    checked = 0
    for _ in range(40):
        # Some nodes change as binds and deletes would change them (a new NodeInfo, the
        # same row), and now and then the node order is rebuilt.
        for name in rng.sample(names, rng.randrange(0, 4)):
            snapshot.replace(_node(rng, name))
        if rng.random() < 0.1:
            rng.shuffle(names)
            snapshot.rebuild_order(list(names))
        if rng.random() < 0.1:  # a node joins: the rows grow
            names.append(f"new{len(names):03d}")
            snapshot.by_name[names[-1]] = _node(rng, names[-1])
            snapshot.rebuild_order(list(names))
        pod = rng.choice(shapes)
        rows = np.array(rng.sample(range(len(names)), rng.randrange(1, len(names))),
                        dtype=np.int64)
        for plugin in plugins:
            state = CycleState()
            status = plugin.pre_score(state, pod, snapshot.node_infos)
            if status.code == Code.SKIP:
                continue  # BalancedAllocation does not score a pod without requests
            assert status.ok
            fresh = plugin.score_vector(state, pod, snapshot)
            kept = plugin.score_rows(state, pod, snapshot, rows)
            assert fresh is not None and kept is not None
            assert kept.tolist() == fresh[rows].tolist(), plugin.NAME
            checked += 1
    assert checked >= 40 * (len(plugins) - 1)
