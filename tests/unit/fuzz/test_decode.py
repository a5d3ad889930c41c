"""Watch lines and list pages of any shape through the Decoder.

Whatever the bytes, decoding a watch line gives an object event, a progress mark or
nothing (and logs why), and raises only the ApiStatusError an ERROR event stands for;
a list page gives its items or raises MalformedResponseError. The reflector retries on
both and on nothing else, so any other exception would end the informer.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from kpysched.informers.decode import (
    ApiStatusError,
    Decoder,
    MalformedResponseError,
    ObjectEvent,
    Progress,
)
from kpysched.objects.api import Node, NodeList, Pod, PodList
from kpysched.objects.pod import PodInfo
from kpysched.objects.quantity import QuantityError
from tests.unit.fuzz import strategies as s

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20,
)
objects = st.one_of(json_values, s.pods(("node-0",), assigned=False), s.nodes,
                    s.pods(("node-0",), assigned=True)).map(
    lambda obj: s.named(obj, "fuzzed") if isinstance(obj, dict) and "metadata" in obj else obj)
event_types = st.sampled_from(("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "",
                               "added", "SURPRISE"))


@st.composite
def watch_lines(draw: st.DrawFn) -> bytes:
    envelope = draw(st.fixed_dictionaries({}, optional={"type": event_types,
                                                        "object": objects}))
    line = json.dumps(envelope, ensure_ascii=False).encode()
    cut = draw(st.one_of(st.none(), st.integers(0, len(line))))  # a line cut short
    return line if cut is None else line[:cut]


def decoders() -> list[Decoder[Any]]:
    return [Decoder("pods", Pod, PodList), Decoder("nodes", Node, NodeList)]


@given(st.one_of(watch_lines(), st.binary(max_size=100)))
@example(b'{"type":"ADDED","object":{"metadata":{"name":"p","uid":"u"},"spec":"x"}}')
@example(b'{"type":"ERROR","object":{"code":410,"reason":"Expired"}}')
@example(b'{"type":"ERROR","object":[]}')
@example(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":7}}}')
def test_a_watch_line_decodes_or_is_reported(line: bytes) -> None:
    for decoder in decoders():
        failures = decoder.failures
        with capture_logs() as logs:
            try:
                item = decoder.decode_event(line)
            except ApiStatusError:
                continue  # an ERROR event: the reflector lists again or backs off
        assert item is None or isinstance(item, ObjectEvent | Progress)
        if not isinstance(item, ObjectEvent):
            # Nothing to apply: a bookmark, or a failure that was counted and logged.
            assert isinstance(item, Progress) or decoder.failures > failures
            assert decoder.failures == failures or logs
        elif isinstance(item.obj, Pod):
            # What the pod handler does next: a malformed pod is a QuantityError or a
            # ValueError, reported to its owner; never anything else.
            with contextlib.suppress(QuantityError, ValueError):
                PodInfo.of(item.obj)


@given(st.lists(objects, max_size=4), st.booleans())
@example([{"metadata": {"name": "a", "uid": "a"}}, {"spec": []}], False)
def test_a_list_page_keeps_what_decodes(items: list[Any], broken: bool) -> None:
    body = json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()
    if broken:
        body = body[:-1]
    for decoder in decoders():
        try:
            decoded, meta = decoder.decode_list(body)
        except MalformedResponseError:
            assert broken
            continue
        assert meta.resource_version == "9"
        assert len(decoded) <= len(items)
        assert decoder.failures == len(items) - len(decoded)


@pytest.mark.parametrize("line", [b"", b"null", b"[]", b'{"type": "ADDED"}'])
def test_an_event_without_an_object_is_reported(line: bytes) -> None:
    decoder = Decoder("pods", Pod, PodList)
    with capture_logs() as logs:
        assert decoder.decode_event(line) is None
    assert [entry["event"] for entry in logs] == ["informer.decode_failed"]
