"""Optional resources: a 403 or 404 list reads as empty, counts as synced, is said once,
and is listed again until it works; required resources and other failures keep
retrying unsynced.

The reflector's list and watch requests are scripted here (their HTTP side is
test_informers.py's, against a real API server); what is under test is what run()
does with each answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from structlog.testing import capture_logs

from kpysched.informers.decode import ApiStatusError, MalformedResponseError
from kpysched.informers.listers import OPTIONAL_RESOURCES, Listers
from kpysched.informers.optional import group_version, unavailability
from kpysched.informers.reflector import Reflector
from kpysched.objects.api import Node, NodeList, ObjectMeta

PATH = "/apis/resource.k8s.io/v1/devicetaintrules"
IMPACT = "devices those rules taint may be allocated"
FORBIDDEN = ApiStatusError(403, "Forbidden", 'devicetaintrules.resource.k8s.io is '
                           'forbidden: User "system:serviceaccount:ns:kpysched" cannot list')
NOT_FOUND = ApiStatusError(404, "NotFound", "the server could not find the requested resource")
Answer = list[Node] | BaseException


class Recorder:
    def __init__(self) -> None:
        self.added: list[str] = []

    def on_add(self, obj: Node) -> None:
        self.added.append(obj.metadata.name)

    def on_update(self, old: Node, new: Node) -> None: ...

    def on_delete(self, obj: Node) -> None: ...


class Scripted(Reflector[Node]):
    """Each list answers the next of `answers` and each watch ends with the next of
    `watch_ends` (an error, or None: closed after events), both fed by the test, which
    waits for the reflector's next call: by then the previous answer is dealt with."""

    def __init__(self, api: client.ApiClient, handler: Recorder, *,
                 optional_impact: str | None) -> None:
        super().__init__(api, PATH, Node, NodeList, handler, resource="devicetaintrules",
                         backoff_initial=0.001, backoff_max=0.004,
                         optional_impact=optional_impact)
        self.answers: asyncio.Queue[Answer] = asyncio.Queue()
        self.watch_ends: asyncio.Queue[BaseException | None] = asyncio.Queue()
        self.calls: list[str] = []  # "list" or "watch", as entered
        self._entered = asyncio.Condition()

    async def _enter(self, call: str) -> None:
        self.calls.append(call)
        async with self._entered:
            self._entered.notify_all()

    async def call(self, number: int, timeout: float = 5.0) -> str:
        """The reflector's `number`th call (1-based), once it has been made."""
        async with asyncio.timeout(timeout), self._entered:
            await self._entered.wait_for(lambda: len(self.calls) >= number)
        return self.calls[number - 1]

    async def _list(self) -> tuple[list[Node], str]:
        await self._enter("list")
        answer = await self.answers.get()
        if isinstance(answer, BaseException):
            raise answer
        return answer, str(len(self.calls))

    async def _watch(self) -> bool:
        await self._enter("watch")
        self._watched_since_list = True
        error = await self.watch_ends.get()
        if error is not None:
            raise error
        return True


def node(name: str) -> Node:
    return Node(metadata=ObjectMeta(name=name, uid=name, resource_version="1"))


@pytest.fixture
async def api() -> AsyncIterator[client.ApiClient]:
    async with client.ApiClient(client.Configuration()) as api_client:
        yield api_client


