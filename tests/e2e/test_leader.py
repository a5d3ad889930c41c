"""Leader election on a real Lease: one leader, takeover on expiry, fast hand-over on
release, stepping down when the Lease is taken.

Durations are short (lease 3s, renew 2s, retry 0.5s) and the waits generous: the
assertions are about who leads, never about exact timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from kpysched.leader import LeaderElector, LeaseLostError
from kpysched.metrics import SchedulerMetrics
from tests.cluster import cluster as harness
from tests.cluster import kube

pytestmark = pytest.mark.e2e

LEASE = "kpysched-test"
FAST: dict[str, Any] = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
WAIT_SECONDS = 20.0


class Candidate:
    """One elector whose leading work runs until cancelled, recording what happened."""

    def __init__(self, api: client.ApiClient, namespace: str, label: str,
                 **options: Any) -> None:
        self.label = label
        self.started = asyncio.Event()
        self.work_cancelled = asyncio.Event()
        self.stopped = asyncio.Event()
        self.metrics = SchedulerMetrics(process_metrics=False)
        self.elector = LeaderElector(
            api, namespace=namespace, name=LEASE, identity=f"host_{label}",
            on_started_leading=self._lead, on_stopped_leading=self.stopped.set,
            metrics=self.metrics, **{**FAST, **options})
        self.task: asyncio.Task[None] | None = None

    async def _lead(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.work_cancelled.set()
            raise

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run(), name=f"elector {self.label}")
        return self

    @property
    def leader_gauge(self) -> float | None:
        return self.metrics.registry.get_sample_value(
            "leader_election_master_status", {"name": LEASE})

    async def outcome(self) -> BaseException | None:
        """Wait for run() to end; what it raised (None when it returned)."""
        assert self.task is not None
        try:
            await asyncio.wait_for(asyncio.shield(self.task), WAIT_SECONDS)
        except (asyncio.CancelledError, Exception) as error:
            return error
        return None


@pytest.fixture
async def candidates(api: client.ApiClient,
                     namespace: str) -> AsyncIterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(label: str, **options: Any) -> Candidate:
        made.append(Candidate(api, namespace, label, **options))
        return made[-1]

    yield make
    for candidate in made:
        if candidate.task is not None and not candidate.task.done():
            candidate.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await candidate.task


async def read_lease(api: client.ApiClient, namespace: str) -> Any:
    return await client.CoordinationV1Api(api).read_namespaced_lease(LEASE, namespace)


async def first_to_lead(*candidates: Candidate) -> Candidate:
    waits = {asyncio.ensure_future(c.started.wait()): c for c in candidates}
    try:
        done, _ = await asyncio.wait(waits, timeout=WAIT_SECONDS,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waits:
            waiter.cancel()
    assert done, "nobody became leader"
    return waits[next(iter(done))]


async def wait_for(event: asyncio.Event, what: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), WAIT_SECONDS)
    except TimeoutError:
        pytest.fail(f"timed out waiting for {what}")


async def test_one_of_two_leads_and_the_lease_names_it(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    a, b = candidates("a").start(), candidates("b").start()
    leader = await first_to_lead(a, b)
    follower = b if leader is a else a
    # Give the follower several retry periods to (wrongly) think it leads too.
    await asyncio.sleep(2.0)

    assert leader.elector.is_leader and not follower.elector.is_leader
    assert not follower.started.is_set()
    assert follower.elector.leader == leader.elector.identity
    assert (leader.leader_gauge, follower.leader_gauge) == (1.0, 0.0)
    assert leader.elector.check() is None  # the /healthz watchdog: renewing fine
    lease = await read_lease(api, namespace)  # created by the elector: it did not exist
    assert lease.spec.holder_identity == leader.elector.identity
    assert lease.spec.lease_duration_seconds == 3


async def test_standby_takes_over_after_a_crashed_leader_s_lease_expires(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    a = candidates("a", release_on_cancel=False).start()
    await wait_for(a.started, "a to lead")
    b = candidates("b").start()
    await asyncio.sleep(1.0)  # b sees the lease held
    assert not b.started.is_set()
    transitions = (await read_lease(api, namespace)).spec.lease_transitions

    assert a.task is not None
    a.task.cancel()  # a dies without releasing
    crashed = time.monotonic()
    assert isinstance(await a.outcome(), asyncio.CancelledError)
    assert a.stopped.is_set() and a.work_cancelled.is_set()
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == a.elector.identity  # not released

    await wait_for(b.started, "b to take over")
    # b had to wait for the lease (3s from its last sight of a renewal) to expire.
    assert time.monotonic() - crashed > 1.0
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == b.elector.identity
    assert lease.spec.lease_transitions == transitions + 1


async def test_release_hands_over_within_about_a_retry_period(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    # A long lease: without the release, b would wait about 15s.
    slow = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 0.5}
    a = candidates("a", **slow).start()
    await wait_for(a.started, "a to lead")
    b = candidates("b", **slow).start()
    await asyncio.sleep(1.0)
    assert not b.started.is_set()

    released = time.monotonic()
    await a.elector.release()
    assert await a.outcome() is None  # a graceful stop: run() returns
    assert a.work_cancelled.is_set() and a.stopped.is_set()
    assert not a.elector.is_leader and a.leader_gauge == 0.0

    await wait_for(b.started, "b to take over")
    assert time.monotonic() - released < 8.0  # well under the 15s lease
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == b.elector.identity
    assert lease.spec.lease_duration_seconds == 15


async def test_release_writes_an_empty_holder_and_a_one_second_lease(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    a = candidates("a").start()
    await wait_for(a.started, "a to lead")
    await a.elector.release()
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == ""
    assert lease.spec.lease_duration_seconds == 1


async def test_leader_steps_down_when_another_identity_takes_the_lease(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    a = candidates("a").start()
    await wait_for(a.started, "a to lead")

    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await client.CoordinationV1Api(api).patch_namespaced_lease(LEASE, namespace, {
        "spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 60,
                 "renewTime": now, "acquireTime": now}})

    error = await a.outcome()
    assert isinstance(error, LeaseLostError), error
    assert "held by intruder" in str(error)
    assert a.stopped.is_set() and a.work_cancelled.is_set()
    assert not a.elector.is_leader and a.leader_gauge == 0.0
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == "intruder"  # neither renewed over nor released


async def test_leader_steps_down_when_renewals_fail_past_the_renew_deadline(
        cluster: harness.ClusterState, api: client.ApiClient, namespace: str) -> None:
    async with kube.api_client(cluster) as own_client:
        a = Candidate(own_client, namespace, "a").start()
        await wait_for(a.started, "a to lead")
        # From now on the API server refuses every request a makes.
        own_client.configuration.api_key = {"BearerToken": "Bearer not-a-valid-token"}
        failing = time.monotonic()

        error = await a.outcome()
        assert isinstance(error, LeaseLostError), error
        assert "renewDeadline" in str(error)
        assert time.monotonic() - failing >= 1.5  # it kept trying for renewDeadline (2s)
        assert a.stopped.is_set() and a.work_cancelled.is_set()
        assert a.leader_gauge == 0.0
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == a.elector.identity  # it could not release


async def test_leader_recreates_a_deleted_lease_and_keeps_leading(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    """As client-go: a missing Lease is created again by whoever tries next."""
    a = candidates("a").start()
    await wait_for(a.started, "a to lead")
    await client.CoordinationV1Api(api).delete_namespaced_lease(LEASE, namespace)
    await asyncio.sleep(2.0)  # several renewals
    assert a.elector.is_leader
    assert a.task is not None and not a.task.done()
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == a.elector.identity


async def test_leading_work_failing_releases_the_lease_and_raises(
        api: client.ApiClient, namespace: str) -> None:
    async def crash() -> None:
        raise RuntimeError("scheduling loop broke")

    stopped = asyncio.Event()
    elector = LeaderElector(api, namespace=namespace, name=LEASE, identity="host_c",
                            on_started_leading=crash, on_stopped_leading=stopped.set, **FAST)
    with pytest.raises(RuntimeError, match="scheduling loop broke"):
        await asyncio.wait_for(elector.run(), WAIT_SECONDS)
    assert stopped.is_set()
    assert (await read_lease(api, namespace)).spec.holder_identity == ""


@pytest.mark.parametrize(
    ("durations", "message"),
    [((15.0, 15.0, 2.0), "lease_duration must be greater than renew_deadline"),
     ((15.0, 2.0, 2.0), "renew_deadline must be greater than retry_period \\* 1.2"),
     ((0.5, 0.2, 0.1), "lease_duration must be at least 1s"),
     ((15.0, 10.0, 0.0), "retry_period must be greater than zero")],
    ids=["lease-not-above-renew", "renew-not-above-jittered-retry", "sub-second-lease",
         "zero-retry"],
)
async def test_durations_are_checked_as_client_go_does(
        durations: tuple[float, float, float], message: str) -> None:
    async def lead() -> None:
        return None

    lease, renew, retry = durations
    async with client.ApiClient() as api:
        with pytest.raises(ValueError, match=message):
            LeaderElector(api, namespace="ns", name=LEASE, on_started_leading=lead,
                          lease_duration=lease, renew_deadline=renew, retry_period=retry)


async def test_a_leader_keeps_renewing_while_its_loop_is_held(
        api: client.ApiClient, namespace: str, candidates: Callable[..., Candidate]) -> None:
    """Renewal runs on a thread of its own: a scheduling cycle that holds the caller's
    loop for twice the lease (synchronous work, as Filter and Score are) costs nothing,
    and a standby campaigning meanwhile does not take over."""
    a = candidates("a").start()
    await wait_for(a.started, "a to lead")
    b = candidates("b").start()
    before = (await read_lease(api, namespace)).spec.renew_time
    held = 2 * FAST["lease_duration"]
    time.sleep(held)  # the loop is held: no task on it runs, b's campaign neither
    lease = await read_lease(api, namespace)
    assert lease.spec.holder_identity == a.elector.identity
    assert lease.spec.renew_time > before  # renewed while the loop was held
    assert a.elector.is_leader and a.elector.check() is None
    assert a.task is not None and not a.task.done()
    # b's campaign now runs (its thread kept trying too) and still finds a valid leader.
    await asyncio.sleep(3 * FAST["retry_period"])
    assert not b.started.is_set() and a.elector.is_leader
    assert (await read_lease(api, namespace)).spec.holder_identity == a.elector.identity
