"""The quick readings of an extender's answers (issue 38) decide exactly what the general
ones do: a HostPriorityList spelled as Go writes it, a filter that keeps every node in
the order sent, prioritize scores for every node in the order sent; and the nodes are
sent as given whether they come as a list or as snapshot rows."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import NodeRows
from kpysched.config.extenders import Extender
from kpysched.extenders import steps, wire
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.registry import Extenders
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_node, make_pod
from tests.unit.extenders.run import schedule_with
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
@pytest.mark.parametrize("recorded", [False, True])
@pytest.mark.parametrize("rows", [False, True])
def test_prioritize_totals_add_every_entry_scaled(
        extender: FakeExtender, built: list[Extenders], order: str, weight: int,
        recorded: bool, rows: bool) -> None:
    """Upstream adds score x weight x 10 of every entry to its host's total (a host
    listed twice counts twice, a host not asked about counts nowhere); the record
    holds the same sums by host. An answer in the order asked is added position by
    position, any other entry by entry: both give these totals."""
    answered: list[list[dict[str, Any]]] = []

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
        entries = [{"Host": name, "Score": len(name) + index % 11}
                   for index, name in enumerate(names)]
        answered.append(entries)
        return 200, entries

    extender.answers["prioritize"] = answer
    extenders = Extenders([Extender.model_validate(
        {"urlPrefix": extender.url, "prioritizeVerb": "prioritize", "weight": weight,
         "nodeCacheCapable": True})])
    built.append(extenders)
    infos = _nodes(12)
    nodes: Sequence[NodeInfo] = infos
    if rows:
        nodes = NodeRows(infos, tuple(info.name for info in infos),
                         np.array([5, 0, 11, 3, 7, 1, 2, 4, 6, 8, 9, 10], dtype=np.int64))
    said: list[Any] | None = [] if recorded else None
    totals = steps.prioritize(extenders, _pod(), nodes, said)
    (entries,) = answered
    sums: dict[str, int] = {}
    for entry in entries:
        sums[entry["Host"]] = sums.get(entry["Host"], 0) + entry["Score"] * weight * 10
    assert totals.tolist() == [sums.get(node.name, 0) for node in nodes]
    if said is not None:
        (record,) = said
        assert record.scores == sums and list(record.scores) == list(sums)


def _filter_answers_in(order: str) -> Any:
    def answer(body: dict[str, Any]) -> tuple[int, Any]:
        names = names_of(body)
        return 200, {"NodeNames": names if order == "as-sent" else names[::-1]}
    return answer


@pytest.mark.parametrize("rows", [False, True])
def test_a_filter_keeping_every_node_in_order_hands_back_what_it_was_given(
        extender: FakeExtender, built: list[Extenders], rows: bool) -> None:
    extenders = Extenders([Extender.model_validate(
        {"urlPrefix": extender.url, "filterVerb": "filter", "nodeCacheCapable": True})])
    built.append(extenders)
    infos = _nodes(5)
    nodes: Sequence[NodeInfo] = infos
    if rows:
        nodes = NodeRows(infos, tuple(info.name for info in infos),
                         np.array([3, 0, 4], dtype=np.int64))
    for order in ("as-sent", "reversed"):
        extender.answers["filter"] = _filter_answers_in(order)
        diagnosis = Diagnosis(num_all_nodes=5)
        kept = steps.filter_nodes(extenders, _pod(), nodes, diagnosis)
        assert not isinstance(kept, Status)
        if order == "as-sent":
            assert kept is nodes  # the caller keeps its rows
        else:
            assert [id(node) for node in kept] == [id(node) for node in reversed(list(nodes))]
        assert diagnosis.unschedulable_plugins == set()
    sent = [names_of(body) for verb, body in extender.requests]
    assert sent == [[node.name for node in nodes]] * 2


# --- through the scheduler: the snapshot's rows kept or not, the same decision ---------------


async def test_the_decision_is_the_same_whether_the_rows_are_kept(
        extender: FakeExtender) -> None:
    """An in-order answer keeps the vector path's rows for scoring; any other order
    takes the extender's list through the snapshot's index. The same totals by node
    and the same node chosen either way."""
    extender.answers["prioritize"] = lambda body: (200, [
        {"Host": name, "Score": 10 if name == "n4" else 3} for name in names_of(body)])
    cpus = {f"n{index}": str(2 + index) for index in range(1, 7)}
    outcomes = []
    for order in ("as-sent", "reversed"):
        extender.answers["filter"] = _filter_answers_in(order)
        decisions: list[Any] = []
        recording = await schedule_with(
            [{"urlPrefix": extender.url, "filterVerb": "filter",
              "prioritizeVerb": "prioritize", "weight": 2, "nodeCacheCapable": True}],
            make_pod("p").req(cpu="1").obj(), decisions=decisions, node_cpus=cpus)
        (binding,) = recording.sent("POST", "/binding")
        (record,) = decisions
        outcomes.append((binding["target"]["name"],
                         dict(zip(record["feasible"], record["totals"], strict=True))))
    assert outcomes[0] == outcomes[1]
    chosen, by_node = outcomes[0]
    assert chosen == "n4" and sorted(by_node) == sorted(cpus)