@contextlib.asynccontextmanager
async def running(reflector: Scripted) -> AsyncIterator[None]:
    task = asyncio.create_task(reflector.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("refusal", [FORBIDDEN, NOT_FOUND], ids=["403", "404"])
async def test_an_optional_resource_refused_reads_as_empty_is_said_once_and_works_later(
    api: client.ApiClient, refusal: ApiStatusError,
) -> None:
    handler = Recorder()
    reflector = Scripted(api, handler, optional_impact=IMPACT)
    with capture_logs() as logs:
        async with running(reflector):
            reflector.answers.put_nowait(refusal)
            assert await reflector.call(2) == "list"  # listed again, not watched
            assert reflector.has_synced
            assert reflector.unavailable is not None
            assert reflector.unavailable.status == refusal.code
            assert dict(reflector.store) == {}
            for _ in range(3):
                reflector.answers.put_nowait(refusal)
            assert await reflector.call(5) == "list"
            assert handler.added == []
            # The rule is granted (or the API served): the next list works.
            reflector.answers.put_nowait([node("rule-a")])
            assert await reflector.call(6) == "watch"
            assert handler.added == ["rule-a"]
            assert reflector.unavailable is None

    warnings = [e for e in logs if e["event"] == "informer.optional_unavailable"]
    assert len(warnings) == 1, logs  # said once, not on each of the four refusals
    (warning,) = warnings
    assert warning["log_level"] == "warning"
    assert warning["resource"] == "devicetaintrules"
    assert warning["status"] == refusal.code
    assert warning["reason"] == refusal.message
    assert IMPACT in warning["meaning"]
    if refusal is FORBIDDEN:
        assert "grant" in warning["action"]
        assert "resource.k8s.io" in warning["action"]
    else:
        assert "resource.k8s.io/v1" in warning["meaning"]
    # The refusals are not logged as failures (they are the warning above).
    assert not [e for e in logs if e["event"] == "informer.list_failed"]
    available = [e for e in logs if e["event"] == "informer.optional_available"]
    assert [(e["objects"], e["was"]) for e in available] == [(1, refusal.code)]


async def test_a_refusal_after_the_resource_was_listed_keeps_the_last_view(
    api: client.ApiClient,
) -> None:
    handler = Recorder()
    reflector = Scripted(api, handler, optional_impact=IMPACT)
    async with running(reflector):
        reflector.answers.put_nowait([node("rule-a")])
        assert await reflector.call(2) == "watch"
        assert reflector.unavailable is None
        # The rule is taken away while watching: the watch is refused, then the list.
        reflector.watch_ends.put_nowait(FORBIDDEN)
        assert await reflector.call(3) == "list"
        reflector.answers.put_nowait(FORBIDDEN)
        assert await reflector.call(4) == "list"
        assert reflector.unavailable is not None
        assert list(reflector.store) == ["rule-a"]  # not emptied by the refusal
        reflector.answers.put_nowait([node("rule-a")])
        assert await reflector.call(5) == "watch"
        assert reflector.unavailable is None
    assert handler.added == ["rule-a"]


@pytest.mark.parametrize(("impact", "error"), [
    pytest.param(None, FORBIDDEN, id="required-403"),
    pytest.param(None, NOT_FOUND, id="required-404"),
    pytest.param(IMPACT, ApiStatusError(500, "InternalError", "etcd"), id="optional-500"),
    pytest.param(IMPACT, MalformedResponseError("not JSON"), id="optional-malformed"),
])
async def test_other_failures_and_required_resources_retry_unsynced(
    api: client.ApiClient, impact: str | None, error: BaseException,
) -> None:
    reflector = Scripted(api, Recorder(), optional_impact=impact)
    with capture_logs() as logs:
        async with running(reflector):
            for _ in range(4):
                reflector.answers.put_nowait(error)
            assert await reflector.call(5) == "list"
    assert not reflector.has_synced
    assert reflector.unavailable is None
    assert "watch" not in reflector.calls
    assert [e["event"] for e in logs] == ["informer.list_failed"] * 4


def test_unavailability_names_the_group_and_only_covers_403_and_404() -> None:
    assert group_version("/apis/resource.k8s.io/v1/devicetaintrules") == (
        "resource.k8s.io", "v1")
    assert group_version("/api/v1/nodes") == ("", "v1")
    forbidden = unavailability(FORBIDDEN, PATH, "devicetaintrules")
    assert forbidden is not None
    assert "'resource.k8s.io'" in forbidden.action
    assert "list and watch on devicetaintrules" in forbidden.action
    not_served = unavailability(NOT_FOUND, PATH, "devicetaintrules")
    assert not_served is not None
    assert "does not serve devicetaintrules in resource.k8s.io/v1" in not_served.meaning
    for other in (ApiStatusError(401, "Unauthorized", ""), ApiStatusError(500, "", ""),
                  TimeoutError(), MalformedResponseError("x")):
        assert unavailability(other, PATH, "devicetaintrules") is None


async def test_only_device_taint_rules_are_optional(api: client.ApiClient) -> None:
    reflectors = Listers(device_taint_rules=True, generic_workload=True,
                         coscheduling=True).reflectors(api)
    optional = {r.resource for r in reflectors if r.optional_impact is not None}
    assert optional == {"devicetaintrules"} == set(OPTIONAL_RESOURCES)
    # Gated and configured ones are required: the operator asked for them.
    assert {"podgroups", "podgroups.scheduling.x-k8s.io", "resourceclaims",
            "csistoragecapacities"} <= {r.resource for r in reflectors} - optional
