"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection.

The algorithm follows client-go v0.36.4 tools/leaderelection (uncoordinated mode):
candidates try every retryPeriod (+ up to 120 % jitter); a record is "valid" for the
Lease's leaseDurationSeconds after *we* last saw it change, measured on our own
monotonic clock, so clock skew between hosts does not matter; the leader renews every
retryPeriod, first optimistically with its cached object (the resourceVersion makes a
stale write fail), then by the slow path (GET, then PUT); a leader that cannot renew
within renewDeadline steps down. ReleaseOnCancel (kube-scheduler sets it) writes
holderIdentity "" and leaseDurationSeconds 1 on the way out, so a standby takes over
within about one retryPeriod instead of a whole leaseDuration.

kubernetes_asyncio.leaderelection (36.1) was read and is not used, because it
differs from client-go where it matters:
- its Config rejects retryPeriod < 1s, which client-go allows;
- it writes renewTime/acquireTime from local wall time marked "Z" (wrong off UTC) and
  never maintains leaseTransitions;
- its lock asserts a non-empty holderIdentity, so it cannot release the lease;
- a follower waits the *configured* leaseDuration, not the Lease's, so a released
  lease (leaseDurationSeconds 1) is taken only after a full leaseDuration;
- renewDeadline does not bound a hung request, and any error other than an HTTP
  reply (a dropped connection) escapes run();
- the leading task is cancelled but never awaited, and a cancelled run() leaves it
  running.
So we speak Lease JSON through RawApi (kubernetes_asyncio still provides auth, TLS
and connections). Two deliberate differences from client-go: a leader that reads the
Lease held by another identity (still valid) steps down at once rather than retrying
until renewDeadline, which shortens the time two schedulers could both bind; and
release() only clears the Lease if a fresh read still names us (client-go checks its
cached view, so it could overwrite a newer holder).

