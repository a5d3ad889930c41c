"""A pod's inter-pod (anti-)affinity terms, parsed once per PodInfo as upstream does.

Upstream's PodInfo carries the pod's required and preferred affinity and
anti-affinity terms with their label selectors already compiled; a selector that
does not parse (bad operator, key or value) makes that whole group of terms empty
and is reported as an error that PreFilter and PreScore surface. The error text
follows upstream's label-selector conversion word for word, since it ends up in
the pod's FailedScheduling message.

matchLabelKeys / mismatchLabelKeys are deliberately not applied here: in v1.36
the kube-apiserver merges them into labelSelector when the pod is created
(MatchLabelKeysInPodAffinity, GA), and the scheduler reads the merged selector
as is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kpysched.objects import api
from kpysched.objects.labels import SelectorError

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = range(4)
_OPERATORS = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _DOES_NOT_EXIST}

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME = re.compile(_NAME_FMT)
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE = re.compile(_VALUE_FMT)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN = re.compile(_DNS_SUBDOMAIN_FMT)
_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
             "with an alphanumeric character")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
              "'-', '_' or '.', and must start and end with an alphanumeric character")
_DNS_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character")


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _json(values: Sequence[str]) -> str:
    if not values:
        return "null"  # the requirement's values are a nil slice when none are given
    encoded = json.dumps(list(values), separators=(",", ":"), ensure_ascii=False)
    return encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _key_problems(key: str) -> list[str]:
    parts = key.split("/")
    problems: list[str] = []
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name",
                                                     "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                problems.append("prefix part must be no more than 253 bytes")
            if not _DNS_SUBDOMAIN.fullmatch(prefix):
                problems.append("prefix part " + _regex_error(_DNS_MSG, _DNS_SUBDOMAIN_FMT,
                                                              "example.com"))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _NAME.fullmatch(name):
        problems.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name",
                                                    "123-abc"))
    return problems


def _value_problems(value: str) -> list[str]:
    problems: list[str] = []
    if len(value.encode()) > 63:
        problems.append("must be no more than 63 bytes")
    if not _VALUE.fullmatch(value):
        problems.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return problems


def _requirement(key: str, operator: int, values: Sequence[str]) -> tuple[str, int, frozenset[str]]:
    """One compiled requirement; SelectorError carries upstream's message when invalid."""
    errors: list[str] = []
    if problems := _key_problems(key):
        errors.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(problems)}")
    if operator in (_IN, _NOT_IN) and not values:
        errors.append(f"values: Invalid value: {_json(values)}: "
                      "for 'in', 'notin' operators, values set can't be empty")
    elif operator in (_EXISTS, _DOES_NOT_EXIST) and values:
        errors.append(f"values: Invalid value: {_json(values)}: "
                      "values set must be empty for exists and does not exist")
    for index, value in enumerate(values):
        if problems := _value_problems(value):
            errors.append(f"values[{index}][{key}]: Invalid value: {_go_quote(value)}: "
                          f"{'; '.join(problems)}")
    errors = list(dict.fromkeys(errors))
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return key, operator, frozenset(values)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled metav1.LabelSelector: None requirements match nothing, () everything."""

    requirements: tuple[tuple[str, int, frozenset[str]], ...] | None

    @property
    def empty(self) -> bool:
        """No requirements: selects everything (upstream's Selector.Empty)."""
        return self.requirements == ()

    @property
    def nothing(self) -> bool:
        return self.requirements is None

    def matches(self, labels: Mapping[str, str]) -> bool:
        requirements = self.requirements
        if requirements is None:
            return False
        for key, operator, values in requirements:
            if operator == _IN:
                value = labels.get(key)
                if value is None or value not in values:
                    return False
            elif operator == _NOT_IN:
                value = labels.get(key)
                if value is not None and value in values:
                    return False
            elif operator == _EXISTS:
                if key not in labels:
                    return False
            elif key in labels:
                return False
        return True


NOTHING = Selector(None)
EVERYTHING = Selector(())


def compile_selector(selector: api.LabelSelector | None) -> Selector:
    """Upstream's LabelSelectorAsSelector: nil selects nothing, {} everything."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [_requirement(key, _IN, (value,))
                    for key, value in selector.match_labels.items()]
    for expression in selector.match_expressions:
        operator = _OPERATORS.get(expression.operator)
        if operator is None:
            raise SelectorError(
                f"{_go_quote(expression.operator)} is not a valid label selector operator")
        requirements.append(_requirement(expression.key, operator, expression.values))
    return Selector(tuple(requirements))


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm. Namespaces default to the owning pod's own namespace
    when neither `namespaces` nor `namespaceSelector` is given."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, pod: api.Pod, namespace_labels: Mapping[str, str]) -> bool:
        """Whether `pod` is selected; `namespace_labels` are those of the pod's namespace
        (empty when the namespace is unknown, as upstream's nil label set)."""
        metadata = pod.metadata
        if metadata.namespace in self.namespaces or self.namespace_selector.matches(
                namespace_labels):
            return self.selector.matches(metadata.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


# Equal terms (the replicas of one workload) share one object, so a cycle can judge a
# term once however many pods carry it. Bounded: cleared when it grows past the limit.
_INTERNED: dict[AffinityTerm, AffinityTerm] = {}
_INTERNED_LIMIT = 50_000


def _term(pod: api.Pod, term: api.PodAffinityTerm) -> AffinityTerm:
    selector = compile_selector(term.label_selector)
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.metadata.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    parsed = AffinityTerm(namespaces, selector, term.topology_key,
                          compile_selector(term.namespace_selector))
    shared = _INTERNED.get(parsed)
    if shared is not None:
        return shared
    if len(_INTERNED) >= _INTERNED_LIMIT:
        _INTERNED.clear()
    _INTERNED[parsed] = parsed
    return parsed


@dataclass(frozen=True, slots=True)
class AffinityTerms:
    """What upstream's PodInfo precomputes about a pod's inter-pod affinity."""

    required: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti: tuple[WeightedAffinityTerm, ...] = ()
    # Upstream's aggregated parse error ("requiredAffinityTerms: ..."); "" when all parsed.
    parse_error: str = ""
    # spec.affinity has podAffinity or podAntiAffinity (NodeInfo.PodsWithAffinity).
    has_affinity: bool = False
    # spec.affinity.podAntiAffinity has required terms (NodeInfo.PodsWithRequiredAntiAffinity).
    has_required_anti_affinity: bool = False


NO_AFFINITY = AffinityTerms()


def affinity_terms(pod: api.Pod) -> AffinityTerms:
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return NO_AFFINITY
    empty = api.PodAffinity()
    positive = affinity.pod_affinity or empty
    negative = affinity.pod_anti_affinity or empty
    errors: list[str] = []

    def required(terms: Sequence[api.PodAffinityTerm], group: str) -> tuple[AffinityTerm, ...]:
        try:
            return tuple(_term(pod, term) for term in terms)
        except SelectorError as error:
            errors.append(f"{group}: {error}")
            return ()

    def preferred(terms: Sequence[api.WeightedPodAffinityTerm],
                  group: str) -> tuple[WeightedAffinityTerm, ...]:
        try:
            return tuple(WeightedAffinityTerm(term.weight, _term(pod, term.pod_affinity_term))
                         for term in terms)
        except SelectorError as error:
            errors.append(f"{group}: {error}")
            return ()

    parsed = AffinityTerms(
        required(positive.required_during_scheduling_ignored_during_execution,
                 "requiredAffinityTerms"),
        required(negative.required_during_scheduling_ignored_during_execution,
                 "requiredAntiAffinityTerms"),
        preferred(positive.preferred_during_scheduling_ignored_during_execution,
                  "preferredAffinityTerms"),
        preferred(negative.preferred_during_scheduling_ignored_during_execution,
                  "preferredAntiAffinityTerms"),
        has_affinity=True,
        has_required_anti_affinity=bool(
            negative.required_during_scheduling_ignored_during_execution),
    )
    if not errors:
        return parsed
    unique = list(dict.fromkeys(errors))
    message = unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"
    return AffinityTerms(parsed.required, parsed.required_anti, parsed.preferred,
                         parsed.preferred_anti, message, True,
                         parsed.has_required_anti_affinity)
