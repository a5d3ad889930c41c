"""`python -m kpysched.serving.front`: the secure port in a process of its own.

Why: the scheduling loop is pure Python and holds the GIL. A thread serving the port
in the scheduler's process takes the GIL for every TLS handshake, header parse and
refusal, and anyone who can open a connection can keep it busy (a 190 requests/s
unauthenticated flood cost the loop ~25% of its throughput; docs/security.md). This
process owns the listening socket, TLS, authentication and authorization (the same
Server, AccessControl, limits, deadlines and reloading as in-process), and sends only
authorized requests to the scheduler process, over a Unix socket in a directory only
the scheduler's user can enter (kpysched.serving.forward, kpysched.serving.trusted).

Started and restarted by the scheduler process (kpysched.serving.front_process),
which hands it a FrontSpec on stdin and reads one JSON line from its stdout: the
port it listens on, or why it could not start. It dies with the scheduler process."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import pickle
import signal
import sys
from typing import Any, Final

import structlog

from kpysched import logs
from kpysched.serving.forward import Forwarder
from kpysched.serving.front_process import FrontSpec, failed, started
from kpysched.serving.server import Server

log = structlog.get_logger(__name__)

# <linux/prctl.h>
PR_SET_PDEATHSIG: Final = 1
# How often the front looks at its parent's pid: the death signal is the quick way
# out, this the sure one (the signal follows the thread that started the front).
PARENT_CHECK_SECONDS: Final = 1.0
EXIT_START_FAILED: Final = 2


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL when the thread that started us exits (the scheduler process, in
    practice); and if the parent is gone already, go now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        log.warning("front.pdeathsig_failed", errno=ctypes.get_errno())
    if os.getppid() != parent_pid:
        os._exit(0)


def _report(outcome: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(outcome) + "\n")
    sys.stdout.flush()


async def serve(spec: FrontSpec) -> int:
    forwarder = Forwarder(spec.backend_socket)
    server = Server.front(spec.config, forwarder.bind, forwarder.count)
    try:
        await server.start()
    except Exception as error:  # reported to the scheduler process, which raises it
        await forwarder.close()
        _report(failed(error))
        return EXIT_START_FAILED
    _report(started(server.port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PARENT_CHECK_SECONDS)
            if os.getppid() != spec.parent_pid:
                log.warning("front.parent_gone", parent_pid=spec.parent_pid)
                break
    finally:
        await server.stop()
        await forwarder.close()
    return 0


def main() -> int:
    spec = pickle.load(sys.stdin.buffer)  # from the parent, which we trust entirely
    if not isinstance(spec, FrontSpec):
        raise TypeError(f"expected a FrontSpec on stdin, got {type(spec).__name__}")
    logs.configure(spec.log_level, spec.log_format)
    die_with_parent(spec.parent_pid)
    return asyncio.run(serve(spec))


if __name__ == "__main__":
    sys.exit(main())
