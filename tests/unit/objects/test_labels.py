"""Label selectors and node selector terms, as apimachinery / component-helpers match them."""

from __future__ import annotations

import pytest

from kpysched.objects import api
from kpysched.objects.labels import (
    SelectorError,
    label_selector_matches,
    node_selector_matches,
    node_selector_term_matches,
)
from tests.unit.builders import expr, term

LABELS = {"zone": "a", "tier": "web", "gen": "5"}


def requirement(key: str, operator: str, *values: str) -> api.LabelSelectorRequirement:
    return api.LabelSelectorRequirement(key=key, operator=operator, values=list(values))


def selector(match_labels: dict[str, str] | None = None,
             *expressions: api.LabelSelectorRequirement) -> api.LabelSelector:
    return api.LabelSelector(match_labels=dict(match_labels or {}),
                             match_expressions=list(expressions))


@pytest.mark.parametrize(("sel", "matches"), [
    pytest.param(None, False, id="nil selector matches nothing"),
    pytest.param(selector(), True, id="empty selector matches everything"),
    pytest.param(selector({"zone": "a"}), True, id="matchLabels hit"),
    pytest.param(selector({"zone": "b"}), False, id="matchLabels wrong value"),
    pytest.param(selector({"zone": "a", "missing": "x"}), False, id="matchLabels all must hold"),
    pytest.param(selector(None, requirement("zone", "In", "a", "b")), True, id="In"),
    pytest.param(selector(None, requirement("zone", "In", "b")), False, id="In miss"),
    pytest.param(selector(None, requirement("absent", "In", "a")), False, id="In on missing key"),
    pytest.param(selector(None, requirement("zone", "NotIn", "b")), True, id="NotIn"),
    pytest.param(selector(None, requirement("zone", "NotIn", "a")), False, id="NotIn miss"),
    pytest.param(selector(None, requirement("absent", "NotIn", "a")), True,
                 id="NotIn on missing key matches"),
    pytest.param(selector(None, requirement("tier", "Exists")), True, id="Exists"),
    pytest.param(selector(None, requirement("absent", "Exists")), False, id="Exists miss"),
    pytest.param(selector(None, requirement("absent", "DoesNotExist")), True,
                 id="DoesNotExist"),
    pytest.param(selector(None, requirement("zone", "DoesNotExist")), False,
                 id="DoesNotExist miss"),
    pytest.param(selector({"zone": "a"}, requirement("tier", "In", "db")), False,
                 id="matchLabels and expressions are ANDed"),
])
def test_label_selector(sel: api.LabelSelector | None, matches: bool) -> None:
    assert label_selector_matches(sel, LABELS) is matches


@pytest.mark.parametrize("operator", ["Gt", "Lt", "Bogus"])
def test_label_selector_rejects_operators_it_does_not_know(operator: str) -> None:
    with pytest.raises(SelectorError):
        label_selector_matches(selector(None, requirement("gen", operator, "1")), LABELS)


@pytest.mark.parametrize(("nst", "matches"), [
    pytest.param(term(), False, id="empty term matches nothing"),
    pytest.param(term(expr("zone", "In", "a")), True, id="In"),
    pytest.param(term(expr("zone", "In", "a"), expr("tier", "In", "db")), False,
                 id="expressions are ANDed"),
    pytest.param(term(expr("gen", "Gt", "4")), True, id="Gt"),
    pytest.param(term(expr("gen", "Gt", "5")), False, id="Gt is strict"),
    pytest.param(term(expr("gen", "Lt", "6")), True, id="Lt"),
    pytest.param(term(expr("gen", "Lt", "5")), False, id="Lt is strict"),
    pytest.param(term(expr("zone", "Gt", "1")), False, id="Gt on a non-integer label"),
    pytest.param(term(expr("gen", "Gt", "x")), False, id="Gt with a non-integer value"),
    pytest.param(term(expr("absent", "Gt", "1")), False, id="Gt on a missing key"),
    pytest.param(term(expr("gen", "Gt", "1", "2")), False, id="Gt needs exactly one value"),
    pytest.param(term(expr("absent", "DoesNotExist")), True, id="DoesNotExist"),
    pytest.param(term(fields=[expr("metadata.name", "In", "node-1")]), True,
                 id="matchFields metadata.name"),
    pytest.param(term(fields=[expr("metadata.name", "NotIn", "node-1")]), False,
                 id="matchFields NotIn"),
    pytest.param(term(fields=[expr("metadata.uid", "In", "node-1")]), False,
                 id="matchFields only knows metadata.name"),
    pytest.param(term(expr("zone", "In", "a"), fields=[expr("metadata.name", "In", "other")]),
                 False, id="expressions and fields are ANDed"),
])
def test_node_selector_term(nst: api.NodeSelectorTerm, matches: bool) -> None:
    assert node_selector_term_matches(nst, LABELS, "node-1") is matches


@pytest.mark.parametrize(("terms", "matches"), [
    pytest.param([], False, id="no terms match no node"),
    pytest.param([term()], False, id="only an empty term"),
    pytest.param([term(), term(expr("zone", "In", "a"))], True, id="terms are ORed"),
    pytest.param([term(expr("zone", "In", "b")), term(expr("tier", "In", "db"))], False,
                 id="no term holds"),
])
def test_node_selector(terms: list[api.NodeSelectorTerm], matches: bool) -> None:
    assert node_selector_matches(api.NodeSelector(node_selector_terms=terms), LABELS,
                                 "node-1") is matches


def test_unknown_node_selector_operator_is_reported() -> None:
    with pytest.raises(SelectorError):
        node_selector_term_matches(term(expr("zone", "Near", "a")), LABELS, "node-1")