The campaign and the renewals run on a thread of their own
(kpysched.framework.runtime.loop_thread), with an ApiClient of their own, so their own
connection: kube-scheduler renews on its own goroutine, and here a scheduling cycle
holds the main loop for as long as it runs. On the main loop, a cycle of 20 s (one
tenant's pod with thousands of affinity terms) would miss a 10 s renewDeadline and hand
the Lease to a standby that meets the same pod. The leading work itself (the scheduling
loop) stays on the caller's loop.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import msgspec
import structlog
from kubernetes_asyncio import client

from kpysched.api.client import RawApi
from kpysched.api.response import ApiResponse
from kpysched.api.times import micro_time
from kpysched.framework.runtime.loop_thread import LoopThread
from kpysched.metrics import NoMetrics, SchedulerMetrics

log = structlog.get_logger(__name__)

# client-go's leaderelection.JitterFactor.
JITTER_FACTOR: Final = 1.2
# kube-scheduler's WatchDog: NewLeaderHealthzAdaptor(20 * time.Second).
HEALTHZ_TOLERANCE_SECONDS: Final = 20.0


def default_identity() -> str:
    """hostname + "_" + a random UUID, as kube-scheduler: two processes on one host
    must never both think they hold the lease."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaseLostError(RuntimeError):
    """Leadership ended against our will. kube-scheduler exits 1 here: the cache and
    queue were built for a leader and cannot be trusted by a follower."""


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """client-go's LeaderElectionRecord, read from and written to a Lease spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    leader_transitions: int = 0
    preferred_holder: str = ""
    strategy: str = ""

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaseRecord:
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=spec.get("leaseDurationSeconds") or 0,
            acquire_time=spec.get("acquireTime") or "",
            renew_time=spec.get("renewTime") or "",
            leader_transitions=spec.get("leaseTransitions") or 0,
            preferred_holder=spec.get("preferredHolder") or "",
            strategy=spec.get("strategy") or "",
        )

    def to_spec(self) -> dict[str, Any]:
        """LeaderElectionRecordToLeaseSpec: holderIdentity is written even when empty."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time or None,
            "renewTime": self.renew_time or None,
            "leaseTransitions": self.leader_transitions,
        }
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        if self.strategy:
            spec["strategy"] = self.strategy
        return spec


class _LockError(Exception):
    def __init__(self, action: str, response: ApiResponse) -> None:
        super().__init__(f"{action}: HTTP {response.status}: {response.message()}")
        self.status = response.status


class _LeaseLock:
    """client-go's resourcelock.LeaseLock: remembers the last Lease object it read or
    wrote, whose resourceVersion makes every update conditional."""

    def __init__(self, namespace: str, name: str, timeout: float,
                 annotations: Mapping[str, str]) -> None:
        # Set by the lease thread: the RawApi must live on the loop that uses it.
        self.raw: RawApi | None = None
        self.annotations = dict(annotations)
        self._namespace = namespace
        self._name = name
        self._timeout = timeout
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self._lease: dict[str, Any] | None = None

    async def _request(self, method: str, path: str, body: Any = None) -> ApiResponse:
        assert self.raw is not None, "the lease thread sets the lock's RawApi first"
        return await self.raw.request(method, path, body, timeout=self._timeout,
                                       throttle=False)

    def _keep(self, response: ApiResponse) -> None:
        self._lease = msgspec.json.decode(response.body)

    def _annotated(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """`metadata`'s annotations with ours set; ours with an empty value are removed
        (a previous holder's, which no longer hold)."""
        if not self.annotations:
            return {}
        merged = {**(metadata.get("annotations") or {}), **self.annotations}
        return {"annotations": {key: value for key, value in merged.items() if value}}

    async def get(self) -> LeaseRecord | None:
        """The current record, or None when the Lease does not exist."""
        response = await self._request("GET", f"{self._collection}/{self._name}")
        if response.status == 404:
            return None
        if not response.ok:
            raise _LockError("get lease", response)
        self._keep(response)
        assert self._lease is not None
        return LeaseRecord.from_spec(self._lease.get("spec") or {})

    async def create(self, record: LeaseRecord) -> None:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self._name, "namespace": self._namespace,
                             **self._annotated({})},
                "spec": record.to_spec()}
        response = await self._request("POST", self._collection, body)
        if not response.ok:
            raise _LockError("create lease", response)
        self._keep(response)

    async def update(self, record: LeaseRecord) -> None:
        if self._lease is None:
            raise RuntimeError("lease not read yet: get or create it first")
        metadata = self._lease.get("metadata") or {}
        if record.holder_identity:
            # Only the holder writes the Lease: its annotations describe the holder.
            metadata = {**metadata, **self._annotated(metadata)}
        body = {**self._lease, "metadata": metadata, "spec": record.to_spec()}
        response = await self._request("PUT", f"{self._collection}/{self._name}", body)
        if not response.ok:
            raise _LockError("update lease", response)
        self._keep(response)


