"""Vector forms of Filter/Score/Normalize give exactly what the per-node forms give."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import NodeScore
from kpysched.plugins import node_name, node_unschedulable, taint_toleration
from tests.unit.builders import make_node, make_pod, make_snapshot

EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def _random_cluster(rng: random.Random, size: int):  # type: ignore[no-untyped-def]
    infos = []
    for i in range(size):
        node = make_node(f"n{i:03d}")
        for _ in range(rng.choice((0, 0, 0, 1, 2))):
            node = node.taint(rng.choice(("a", "b", "c")), rng.choice(("", "x")),
                              rng.choice(EFFECTS))
        if rng.random() < 0.2:
            node = node.unschedulable()
        infos.append(node.info())
    return make_snapshot(*infos)


def _random_pod(rng: random.Random, snapshot):  # type: ignore[no-untyped-def]
    pod = make_pod("p")
    for _ in range(rng.choice((0, 1, 2))):
        pod = pod.toleration(rng.choice(("a", "b", "")), rng.choice(("", "x")),
                             rng.choice(("", *EFFECTS)),
                             operator=rng.choice(("Equal", "Exists")))
    if rng.random() < 0.2:
        pod = pod.node(rng.choice(snapshot.node_infos).name)
    return pod.info()


@pytest.mark.parametrize("seed", range(25))
def test_vector_filters_match_per_node_filters(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = _random_cluster(rng, 40)
    pod = _random_pod(rng, snapshot)
    for plugin in (taint_toleration.TaintToleration(), node_unschedulable.NodeUnschedulable(),
                   node_name.NodeName()):
        state = CycleState()
        mask = plugin.filter_vector(state, pod, snapshot)
        assert mask is not None
        expected = [plugin.filter(state, pod, info).ok for info in snapshot.node_infos]
        assert mask.tolist() == expected, plugin.NAME


@pytest.mark.parametrize("seed", range(25))
def test_taint_toleration_vector_score_and_normalize_match(seed: int) -> None:
    rng = random.Random(seed)
    snapshot = _random_cluster(rng, 40)
    pod = _random_pod(rng, snapshot)
    plugin = taint_toleration.TaintToleration()
    state = CycleState()
    assert plugin.pre_score(state, pod, snapshot.node_infos).ok
    scores = [NodeScore(info.name, plugin.score(state, pod, info)[0])
              for info in snapshot.node_infos]
    vector = plugin.score_vector(state, pod, snapshot)
    assert vector is not None
    assert vector.tolist() == [s.score for s in scores]
    plugin.normalize_score(state, pod, scores)
    assert plugin.normalize_vector(state, pod, vector).tolist() == [s.score for s in scores]
    assert isinstance(vector, np.ndarray)
