"""Kueue admits, kpysched places (issue 37).

A cluster of its own (kube-controller-manager for the Job controller, KWOK nodes),
Kueue's controller manager with its CRDs and webhooks (tests/cluster/kueue.py) and
kpysched as a process. Kueue decides which Jobs may start within a ClusterQueue's
quota by lifting `suspend`; the Job controller then makes the pods, which name
kpysched, and kpysched binds them: no kube-scheduler runs here, so every binding is
kpysched's. What runs never exceeds what Kueue admitted, checked at every poll.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube, kubectl, kueue, nodes
from tests.cluster.kpysched_process import KpyschedProcess, scheduler_config

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

GROUP, VERSION = kueue.API_VERSION.split("/")
SCHEDULER = "kpysched"
ADMIT_TIMEOUT_SECONDS = 60.0
# Node labels of the TAS topology: zone (set by nodes.py), rack, host.
RACK_LABEL = "example.com/rack"
HOST_LABEL = "kubernetes.io/hostname"
TAS_POOL_LABEL = "example.com/tas-pool"


@dataclass(frozen=True, slots=True)
class KueueCluster:
    state: harness.ClusterState
    kpysched: KpyschedProcess


# kpysched with scheduler-plugins' Coscheduling (docs/gang.md), for the pod-group test;
# pods without a group schedule as with the default profile.
GANG_CONFIG = scheduler_config(profiles=[{
    "schedulerName": SCHEDULER,
    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}],
                              "disabled": [{"name": "*"}]}}}])
# Kueue waits for an admitted Workload's pods to be Ready and says so in its PodsReady
# condition; the timeout (after which it would evict) is longer than any test here.
WAIT_FOR_PODS_READY = {"waitForPodsReady": {"timeout": "10m", "blockAdmission": False}}
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
TEST_NODE_LABEL = "example.com/kueue-test"


@pytest.fixture(scope="module")
def kueue_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KueueCluster]:
    directory = tmp_path_factory.mktemp("kueue-cluster") / "state"
    state = harness.up(directory, harness.FULL)
    try:
        kubectl.run(state, "apply", "-f", str(REPO / "deploy" / "crds" /
                                             "scheduling.x-k8s.io_podgroups.yaml"))
        kubectl.run(state, "wait", "--for=condition=Established", "--timeout=60s",
                    "crd/podgroups.scheduling.x-k8s.io")
        with kueue.running(state, frameworks=("batch/job", "pod"),
                           extra_configuration=WAIT_FOR_PODS_READY), \
                KpyschedProcess(state, GANG_CONFIG, log_level="info") as scheduler:
            yield KueueCluster(state, scheduler)
    finally:
        harness.down(directory)


@pytest.fixture
async def api(kueue_cluster: KueueCluster) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(kueue_cluster.state) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(api, "kueue")
    try:
        yield name
    finally:
        await kube.delete_namespace(api, name)


def _custom(api: client.ApiClient) -> Any:
    return client.CustomObjectsApi(api)


async def _create_cluster_scoped(api: client.ApiClient, plural: str,
                                 body: dict[str, Any]) -> None:
    await _custom(api).create_cluster_custom_object(GROUP, VERSION, plural, body)


async def _queues(api: client.ApiClient, namespace: str, name: str, *, cpu: str,
                  flavor_spec: dict[str, Any] | None = None) -> str:
    """A ResourceFlavor, a ClusterQueue with `cpu` of quota on it, and a LocalQueue in
    `namespace`; returns the LocalQueue's name once the ClusterQueue is Active."""
    await _create_cluster_scoped(api, "resourceflavors", {
        "apiVersion": kueue.API_VERSION, "kind": "ResourceFlavor",
        "metadata": {"name": name}, "spec": flavor_spec or {}})
    await _create_cluster_scoped(api, "clusterqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": namespace}},
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                     {"name": name, "resources": [
                         {"name": "cpu", "nominalQuota": cpu},
                         {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    await _custom(api).create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", {
        "apiVersion": kueue.API_VERSION, "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": name}})

    async def active() -> bool:
        queue = await _custom(api).get_cluster_custom_object(GROUP, VERSION, "clusterqueues",
                                                             name)
        return any(c["type"] == "Active" and c["status"] == "True"
                   for c in queue.get("status", {}).get("conditions", []))

    await kube.wait_for(active, ADMIT_TIMEOUT_SECONDS, f"ClusterQueue {name} Active")
    return name


