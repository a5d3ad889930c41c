"""A lean, unthrottled raw-JSON client for the benchmark's own API traffic.

The benchmark shares the machine's cores with the API server and the scheduler
under test, so it must spend as little CPU as it can per request: bodies are
encoded with msgspec, replies are never decoded into models, and bulk creates run
over a fixed pool of keep-alive connections with bounded concurrency.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable
from types import TracebackType
from typing import Any

import aiohttp
import msgspec

from tests.cluster.cluster import ClusterState

DEFAULT_CONCURRENCY = 48
_encoder = msgspec.json.Encoder()


class ApiError(RuntimeError):
    """The API server refused a request the benchmark needs; the message says which."""


class BenchApi:
    """`async with BenchApi(state) as api:` talks to the cluster as its admin."""

    def __init__(self, state: ClusterState, *, token: str | None = None,
                 concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.server = state.server
        self._ca_file = state.ca_file
        self._token = token or state.token
        self.concurrency = concurrency
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> BenchApi:
        context = ssl.create_default_context(cafile=self._ca_file)
        connector = aiohttp.TCPConnector(ssl=context, limit=self.concurrency + 8)
        self._session = aiohttp.ClientSession(
            connector=connector, headers={"Authorization": f"Bearer {self._token}"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "BenchApi used outside `async with`"
        return self._session

    async def request(self, method: str, path: str, body: Any = None, *,
                      params: dict[str, str] | None = None,
                      content_type: str = "application/json",
                      timeout: float = 60.0) -> tuple[int, bytes]:
        data = body if isinstance(body, bytes | None) else _encoder.encode(body)
        async with self.session.request(
                method, f"{self.server}{path}", data=data, params=params,
                headers={"Content-Type": content_type, "Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=timeout)) as response:
            return response.status, await response.read()

    async def must(self, method: str, path: str, body: Any = None, *,
                   params: dict[str, str] | None = None,
                   content_type: str = "application/json") -> bytes:
        status, reply = await self.request(method, path, body, params=params,
                                           content_type=content_type)
        if not 200 <= status < 300:
            raise ApiError(f"{method} {path} answered {status}: {reply[:400]!r}")
        return reply

    async def get_text(self, path: str) -> str:
        return (await self.must("GET", path)).decode()

    async def create_all(
        self, items: Iterable[tuple[str, bytes]],
        on_created: Callable[[int, float], None] | None = None,
        *, method: str = "POST", content_type: str = "application/json",
    ) -> int:
        """POST every (path, encoded body) with `concurrency` requests in flight.

        on_created(index, monotonic time the reply arrived) runs for each success;
        409 Already Exists counts as created (a retried request). Returns how many.
        With method="PATCH" (and a patch content type) it patches instead.
        """
        iterator = iter(enumerate(items))
        created = 0

        async def worker() -> None:
            nonlocal created
            for index, (path, body) in iterator:
                for attempt in range(5):
                    try:
                        status, reply = await self.request(method, path, body,
                                                           content_type=content_type)
                    except (aiohttp.ClientError, TimeoutError) as error:
                        if attempt == 4:
                            raise ApiError(f"{method} {path} failed: {error!r}") from error
                        await asyncio.sleep(0.2 * (attempt + 1))
                        continue
                    if 200 <= status < 300 or status == 409:
                        break
                    if status == 429 or status >= 500:  # server overloaded: back off
                        await asyncio.sleep(0.2 * (attempt + 1))
                        continue
                    raise ApiError(f"{method} {path} answered {status}: {reply[:400]!r}")
                else:
                    raise ApiError(f"{method} {path} still failing after 5 attempts")
                created += 1
                if on_created is not None:
                    on_created(index, time.monotonic())

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        return created

    async def stream_lines(self, path: str, params: dict[str, str]) -> AsyncIterator[bytes]:
        """The lines of a long-running GET (a watch), as they arrive."""
        async with self.session.get(f"{self.server}{path}", params=params,
                                    timeout=aiohttp.ClientTimeout(total=None)) as response:
            if response.status != 200:
                raise ApiError(f"watch {path} answered {response.status}: "
                               f"{(await response.read())[:400]!r}")
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line:
                        yield line


def encode(body: Any) -> bytes:
    return _encoder.encode(body)
