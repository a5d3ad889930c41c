"""What one client may cost the secure port, as k8s.io/apiserver's secure serving bounds
it (staging/src/k8s.io/apiserver/pkg/server/secure_serving.go, Serve: ReadHeaderTimeout
32 s, IdleTimeout 90 s, MaxHeaderBytes 1 MiB), plus a connection cap of our own, and the
process's file descriptor limit raised as a Go binary's runtime raises it at start.

Why a cap, which upstream has not: an idle TLS connection costs a Go server a few KiB
and this one ~75 KiB (with the listener's 32 KiB TLS read buffer; asyncio's default
256 KiB made it ~300 KiB), measured with the repro harness and
tests/e2e/test_secure_port_load.py. The chart limits the pod to 1 GiB and the
scheduler's own RSS reaches ~520 MiB at 15,000 nodes (docs/benchmarks.md), so the
port may take ~250 MiB: 2,000 idle TLS connections (~150 MiB) plus 64 MiB of request
headers being read across all of them, with room left for requests being answered.
Past the cap the port stops accepting (the kernel's backlog holds further clients)
until a connection closes; the deadlines bound how long anyone holds one.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Final

import structlog

log = structlog.get_logger(__name__)

READ_HEADER_TIMEOUT_SECONDS: Final = 32.0  # also the TLS handshake's, as Go derives it
IDLE_TIMEOUT_SECONDS: Final = 90.0
MAX_HEADER_BYTES: Final = 1 << 20
# Go's server reads MaxHeaderBytes plus this slack before answering 431.
HEADER_SLACK_BYTES: Final = 4096
MAX_CONNECTIONS: Final = 2000
HEADER_BYTES_BUDGET: Final = 64 << 20
# After EMFILE and kin, accepting waits this long (asyncio's own ACCEPT_RETRY_DELAY,
# Go's maximum backoff), and says so at most once per ACCEPT_LOG_INTERVAL_SECONDS.
ACCEPT_RETRY_SECONDS: Final = 1.0
ACCEPT_LOG_INTERVAL_SECONDS: Final = 30.0


@dataclass(frozen=True, slots=True)
class ServingLimits:
    """Defaults are upstream's; tests shorten the deadlines."""

    read_header_timeout: float = READ_HEADER_TIMEOUT_SECONDS
    idle_timeout: float = IDLE_TIMEOUT_SECONDS
    max_header_bytes: int = MAX_HEADER_BYTES
    max_connections: int = MAX_CONNECTIONS
    header_bytes_budget: int = HEADER_BYTES_BUDGET

    @classmethod
    def from_environment(cls) -> ServingLimits:
        """Upstream's, unless a test shortens the deadlines for a process it starts
        (KPYSCHED_SERVING_READ_HEADER_TIMEOUT_SECONDS, _IDLE_TIMEOUT_SECONDS): no flag,
        since kube-scheduler has none."""
        return cls(read_header_timeout=_seconds(
                       "KPYSCHED_SERVING_READ_HEADER_TIMEOUT_SECONDS",
                       READ_HEADER_TIMEOUT_SECONDS),
                   idle_timeout=_seconds("KPYSCHED_SERVING_IDLE_TIMEOUT_SECONDS",
                                         IDLE_TIMEOUT_SECONDS))


def _seconds(variable: str, default: float) -> float:
    raw = os.environ.get(variable)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValueError(f"{variable}={raw!r}: want a positive number of seconds")
    return value


def connection_cap(max_connections: int) -> int:
    """The cap, lowered to half the open files limit when that is small (a hard limit
    that could not be raised), so the scheduler's own API connections always find a
    descriptor: a full secure port must not stop scheduling."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(1, min(max_connections, soft // 2))


def raise_open_files_limit() -> tuple[int, int]:
    """Raises RLIMIT_NOFILE's soft limit to the hard limit, as Go's runtime does for
    kube-scheduler at start (os package, Go >= 1.19); returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as error:
        # Not fatal: Go ignores this failure too; the connection cap still holds.
        log.warning("process.open_files_limit_unchanged", soft=soft, hard=hard,
                    reason=str(error))
        return soft, soft
    log.debug("process.open_files_limit_raised", soft=soft, to=hard)
    return soft, hard