class LeaderElector:
    """Campaign for a Lease and run `on_started_leading` while holding it.

    run() tries until it acquires the lease, then starts `on_started_leading()` as a
    task and renews. Leadership ends when renewal fails (run() raises LeaseLostError),
    when the leading task ends (run() returns, or raises its exception), when release()
    is called (run() returns) or when run() is cancelled. Each time the leading task is
    cancelled and awaited *before* the lease is released, so its clean-up (draining
    bindings) finishes while we still hold the lease. `on_stopped_leading` is called
    once when run() ends, whether or not we ever led, as client-go does.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str,
        name: str,
        on_started_leading: Callable[[], Coroutine[Any, Any, None]],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        metrics: SchedulerMetrics | None = None,
        metric_name: str | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        # NewLeaderElector's checks; the Lease holds whole seconds, hence >= 1s.
        if lease_duration < 1:
            raise ValueError(f"lease_duration must be at least 1s (got {lease_duration})")
        if lease_duration <= renew_deadline:
            raise ValueError(f"lease_duration must be greater than renew_deadline "
                             f"({lease_duration} <= {renew_deadline})")
        if retry_period <= 0:
            raise ValueError(f"retry_period must be greater than zero (got {retry_period})")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period * "
                             f"{JITTER_FACTOR} ({renew_deadline} <= "
                             f"{JITTER_FACTOR * retry_period})")
        self.identity = default_identity() if identity is None else identity
        if not self.identity:
            raise ValueError("identity must not be empty")
        self.description = f"{namespace}/{name}"
        self._lease_duration = lease_duration
        self._renew_deadline = renew_deadline
        self._retry_period = retry_period
        self._release_on_cancel = release_on_cancel
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._metrics = metrics if metrics is not None else NoMetrics()
        self._metric_name = metric_name or name
        # NewFromKubeconfig: one hung request must not use up the whole renewDeadline.
        # `annotations` (e.g. where this replica serves) are written on the Lease with
        # every acquire and renewal, so whoever reads the holder also finds them.
        self._lock = _LeaseLock(namespace, name, timeout=max(1.0, renew_deadline / 2),
                                annotations=annotations or {})
        # The lease thread's own ApiClient shares this Configuration (its credentials,
        # renewed in place) but not its connections.
        self._configuration = api_client.configuration
        self._user_agent = api_client.user_agent
        self._thread = LoopThread(f"kpysched-lease {self.description}")
        self._lease_client: client.ApiClient | None = None
        self._main_loop: asyncio.AbstractEventLoop | None = None
        self._observed: LeaseRecord | None = None
        self._observed_time = 0.0
        self._reported_leader = ""
        self._leading = False
        self._started = False
        self._running = False
        # Set when renewal failed: the lease is (or may be) someone else's now.
        self.lost = False
        # On the caller's loop: release() asks run() to end.
        self._stop = asyncio.Event()
        self._finished = asyncio.Event()
        # On the lease thread's loop (made there): ends the campaign or the renewals.
        self._halt: asyncio.Event | None = None
        self._halt_requested = False
        self._metrics.set_leader(self._metric_name, False)

    # --- public ------------------------------------------------------------------

    def annotate(self, annotations: Mapping[str, str]) -> None:
        """Annotations written on the Lease from the next acquire or renewal on; an
        empty value removes the key."""
        self._lock.annotations = dict(annotations)

    @property
    def is_leader(self) -> bool:
        """True from acquiring the lease until we stop leading."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder identity last observed ("" when none)."""
        return self._observed.holder_identity if self._observed is not None else ""

    def check(self, max_tolerable_expired: float = HEALTHZ_TOLERANCE_SECONDS) -> str | None:
        """client-go's LeaderElector.Check for /healthz and /readyz: a leader that has not
        renewed for leaseDuration + tolerance is unhealthy (None when healthy)."""
        if not self._leading:
            return None
        if time.monotonic() - self._observed_time > self._lease_duration + max_tolerable_expired:
            return f"failed election to renew leadership on lease {self.description}"
        return None

    async def run(self) -> None:
        if self._started:
            raise RuntimeError("a LeaderElector runs once; build a new one")
        self._started = True
        self._running = True
        self._main_loop = asyncio.get_running_loop()
        acquired = self._main_loop.create_future()
        election = asyncio.ensure_future(self._thread.run(self._elect(acquired)))
        stopping = asyncio.ensure_future(self._stop.wait())
        led = False
        try:
            await asyncio.wait({acquired, election, stopping},
                               return_when=asyncio.FIRST_COMPLETED)
            if acquired.done():
                led = True
                await self._lead(election, stopping)
            elif election.done():
                election.result()  # the campaign failed: raise what it raised
        finally:
            stopping.cancel()
            if not led:
                await self._halt_election(election)
                # Acquired in the same moment we were stopped: never led, still hand
                # the lease back.
                if self._holds_observed() and (self._release_on_cancel
                                               or self._stop.is_set()):
                    await self._thread.run(self._release())
            self._set_leading(False)
            await self._close_thread()
            self._running = False
            self._finished.set()
            if self._on_stopped_leading is not None:
                self._on_stopped_leading()

    async def release(self) -> None:
        """Hand over gracefully: stop campaigning, end the leading task and, if we hold
        the lease, release it. Returns once run() has finished."""
        self._stop.set()
        if self._running:
            await self._finished.wait()
        elif self._holds_observed():
            try:
                await self._thread.run(self._release())
            finally:
                await self._close_thread()

    # --- on the caller's loop --------------------------------------------------------

    async def _lead(self, election: asyncio.Future[str | None],
                    stopping: asyncio.Future[Any]) -> None:
        self._set_leading(True)
        leading = asyncio.create_task(self._on_started_leading(),
                                      name=f"leading {self.description}")
        try:
            watched: set[asyncio.Future[Any]] = {leading, election, stopping}
            await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Renewal ended on its own: the lease is lost, and the leading task must stop
            # writing at once rather than wind down (it reads `lost` while cancelled).
            self.lost = election.done()
            # Stop renewing, then the work: it finishes while the lease is ours.
            await self._halt_election(election)
            leading.cancel()
            await asyncio.wait({leading})
            self._set_leading(False)
            if self._release_on_cancel or self._stop.is_set():
                await self._thread.run(self._release())
        if not leading.cancelled() and (error := leading.exception()) is not None:
            raise error
        if self.lost:
            reason = election.result()  # raises what renewal raised
            log.error("leader.lost", lease=self.description, identity=self.identity,
                      reason=reason)
            raise LeaseLostError(f"lost the lease {self.description}: {reason}")
        log.info("leader.stopped", lease=self.description, identity=self.identity,
                 requested=self._stop.is_set())

    async def _halt_election(self, election: asyncio.Future[str | None]) -> None:
        """End the campaign or the renewals on the lease thread and wait until they have
        (so no renewal is in flight when the lease is released)."""
        if election.done():
            return
        self._halt_requested = True
        self._thread.call_soon(self._set_halt)
        await asyncio.wait({election})

    async def _close_thread(self) -> None:
        if self._lease_client is not None:
            await self._thread.run(self._close_lease_client())
        await self._thread.close()

    def _to_main(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run a callback of the caller's on the caller's loop."""
        if self._main_loop is not None and not self._main_loop.is_closed():
            self._main_loop.call_soon_threadsafe(callback, *args)

    # --- on the lease thread ---------------------------------------------------------

    def _set_halt(self) -> None:
        if self._halt is not None:
            self._halt.set()

    def _connect(self) -> None:
        """The lock's RawApi on an ApiClient of this thread's own (made on its loop)."""
        if self._lease_client is None:
            self._lease_client = client.ApiClient(self._configuration)
            if self._user_agent:
                self._lease_client.user_agent = self._user_agent
            self._lock.raw = RawApi(self._lease_client, qps=0)

    async def _close_lease_client(self) -> None:
        if self._lease_client is not None:
            await self._lease_client.close()
            self._lease_client = None
            self._lock.raw = None

    async def _elect(self, acquired: asyncio.Future[bool]) -> str | None:
        """Campaign, tell the caller once the lease is ours, then renew. Returns why
        renewal failed, or None when halted first."""
        self._halt = asyncio.Event()
        if self._halt_requested:
            return None
        self._connect()
        if not await self._acquire():
            return None
        self._to_main(_settle, acquired)
        renewing = asyncio.create_task(self._renew(), name=f"renew {self.description}")
        halted = asyncio.create_task(self._halt.wait())
        try:
            await asyncio.wait({renewing, halted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            renewing.cancel()
            halted.cancel()
            await asyncio.wait({renewing, halted})
        return None if renewing.cancelled() else renewing.result()

    async def _acquire(self) -> bool:
        """Try until we hold the lease (True) or we are halted (False)."""
        log.info("leader.acquiring", lease=self.description, identity=self.identity)
        while not self._halted():
            acquired = await self._try_acquire_or_renew()
            self._report_transition()
            if acquired:
                return True
            # wait.JitterUntil: period + rand * JitterFactor * period.
            pause = self._retry_period * (1 + random.random() * JITTER_FACTOR)
            if await self._halted_within(pause):
                break
        return False

    async def _renew(self) -> str:
        """Renew every retryPeriod until that fails; return why it did."""
        while True:
            try:
                async with asyncio.timeout(self._renew_deadline):
                    while not await self._try_acquire_or_renew():
                        self._report_transition()
                        if (holder := self._valid_other_holder()) is not None:
                            return f"the lease is held by {holder}"
                        await asyncio.sleep(self._retry_period)
            except TimeoutError:
                return f"could not renew it within renewDeadline ({self._renew_deadline}s)"
            self._report_transition()
            await asyncio.sleep(self._retry_period)

    # --- one attempt (tryAcquireOrRenew) ----------------------------------------------

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time()
        desired = LeaseRecord(self.identity, int(self._lease_duration), now, now)

        # Fast path: a valid leader updates its cached object without reading first.
        if self._holds_observed() and self._lease_valid():
            assert self._observed is not None
            renewed = replace(desired, acquire_time=self._observed.acquire_time,
                              leader_transitions=self._observed.leader_transitions)
            try:
                await self._lock.update(renewed)
            except _LockError as error:
                log.debug("leader.fast_path_failed", lease=self.description, error=str(error))
            else:
                self._set_observed(renewed)
                return True

        try:
            current = await self._lock.get()
        except _LockError as error:
            log.error("leader.lease_read_failed", lease=self.description, error=str(error))
            return False
        if current is None:
            try:
                await self._lock.create(desired)
            except _LockError as error:
                log.warning("leader.lease_create_failed", lease=self.description,
                            error=str(error))
                return False
            self._set_observed(desired)
            return True

        if current != self._observed:
            self._set_observed(current)
        if current.holder_identity and self._lease_valid() and not self._holds_observed():
            return False  # held by someone else and not expired

        if self._holds_observed():
            desired = replace(desired, acquire_time=current.acquire_time,
                              leader_transitions=current.leader_transitions)
            self._metrics.leader_slowpath(self._metric_name)
        else:
            desired = replace(desired, leader_transitions=current.leader_transitions + 1)
        try:
            await self._lock.update(desired)
        except _LockError as error:
            # 409 when another candidate wrote first: expected in a race.
            log.warning("leader.lease_update_failed", lease=self.description,
                        error=str(error))
            return False
        self._set_observed(desired)
        return True

    async def _release(self) -> None:
        """Clear the holder and shorten the lease to 1s so a standby need not wait."""
        self._connect()
        try:
            async with asyncio.timeout(self._renew_deadline):
                current = await self._lock.get()
                if current is None or current.holder_identity != self.identity:
                    return
                now = micro_time()
                released = LeaseRecord("", 1, now, now, current.leader_transitions)
                await self._lock.update(released)
        except (_LockError, TimeoutError) as error:
            log.error("leader.release_failed", lease=self.description, error=str(error))
            return
        self._set_observed(released)
        log.info("leader.released", lease=self.description, identity=self.identity)

    # --- observed state ------------------------------------------------------------------

    def _set_observed(self, record: LeaseRecord) -> None:
        self._observed = record
        self._observed_time = time.monotonic()

    def _holds_observed(self) -> bool:
        return self._observed is not None and self._observed.holder_identity == self.identity

    def _lease_valid(self) -> bool:
        if self._observed is None:
            return False
        expires = self._observed_time + self._observed.lease_duration_seconds
        return expires > time.monotonic()

    def _valid_other_holder(self) -> str | None:
        observed = self._observed
        if (observed is None or not observed.holder_identity or self._holds_observed()
                or not self._lease_valid()):
            return None
        return observed.holder_identity

    def _report_transition(self) -> None:
        holder = self.leader
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        log.info("leader.observed", lease=self.description, holder=holder or None)
        if self._on_new_leader is not None:
            self._to_main(self._on_new_leader, holder)

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        self._metrics.set_leader(self._metric_name, leading)
        if leading:
            log.info("leader.acquired", lease=self.description, identity=self.identity)

    def _halted(self) -> bool:
        return self._halt is not None and self._halt.is_set()

    async def _halted_within(self, seconds: float) -> bool:
        assert self._halt is not None
        try:
            async with asyncio.timeout(seconds):
                await self._halt.wait()
        except TimeoutError:
            return False
        return True


def _settle(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(True)
