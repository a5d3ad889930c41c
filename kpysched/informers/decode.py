"""Raw API bytes to typed objects, with msgspec, for one resource.

A watch line is decoded in two steps: the envelope (type + raw object bytes),
then the object into the resource's slim struct. An object that does not fit
the struct is logged once (per object version) and skipped; it never ends the
watch. Bookmarks are read with a metadata-only struct because their object is a
stub (a bookmark Pod carries `"spec": {"containers": null}`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import msgspec
import structlog

from kpysched.informers.store import T, object_key
from kpysched.objects.api import ListMeta, Status, WatchEvent

log = structlog.get_logger(__name__)

T_co = TypeVar("T_co", covariant=True)

_DETAIL_LIMIT = 200


class KubeList(Protocol[T_co]):
    """A list response (PodList, NodeList, ...)."""

    @property
    def metadata(self) -> ListMeta: ...

    @property
    def items(self) -> Sequence[T_co]: ...


class ApiStatusError(Exception):
    """The API server answered a request, or ended a watch, with an error Status."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class ResourceExpiredError(ApiStatusError):
    """410 Gone / Expired: the resourceVersion is no longer served; relist."""


class MalformedResponseError(Exception):
    """A response body that is not the JSON shape of its endpoint at all."""


class _IdentityMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""


class _Identity(msgspec.Struct):
    """Just enough of any object to name it and track its version."""

    metadata: _IdentityMeta = msgspec.field(default_factory=_IdentityMeta)


class _RawList(msgspec.Struct):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[msgspec.Raw] = []


@dataclass(slots=True, frozen=True)
class ObjectEvent(Generic[T]):
    """ADDED, MODIFIED or DELETED, with the decoded object."""

    type: str
    obj: T


@dataclass(slots=True, frozen=True)
class Progress:
    """A bookmark, or a skipped object: only the resourceVersion moves on."""

    resource_version: str


OBJECT_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED"})


def status_error(code: int, body: bytes) -> ApiStatusError:
    """The error for a non-200 answer; 410 becomes ResourceExpiredError."""
    try:
        status = msgspec.json.decode(body, type=Status)
    except msgspec.DecodeError:
        status = Status(code=code, message=body[:_DETAIL_LIMIT].decode(errors="replace"))
    error_type = ResourceExpiredError if code == 410 else ApiStatusError
    return error_type(code, status.reason, status.message)


# Called with each decoded object and the bytes it was decoded from.
RawKeeper = Callable[[T, bytes], None]


class Decoder(Generic[T]):
    """Decodes one resource's list pages and watch lines."""

    def __init__(
        self, resource: str, object_type: type[T], list_type: type[KubeList[T]],
        keep_raw: RawKeeper[T] | None = None,
    ) -> None:
        self.resource = resource
        self.failures = 0
        # Given each decoded object and its JSON as the API server sent it (scheduler
        # extenders are sent whole objects, which the slim structs do not hold).
        self._keep_raw = keep_raw
        self._object = msgspec.json.Decoder(object_type)
        self._list = msgspec.json.Decoder(list_type)
        self._raw_list = msgspec.json.Decoder(_RawList)
        self._event = msgspec.json.Decoder(WatchEvent)
        self._identity = msgspec.json.Decoder(_Identity)
        self._status = msgspec.json.Decoder(Status)
        # key -> resourceVersion already reported, so a relist does not log it again.
        self._reported: dict[str, str] = {}

    def decode_list(self, body: bytes) -> tuple[Sequence[T], ListMeta]:
        """One list page. Malformed items are logged and left out; the rest stay."""
        try:
            # Item by item (below) when each item's JSON is kept too.
            page = self._list.decode(body) if self._keep_raw is None else None
        except msgspec.DecodeError:
            page = None  # some item does not fit: go item by item below
        if page is not None:
            if self._reported:
                for obj in page.items:
                    self._reported.pop(object_key(obj.metadata), None)
            return page.items, page.metadata
        try:
            raw = self._raw_list.decode(body)
        except msgspec.DecodeError as error:
            self._failed(str(error), None)
            message = f"{self.resource}: list body is not a list: {error}"
            raise MalformedResponseError(message) from None
        items = [obj for obj in map(self.decode_object, raw.items) if obj is not None]
        return items, raw.metadata

    def decode_object(self, raw: bytes | msgspec.Raw) -> T | None:
        try:
            obj = self._object.decode(raw)
        except msgspec.DecodeError as error:
            self._failed(str(error), self._identify(raw))
            return None
        if self._reported:
            self._reported.pop(object_key(obj.metadata), None)
        if self._keep_raw is not None:
            self._keep_raw(obj, bytes(raw))
        return obj

    def decode_event(self, line: bytes) -> ObjectEvent[T] | Progress | None:
        """One watch line. None when nothing in it can be used (logged).

        Raises ResourceExpiredError for an ERROR event with code 410, ApiStatusError
        for any other ERROR event: the server ends the watch after either.
        """
        try:
            event = self._event.decode(line)
        except msgspec.DecodeError as error:
            self._failed(f"watch event: {error}", None)
            return None
        if event.type in OBJECT_EVENT_TYPES:
            obj = self.decode_object(event.object)
            if obj is not None:
                return ObjectEvent(event.type, obj)
            identity = self._identify(event.object)
            return Progress(identity.resource_version) if identity is not None else None
        if event.type == "BOOKMARK":
            identity = self._identify(event.object)
            if identity is None or not identity.resource_version:
                self._failed("bookmark without metadata.resourceVersion", identity)
                return None
            return Progress(identity.resource_version)
        if event.type == "ERROR":
            raise self._error_event(event.object)
        self._failed(f"unknown watch event type {event.type!r}", self._identify(event.object))
        return None

    def _error_event(self, raw: msgspec.Raw) -> ApiStatusError:
        try:
            status = self._status.decode(raw)
        except msgspec.DecodeError as error:
            self._failed(f"ERROR event: {error}", None)
            return ApiStatusError(0, "Malformed", "the watch ended with an unreadable ERROR event")
        if status.code == 410 or status.reason in ("Expired", "Gone"):
            return ResourceExpiredError(410, status.reason, status.message)
        return ApiStatusError(status.code, status.reason, status.message)

    def _identify(self, raw: bytes | msgspec.Raw) -> _IdentityMeta | None:
        try:
            return self._identity.decode(raw).metadata
        except msgspec.DecodeError:
            return None

    def _failed(self, reason: str, identity: _IdentityMeta | None) -> None:
        self.failures += 1
        if identity is None:
            log.warning("informer.decode_failed", resource=self.resource, reason=reason)
            return
        key = object_key(identity)
        if self._reported.get(key) == identity.resource_version:
            return
        self._reported[key] = identity.resource_version
        name = f"{identity.namespace}/{identity.name}" if identity.namespace else identity.name
        log.warning(
            "informer.decode_failed", resource=self.resource, reason=reason,
            object=name, uid=identity.uid, resource_version=identity.resource_version,
        )

