"""ScoreSums (score_sums.py): PreScore's weights per topology pair, keys summed over the
label columns kept as sums per domain code, against the plain map of pairs node by node.

Hypothesis draws nodes (hostname, zone and rack labels, some missing) and a run of
additions of every kind PreScore makes: sums per code of a key's column (the codes
some pod sits under, weights that may cancel to 0), pairs by value (the walk's and the
columns' maps), another ScoreSums added whole, and sums over a column of another
snapshot (which must be taken by value). After each, the map by value must be the
reference map built pair by pair (pairs at 0 kept), truthiness must say whether any
pair exists (PreScore skips otherwise), and the vector totals over every row and over
a drawn subset must be each node's sum of its values' weights (the per-node Score).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.label_index import LabelColumn, LabelIndex
from kpysched.cache.node_info import NodeInfo
from kpysched.plugins.inter_pod_affinity.score_sums import ScoreSums, TopologyScore
from tests.unit.builders import make_node

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=200,
                     suppress_health_check=[HealthCheck.too_slow])
KEYS = ("kubernetes.io/hostname", "zone", "rack")


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeInfo]:
    infos = []
    for index in range(draw(st.integers(1, 6))):
        name = f"n{index}"
        labels = {}
        if draw(st.integers(0, 5)):
            labels["kubernetes.io/hostname"] = name
        if draw(st.booleans()):
            labels["zone"] = draw(st.sampled_from(("z1", "z2")))
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(("r1", "r2", "r3")))
        infos.append(make_node(name).labels(labels).info())
    return infos


def _add(reference: TopologyScore, key: str, value: str, weight: int) -> None:
    values = reference.setdefault(key, {})
    values[value] = values.get(value, 0) + weight


def _node_totals(reference: TopologyScore, infos: list[NodeInfo]) -> list[int]:
    return [sum(values.get(info.labels[key], 0) for key, values in reference.items()
                if key in info.labels) for info in infos]


@st.composite
def coded(draw: st.DrawFn, column: LabelColumn
          ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Sums per code with the codes seen (a seen code may sum to 0), and the pairs."""
    size = len(column.values)
    seen = np.array([draw(st.booleans()) for _ in range(size)], dtype=np.bool_)
    sums = np.array([draw(st.integers(-3, 3)) if seen[code] else 0 for code in range(size)],
                    dtype=np.int64)
    pairs = {column.values[code]: int(sums[code]) for code in np.flatnonzero(seen).tolist()}
    return sums, seen, pairs


@_SETTINGS
@given(data=st.data(), infos=nodes())
def test_score_sums_are_the_map_of_pairs_node_by_node(data: st.DataObject,
                                                      infos: list[NodeInfo]) -> None:
    labels = LabelIndex(infos)
    other_snapshot = LabelIndex([make_node("elsewhere").labels(
        {key: "x" for key in KEYS}).info(), *infos])
    scores = ScoreSums()
    reference: TopologyScore = {}
    for _ in range(data.draw(st.integers(1, 8))):
        key = data.draw(st.sampled_from(KEYS))
        kind = data.draw(st.sampled_from(("codes", "pairs", "whole", "other column")))
        if kind in ("codes", "other column"):
            column = (labels if kind == "codes" else other_snapshot).column(key)
            sums, seen, pairs = data.draw(coded(column))
            scores.add_codes(key, column, sums, seen)
        elif kind == "pairs":
            pairs = data.draw(st.dictionaries(st.sampled_from(("n0", "n1", "z1", "r2", "x")),
                                              st.integers(-3, 3), max_size=3))
            scores.add_pairs(key, pairs.items())
        else:
            more = ScoreSums()
            column = labels.column(key)
            sums, seen, pairs = data.draw(coded(column))
            more.add_codes(key, column, sums, seen)
            scores.add(more)
        for value, weight in pairs.items():
            _add(reference, key, value, weight)
        reference = {key: values for key, values in reference.items() if values}
        assert bool(scores) == bool(reference)
        picked = sorted(data.draw(st.sets(st.integers(0, len(infos) - 1), min_size=1)))
        expected = _node_totals(reference, infos)
        assert scores.rows(labels).tolist() == expected
        assert (scores.rows(labels, np.array(picked, dtype=np.int64)).tolist()
                == [expected[row] for row in picked])
    assert scores.as_dict() == reference
    assert scores.rows(labels).tolist() == _node_totals(reference, infos)
