"""DomainSums (plugins/_shared/domain_sums.py): a figure per row summed per domain code
of a label column, kept from the rows marked as read again.

Hypothesis relabels rows of a column in place, as the snapshot does, and changes their
figures: the sums read after every change, or after several, must be those summed
afresh. (RowCounts' and TermRows' sums over a real snapshot:
inter_pod_affinity/test_kept_rows_by_version.py.)
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.label_index import LabelColumn
from kpysched.plugins._shared.domain_sums import DomainSums

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow])


def by_code(column: LabelColumn, per_row: np.ndarray) -> list[int]:
    """Each domain code's sum of the rows' figures, rows without the key left out."""
    return [int(per_row[(column.codes == code)].sum()) for code in range(len(column.values))]


@_SETTINGS
@given(changes=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(("z1", "z2", "z3", None)),
                                  st.integers(0, 3), st.booleans()), max_size=20))
def test_domain_sums_follow_rows_relabelled_and_recounted(
        changes: list[tuple[int, str | None, int, bool]]) -> None:
    """DomainSums alone, over a column relabelled in place as the snapshot does it: a
    row's figure moves with it from code to code however often it moves, read after
    every change or after several."""
    column = LabelColumn(["z1", "z2", None, "z1", "z2"], 5)
    figures = np.array([1, 0, 2, 3, 1], dtype=np.int64)
    sums = DomainSums()
    assert sums.read(column, lambda row: int(figures[row]), lambda: figures).tolist() == (
        by_code(column, figures))
    for row, zone, figure, read in changes:
        column.set_row(row, zone)
        figures[row] = figure
        sums.touch(row)
        if read:
            assert sums.read(column, lambda row: int(figures[row]), lambda: figures
                             ).tolist() == by_code(column, figures)