async def _delete_queues(api: client.ApiClient, name: str) -> None:
    for plural in ("clusterqueues", "resourceflavors"):
        try:
            await _custom(api).delete_cluster_custom_object(GROUP, VERSION, plural, name)
        except client.ApiException as error:
            if error.status != 404:
                raise


def _job(name: str, queue: str, *, cpu: str, parallelism: int = 1,
         annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
         node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    pod = kube.pod_body(name, scheduler_name=SCHEDULER, cpu=cpu, memory="1Gi",
                        node_selector=node_selector)
    pod["metadata"] = {"annotations": annotations or {}, "labels": labels or {}}
    pod["spec"]["restartPolicy"] = "Never"
    # No `suspend`: Kueue's mutating webhook sets it, which the test checks.
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {kueue.QUEUE_LABEL: queue}},
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "backoffLimit": 0, "template": pod}}


async def _pods(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    response = await client.CoreV1Api(api).list_namespaced_pod(namespace,
                                                                _preload_content=False)
    items: list[dict[str, Any]] = json.loads(await response.read())["items"]
    return items


async def _workloads(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    listed = await _custom(api).list_namespaced_custom_object(GROUP, VERSION, namespace,
                                                              "workloads")
    items: list[dict[str, Any]] = listed["items"]
    return items


def _admitted(workload: dict[str, Any]) -> bool:
    return any(c["type"] == "Admitted" and c["status"] == "True"
               for c in workload.get("status", {}).get("conditions", []))


def _job_of(workload: dict[str, Any]) -> str:
    owners = workload["metadata"].get("ownerReferences", [])
    return next((o["name"] for o in owners if o["kind"] == "Job"), "")


async def _check_quota_held(api: client.ApiClient, namespace: str) -> dict[str, list[str]]:
    """Pods of Jobs whose Workload is not admitted must not exist; returns
    job -> its pods' nodes (\"\" for unbound)."""
    # A finished Workload was admitted before; its pods stay (Succeeded).
    admitted = {_job_of(w) for w in await _workloads(api, namespace)
                if _admitted(w) or _condition_time(w, "Finished")}
    by_job: dict[str, list[str]] = {}
    for pod in await _pods(api, namespace):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        job = pod["metadata"].get("labels", {}).get("job-name", "")
        by_job.setdefault(job, []).append(pod["spec"].get("nodeName", ""))
    overrun = sorted(set(by_job) - admitted)
    assert not overrun, f"pods run for Jobs Kueue has not admitted: {overrun}"
    return by_job


async def _wait_placed(api: client.ApiClient, namespace: str, jobs: set[str],
                       per_job: int) -> dict[str, list[str]]:
    async def placed() -> dict[str, list[str]] | None:
        by_job = await _check_quota_held(api, namespace)
        done = all(len(by_job.get(j, [])) == per_job and all(by_job[j]) for j in jobs)
        return by_job if done else None

    result: dict[str, list[str]] = await kube.wait_for(
        placed, ADMIT_TIMEOUT_SECONDS, f"Jobs {sorted(jobs)} admitted and their pods bound")
    return result


async def _scheduled_by_kpysched(api: client.ApiClient, namespace: str,
                                 pods: list[dict[str, Any]]) -> None:
    events = await kube.events(api, namespace, "Scheduled")
    reporters = {e["regarding"]["name"]: e.get("reportingController") for e in events}
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["spec"]["schedulerName"] == SCHEDULER, name
        assert reporters.get(name) == SCHEDULER, (
            f"pod {name} has no Scheduled event from kpysched: {reporters}")


def _condition_time(workload: dict[str, Any], kind: str) -> str:
    """When the Workload's condition `kind` turned True (RFC 3339, so it sorts), or ""."""
    return next((c["lastTransitionTime"] for c in workload.get("status", {}).get(
        "conditions", []) if c["type"] == kind and c["status"] == "True"), "")


async def test_jobs_within_quota_are_admitted_and_placed_by_kpysched(
    kueue_cluster: KueueCluster, api: client.ApiClient, namespace: str,
) -> None:
    """Three Jobs of 2 CPUs against a quota of 4, on nodes with room for all three (8
    CPUs): Kueue admits two, and the third only once one of those has finished (KWOK
    finishes a Job's pod right after it starts). At every poll no more than two pods are
    active; every pod is bound by kpysched."""
    here = {TEST_NODE_LABEL: namespace}
    node_names = await nodes.add(api, 2, nodes.NodeShape(cpu="4", memory="32Gi", labels=here),
                                 name_prefix=f"{namespace}-node")
    queue = await _queues(api, namespace, namespace, cpu="4")
    batch = client.BatchV1Api(api)
    jobs = [f"job-{index}" for index in range(3)]
    try:
        for name in jobs:
            created = await batch.create_namespaced_job(
                namespace, _job(name, queue, cpu="2", node_selector=here))
            assert created.spec.suspend is True, (
                "Kueue's mutating webhook did not suspend the Job at creation")

        async def all_finished() -> bool:
            pods = await _pods(api, namespace)
            active = [p["metadata"]["name"] for p in pods
                      if p["status"].get("phase") not in ("Succeeded", "Failed")]
            assert len(active) <= 2, f"more pods active than the quota admits: {active}"
            finished = [w for w in await _workloads(api, namespace)
                        if _condition_time(w, "Finished")]
            return len(finished) == len(jobs)

        await kube.wait_for(all_finished, ADMIT_TIMEOUT_SECONDS,
                            "Kueue to admit and finish all three Jobs")
        workloads = {_job_of(w): w for w in await _workloads(api, namespace)}
        by_admission = sorted(jobs, key=lambda j: _condition_time(workloads[j], "Admitted"))
        last = by_admission[-1]
        first_finish = min(_condition_time(workloads[j], "Finished") for j in by_admission[:2])
        assert _condition_time(workloads[last], "Admitted") >= first_finish, (
            f"{last} was admitted before either of the others finished: over quota")
        pods = await _pods(api, namespace)
        assert sorted(p["metadata"]["labels"]["job-name"] for p in pods) == jobs
        assert all(p["spec"].get("nodeName") in node_names for p in pods), pods
        await _scheduled_by_kpysched(api, namespace, pods)
    finally:
        await batch.delete_collection_namespaced_job(namespace, propagation_policy="Background")
        await kube.delete_nodes(api, node_names)
        await _delete_queues(api, queue)


def _assigned_hosts(workload: dict[str, Any]) -> Counter[str]:
    """Kueue's topology assignment of the Workload's one PodSet: host -> pods.

    v1beta2 writes it compressed: slices of `domainCount` domains, each level's values
    either one for all (`universal`) or per domain (`prefix` + root + `suffix`)."""
    assignment = workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    levels: list[str] = assignment["levels"]
    assert levels[-1] == HOST_LABEL, f"the lowest level is not the host: {levels}"
    hosts: Counter[str] = Counter()
    for piece in assignment["slices"]:
        count = piece.get("domainCount", 1)
        last = piece["valuesPerLevel"][-1]
        if "universal" in last:
            names = [last["universal"]] * count
        else:
            individual = last["individual"]
            names = [f"{individual.get('prefix', '')}{root}{individual.get('suffix', '')}"
                     for root in individual["roots"]]
        pods = piece["podCounts"]
        counts = ([pods["universal"]] * count if "universal" in pods
                  else list(pods["individual"]))
        for name, pod_count in zip(names, counts, strict=True):
            hosts[name] += pod_count
    return hosts


async def test_topology_aware_scheduling_pods_land_where_kueue_assigned(
    kueue_cluster: KueueCluster, api: client.ApiClient, namespace: str,
) -> None:
    """Kueue's TAS picks one rack for a Job that requires one, and the hosts in it for
    its pods; the pods wait behind Kueue's scheduling gate until Kueue names their
    host, then kpysched binds each where Kueue assigned it."""
    pool = {TAS_POOL_LABEL: namespace}
    rack_of: dict[str, str] = {}
    for rack in ("rack-a", "rack-b"):
        added = await nodes.add(
            api, 2, nodes.NodeShape(cpu="4", memory="32Gi", zones=1,
                                    labels={**pool, RACK_LABEL: rack}),
            name_prefix=f"{namespace}-{rack}")
        rack_of.update(dict.fromkeys(added, rack))
    node_names = list(rack_of)
    topology = namespace
    await _create_cluster_scoped(api, "topologies", {
        "apiVersion": kueue.API_VERSION, "kind": "Topology", "metadata": {"name": topology},
        "spec": {"levels": [{"nodeLabel": nodes.ZONE_LABEL}, {"nodeLabel": RACK_LABEL},
                            {"nodeLabel": HOST_LABEL}]}})
    queue = await _queues(api, namespace, namespace, cpu="32",
                          flavor_spec={"nodeLabels": pool, "topologyName": topology})
    batch = client.BatchV1Api(api)
    try:
        # Three pods of 2 CPUs: one rack (8 CPUs on two hosts) holds them, one host not.
        await batch.create_namespaced_job(namespace, _job(
            "tas", queue, cpu="2", parallelism=3,
            annotations={"kueue.x-k8s.io/podset-required-topology": RACK_LABEL}))
        placed = await _wait_placed(api, namespace, {"tas"}, per_job=3)
        workload = next(w for w in await _workloads(api, namespace) if _job_of(w) == "tas")
        assigned = _assigned_hosts(workload)
        assert Counter(placed["tas"]) == assigned, (
            f"pods landed on {Counter(placed['tas'])}, Kueue assigned {assigned}")
        pods = await _pods(api, namespace)
        used_racks = {rack_of[p["spec"]["nodeName"]] for p in pods}
        assert len(used_racks) == 1, (
            f"the pods span racks {used_racks}: {[p['spec']['nodeName'] for p in pods]}")
        for pod in pods:
            assert not pod["spec"].get("schedulingGates"), pod["metadata"]["name"]
        await _scheduled_by_kpysched(api, namespace, pods)
    finally:
        await batch.delete_collection_namespaced_job(namespace, propagation_policy="Background")
        await kube.delete_nodes(api, node_names)
        await _delete_queues(api, queue)
        try:
            await _custom(api).delete_cluster_custom_object(GROUP, VERSION, "topologies",
                                                            topology)
        except client.ApiException as error:
            if error.status != 404:
                raise


async def test_pod_group_admitted_by_kueue_is_placed_whole_or_not_at_all(
    kueue_cluster: KueueCluster, api: client.ApiClient, namespace: str,
) -> None:
    """A Job whose three pods form one Coscheduling PodGroup (minMember 3): Kueue admits
    it, kpysched places none of its pods while only two fit, all three once a third node
    comes, and Kueue's waitForPodsReady then reports the Workload PodsReady."""
    here = {TEST_NODE_LABEL: namespace}
    shape = nodes.NodeShape(cpu="4", memory="32Gi", labels=here)
    node_names = await nodes.add(api, 2, shape, name_prefix=f"{namespace}-node")
    queue = await _queues(api, namespace, namespace, cpu="32")
    batch = client.BatchV1Api(api)
    try:
        await _custom(api).create_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
            {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "gang"}, "spec": {"minMember": 3}})
        # Three pods of 3 CPUs: one per 4-CPU node, so two nodes hold only two of them.
        await batch.create_namespaced_job(namespace, _job(
            "gang", queue, cpu="3", parallelism=3, labels={POD_GROUP_LABEL: "gang"},
            node_selector=here))

        async def group_rejected() -> list[dict[str, Any]] | None:
            pods = await _pods(api, namespace)
            names = {p["metadata"]["name"] for p in pods}
            events = await kube.events(api, namespace, "FailedScheduling")
            rejected = {e["regarding"]["name"] for e in events
                        if e.get("reportingController") == SCHEDULER}
            return pods if len(names) == 3 and names <= rejected else None

        await kube.wait_for(group_rejected, ADMIT_TIMEOUT_SECONDS,
                                   "kpysched's FailedScheduling for each of the group's pods")
        workload = next(w for w in await _workloads(api, namespace) if _job_of(w) == "gang")
        assert _admitted(workload), "Kueue did not admit the group's Workload"
        bound = [p["metadata"]["name"] for p in await _pods(api, namespace)
                 if p["spec"].get("nodeName")]
        assert not bound, f"a partial group was placed: {bound}"

        node_names += await nodes.add(api, 1, shape, name_prefix=f"{namespace}-node")
        placed = await _wait_placed(api, namespace, {"gang"}, per_job=3)
        assert sorted(placed["gang"]) == sorted(node_names), placed
        await _scheduled_by_kpysched(api, namespace, await _pods(api, namespace))

        async def pods_ready() -> bool:
            current = next(w for w in await _workloads(api, namespace)
                           if _job_of(w) == "gang")
            return any(c["type"] == "PodsReady" and c["status"] == "True"
                       for c in current.get("status", {}).get("conditions", []))

        await kube.wait_for(pods_ready, ADMIT_TIMEOUT_SECONDS,
                            "Kueue's PodsReady condition on the group's Workload")
    finally:
        await batch.delete_collection_namespaced_job(namespace, propagation_policy="Background")
        await kube.delete_nodes(api, node_names)
        await _delete_queues(api, queue)


