"""Run a batch: lay every scenario out twice on one cluster (see layout.py), start
kube-scheduler and kpysched once, wait until every incoming pod has decided, and read
each copy's outcome.

Both schedulers start only after the whole batch exists, so each sees the same
cluster from its first scheduling cycle: the same node count in every
FailedScheduling text, and no scenario's pod decided before another's nodes arrive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import Awaitable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from tests.cluster import kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.e2e.differential.batch.layout import (
    INCOMING_LABEL,
    KPYSCHED,
    SCHEDULERS,
    UPSTREAM,
    ScenarioCopy,
    check_batchable,
    copies,
    suffix,
)
from tests.e2e.differential.batch.ties import ScoreTie, score_ties
from tests.e2e.differential.model import Outcome, Scenario
from tests.e2e.differential.runner import MERGE_PATCH, ensure_priority_classes

# Requests in flight while the batch is made; the API server and both schedulers
# share the machine's two cores.
CREATE_CONCURRENCY = 32
# Every incoming pod bound, or unschedulable with the same message this long later
# (a retry must not change anything).
STABLE_SECONDS = 2.5
DECIDE_TIMEOUT_SECONDS = 120.0
# For the batch's nodes to show their final taints; generous, CI's machine is shared.
SETTLE_TIMEOUT_SECONDS = 120.0
POLL_SECONDS = 0.5
# Scores of each upstream attempt are logged at --v=10 from schedule_one.go only.
UPSTREAM_ARGS = ("--vmodule=schedule_one=10",)


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    upstream: Outcome
    kpysched: Outcome
    ties: tuple[ScoreTie, ...]  # upstream attempts whose best score was shared


@dataclass(frozen=True)
class BatchResult:
    results: dict[str, ScenarioResult]  # by scenario name
    seconds: dict[str, float]  # phase -> wall time
    # The kube-scheduler release kpysched said it behaves as (its release.selected).
    kpysched_behaves_as: str | None


async def _bounded(calls: Iterable[Awaitable[Any]]) -> list[Any]:
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)

    async def one(call: Awaitable[Any]) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


async def _remove_leftover_nodes(api: client.ApiClient) -> None:
    """Each scheduler counts every Node in its FailedScheduling text: nodes an earlier
    file on this worker left would be counted too (harmless, both see them, but the
    texts would then depend on test order)."""
    core = client.CoreV1Api(api)
    names = [n.metadata.name for n in (await core.list_node()).items]
    await kube.delete_nodes(api, names)

    async def gone() -> bool:
        return not (await core.list_node()).items

    await kube.wait_for(gone, kube.SETTLE_TIMEOUT_SECONDS, "leftover nodes deleted")


async def _remove_leftover_pending_pods(api: client.ApiClient) -> None:
    """A pending pod an earlier file on this worker left, naming either scheduler, would
    be placed on the batch's nodes and take their room."""
    core = client.CoreV1Api(api)
    listed = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    left = [p for p in listed.items if p.spec.scheduler_name in SCHEDULERS]
    for pod in left:
        await core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace,
                                         grace_period_seconds=0)
    if left:
        print(f"[batch] deleted pending pods left by earlier tests: "
              f"{[f'{p.metadata.namespace}/{p.metadata.name}' for p in left]}")


async def _written(call: Awaitable[Any], *, also_fine: tuple[int, ...] = ()) -> None:
    """Await a write made with _preload_content=False: the batch's ~1,500 writes then
    skip the client's model parsing of each reply (seconds of the test's CPU on a
    2-core machine). Such a reply raises nothing by itself, so a refusal is raised
    here."""
    response = await call
    body = await response.read()
    if not 200 <= response.status <= 299 and response.status not in also_fine:
        raise AssertionError(f"write refused ({response.status}): {body[:1000]!r}")


async def _create_namespaces(api: client.ApiClient, names: list[str]) -> None:
    """The namespaces, each with its `default` ServiceAccount
    (ServiceAccount admission refuses pods until it exists). The batch makes the
    accounts itself: kube-controller-manager would, but writes at its client's 20
    requests a second, sharing them with a ConfigMap per namespace."""
    core = client.CoreV1Api(api)
    await _bounded(_written(core.create_namespace({"metadata": {"name": n}},
                                                  _preload_content=False)) for n in names)
    # 409: the controller was quicker.
    await _bounded(_written(core.create_namespaced_service_account(
        n, {"metadata": {"name": "default"}}, _preload_content=False), also_fine=(409,))
        for n in names)


