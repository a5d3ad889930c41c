"""An asyncio event loop of its own on a daemon thread, for work that must not wait
behind the scheduling loop.

The scheduling loop runs Filter and Score as synchronous Python on the main loop; a
long cycle holds that loop for its whole length. Work with a deadline of its own (the
Lease renewal, which loses leadership if it misses renewDeadline) therefore runs on a
LoopThread: the interpreter hands the GIL between threads every few milliseconds, so
the thread's timers fire and its requests go out however long a cycle takes.

`run(coro)` is awaited from the caller's loop and runs `coro` on the thread's loop;
cancelling the awaiting task cancels the coroutine on the thread too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

Result = TypeVar("Result")


class LoopThread:
    """A daemon thread running an event loop until close()."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self.running:
            return
        self._ready.clear()
        self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            # Whatever is still pending was abandoned by close(): end it before the
            # loop goes, so no coroutine is left never awaited.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def run(self, coro: Coroutine[Any, Any, Result]) -> Result:
        """Run `coro` on the thread's loop and return (or raise) what it does."""
        self.start()
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)

    def run_blocking(self, coro: Coroutine[Any, Any, Result]) -> Result:
        """Run `coro` on the thread's loop and wait for it here, blocking the caller
        (its own loop included) until it ends; return (or raise) what it does."""
        self.start()
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def call_soon(self, callback: Any, *args: Any) -> None:
        """Run a plain callback on the thread's loop (e.g. setting one of its Events)."""
        if self._loop is not None and self.running:
            self._loop.call_soon_threadsafe(callback, *args)

    async def close(self, timeout: float = 10.0) -> None:
        """Stop the loop and wait for the thread to end (without blocking the caller's
        loop while it does)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None or not thread.is_alive():
            return
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, timeout)