def _gauge(scheduler: KpyschedProcess, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    _, body = scheduler.get("/metrics")
    return sum(sample.value for family in text_string_to_metric_families(body)
               for sample in family.samples
               if sample.name == name and all(sample.labels.get(k) == v
                                              for k, v in labels.items()))


GATED_PODS = 100
ADMISSION_GATE = "kueue.x-k8s.io/admission"


async def test_pods_kueue_holds_gated_cost_kpysched_no_attempts(
    kueue_cluster: KueueCluster, api: client.ApiClient, namespace: str,
) -> None:
    """Plain pods under Kueue's `pod` integration: its webhook gates each with
    kueue.x-k8s.io/admission until its Workload is admitted. With quota for one, kpysched
    holds the other 99 in its gated set and spends no scheduling attempt on them."""
    here = {TEST_NODE_LABEL: namespace}
    node_names = await nodes.add(api, 1, nodes.NodeShape(cpu="4", memory="32Gi", labels=here),
                                 name_prefix=f"{namespace}-node")
    queue = await _queues(api, namespace, namespace, cpu="1")
    scheduler = kueue_cluster.kpysched
    attempts_before = _gauge(scheduler, "scheduler_schedule_attempts_total")
    gated_before = _gauge(scheduler, "scheduler_pending_pods", queue="gated")
    try:
        core = client.CoreV1Api(api)
        for index in range(GATED_PODS):
            body = kube.pod_body(f"held-{index}", scheduler_name=SCHEDULER, cpu="1",
                                 memory="100Mi", labels={kueue.QUEUE_LABEL: queue},
                                 node_selector=here)
            await core.create_namespaced_pod(namespace, body)

        async def one_running_rest_gated() -> list[dict[str, Any]] | None:
            pods = await _pods(api, namespace)
            bound = [p for p in pods if p["spec"].get("nodeName")]
            gated = [p for p in pods
                     if ADMISSION_GATE in {g["name"] for g in
                                           p["spec"].get("schedulingGates", [])}]
            held = _gauge(scheduler, "scheduler_pending_pods", queue="gated") - gated_before
            done = (len(pods) == GATED_PODS and len(bound) == 1
                    and len(gated) == GATED_PODS - 1 and held == GATED_PODS - 1)
            return bound if done else None

        bound = await kube.wait_for(
            one_running_rest_gated, ADMIT_TIMEOUT_SECONDS,
            f"one pod admitted and bound, {GATED_PODS - 1} gated and held by kpysched")
        await _scheduled_by_kpysched(api, namespace, bound)
        attempts = _gauge(scheduler, "scheduler_schedule_attempts_total") - attempts_before
        assert attempts == 1, (
            f"{attempts:.0f} scheduling attempts for 1 admitted and {GATED_PODS - 1} gated "
            "pods: kpysched tried gated pods")
    finally:
        await client.CoreV1Api(api).delete_collection_namespaced_pod(
            namespace, grace_period_seconds=0)
        await kube.delete_nodes(api, node_names)
        await _delete_queues(api, queue)


async def test_kueue_pod_group_is_placed_whole_by_kpysched(
    kueue_cluster: KueueCluster, api: client.ApiClient, namespace: str,
) -> None:
    """Kueue's own pod group (plain pods with kueue.x-k8s.io/pod-group-name and a total
    count) that is also one Coscheduling PodGroup: Kueue admits the group and lifts its
    admission gate from all three pods; kpysched binds none while only two fit and all
    three once a third node comes."""
    here = {TEST_NODE_LABEL: namespace}
    shape = nodes.NodeShape(cpu="4", memory="32Gi", labels=here)
    node_names = await nodes.add(api, 2, shape, name_prefix=f"{namespace}-node")
    queue = await _queues(api, namespace, namespace, cpu="32")
    core = client.CoreV1Api(api)
    try:
        await _custom(api).create_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
            {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "group"}, "spec": {"minMember": 3}})
        names = [f"member-{index}" for index in range(3)]
        for name in names:
            body = kube.pod_body(name, scheduler_name=SCHEDULER, cpu="3", memory="1Gi",
                                 node_selector=here, labels={
                                     kueue.QUEUE_LABEL: queue, POD_GROUP_LABEL: "group",
                                     "kueue.x-k8s.io/pod-group-name": "group"})
            body["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "3"}
            created = await core.create_namespaced_pod(namespace, body)
            assert ADMISSION_GATE in {g.name for g in created.spec.scheduling_gates or ()}, (
                "Kueue's webhook did not gate the pod at creation")

        async def ungated_and_rejected() -> bool:
            pods = await _pods(api, namespace)
            ungated = [p for p in pods if ADMISSION_GATE not in {
                g["name"] for g in p["spec"].get("schedulingGates", [])}]
            events = await kube.events(api, namespace, "FailedScheduling")
            rejected = {e["regarding"]["name"] for e in events
                        if e.get("reportingController") == SCHEDULER}
            return len(ungated) == 3 and set(names) <= rejected

        await kube.wait_for(ungated_and_rejected, ADMIT_TIMEOUT_SECONDS,
                            "Kueue to lift the group's gates and kpysched to reject it whole")
        bound = [p["metadata"]["name"] for p in await _pods(api, namespace)
                 if p["spec"].get("nodeName")]
        assert not bound, f"a partial group was placed: {bound}"

        node_names += await nodes.add(api, 1, shape, name_prefix=f"{namespace}-node")
        placed = await kube.wait_bound(api, namespace, names, timeout=ADMIT_TIMEOUT_SECONDS)
        assert sorted(placed.values()) == sorted(node_names), placed
        await _scheduled_by_kpysched(api, namespace, await _pods(api, namespace))
    finally:
        await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        await kube.delete_nodes(api, node_names)
        await _delete_queues(api, queue)


# Kueue with a short waitForPodsReady timeout, in a cluster of its own: the module's
# other tests must not be evicted while a node comes.
PODS_READY_TIMEOUT = {"waitForPodsReady": {"timeout": "15s", "blockAdmission": False}}


@pytest.fixture(scope="module")
def short_timeout_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KueueCluster]:
    directory = tmp_path_factory.mktemp("kueue-timeout-cluster") / "state"
    state = harness.up(directory, harness.FULL)
    try:
        kubectl.run(state, "apply", "-f", str(REPO / "deploy" / "crds" /
                                             "scheduling.x-k8s.io_podgroups.yaml"))
        kubectl.run(state, "wait", "--for=condition=Established", "--timeout=60s",
                    "crd/podgroups.scheduling.x-k8s.io")
        with kueue.running(state, extra_configuration=PODS_READY_TIMEOUT), \
                KpyschedProcess(state, GANG_CONFIG, log_level="info") as scheduler:
            yield KueueCluster(state, scheduler)
    finally:
        harness.down(directory)