async def _create_nodes(api: client.ApiClient, bodies: list[dict[str, Any]]) -> None:
    """Create the Nodes and return once every one has its final taints, so no
    scheduler sees a taint come or go.

    Admission puts the not-ready taint on a new Node and node lifecycle lifts it from a
    Ready one, but kube-controller-manager writes at its client's default 20 requests
    a second: half a minute for a batch's nodes. So the batch writes each Node's final
    taints itself (the node's own and, when unschedulable, the unschedulable one, as
    node lifecycle leaves them), and node lifecycle has nothing left to change."""
    core = client.CoreV1Api(api)
    await _bounded(_written(core.create_node(body, _preload_content=False)) for body in bodies)
    wanted = {b["metadata"]["name"]: kube.settled_taints(b) for b in bodies}
    await _bounded(_written(core.patch_node(name, {"spec": {"taints": [
        {"key": key, "value": value, "effect": effect} for key, value, effect in sorted(taints)]}},
        _content_type=MERGE_PATCH, _preload_content=False)) for name, taints in wanted.items())

    async def settled() -> bool:
        response = await core.list_node(_preload_content=False)
        nodes = {n["metadata"]["name"]: {(t["key"], t.get("value") or "", t["effect"])
                                         for t in n["spec"].get("taints", ())}
                 for n in json.loads(await response.read())["items"]}
        return all(nodes.get(name) == taints for name, taints in wanted.items())

    await kube.wait_for(settled, SETTLE_TIMEOUT_SECONDS, "batch nodes' taints settled")


async def lay_out(state: ClusterState, scenarios: list[Scenario],
                  declared: Mapping[str, Mapping[str, tuple[str, ...]]],
                  ) -> list[ScenarioCopy]:
    check_batchable(scenarios)
    async with kube.api_client(state) as api:
        await _remove_leftover_nodes(api)
        await _remove_leftover_pending_pods(api)
        await ensure_priority_classes(api)
        suffixes = [suffix(i, s) for i in range(len(scenarios)) for s in SCHEDULERS]
        # Namespaced names are known before the namespaces exist: nodes (named by
        # suffix) are made meanwhile.
        namespaces = [kube.unique_name(s) for s in suffixes]
        batch = copies(scenarios, dict(zip(suffixes, namespaces, strict=True)), declared)
        await asyncio.gather(
            _create_namespaces(api, namespaces),
            _create_nodes(api, [body for c in batch for body in c.node_bodies()]))
        core, policy = client.CoreV1Api(api), client.PolicyV1Api(api)
        # Existing pods name their nodes; incoming pods wait for schedulers not yet
        # started: the order of these does not matter.
        await _bounded([
            *(_written(policy.create_namespaced_pod_disruption_budget(
                c.namespace, body, _preload_content=False))
              for c in batch for body in c.pdb_bodies()),
            *(_written(core.create_namespaced_pod(c.namespace, body, _preload_content=False))
              for c in batch for body in [*c.existing_bodies(), c.incoming_body()])])
    return batch


def _decision(pod: Any) -> tuple[str, str] | None:
    """("bound", node) or ("unschedulable", message), or None while undecided."""
    if pod.spec.node_name:
        return ("bound", pod.spec.node_name)
    for condition in pod.status.conditions or ():
        if (condition.type == "PodScheduled" and condition.status == "False"
                and condition.reason == "Unschedulable" and condition.message):
            return ("unschedulable", condition.message)
    return None


def _decided(copy: ScenarioCopy, decision: tuple[str, str] | None) -> bool:
    if decision is None:
        return False
    # A preemptor is unschedulable first; it has decided once it is bound.
    return decision[0] == "bound" or copy.scenario.expect != "preempted"


async def _decisions(api: client.ApiClient) -> dict[str, tuple[str, str] | None]:
    listed = await client.CoreV1Api(api).list_pod_for_all_namespaces(
        label_selector=f"{INCOMING_LABEL}=true")
    return {p.metadata.namespace: _decision(p) for p in listed.items}


async def _first_notes(api: client.ApiClient, batch: list[ScenarioCopy]) -> dict[str, str]:
    """namespace -> the incoming pod's first FailedScheduling note, from one list of
    the cluster's events (read as plain JSON, as kube.events says why)."""
    namespaces = {c.namespace for c in batch}
    response = await client.EventsV1Api(api).list_event_for_all_namespaces(
        _preload_content=False)
    found = [e for e in json.loads(await response.read())["items"]
             if e.get("reason") == "FailedScheduling"
             and e["metadata"]["namespace"] in namespaces
             and e.get("regarding", {}).get("name") == "incoming"]
    # creationTimestamp has whole seconds; eventTime says which came first.
    found.sort(key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])
    first: dict[str, str] = {}
    for event in found:
        if event.get("note"):
            first.setdefault(event["metadata"]["namespace"], event["note"])
    return first


