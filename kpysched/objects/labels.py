"""Label selectors and node selector terms, evaluated as upstream evaluates them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kpysched.objects import api


class SelectorError(ValueError):
    """A selector the API server would have rejected (bad operator or values)."""


def _requirement_matches(
    operator: str, key: str, values: Sequence[str], labels: Mapping[str, str]
) -> bool:
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels or len(values) != 1:
            return False
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    raise SelectorError(f"unknown operator {operator!r}")


def label_selector_matches(selector: api.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: None matches nothing, an empty selector everything."""
    if selector is None:
        return False
    for key, wanted in selector.match_labels.items():
        if labels.get(key) != wanted:
            return False
    for requirement in selector.match_expressions:
        if requirement.operator in ("Gt", "Lt"):
            raise SelectorError(
                f"operator {requirement.operator!r} is not valid in a label selector")
        if not _requirement_matches(requirement.operator, requirement.key, requirement.values,
                                    labels):
            return False
    return True


def node_selector_term_matches(
    term: api.NodeSelectorTerm, node_labels: Mapping[str, str], node_name: str
) -> bool:
    """A term matches when all its expressions and fields match; an empty term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    for requirement in term.match_expressions:
        if not _requirement_matches(requirement.operator, requirement.key, requirement.values,
                                    node_labels):
            return False
    for requirement in term.match_fields:
        # metadata.name is the only field a node selector may name.
        if requirement.key != "metadata.name":
            return False
        if not _requirement_matches(requirement.operator, requirement.key, requirement.values,
                                    {"metadata.name": node_name}):
            return False
    return True


def node_selector_matches(
    selector: api.NodeSelector, node_labels: Mapping[str, str], node_name: str
) -> bool:
    """Terms are ORed; a selector without terms matches no node."""
    return any(node_selector_term_matches(t, node_labels, node_name)
               for t in selector.node_selector_terms)
