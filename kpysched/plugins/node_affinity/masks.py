"""Node selectors judged over every snapshot row at once (NodeAffinity's vector forms).

Each function gives, row for row, what objects/labels.py answers node by node: a term
ANDs its expressions and fields (an empty term matches nothing, a field other than
metadata.name matches nothing), terms are ORed. The requirement masks come memoised
from the snapshot's LabelIndex; everything returned here is a fresh array the caller
may keep or change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from kpysched.cache.label_index import LabelIndex
from kpysched.objects import api

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

_OBJECT_NAME_FIELD = "metadata.name"


def term_rows(term: api.NodeSelectorTerm, labels: LabelIndex) -> BoolArray:
    """Rows one node selector term matches."""
    rows = np.zeros(len(labels), dtype=np.bool_)
    if not term.match_expressions and not term.match_fields:
        return rows
    if any(field.key != _OBJECT_NAME_FIELD for field in term.match_fields):
        return rows
    rows[:] = True
    for requirement in term.match_expressions:
        rows &= labels.requirement(requirement.operator, requirement.key, requirement.values)
    for field in term.match_fields:
        rows &= labels.name_requirement(field.operator, field.values)
    return rows


def any_term_rows(terms: Iterable[api.NodeSelectorTerm], labels: LabelIndex) -> BoolArray:
    """Rows at least one of the terms matches (none: no row)."""
    rows = np.zeros(len(labels), dtype=np.bool_)
    for term in terms:
        rows |= term_rows(term, labels)
    return rows


def node_selector_rows(node_selector: Iterable[tuple[str, str]],
                       labels: LabelIndex) -> BoolArray:
    """Rows carrying every (key, value) label of a pod's spec.nodeSelector."""
    rows = np.ones(len(labels), dtype=np.bool_)
    for key, value in node_selector:
        # `In` with one value is exactly "the node has this key with this value".
        rows &= labels.requirement("In", key, (value,))
    return rows


def weighted_rows(terms: Sequence[tuple[int, api.NodeSelectorTerm]],
                  labels: LabelIndex) -> IntArray:
    """Per row, the sum of the weights of the terms it matches."""
    totals = np.zeros(len(labels), dtype=np.int64)
    for weight, term in terms:
        totals += weight * term_rows(term, labels)
    return totals