async def wait_decided(state: ClusterState, batch: list[ScenarioCopy]) -> dict[str, Outcome]:
    """namespace -> outcome, once every copy has decided and stayed so."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DECIDE_TIMEOUT_SECONDS
    async with kube.api_client(state) as api:
        previous: dict[str, tuple[str, str] | None] = {}
        while True:
            decisions = await _decisions(api)
            undecided = [c for c in batch if not _decided(c, decisions.get(c.namespace))]
            unschedulable = [c for c in batch
                             if (decisions.get(c.namespace) or ("",))[0] == "unschedulable"]
            notes = await _first_notes(api, unschedulable) if not undecided else {}
            if (not undecided and decisions == previous
                    and all(c.namespace in notes for c in unschedulable)):
                break
            if loop.time() > deadline:
                # Each undecided copy's outcome is what it is now (no node): its own
                # scenario fails with the diff, the rest of the batch still counts.
                print(f"[batch] not decided within {DECIDE_TIMEOUT_SECONDS:.0f}s: "
                      + ", ".join(f"{c.scenario.name} ({c.scheduler})" for c in undecided))
                break
            previous = decisions if not undecided else {}
            await asyncio.sleep(STABLE_SECONDS if not undecided else POLL_SECONDS)
        notes = await _first_notes(api, batch)
        return dict(await _bounded(_outcome(api, c, decisions[c.namespace],
                                            notes.get(c.namespace)) for c in batch))


async def _outcome(api: client.ApiClient, copy: ScenarioCopy,
                   decision: tuple[str, str] | None, note: str | None) -> tuple[str, Outcome]:
    names = copy.names
    remaining = {p.metadata.name for p in
                 (await client.CoreV1Api(api).list_namespaced_pod(copy.namespace)).items}
    existing = {p.role for p in copy.scenario.existing}
    node = names.role(decision[1]) if decision and decision[0] == "bound" else None
    return copy.namespace, Outcome(node, names.text(note) if note is not None else None,
                                   frozenset(existing - remaining))


async def clean_up(state: ClusterState, batch: list[ScenarioCopy]) -> None:
    async with kube.api_client(state) as api:
        await _bounded(kube.delete_namespace(api, c.namespace) for c in batch)
        await _bounded(kube.delete_nodes(api, [n]) for c in batch for n in c.node_names())


@contextmanager
def schedulers_started(state: ClusterState,
                       ) -> Iterator[tuple[UpstreamScheduler, KpyschedProcess]]:
    """kube-scheduler and kpysched on the cluster, started side by side (each start
    waits for health); both stop when the block ends."""
    upstream = UpstreamScheduler(state, extra_args=UPSTREAM_ARGS)
    kpysched = KpyschedProcess(state, log_level="info")
    with ExitStack() as stack:
        stack.callback(kpysched.stop)
        stack.callback(upstream.stop)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            upstream_start = pool.submit(upstream.start)
            kpysched_start = pool.submit(kpysched.start)
        upstream_start.result()  # each raises its start's error, if any
        kpysched_start.result()
        yield upstream, kpysched


def run_batch(state: ClusterState, scenarios: list[Scenario],
              declared: Mapping[str, Mapping[str, tuple[str, ...]]]) -> BatchResult:
    """Run `scenarios` as one batch; `declared` gives, by scenario name, the features
    its nodes declare (node role -> status.declaredFeatures)."""
    loop_time = time.monotonic
    seconds: dict[str, float] = {}
    start = loop_time()
    batch = asyncio.run(lay_out(state, scenarios, declared))
    seconds["lay out"] = loop_time() - start
    try:
        start = loop_time()
        with schedulers_started(state) as (upstream, kpysched):
            seconds["start schedulers"] = loop_time() - start
            behaves_as = next((e.get("kube_scheduler") for e in kpysched.log_events()
                               if e.get("event") == "release.selected"), None)
            start = loop_time()
            outcomes = asyncio.run(wait_decided(state, batch))
            seconds["decide"] = loop_time() - start
        ties = score_ties(Path(upstream.log_path).read_text(errors="replace"))
    finally:
        start = loop_time()
        asyncio.run(clean_up(state, batch))
        seconds["clean up"] = loop_time() - start
    namespace = {(c.index, c.scheduler): c.namespace for c in batch}
    results = {}
    for index, scenario in enumerate(scenarios):
        upstream_ns, kpysched_ns = (namespace[index, s] for s in (UPSTREAM, KPYSCHED))
        results[scenario.name] = ScenarioResult(
            scenario, outcomes[upstream_ns], outcomes[kpysched_ns],
            tuple(t for t in ties if t.namespace == upstream_ns))
    return BatchResult(results, seconds, behaves_as)
