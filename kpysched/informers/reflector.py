"""List-then-watch one API resource into a Store, forever, as upstream's Reflector does.

Requests go through kubernetes_asyncio's `ApiClient.call_api` with
`_preload_content=False`: the library still supplies host, TLS, the bearer token
(refreshed by its kubeconfig / in-cluster loaders) and the aiohttp session, and
hands back the aiohttp response unread, so list pages and watch lines reach
msgspec as raw bytes and no OpenAPI model is ever built.

Recovery, by cause:
- the watch ends (server timeout, EOF): watch again from the last resourceVersion;
- the watch goes silent past the progress deadline: the connection is presumed dead
  (half-open after a load-balancer failover or NAT timeout, where no FIN or RST ever
  arrives), so list again. Watches ask for bookmarks, which the API server sends about
  once a minute even when nothing changes, so silence longer than that is a dead
  connection, not a quiet resource;
- 410 Gone / Expired (HTTP or ERROR event): list again and reconcile the store;
- connection errors, other error statuses: exponential backoff, then retry.

An optional resource (one kpysched can schedule without, e.g. DeviceTaintRules, which
a v1.36 API server does not serve and an RBAC written for v1.36 does not grant) whose
list the API server refuses (403) or does not serve (404) reads as empty: the informer
counts as synced, so readiness does not wait on it forever, says once why and what to
do (`informer.optional_unavailable`), and keeps listing with the same capped backoff,
so that it starts working when the rule or the API appears. A required resource keeps
retrying unsynced, as upstream's informers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from typing import Generic

import aiohttp
import structlog
from kubernetes_asyncio.client import ApiClient

from kpysched.informers.decode import (
    ApiStatusError,
    Decoder,
    KubeList,
    MalformedResponseError,
    ObjectEvent,
    RawKeeper,
    ResourceExpiredError,
    status_error,
)
from kpysched.informers.optional import Unavailability, unavailability
from kpysched.informers.store import EventHandler, Store, T

log = structlog.get_logger(__name__)

DEFAULT_PAGE_SIZE = 500
# Upstream picks each watch's server-side timeout at random in [5, 10) minutes so
# that a fleet of clients does not reconnect in lockstep.
MIN_WATCH_TIMEOUT_SECONDS = 300.0
CONNECT_TIMEOUT_SECONDS = 10.0
LIST_READ_TIMEOUT_SECONDS = 60.0
# The API server sends a bookmark to each watcher about every minute (the cacher's
# bookmarkFrequency); no byte for half as long again means the connection is dead.
WATCH_PROGRESS_DEADLINE_SECONDS = 90.0
BACKOFF_INITIAL_SECONDS = 0.8
BACKOFF_MAX_SECONDS = 30.0
BACKOFF_JITTER = 0.2

# Failures that retrying can cure. Anything else is a bug and ends run().
RETRYABLE_ERRORS = (
    aiohttp.ClientError, OSError, TimeoutError, ApiStatusError, MalformedResponseError,
)


class WatchStalledError(Exception):
    """No event or bookmark arrived within the progress deadline."""


class Backoff:
    """Exponential delays with jitter: initial, doubling, capped."""

    def __init__(self, initial: float, maximum: float, jitter: float = BACKOFF_JITTER) -> None:
        self._initial = initial
        self._maximum = maximum
        self._jitter = jitter
        self._next = initial

    @property
    def maximum(self) -> float:
        return self._maximum

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self._maximum)
        return delay * (1 + self._jitter * random.random())

    def reset(self) -> None:
        self._next = self._initial


class Reflector(Generic[T]):
    """Keeps `store` equal to the server's view of one resource and tells `handler`.

    `path` is the collection path, e.g. `/api/v1/pods` or
    `/api/v1/namespaces/ns/pods`. Run `run()` as a supervised task; it returns
    only by cancellation or by an exception from the handler (a bug). Awaited
    again after cancellation, it resumes watching from where it stopped.
    """

    def __init__(
        self,
        api_client: ApiClient,
        path: str,
        object_type: type[T],
        list_type: type[KubeList[T]],
        handler: EventHandler[T],
        *,
        resource: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT_SECONDS,
        backoff_initial: float = BACKOFF_INITIAL_SECONDS,
        backoff_max: float = BACKOFF_MAX_SECONDS,
        keep_raw: RawKeeper[T] | None = None,
        optional_impact: str | None = None,
    ) -> None:
        self.resource = resource or path.rstrip("/").rsplit("/", 1)[-1]
        self.synced = asyncio.Event()
        self.watch_restarts = 0
        self.relists = 0
        self.stalls = 0
        # Settable before run(): how long a watch may stay silent before it is dropped.
        self.progress_deadline = WATCH_PROGRESS_DEADLINE_SECONDS
        self._api_client = api_client
        self._path = path
        self._store: Store[T] = Store(handler)
        self._decoder: Decoder[T] = Decoder(self.resource, object_type, list_type, keep_raw)
        selectors = (("labelSelector", label_selector), ("fieldSelector", field_selector))
        self._selectors = [(name, value) for name, value in selectors if value]
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._backoff = Backoff(backoff_initial, backoff_max)
        self._resource_version = ""
        self._must_list = True
        self._watched_since_list = False
        # None: a required resource. Else what going without it means (for the warning).
        self.optional_impact = optional_impact
        # Why an optional resource reads as empty now (403 or 404), None while it lists.
        self.unavailable: Unavailability | None = None

    @property
    def has_synced(self) -> bool:
        """True once the first full list has been delivered to the handler."""
        return self.synced.is_set()

    @property
    def store(self) -> Mapping[str, T]:
        """Last seen objects, keyed by uid; read-only."""
        return self._store.objects

    @property
    def resource_version(self) -> str:
        """The resourceVersion the next watch starts from (bookmarks included)."""
        return self._resource_version

    @property
    def decode_failures(self) -> int:
        return self._decoder.failures

    async def run(self) -> None:
        while True:
            if self._must_list:
                try:
                    await self._list_and_replace()
                except RETRYABLE_ERRORS as error:
                    if self._read_as_empty(error):
                        await asyncio.sleep(self._backoff.next_delay())
                    else:
                        await self._back_off("informer.list_failed", error)
                    continue
            first_watch_after_list = not self._watched_since_list
            try:
                received = await self._watch()
            except ResourceExpiredError as error:
                log.info("informer.relist", resource=self.resource, reason=str(error),
                         resource_version=self._resource_version)
                self._must_list = True
                if first_watch_after_list:
                    # The version a list just returned is already gone: do not spin
                    # between list and watch.
                    await self._back_off("informer.watch_failed", error)
                continue
            except WatchStalledError as error:
                # Whatever was sent on the dead connection is lost to us: list again
                # on a fresh one and reconcile, rather than trust the old version.
                self.stalls += 1
                log.warning("informer.watch_stalled", resource=self.resource,
                            reason=str(error), resource_version=self._resource_version)
                self._must_list = True
                continue
            except RETRYABLE_ERRORS as error:
                if self._unavailable_error(error) is not None:
                    # Refused or no longer served since the list: the list decides
                    # (and says) whether it now reads as empty.
                    self._must_list = True
                await self._back_off("informer.watch_failed", error)
                continue
            if not received:
                # A watch that closed without a single event is as good as refused.
                await self._back_off("informer.watch_empty", None)

    def _unavailable_error(self, error: BaseException) -> Unavailability | None:
        if self.optional_impact is None:
            return None
        return unavailability(error, self._path, self.resource)

    def _read_as_empty(self, error: BaseException) -> bool:
        """For an optional resource the API server refuses or does not serve: note it,
        warn when that is news, and count the informer as synced (its store stays as
        it is: empty before the first list, the last view after one)."""
        found = self._unavailable_error(error)
        if found is None:
            return False
        if self.unavailable is None or self.unavailable.status != found.status:
            log.warning("informer.optional_unavailable", resource=self.resource,
                        status=found.status, reason=found.reason,
                        meaning=f"{found.meaning}; {self.optional_impact}",
                        action=found.action, retry_max_seconds=self._backoff.maximum)
        self.unavailable = found
        if not self.has_synced:
            self.synced.set()
        return True

    async def _back_off(self, event: str, error: BaseException | None) -> None:
        delay = self._backoff.next_delay()
        log.warning(event, resource=self.resource, error=_describe(error),
                    retry_in=round(delay, 2))
        await asyncio.sleep(delay)

    async def _list_and_replace(self) -> None:
        items, resource_version = await self._list()
        relisting = self.has_synced
        self._store.replace(items)
        self._resource_version = resource_version
        self._must_list = False
        self._watched_since_list = False
        if self.unavailable is not None:
            log.info("informer.optional_available", resource=self.resource,
                     objects=len(items), was=self.unavailable.status)
            self.unavailable = None
            # Read as empty until now: these objects are news, not a relist.
            relisting = False
        if relisting:
            self.relists += 1
            log.info("informer.relisted", resource=self.resource, objects=len(items),
                     resource_version=resource_version)
        else:
            self.synced.set()
            log.info("informer.synced", resource=self.resource, objects=len(items),
                     resource_version=resource_version)

    async def _list(self) -> tuple[list[T], str]:
        """All pages of a consistent (quorum) list; returns items and the list's RV."""
        items: list[T] = []
        limit = self._page_size
        continue_token = ""
        timeout = aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT_SECONDS,
                                        sock_read=LIST_READ_TIMEOUT_SECONDS)
        while True:
            params = list(self._selectors)
            if limit:
                params.append(("limit", str(limit)))
            if continue_token:
                params.append(("continue", continue_token))
            try:
                response = await self._get(params, timeout)
                try:
                    body = await response.read()
                finally:
                    response.release()
            except ResourceExpiredError:
                if not continue_token:
                    raise
                # The continue token outlived etcd compaction: like client-go's pager,
                # fall back to one unpaginated list.
                log.info("informer.list_continue_expired", resource=self.resource)
                items.clear()
                limit = 0
                continue_token = ""
                continue
            page, meta = self._decoder.decode_list(body)
            items.extend(page)
            if not meta.continue_:
                return items, meta.resource_version
            continue_token = meta.continue_

    async def _watch(self) -> bool:
        """One watch request, applied line by line; True if any event arrived."""
        if self._watched_since_list:
            self.watch_restarts += 1
            log.info("informer.watch_restarted", resource=self.resource,
                     resource_version=self._resource_version)
        self._watched_since_list = True
        timeout_seconds = int(self._min_watch_timeout * (1 + random.random()))
        params = [
            *self._selectors,
            ("watch", "true"),
            ("resourceVersion", self._resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        # sock_read bounds the silence between two reads, which is the progress deadline.
        timeout = aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT_SECONDS,
                                        sock_read=self.progress_deadline)
        response = await self._get(params, timeout)
        received = False
        try:
            async with contextlib.aclosing(split_lines(response.content.iter_any())) as lines:
                async for line in lines:
                    self._apply(line)  # raises on an ERROR event
                    if not received:
                        received = True
                        self._backoff.reset()  # the server is serving us again
        except TimeoutError as error:
            raise WatchStalledError(
                f"no event or bookmark for {self.progress_deadline:g}s") from error
        finally:
            response.close()
        return received

    def _apply(self, line: bytes) -> None:
        item = self._decoder.decode_event(line)
        if item is None:
            return
        if isinstance(item, ObjectEvent):
            if item.type == "DELETED":
                self._store.delete(item.obj)
            else:
                self._store.upsert(item.obj)
            self._resource_version = item.obj.metadata.resource_version
        elif item.resource_version:
            self._resource_version = item.resource_version

    async def _get(
        self, params: list[tuple[str, str]], client_timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        response: aiohttp.ClientResponse = await self._api_client.call_api(
            self._path, "GET",
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=client_timeout,
        )
        if response.status != 200:
            try:
                body = await response.read()
            finally:
                response.release()
            raise status_error(response.status, body)
        return response


async def split_lines(chunks: AsyncIterable[bytes]) -> AsyncGenerator[bytes, None]:
    """Newline-delimited watch events from chunks cut anywhere; blank lines dropped.

    Done here rather than with StreamReader.readline, whose buffer limit a large
    object (etcd allows 1.5 MiB) could exceed.
    """
    partial: list[bytes] = []  # a line split across chunks
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if partial:
                partial.append(chunk[start:end])
                line = b"".join(partial)
                partial.clear()
            else:
                line = chunk[start:end]
            start = end + 1
            if line.strip():
                yield line
        if start < len(chunk):
            partial.append(chunk[start:])


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "closed without data"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
