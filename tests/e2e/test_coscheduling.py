"""Coscheduling: scheduler-plugins' PodGroup API (scheduling.x-k8s.io/v1alpha1) end to
end, the acceptance checks of issue 18 for that API.

One cluster for the module (etcd, kube-apiserver, kube-controller-manager and KWOK),
with the PodGroup CRD of deploy/crds/ applied and Established before one kpysched
starts with a profile that enables Coscheduling (multiPoint and queueSort, as
scheduler-plugins documents it). Pods join a group by the `scheduling.x-k8s.io/pod-group`
label. Each test has a namespace and a pool of KWOK nodes of its own: its pods select
the pool by label, so a node another test left behind can never take one of them, and
the pool is deleted when the test ends. KWOK runs bound pods at once and finishes
Job pods right after, so Jobs complete.

Bindings are timed by a pod watch in the test, so "bound within 2 s of the node" is
measured as a person watching the cluster would see it. The preemption tests fill a
pool with low-priority pods (PriorityClasses of value 0 and 1000, made once for the
module) and check the all-or-nothing promises of docs/gang.md: a group preempts only
when that places it, and a victim from another group brings its whole group along.
If the cluster or kpysched cannot start, every test errors with the reason; nothing is
skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import cluster as harness
from tests.cluster import crds, kube, nodes
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
POD_GROUP_CRD = REPO / "deploy" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
SCHEDULER = "kpysched"
GROUP, VERSION, PLURAL = "scheduling.x-k8s.io", "v1alpha1", "podgroups"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# Every test's nodes carry this label with the test's pool name; its pods select it.
POOL_LABEL = "kpysched.test/pool"

CONFIG = scheduler_config(profiles=[{
    "schedulerName": SCHEDULER,
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    },
}])

# The figure: a node added lets a waiting gang bind within 2 s.
NODE_ADDED_BIND_SECONDS = 2.0
# How long a held group is watched for a binding that must not come.
HOLD_SECONDS = 2.0
FAILED_TIMEOUT_SECONDS = 30.0
BIND_TIMEOUT_SECONDS = 30.0
RACE_RUNS = 20
RACE_RUN_TIMEOUT_SECONDS = 30.0
# After a race run's outcome, how long it is watched for a late binding.
RACE_SETTLE_SECONDS = 1.0
JOB_TIMEOUT_SECONDS = 90.0
# The PriorityClasses of the preemption tests: the pods filling a pool, and the group
# that needs its room.
LOW_PRIORITY, HIGH_PRIORITY = "cosched-low", "cosched-high"
PRIORITY_VALUES = {LOW_PRIORITY: 0, HIGH_PRIORITY: 1000}
# From a preempting group's creation until every member is bound (victims deleted, the
# group tried again).
PREEMPT_TIMEOUT_SECONDS = 20.0
# After the preemptor is bound, how long the other victims may still take to go.
VICTIMS_GONE_TIMEOUT_SECONDS = 5.0


# ---- the module's cluster and kpysched ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coscheduling:
    state: harness.ClusterState
    kpysched: KpyschedProcess


# The module's kpysched log, which describe() quotes in failure messages.
_KPYSCHED_LOGS: list[Path] = []


async def _install_crd_and_priority_classes(state: harness.ClusterState) -> None:
    async with kube.api_client(state) as api:
        await crds.apply(api, POD_GROUP_CRD)
        scheduling: Any = client.SchedulingV1Api(api)  # JSON bodies, not the client's models
        for name, value in PRIORITY_VALUES.items():
            await scheduling.create_priority_class({"metadata": {"name": name},
                                                    "value": value})


@pytest.fixture(scope="module")
def coscheduling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coscheduling]:
    directory = tmp_path_factory.mktemp("coscheduling") / "state"
    state = harness.up(directory, harness.FULL)
    try:
        # Before kpysched starts: its PodGroup informer lists the resource at start-up.
        asyncio.run(_install_crd_and_priority_classes(state))
        # Its decisions served, for explain's view of a group (plain HTTP, as the
        # module's probes use).
        with KpyschedProcess(state, CONFIG, extra_args=("--enable-decision-endpoint",)) as kp:
            _KPYSCHED_LOGS.append(kp.log_path)
            try:
                yield Coscheduling(state, kp)
            finally:
                _KPYSCHED_LOGS.remove(kp.log_path)
    finally:
        harness.down(directory)


@pytest.fixture
async def api(coscheduling: Coscheduling) -> AsyncIterator[client.ApiClient]:
    """This module's cluster, not the session's (the conftest's `api`)."""
    process = coscheduling.kpysched.process
    if process is not None and process.poll() is not None:
        raise AssertionError(f"kpysched exited with {process.returncode} earlier in the module;"
                             f" last lines of {coscheduling.kpysched.log_path}:\n"
                             f"{harness.log_tail(coscheduling.kpysched.log_path)}")
    async with kube.api_client(coscheduling.state) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(api, "cosched")
    try:
        yield name
    finally:
        await kube.delete_namespace(api, name)


@dataclass
class Pool:
    """KWOK nodes of one test, labelled `POOL_LABEL=<name>`; its pods select them."""

    api: client.ApiClient
    name: str
    names: list[str] = field(default_factory=list)

    @property
    def selector(self) -> dict[str, str]:
        return {POOL_LABEL: self.name}

    def shape(self, cpu: str) -> nodes.NodeShape:
        return nodes.NodeShape(cpu=cpu, memory="32Gi", pods=110, zones=0,
                               labels=self.selector)

    async def add(self, count: int, cpu: str) -> list[str]:
        added = await nodes.add(self.api, count, self.shape(cpu), name_prefix=self.name)
        self.names += added
        return added


@pytest.fixture
async def pool(api: client.ApiClient) -> AsyncIterator[Pool]:
    made = Pool(api, kube.unique_name("cos"))
    try:
        yield made
    finally:
        await kube.delete_nodes(api, made.names)

        async def gone() -> bool:
            listed = await client.CoreV1Api(api).list_node(
                label_selector=f"{POOL_LABEL}={made.name}")
            return not listed.items

        await kube.wait_for(gone, 30, f"the nodes of pool {made.name} deleted")


# ---- objects -------------------------------------------------------------------------


def pod_group(name: str, min_member: int,
              min_resources: Mapping[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources:
        spec["minResources"] = dict(min_resources)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": spec}


async def create_pod_group(api: client.ApiClient, namespace: str, body: Mapping[str, Any],
                           ) -> None:
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, dict(body))


async def read_pod_group(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name)
    return found


def member(name: str, group: str, pool: Pool, cpu: str = "1",
           priority_class: str | None = None) -> dict[str, Any]:
    return kube.pod_body(name, scheduler_name=SCHEDULER, cpu=cpu, memory="100Mi",
                         labels={POD_GROUP_LABEL: group}, node_selector=pool.selector,
                         priority_class=priority_class)


async def create_members(api: client.ApiClient, namespace: str, group: str, count: int,
                         pool: Pool, cpu: str = "1", priority_class: str | None = None,
                         ) -> list[str]:
    names = [f"{group}-{i}" for i in range(count)]
    for name in names:
        await kube.create_pod(api, namespace, member(name, group, pool, cpu, priority_class))
    return names


# ---- observation ---------------------------------------------------------------------


class Bindings:
    """Watches a namespace's pods from before anything is created there and notes when
    each pod was first seen with a node (the event loop's clock) and on which node."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.at: dict[str, float] = {}
        self.node: dict[str, str] = {}
        self._listed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def bound(self) -> dict[str, str]:
        """Pod name -> node of every pod seen bound so far; raises if the watch died."""
        if self._task is not None and self._task.done():
            self._task.result()
            raise AssertionError(f"the pod watch on {self.namespace} ended")
        return dict(self.node)

    def _note(self, pod: Any) -> None:
        name = pod.metadata.name
        if pod.spec.node_name and name not in self.at:
            self.at[name] = asyncio.get_running_loop().time()
            self.node[name] = pod.spec.node_name

    async def _run(self) -> None:
        core = client.CoreV1Api(self.api)
        while True:
            listed = await core.list_namespaced_pod(self.namespace)
            for pod in listed.items:
                self._note(pod)
            version = listed.metadata.resource_version
            self._listed.set()
            try:
                while True:
                    stream = watch.Watch()
                    async with stream.stream(core.list_namespaced_pod, self.namespace,
                                             resource_version=version,
                                             timeout_seconds=60) as events:
                        async for event in events:
                            pod = event["object"]
                            version = pod.metadata.resource_version
                            self._note(pod)
            except ApiException as error:
                if error.status != 410:  # expired: list again
                    raise

    async def __aenter__(self) -> Bindings:
        self._task = asyncio.create_task(self._run())
        waiter = asyncio.create_task(self._listed.wait())
        await asyncio.wait({self._task, waiter}, timeout=15,
                           return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        self.bound()
        if not self._listed.is_set():
            raise AssertionError(f"could not list the pods of {self.namespace} in 15s")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class GroupPhases:
    """Watches one PodGroup and keeps every status.phase it was seen in, in order."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.seen: list[str] = []
        self._task: asyncio.Task[None] | None = None

    def phases(self) -> list[str]:
        if self._task is not None and self._task.done():
            self._task.result()
            raise AssertionError(f"the PodGroup watch on {self.namespace}/{self.name} ended")
        return list(self.seen)

    def _note(self, obj: Mapping[str, Any]) -> None:
        phase = obj.get("status", {}).get("phase")
        if phase and (not self.seen or self.seen[-1] != phase):
            self.seen.append(phase)

    async def _run(self) -> None:
        custom = client.CustomObjectsApi(self.api)
        while True:
            stream = watch.Watch()
            async with stream.stream(custom.list_namespaced_custom_object, GROUP, VERSION,
                                     self.namespace, PLURAL,
                                     field_selector=f"metadata.name={self.name}",
                                     timeout_seconds=60) as events:
                async for event in events:
                    if isinstance(event.get("object"), Mapping):
                        self._note(event["object"])

    async def __aenter__(self) -> GroupPhases:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def events(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    """The namespace's events.k8s.io Events, oldest first (raw JSON)."""
    # Raw JSON (the client's annotations know only its models).
    response: Any = await client.EventsV1Api(api).list_namespaced_event(
        namespace, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(await response.read())["items"]
    items.sort(key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])
    return items


def notes(found: Sequence[Mapping[str, Any]], reason: str, kind: str = "Pod",
          ) -> dict[str, list[str]]:
    """regarding name -> the notes of its events with `reason` about a `kind`."""
    by_name: dict[str, list[str]] = {}
    for event in found:
        regarding = event.get("regarding", {})
        if event.get("reason") == reason and regarding.get("kind") == kind:
            by_name.setdefault(regarding["name"], []).append(event.get("note", ""))
    return by_name


async def wait_failed(api: client.ApiClient, namespace: str, names: Sequence[str],
                      what: str, unbound: Bindings, already_bound: Collection[str] = (),
                      ) -> dict[str, list[str]]:
    """Wait until every named pod has a FailedScheduling event; return their notes.
    Fails at once if a pod of the namespace other than `already_bound` is bound meanwhile
    (`unbound` watches them)."""
    async def told() -> dict[str, list[str]] | None:
        bound = {pod: node for pod, node in unbound.bound().items()
                 if pod not in already_bound}
        if bound:
            raise AssertionError(f"pods bound while waiting for {what}: {bound}")
        failed = notes(await events(api, namespace), "FailedScheduling")
        return failed if set(names) <= failed.keys() else None

    try:
        found: dict[str, list[str]] = await kube.wait_for(told, FAILED_TIMEOUT_SECONDS, what)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{await describe(api, namespace)}") from None
    return found


async def wait_until(api: client.ApiClient, namespace: str,
                     check: Callable[[], bool], timeout: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n"
                                 f"{await describe(api, namespace)}")
        await asyncio.sleep(0.05)


async def describe(api: client.ApiClient, namespace: str) -> str:
    """What a person would look at: pods, events, PodGroups and kpysched's log lines
    about the namespace."""
    lines = [f"--- namespace {namespace}"]
    response: Any = await client.CoreV1Api(api).list_namespaced_pod(
        namespace, _preload_content=False)
    for pod in sorted(json.loads(await response.read())["items"],
                      key=lambda p: p["metadata"]["name"]):
        lines.append(f"pod {pod['metadata']['name']}: node={pod['spec'].get('nodeName')} "
                     f"phase={pod.get('status', {}).get('phase')}")
    for event in await events(api, namespace):
        regarding = event.get("regarding", {})
        count = (event.get("series") or {}).get("count", 1)
        lines.append(f"event {regarding.get('kind')}/{regarding.get('name')} "
                     f"{event.get('type')} {event.get('reason')} x{count}: "
                     f"{event.get('note', '')}")
    groups = await client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL)
    for group in groups["items"]:
        lines.append(f"podgroup {group['metadata']['name']}: spec={group.get('spec')} "
                     f"status={group.get('status')}")
    for log in _KPYSCHED_LOGS:
        about = [line for line in log.read_text(errors="replace").splitlines()
                 if namespace in line]
        lines.append(f"--- kpysched log ({log}), the last of {len(about)} lines naming "
                     f"{namespace}:")
        lines += about[-40:]
    return "\n".join(lines)


async def add_node_timed(api: client.ApiClient, pool: Pool, cpu: str) -> tuple[str, float]:
    """Create one node in `pool`; return its name and the loop time just before the
    create request, once the node is Ready without taints."""
    loop = asyncio.get_running_loop()
    name = f"{pool.name}-{len(pool.names)}"
    body = nodes.node_body(name, len(pool.names), pool.shape(cpu))
    created_at = loop.time()
    core: Any = client.CoreV1Api(api)  # a JSON body, not the client's model
    await core.create_node(body)
    pool.names.append(name)
    await nodes.wait_ready(api, [name], timeout=30)
    return name, created_at


# ---- the tests -------------------------------------------------------------------------


async def test_group_of_8_with_room_for_7_binds_none_until_a_node_is_added(
    api: client.ApiClient, namespace: str, pool: Pool,
) -> None:
    """minMember 8 on 7 one-CPU nodes, one CPU a pod: no member is bound (every one is
    told why); an eighth node lets all 8 bind within 2 s of its creation."""
    await pool.add(7, cpu="1")
    async with Bindings(api, namespace) as bindings:
        await create_pod_group(api, namespace, pod_group("gang", 8))
        members = await create_members(api, namespace, "gang", 8, pool)
        await wait_failed(api, namespace, members, "a FailedScheduling event for every member",
                          unbound=bindings)
        await asyncio.sleep(HOLD_SECONDS)
        assert bindings.bound() == {}, (f"members bound while only 7 of 8 fit:\n"
                                        f"{await describe(api, namespace)}")

        # The group itself says why: a Warning on the PodGroup, phase Scheduling.
        async def group_failed() -> bool:
            return "gang" in notes(await events(api, namespace), "FailedScheduling",
                                   kind="PodGroup")

        await kube.wait_for(group_failed, 10, "a FailedScheduling event on the PodGroup")

        async def group_phase_scheduling() -> bool:
            group = await read_pod_group(api, namespace, "gang")
            return bool(group.get("status", {}).get("phase") == "Scheduling")

        await kube.wait_for(group_phase_scheduling, 10,
                            "the held PodGroup's status.phase Scheduling")
        assert bindings.bound() == {}, await describe(api, namespace)

        added, created_at = await add_node_timed(api, pool, cpu="1")
        schedulable_at = asyncio.get_running_loop().time()
        await wait_until(api, namespace, lambda: set(members) <= bindings.bound().keys(),
                         BIND_TIMEOUT_SECONDS, "all 8 members bound after the node was added")
        last = max(bindings.at[m] for m in members) - created_at
        first = min(bindings.at[m] for m in members) - created_at
        print(f"node {added} created -> Ready and untainted (as the test polled it) "
              f"{schedulable_at - created_at:.3f}s, first binding {first:.3f}s, "
              f"last binding {last:.3f}s")
        placed = bindings.bound()
    assert sorted(placed.values()) == sorted(pool.names), placed  # one a node: no overcommit
    assert last <= NODE_ADDED_BIND_SECONDS, (
        f"the last of 8 members bound {last:.3f}s after node {added} was created (first "
        f"{first:.3f}s; the node was Ready and untainted by {schedulable_at - created_at:.3f}s)"
        f"; the issue allows {NODE_ADDED_BIND_SECONDS}s\n{await describe(api, namespace)}")

    async def group_scheduled() -> bool:
        return "gang" in notes(await events(api, namespace), "Scheduled", kind="PodGroup")

    await kube.wait_for(group_scheduled, 10, "a Scheduled event on the PodGroup")

    async def group_placed() -> bool:
        group = await read_pod_group(api, namespace, "gang")
        return group.get("status", {}).get("phase") in ("Scheduled", "Running")

    await kube.wait_for(group_placed, 15, "the PodGroup's status.phase Scheduled or Running")


def _race_seed() -> int:
    configured = os.environ.get("KPYSCHED_COSCHEDULING_SEED")
    return int(configured) if configured else random.SystemRandom().randrange(2**32)


async def test_two_groups_of_6_with_room_for_6_one_binds_whole_the_other_none(
    api: client.ApiClient, pool: Pool,
) -> None:
    """Two groups of 6 (minMember 6) where 6 pods fit: one group ends fully bound and the
    other fully pending, never a split, over 20 runs of shuffled creation orders
    (seeded; the seed is printed, KPYSCHED_COSCHEDULING_SEED replays it)."""
    seed = _race_seed()
    print(f"seed {seed}")
    rng = random.Random(seed)
    await pool.add(3, cpu="2")
    groups = {"a": [f"a-{i}" for i in range(6)], "b": [f"b-{i}" for i in range(6)]}
    winners: list[str] = []
    for run in range(RACE_RUNS):
        steps: list[tuple[str, str]] = [("group", g) for g in groups]
        steps += [(g, pod) for g, pods in groups.items() for pod in pods]
        rng.shuffle(steps)
        namespace = await kube.create_namespace(api, "cosched-race")
        context = f"run {run} (seed {seed}), creation order {[s[1] for s in steps]}"
        try:
            async with Bindings(api, namespace) as bindings:
                for kind, name in steps:
                    if kind == "group":
                        await create_pod_group(api, namespace, pod_group(name, 6))
                    else:
                        await kube.create_pod(api, namespace, member(name, kind, pool))
                winner = await _race_outcome(api, namespace, groups, bindings, context)
            winners.append(winner)
        finally:
            await kube.delete_namespace(api, namespace)
            await _wait_pods_gone(api, namespace)
    print(f"winners over {RACE_RUNS} runs: {winners}")


async def _race_outcome(api: client.ApiClient, namespace: str, groups: dict[str, list[str]],
                        bindings: Bindings, context: str) -> str:
    """Wait until one group is wholly bound and every member of the other was told why
    not, checking at every look that no two groups ever share the nodes; then watch a
    little longer. Returns the group that was placed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RACE_RUN_TIMEOUT_SECONDS

    def split(bound: Mapping[str, str]) -> bool:
        return all(any(p in bound for p in pods) for pods in groups.values())

    while True:
        bound = bindings.bound()
        assert not split(bound), (f"{context}: members of both groups bound: "
                                  f"{sorted(bound)}\n{await describe(api, namespace)}")
        whole = [g for g, pods in groups.items() if set(pods) <= bound.keys()]
        if whole:
            [winner] = whole
            [loser] = [g for g in groups if g != winner]
            failed = notes(await events(api, namespace), "FailedScheduling")
            if set(groups[loser]) <= failed.keys():
                break
        if loop.time() > deadline:
            raise AssertionError(
                f"{context}: no outcome within {RACE_RUN_TIMEOUT_SECONDS:.0f}s (one group "
                f"bound, every member of the other told why not); bound: {sorted(bound)}\n"
                f"{await describe(api, namespace)}")
        await asyncio.sleep(0.1)
    await asyncio.sleep(RACE_SETTLE_SECONDS)
    bound = bindings.bound()
    assert set(bound) == set(groups[winner]), (
        f"{context}: group {winner} was placed, then more pods bound: {sorted(bound)}\n"
        f"{await describe(api, namespace)}")
    return winner


async def _wait_pods_gone(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)

    async def gone() -> bool:
        return not (await core.list_namespaced_pod(namespace)).items

    await kube.wait_for(gone, 30, f"the pods of {namespace} deleted", interval=0.1)


def mpi_job(name: str, group: str, pool: Pool, workers: int) -> dict[str, Any]:
    """A batch/v1 Job as mpi-operator's launcher makes its workers: the group label and
    kpysched on the pod template, every pod started at once."""
    template = kube.pod_body("unused", scheduler_name=SCHEDULER, cpu="1", memory="100Mi",
                             labels={POD_GROUP_LABEL: group}, node_selector=pool.selector)
    del template["metadata"]["name"]
    template["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": workers, "completions": workers, "backoffLimit": 0,
                     "template": template}}


async def test_job_of_8_in_a_group_is_placed_whole_and_completes(
    api: client.ApiClient, namespace: str, pool: Pool,
) -> None:
    """A PodGroup of 8 and a Job of 8 whose template joins it, where 8 fit: the controller
    manager makes the pods, all 8 bind, the Job completes and the group was seen
    Running or Finished."""
    await pool.add(2, cpu="4")
    await create_pod_group(api, namespace, pod_group("mpi", 8))
    batch: Any = client.BatchV1Api(api)  # JSON bodies, not the client's models
    async with Bindings(api, namespace) as bindings, \
            GroupPhases(api, namespace, "mpi") as phases:
        await batch.create_namespaced_job(namespace, mpi_job("mpi", "mpi", pool, 8))
        await wait_until(api, namespace, lambda: len(bindings.bound()) >= 8,
                         JOB_TIMEOUT_SECONDS, "8 of the Job's pods bound")

        async def complete() -> bool:
            job = await batch.read_namespaced_job("mpi", namespace)
            return any(c.type == "Complete" and c.status == "True"
                       for c in job.status.conditions or ())

        try:
            await kube.wait_for(complete, JOB_TIMEOUT_SECONDS, "the Job's Complete condition")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{await describe(api, namespace)}") from None
        await wait_until(api, namespace,
                         lambda: bool({"Running", "Finished"} & set(phases.phases())),
                         15, "the PodGroup seen Running or Finished")
        seen = phases.phases()
        placed = bindings.bound()
    job = await batch.read_namespaced_job("mpi", namespace)
    print(f"PodGroup phases seen: {seen}; Job succeeded={job.status.succeeded}")
    assert len(placed) == 8, placed  # no pod made again: none failed
    assert job.status.succeeded == 8, job.status
    assert set(placed.values()) <= set(pool.names), placed


async def test_min_resources_beyond_free_capacity_binds_no_member(
    api: client.ApiClient, namespace: str, pool: Pool,
) -> None:
    """Members that would fit, but the group's minResources asks for more CPU than the
    cluster has free: none is bound, and FailedScheduling names minResources."""
    await pool.add(2, cpu="2")
    async with Bindings(api, namespace) as bindings:
        await create_pod_group(api, namespace, pod_group("big", 3, {"cpu": "1000"}))
        members = await create_members(api, namespace, "big", 3, pool, cpu="100m")
        failed = await wait_failed(api, namespace, members,
                                   "a FailedScheduling event for every member",
                                   unbound=bindings)
        await asyncio.sleep(HOLD_SECONDS)
        assert bindings.bound() == {}, await describe(api, namespace)
    told = [note for name in members for note in failed[name]]
    assert any("minResources" in note for note in told), (
        f"no FailedScheduling note names minResources: {told}\n"
        f"{await describe(api, namespace)}")


async def test_explain_shows_a_group_below_quorum(
    api: client.ApiClient, namespace: str, pool: Pool, coscheduling: Coscheduling,
) -> None:
    """A member of a group of minMember 3 with one member created: explain says where
    the member waits (held by Coscheduling's PreEnqueue) and what its group lacks."""
    await pool.add(1, cpu="4")
    await create_pod_group(api, namespace, pod_group("short", 3))
    (member,) = await create_members(api, namespace, "short", 1, pool, cpu="100m")
    kp = coscheduling.kpysched

    async def explained() -> dict[str, Any] | None:
        result = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "kpysched.cli", "explain",
                             f"{namespace}/{member}", "--scheduler-url", kp.url,
                             "--kubeconfig", coscheduling.state.kubeconfig, "--no-suggest",
                             "-o", "json"], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            return None
        body = json.loads(result.stdout)
        return body if (body.get("queue") or {}).get("queue") == "gated" else None

    body = await kube.wait_for(explained, FAILED_TIMEOUT_SECONDS, "explain of the member")
    assert body["queue"]["gatedBy"] == "Coscheduling", body["queue"]
    group = body["group"]
    assert group["name"] == f"{namespace}/short" and group["api"] == "scheduling.x-k8s.io"
    assert group["minMember"] == 3 and group["exists"] is True
    assert group["pending"] == {"count": 1, "pods": [member]}
    assert group["bound"]["count"] == 0 and group["reserved"]["count"] == 0


async def test_members_wait_silently_for_their_pod_group_then_bind(
    api: client.ApiClient, namespace: str, pool: Pool,
) -> None:
    """Members created before their PodGroup are held without an attempt (no binding,
    no FailedScheduling); the PodGroup's creation lets them all bind."""
    await pool.add(1, cpu="4")
    async with Bindings(api, namespace) as bindings:
        members = await create_members(api, namespace, "late", 3, pool)
        await asyncio.sleep(HOLD_SECONDS + 1.0)
        assert bindings.bound() == {}, await describe(api, namespace)
        assert notes(await events(api, namespace), "FailedScheduling") == {}, \
            await describe(api, namespace)
        loop = asyncio.get_running_loop()
        created_at = loop.time()
        await create_pod_group(api, namespace, pod_group("late", 3))
        await wait_until(api, namespace, lambda: set(members) <= bindings.bound().keys(),
                         BIND_TIMEOUT_SECONDS, "the members bound once their PodGroup exists")
        print(f"PodGroup created -> last member bound "
              f"{max(bindings.at.values()) - created_at:.3f}s")
        assert set(bindings.bound().values()) == set(pool.names)


# ---- preemption, all or nothing ---------------------------------------------------------


def low_pod(name: str, pool: Pool, cpu: str) -> dict[str, Any]:
    """A plain pod of the low PriorityClass, scheduled by kpysched into `pool`."""
    return kube.pod_body(name, scheduler_name=SCHEDULER, cpu=cpu, memory="100Mi",
                         node_selector=pool.selector, priority_class=LOW_PRIORITY)


async def fill_pool(api: client.ApiClient, namespace: str, pool: Pool, bindings: Bindings,
                    cpu: str) -> list[str]:
    """One low-priority plain pod per node of `pool`, each taking `cpu` of it. kpysched
    places them (so its cache holds them before a group is tried); returns their names
    once every one is bound, one a node."""
    names = [f"low-{i}" for i in range(len(pool.names))]
    for name in names:
        await kube.create_pod(api, namespace, low_pod(name, pool, cpu))
    await wait_until(api, namespace, lambda: set(names) <= bindings.bound().keys(),
                     BIND_TIMEOUT_SECONDS, f"the {len(names)} low-priority pods bound")
    placed = bindings.bound()
    assert sorted(placed[n] for n in names) == sorted(pool.names), placed
    return names


async def pods_now(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    """Name -> pod (raw JSON) of every pod in the namespace."""
    response: Any = await client.CoreV1Api(api).list_namespaced_pod(
        namespace, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(await response.read())["items"]
    return {pod["metadata"]["name"]: pod for pod in items}


def preempted_logged(kp: KpyschedProcess, namespace: str) -> dict[str, str]:
    """Victim name -> preemptor name, for every pod of `namespace` kpysched logged as
    deleted by preemption."""
    prefix = f"{namespace}/"
    return {e["victim"].removeprefix(prefix): str(e.get("preemptor", "")).removeprefix(prefix)
            for e in kp.log_events()
            if e.get("event") == "preemption.victim_deleted"
            and str(e.get("victim", "")).startswith(prefix)}


async def wait_preempted(api: client.ApiClient, namespace: str, kp: KpyschedProcess,
                         victims: Collection[str], timeout: float, what: str) -> dict[str, str]:
    """Wait until none of `victims` exists any more and kpysched logged each deleted;
    returns victim -> preemptor as logged."""
    async def gone() -> dict[str, str] | None:
        logged = preempted_logged(kp, namespace)
        left = set(victims) & (await pods_now(api, namespace)).keys()
        return logged if not left and set(victims) <= logged.keys() else None

    try:
        found: dict[str, str] = await kube.wait_for(gone, timeout, what, interval=0.1)
    except AssertionError as error:
        raise AssertionError(f"{error}; logged as preempted: "
                             f"{preempted_logged(kp, namespace)}\n"
                             f"{await describe(api, namespace)}") from None
    return found


async def test_group_preempts_when_that_places_all_of_it(
    api: client.ApiClient, namespace: str, pool: Pool, coscheduling: Coscheduling,
) -> None:
    """3 nodes of 2 CPUs, each taken by a low-priority pod of 1.5 CPU; a high-priority
    group of 3 (minMember 3), 1.5 CPU a member: all 3 low pods are preempted (deleted)
    and all 3 members end bound, one a node."""
    await pool.add(3, cpu="2")
    async with Bindings(api, namespace) as bindings:
        low = await fill_pool(api, namespace, pool, bindings, cpu="1500m")
        created_at = asyncio.get_running_loop().time()
        await create_pod_group(api, namespace, pod_group("urgent", 3))
        members = await create_members(api, namespace, "urgent", 3, pool, cpu="1500m",
                                       priority_class=HIGH_PRIORITY)
        await wait_until(api, namespace, lambda: set(members) <= bindings.bound().keys(),
                         PREEMPT_TIMEOUT_SECONDS,
                         "all 3 members bound after preempting the low-priority pods")
        print(f"PodGroup created -> last member bound "
              f"{max(bindings.at[m] for m in members) - created_at:.3f}s")
        placed = {m: bindings.bound()[m] for m in members}
    preempted = await wait_preempted(api, namespace, coscheduling.kpysched, low,
                                     VICTIMS_GONE_TIMEOUT_SECONDS,
                                     "every low-priority pod deleted by preemption")
    assert sorted(preempted) == low, preempted
    assert set(preempted.values()) <= set(members), preempted
    assert sorted(placed.values()) == sorted(pool.names), placed


async def test_group_preemption_cannot_place_whole_preempts_nobody(
    api: client.ApiClient, namespace: str, pool: Pool, coscheduling: Coscheduling,
) -> None:
    """The same 3 full nodes, but the high-priority group needs 4 (minMember 4): preempting
    every low pod would make room for 3. Every member is told why not, and after a hold
    no low pod was deleted (each still there, none terminating) and no member is bound."""
    await pool.add(3, cpu="2")
    async with Bindings(api, namespace) as bindings:
        low = await fill_pool(api, namespace, pool, bindings, cpu="1500m")
        before = {name: pod["metadata"]["uid"]
                  for name, pod in (await pods_now(api, namespace)).items()}
        await create_pod_group(api, namespace, pod_group("toolarge", 4))
        members = await create_members(api, namespace, "toolarge", 4, pool, cpu="1500m",
                                       priority_class=HIGH_PRIORITY)
        failed = await wait_failed(api, namespace, members,
                                   "a FailedScheduling event for every member",
                                   unbound=bindings, already_bound=low)
        await asyncio.sleep(HOLD_SECONDS)
        bound = bindings.bound()
    print(f"FailedScheduling of {members[0]}: {failed[members[0]][-1]}")
    pods = await pods_now(api, namespace)
    assert not set(members) & bound.keys(), (f"members bound: {bound}\n"
                                             f"{await describe(api, namespace)}")
    spared = {name: pods[name]["metadata"]["uid"] for name in low
              if name in pods and not pods[name]["metadata"].get("deletionTimestamp")}
    assert spared == {name: before[name] for name in low}, (
        f"low-priority pods preempted for a group that cannot be placed: "
        f"{sorted(set(low) - spared.keys())}\n{await describe(api, namespace)}")
    assert preempted_logged(coscheduling.kpysched, namespace) == {}, \
        await describe(api, namespace)


async def test_victims_from_another_group_are_preempted_whole(
    api: client.ApiClient, namespace: str, pool: Pool, coscheduling: Coscheduling,
) -> None:
    """2 nodes of 2 CPUs; a low-priority group of 2 (minMember 2) bound by kpysched, one
    member of 1.5 CPU a node; then a high-priority group of 1 needing 1.5 CPU: both low
    members are deleted, not only the one on the node chosen, and the high one binds."""
    await pool.add(2, cpu="2")
    async with Bindings(api, namespace) as bindings:
        await create_pod_group(api, namespace, pod_group("low", 2))
        low = await create_members(api, namespace, "low", 2, pool, cpu="1500m",
                                   priority_class=LOW_PRIORITY)
        await wait_until(api, namespace, lambda: set(low) <= bindings.bound().keys(),
                         BIND_TIMEOUT_SECONDS, "the low-priority group bound")
        assert sorted(bindings.bound()[m] for m in low) == sorted(pool.names), \
            bindings.bound()
        await create_pod_group(api, namespace, pod_group("high", 1))
        [high] = await create_members(api, namespace, "high", 1, pool, cpu="1500m",
                                      priority_class=HIGH_PRIORITY)
        await wait_until(api, namespace, lambda: high in bindings.bound(),
                         PREEMPT_TIMEOUT_SECONDS, "the high-priority member bound")
        node = bindings.bound()[high]
    preempted = await wait_preempted(
        api, namespace, coscheduling.kpysched, low, VICTIMS_GONE_TIMEOUT_SECONDS,
        f"both members of the low group deleted ({high} bound on {node})")
    assert preempted == {m: high for m in low}, preempted
