"""The quick readings of an extender's answers (issue 38) decide exactly what the general
ones do: a HostPriorityList spelled as Go writes it, a filter that keeps every node in
the order sent, prioritize scores for every node in the order sent."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.config.extenders import Extender
from kpysched.extenders import steps, wire
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.registry import Extenders
from kpysched.framework.diagnosis import Diagnosis
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node, make_pod
from tests.unit.extenders.server import FakeExtender, names_of, serving

# --- HostPriorityList: typed reading against the general one ------------------------------

_KEYS = st.sampled_from(["Host", "Score", "host", "score", "SCORE", "Other"])
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=6), st.lists(st.integers(), max_size=2))
_GO_ENTRY = st.fixed_dictionaries({}, optional={"Host": st.text(max_size=8),
                                                "Score": st.integers(-2**63, 2**63 - 1)})
_ANY_ENTRY = st.one_of(st.dictionaries(_KEYS, _VALUES, max_size=3), _VALUES)
_ANSWER = st.one_of(st.lists(_GO_ENTRY, max_size=6), st.lists(_ANY_ENTRY, max_size=4),
                    _VALUES)


def _general(body: bytes) -> Any:
    try:
        return wire._decode_host_priorities_any(body)
    except ExtenderError as error:
        return ("error", str(error))


def _quick(body: bytes) -> Any:
    try:
        return wire.decode_host_priorities(body)
    except ExtenderError as error:
        return ("error", str(error))


@settings(max_examples=400)
@given(answer=_ANSWER, spacing=st.booleans())
def test_host_priorities_read_as_the_general_reading_does(answer: Any, spacing: bool) -> None:
    separators = (", ", ": ") if spacing else (",", ":")
    body = json.dumps(answer, separators=separators).encode()
    assert _quick(body) == _general(body)


@pytest.mark.parametrize("body", [
    b'[{"Host": "a", "Score": 1, "Score": 2}]',  # a key twice: the last one counts
    b'[{"Host": "a", "Host": "b"}]',
    b'[{"Host": "a", "Score": 1}] trailing',
    b"not json",
    b"",
    b"null",
    b'[{"Host": "a", "Score": 18446744073709551616}]',
    b'[{"Host": "a", "Score": 5.0}]',
    b'[{"Host": "a", "Score": true}]',
    b'[{"Host": 7, "Score": 1}]',
    b'[{"Host": "a\\u00e9\\n", "Score": -3}]',
])
def test_host_priorities_edge_bodies(body: bytes) -> None:
    assert _quick(body) == _general(body)


# --- a cycle's steps against a real extender -------------------------------------------------


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        yield running


@pytest.fixture
def built() -> Iterator[list[Extenders]]:
    made: list[Extenders] = []
    yield made
    for extenders in made:
        asyncio.run(extenders.close())


def _nodes(count: int) -> list[NodeInfo]:
    return [make_node(f"n{index}").capacity(cpu="4", memory="8Gi", pods="110").info()
            for index in range(count)]


def _pod() -> PodInfo:
    return make_pod("p").req(cpu="100m").info()


@pytest.mark.parametrize("order", ["as-sent", "reversed", "shuffled", "one-twice",
                                   "one-missing", "a-stranger"])
@pytest.mark.parametrize("weight", [1, 3])
def test_prioritize_totals_match_with_and_without_a_record(
        extender: FakeExtender, built: list[Extenders], order: str, weight: int) -> None:
    """Without a decision record the in-order answer is added position by position;
    with one, entry by entry: the totals are the same."""

    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        names = names_of(body)
        if order == "reversed":
            names.reverse()
        elif order == "shuffled":
            random.Random(38).shuffle(names)
        elif order == "one-twice":
            names.append(names[1])
        elif order == "one-missing":
            names.pop(2)
        elif order == "a-stranger":
            names[0] = "elsewhere"
        return 200, [{"Host": name, "Score": len(name) + index % 11}
                     for index, name in enumerate(names)]

    extender.answers["prioritize"] = answer
    extenders = Extenders([Extender.model_validate(
        {"urlPrefix": extender.url, "prioritizeVerb": "prioritize", "weight": weight,
         "nodeCacheCapable": True})])
    built.append(extenders)
    nodes = _nodes(12)
    pod = _pod()
    quick = steps.prioritize(extenders, pod, nodes)
    said: list[Any] = []
    general = steps.prioritize(extenders, pod, nodes, said)
    assert quick.tolist() == general.tolist()
    (record,) = said
    expected = [record.scores.get(node.name, 0) for node in nodes]
    assert quick.tolist() == expected


def test_a_filter_keeping_every_node_in_order_keeps_the_nodes_sent(
        extender: FakeExtender, built: list[Extenders]) -> None:
    extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)})
    extenders = Extenders([Extender.model_validate(
        {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True})])
    built.append(extenders)
    nodes = _nodes(5)
    kept = steps.filter_nodes(extenders, _pod(), nodes, Diagnosis(num_all_nodes=5))
    assert isinstance(kept, list)
    assert [id(node) for node in kept] == [id(node) for node in nodes]
    extender.answers["filter"] = lambda body: (200, {"NodeNames": names_of(body)[::-1]})
    diagnosis = Diagnosis(num_all_nodes=5)
    reordered = steps.filter_nodes(extenders, _pod(), nodes, diagnosis)
    assert isinstance(reordered, list)
    assert [id(node) for node in reordered] == [id(node) for node in reversed(nodes)]
    assert diagnosis.unschedulable_plugins == set()
