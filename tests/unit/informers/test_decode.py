"""Raw watch lines and list pages to typed objects; malformed input is logged once, skipped."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from structlog.testing import capture_logs

from kpysched.informers.decode import (
    ApiStatusError,
    Decoder,
    MalformedResponseError,
    ObjectEvent,
    Progress,
    ResourceExpiredError,
    status_error,
)
from kpysched.objects.api import Pod, PodList


def pod_json(name: str, rv: str, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "resourceVersion": rv},
        "spec": {"containers": [{"name": "c", "image": "pause"}], **spec},
        "status": {"phase": "Pending"},
    }


def line(event_type: str, obj: Any) -> bytes:
    return msgspec.json.encode({"type": event_type, "object": obj})


def decoder() -> Decoder[Pod]:
    return Decoder("pods", Pod, PodList)


# What a v1.36 kube-apiserver really sends as a pod bookmark: a stub, not a valid Pod.
BOOKMARK = (b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":'
            b'{"resourceVersion":"219"},"spec":{"containers":null},"status":{}}}')
MALFORMED_POD = pod_json("bad", "17", containers="not-a-list")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(line("ADDED", pod_json("a", "5")), ("ADDED", "a", "5"), id="added"),
        pytest.param(line("MODIFIED", pod_json("a", "6")), ("MODIFIED", "a", "6"), id="modified"),
        pytest.param(line("DELETED", pod_json("a", "7")), ("DELETED", "a", "7"), id="deleted"),
        pytest.param(BOOKMARK, Progress("219"), id="bookmark-stub"),
        pytest.param(line("ADDED", MALFORMED_POD), Progress("17"), id="malformed-object-skipped"),
        pytest.param(b"{not json", None, id="not-json"),
        pytest.param(line("SURPRISE", pod_json("a", "8")), None, id="unknown-type"),
        pytest.param(line("BOOKMARK", {"metadata": {}}), None, id="bookmark-without-version"),
    ],
)
def test_decode_event(raw: bytes, expected: Any) -> None:
    with capture_logs():
        item = decoder().decode_event(raw)

    if isinstance(expected, tuple):
        assert isinstance(item, ObjectEvent)
        assert (item.type, item.obj.metadata.name, item.obj.metadata.resource_version) == expected
        assert item.obj.spec.containers[0].image == "pause"
    else:
        assert item == expected


@pytest.mark.parametrize(
    ("status", "error_type", "code"),
    [
        pytest.param({"code": 410, "reason": "Expired", "message": "too old: 1 (5)"},
                     ResourceExpiredError, 410, id="expired-410"),
        pytest.param({"reason": "Gone", "message": "gone"}, ResourceExpiredError, 410,
                     id="gone-without-code"),
        pytest.param({"code": 500, "reason": "InternalError", "message": "etcd"},
                     ApiStatusError, 500, id="internal-error"),
    ],
)
def test_error_event_raises(status: dict[str, Any], error_type: type[Exception],
                            code: int) -> None:
    raw = line("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure", **status})

    with pytest.raises(error_type) as raised:
        decoder().decode_event(raw)

    assert isinstance(raised.value, ApiStatusError)
    assert raised.value.code == code
    assert raised.value.message == status["message"]


def test_malformed_object_is_logged_once_with_resource_and_reason() -> None:
    pods = decoder()
    bad = line("MODIFIED", MALFORMED_POD)

    with capture_logs() as logs:
        first = pods.decode_event(bad)
        again = pods.decode_event(bad)
        good = pods.decode_event(line("ADDED", pod_json("ok", "18")))

    assert first == again == Progress("17")
    assert isinstance(good, ObjectEvent)
    assert pods.failures == 2
    assert len(logs) == 1, logs
    entry = logs[0]
    assert entry["event"] == "informer.decode_failed"
    assert entry["log_level"] == "warning"
    assert entry["resource"] == "pods"
    assert entry["object"] == "ns/bad"
    assert entry["resource_version"] == "17"
    assert "Expected `array`" in entry["reason"]


def test_malformed_object_is_logged_again_once_it_changes() -> None:
    pods = decoder()
    with capture_logs() as logs:
        pods.decode_event(line("ADDED", MALFORMED_POD))
        pods.decode_event(line("MODIFIED", {**MALFORMED_POD, "metadata": {
            **MALFORMED_POD["metadata"], "resourceVersion": "19"}}))

    assert [entry["resource_version"] for entry in logs] == ["17", "19"]


def test_list_page_keeps_good_items_and_skips_a_malformed_one() -> None:
    body = msgspec.json.encode({
        "kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "40", "continue": "next-page"},
        "items": [pod_json("a", "3"), MALFORMED_POD, pod_json("c", "4")],
    })
    pods = decoder()

    with capture_logs() as logs:
        items, meta = pods.decode_list(body)
        pods.decode_list(body)  # a relist meets the same bad object: not logged again

    assert [pod.metadata.name for pod in items] == ["a", "c"]
    assert (meta.resource_version, meta.continue_) == ("40", "next-page")
    assert [(entry["event"], entry["object"]) for entry in logs] == [
        ("informer.decode_failed", "ns/bad")
    ]


def test_list_page_fast_path() -> None:
    body = msgspec.json.encode({"metadata": {"resourceVersion": "9"},
                                "items": [pod_json("a", "3"), pod_json("b", "4")]})

    items, meta = decoder().decode_list(body)

    assert [pod.metadata.uid for pod in items] == ["uid-a", "uid-b"]
    assert meta.resource_version == "9"
    assert meta.continue_ is None


def test_list_body_that_is_not_a_list_raises() -> None:
    with capture_logs() as logs, pytest.raises(MalformedResponseError, match="pods"):
        decoder().decode_list(b"<html>proxy error</html>")
    assert [entry["event"] for entry in logs] == ["informer.decode_failed"]


@pytest.mark.parametrize(
    ("code", "body", "error_type", "message"),
    [
        pytest.param(410, b'{"kind":"Status","code":410,"reason":"Expired","message":"old"}',
                     ResourceExpiredError, "old", id="410"),
        pytest.param(403, b'{"kind":"Status","code":403,"reason":"Forbidden","message":"no"}',
                     ApiStatusError, "no", id="403"),
        pytest.param(502, b"<html>bad gateway</html>", ApiStatusError,
                     "<html>bad gateway</html>", id="not-json"),
    ],
)
def test_status_error(code: int, body: bytes, error_type: type[ApiStatusError],
                      message: str) -> None:
    error = status_error(code, body)

    assert type(error) is error_type
    assert error.code == code
    assert error.message == message
