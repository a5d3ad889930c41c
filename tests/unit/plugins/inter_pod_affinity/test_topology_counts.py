"""TopologyCounts kept as sums per domain code (the vector Filter's form) reads as the
same counts per value as pairs added one by one, whichever way it is read, merged or
changed afterwards."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kpysched.cache.label_index import LabelColumn
from kpysched.plugins.inter_pod_affinity.common import TopologyCounts

VALUES = ("a", "b", "c", "d")


@st.composite
def columns(draw: st.DrawFn) -> LabelColumn:
    rows = draw(st.lists(st.sampled_from((*VALUES, None)), min_size=1, max_size=8))
    return LabelColumn(rows, len(rows))


def sums_for(draw: st.DrawFn, column: LabelColumn) -> np.ndarray:
    return np.array(draw(st.lists(st.integers(0, 3), min_size=len(column.values),
                                  max_size=len(column.values))), dtype=np.int64)


def by_value(column: LabelColumn, sums: np.ndarray) -> TopologyCounts:
    counts = TopologyCounts()
    for code, count in enumerate(sums.tolist()):
        if count:
            counts.add("k", column.values[code], count)
    return counts


@settings(derandomize=True, database=None, max_examples=300, deadline=None)
@given(data=st.data())
def test_sums_by_code_read_as_the_same_counts_by_value(data: st.DataObject) -> None:
    column = data.draw(columns())
    first, second = sums_for(data.draw, column), sums_for(data.draw, column)
    kept = TopologyCounts()
    kept.add_domain_sums("k", column, first)
    if data.draw(st.booleans()):
        kept.add_domain_sums("k", column, second)  # a second term of the same key
        expected = by_value(column, first + second)
    else:
        expected = by_value(column, first)
    wanted = [value for value, count in (expected.values_of("k") or {}).items() if count > 0]
    assert kept.rows_counted("k", column).tolist() == column.any_of(wanted).tolist()
    assert bool(kept) == bool(expected)
    assert kept.counted_keys() == (("k",) if expected else ())
    changed = kept.copy() if data.draw(st.booleans()) else kept
    assert changed.pairs() == expected.pairs()
    # Read by value, then changed pair by pair (AddPod / RemovePod) and read by rows.
    value = data.draw(st.sampled_from(VALUES))
    delta = data.draw(st.sampled_from((1, -1)))
    changed.add("k", value, delta)
    expected.add("k", value, delta)
    assert changed.pairs() == expected.pairs()
    wanted = [value for value, count in (expected.values_of("k") or {}).items() if count > 0]
    assert changed.rows_counted("k", column).tolist() == column.any_of(wanted).tolist()
