"""A TCP proxy in front of kube-apiserver that can make its connections go silent.

`stall()` turns every connection open at that moment half-dead, as a load-balancer
failover or an expired NAT entry does: the sockets stay open, no FIN or RST is
sent, and no byte passes in either direction any more. Connections made after it
are forwarded normally, so a client that notices and reconnects gets through. TLS
passes through untouched (the API server's certificate names 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType

from tests.cluster.cluster import free_port

CHUNK = 65536


class _Link:
    """One client connection and its upstream; `stalled` stops all forwarding."""

    def __init__(self) -> None:
        self.stalled = False
        self.writers: list[asyncio.StreamWriter] = []


class StallProxy:
    """`with StallProxy(port) as proxy:` listens on proxy.port, forwards to `port`."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = free_port()
        self._links: list[_Link] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="stall proxy", daemon=True)
        self._started = threading.Event()
        self._server: asyncio.Server | None = None
        self.connections = 0

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", self.port))
        self._started.set()
        self._loop.run_forever()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                self.target_host, self.target_port)
        except OSError:
            writer.close()
            return
        link = _Link()
        link.writers = [writer, upstream_writer]
        self._links.append(link)
        await asyncio.gather(self._pipe(reader, upstream_writer, link),
                             self._pipe(upstream_reader, writer, link),
                             return_exceptions=True)

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                    link: _Link) -> None:
        while True:
            data = await source.read(CHUNK)
            if link.stalled:
                # Swallow everything and never close: the peer sees pure silence.
                if not data:
                    await asyncio.Event().wait()
                continue
            if not data:
                sink.close()
                return
            sink.write(data)
            await sink.drain()

    def stall(self) -> int:
        """Silence every connection open now; returns how many there were."""
        done = threading.Event()
        count = 0

        def mark() -> None:
            nonlocal count
            for link in self._links:
                if not link.stalled:
                    link.stalled = True
                    count += 1
            done.set()

        self._loop.call_soon_threadsafe(mark)
        done.wait(5)
        return count

    def __enter__(self) -> StallProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the stall proxy did not start")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for link in self._links:
                for writer in link.writers:
                    writer.close()
            others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