async def test_group_that_never_fits_is_evicted_by_kueue_with_no_pod_placed(
    short_timeout_cluster: KueueCluster,
) -> None:
    """A Coscheduling group of three 3-CPU pods on two 4-CPU nodes: Kueue admits it,
    kpysched places none (no partial group holds two nodes), and after waitForPodsReady's
    15 s Kueue evicts the Workload and suspends the Job again; no pod was ever bound."""
    async with kube.api_client(short_timeout_cluster.state) as api:
        namespace = await kube.create_namespace(api, "kueue")
        here = {TEST_NODE_LABEL: namespace}
        node_names = await nodes.add(api, 2, nodes.NodeShape(cpu="4", memory="32Gi",
                                                             labels=here),
                                     name_prefix=f"{namespace}-node")
        queue = await _queues(api, namespace, namespace, cpu="32")
        batch = client.BatchV1Api(api)
        try:
            await _custom(api).create_namespaced_custom_object(
                "scheduling.x-k8s.io", "v1alpha1", namespace, "podgroups",
                {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": {"name": "gang"}, "spec": {"minMember": 3}})
            await batch.create_namespaced_job(namespace, _job(
                "gang", queue, cpu="3", parallelism=3, labels={POD_GROUP_LABEL: "gang"},
                node_selector=here))
            seen_pods: set[str] = set()

            async def evicted() -> dict[str, Any] | None:
                pods = await _pods(api, namespace)
                seen_pods.update(p["metadata"]["name"] for p in pods)
                bound = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")]
                assert not bound, f"a partial group was placed: {bound}"
                workload = next((w for w in await _workloads(api, namespace)
                                 if _job_of(w) == "gang"), None)
                if workload is None:
                    return None
                condition = next((c for c in workload.get("status", {}).get("conditions", [])
                                  if c["type"] == "Evicted" and c["status"] == "True"), None)
                return condition

            condition = await kube.wait_for(
                evicted, ADMIT_TIMEOUT_SECONDS + 15,
                "Kueue to evict the group after waitForPodsReady's timeout")
            assert condition["reason"] == "PodsReadyTimeout", condition
            assert len(seen_pods) == 3, f"the group's pods never all existed: {seen_pods}"
            await kube.wait_for(
                lambda: _suspended(batch, namespace, "gang"), ADMIT_TIMEOUT_SECONDS,
                "the evicted Job suspended again")
        finally:
            await batch.delete_collection_namespaced_job(namespace,
                                                         propagation_policy="Background")
            await kube.delete_nodes(api, node_names)
            await _delete_queues(api, queue)
            await kube.delete_namespace(api, namespace)


async def _suspended(batch: client.BatchV1Api, namespace: str, name: str) -> bool:
    return bool((await batch.read_namespaced_job(name, namespace)).spec.suspend)
