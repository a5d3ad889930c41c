"""`kpysched explain` against the live leader on the real cluster (issue 16): run as a
person would (the command, and kubectl's plugin), compared with what the cluster shows.
The leader is reached through the API server's aggregation layer (tests/cluster/
aggregated.py registers its decisions API)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster import aggregated, build, kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess

pytestmark = pytest.mark.e2e

SCHEDULER = "kpysched"
ROOT = Path(__file__).resolve().parents[2]
SSD = {"disktype": "ssd"}


def explain(cluster: ClusterState, pod: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "explain", pod, "--kubeconfig",
         cluster.kubeconfig, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def explained(cluster: ClusterState, pod: str, *args: str) -> str:
    result = explain(cluster, pod, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


async def _failed_scheduling(api: client.ApiClient, namespace: str, pod: str) -> Any:
    listed = await client.EventsV1Api(api).list_namespaced_event(
        namespace, field_selector=f"regarding.name={pod}")
    return next((e for e in listed.items if e.reason == "FailedScheduling"), None)


def _event_counts(note: str) -> Counter[str]:
    """'0/20 nodes are available: 6 Insufficient cpu, 5 node(s) ... . preemption: ...'
    -> reason -> count, the part before preemption."""
    filters = note.split(" nodes are available: ", 1)[1].split(". ", 1)[0].rstrip(".")
    counts: Counter[str] = Counter()
    for part in filters.split(", "):
        count, reason = part.split(" ", 1)
        counts[reason] = int(count)
    return counts


async def test_pending_pod_names_each_failing_plugin_with_the_event_counts(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    groups = {  # plugin expected first to fail -> nodes; the pod wants ssd and 2 CPUs
        "NodeResourcesFit": await kube.create_nodes(api, 6, prefix="small", cpu="1",
                                                    labels=SSD),
        "TaintToleration": await kube.create_nodes(api, 5, prefix="tainted", labels=SSD,
                                                   taints=taint),
        "NodeAffinity": await kube.create_nodes(api, 5, prefix="hdd",
                                                labels={"disktype": "hdd"}),
        "NodeUnschedulable": await kube.create_nodes(api, 4, prefix="cordoned", labels=SSD,
                                                     unschedulable=True),
    }
    for names in groups.values():
        nodes_to_clean += names
    await kube.create_pod(api, namespace, kube.pod_body(
        "stuck", scheduler_name=SCHEDULER, cpu="2", node_selector=SSD))

    with aggregated.decisions_api(cluster):
        event = await kube.wait_for(lambda: _failed_scheduling(api, namespace, "stuck"), 30,
                                    "a FailedScheduling event")
        table = explained(cluster, f"{namespace}/stuck")
        raw = json.loads(explained(cluster, "stuck", "-n", namespace, "-o", "json"))
    print(table)

    total = len((await client.CoreV1Api(api).list_node()).items)
    assert event.note.startswith(f"0/{total} nodes are available:")
    expected = _event_counts(event.note)
    decision = raw["decisions"][-1]
    assert decision["outcome"] == "Unschedulable" and decision["message"] == event.note
    # Every node by name, under the plugin that rejected it first.
    for plugin, names in groups.items():
        for name in names:
            assert decision["rejected"][name]["plugin"] == plugin, (name, decision["rejected"])
    # The table: one row per plugin and reason, its count that of the event.
    rows = {(m["plugin"], m["reason"]): int(m["count"]) for m in re.finditer(
        r"^  (?P<plugin>\w+) +(?P<count>\d+)  (?P<reason>.+?)  ", table, re.MULTILINE)}
    assert Counter({reason: count for (_, reason), count in rows.items()}) == expected
    assert {plugin for plugin, _ in rows} >= set(groups)
    assert "0/" in table and "Unschedulable" in table
    # Where it waits: among the unschedulable pods (or backing off, if a node event
    # came after its attempt), with the plugins that rejected it and, when it waits for
    # an event, what each registered for (NodeResourcesFit hears a node being added).
    queue = raw["queue"]
    assert queue["queue"] in ("unschedulable", "backoff", "active", "inFlight"), queue
    assert queue["attempts"] >= 1
    assert set(queue["rejectedBy"]) >= set(groups), queue
    if queue["queue"] == "unschedulable":
        assert {"plugin": "NodeResourcesFit", "event": "NodeAdd",
                "text": "a node is added"} in queue["requeueOn"]
        assert "NodeResourcesFit: " in table and "a node is added (NodeAdd)" in table
    assert table.startswith("Queue: ")


async def test_a_gated_pod_never_tried_says_where_it_waits_and_what_frees_it(
    cluster: ClusterState, api: client.ApiClient, namespace: str,
) -> None:
    body = kube.pod_body("held", scheduler_name=SCHEDULER)
    body["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    await kube.create_pod(api, namespace, body)
    with aggregated.decisions_api(cluster):
        async def answered() -> dict[str, Any] | None:
            result = explain(cluster, f"{namespace}/held", "-o", "json")
            return json.loads(result.stdout) if result.returncode == 0 else None

        raw = await kube.wait_for(answered, 30, "explain to answer for the gated pod")
        table = explained(cluster, f"{namespace}/held")
    print(table)
    assert raw["decisions"] == []
    assert raw["queue"]["queue"] == "gated" and raw["queue"]["gatedBy"] == "SchedulingGates"
    assert raw["queue"]["attempts"] == 0
    assert [t["event"] for t in raw["queue"]["requeueOn"]] == [
        "PodUpdatePodSchedulingGatesEliminated"]
    assert table.splitlines()[:2] == [
        "Queue: held back before the queue (PreEnqueue); 0 attempt(s) so far",
        "  gated by plugin SchedulingGates"]


async def test_bound_pod_top_score_is_its_node_and_ties_are_shown(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
    tmp_path: Path,
) -> None:
    nodes_to_clean += await kube.create_nodes(api, 3, prefix="twin", cpu="8", memory="16Gi")
    nodes_to_clean += await kube.create_nodes(api, 1, prefix="crowded", cpu="2",
                                              memory="4Gi")
    await kube.create_pod(api, namespace, kube.pod_body("placed", scheduler_name=SCHEDULER,
                                                        cpu="500m"))
    with aggregated.decisions_api(cluster):
        bound = await kube.wait_bound(api, namespace, ["placed"], timeout=30)
        table = explained(cluster, f"{namespace}/placed")
        raw = json.loads(explained(cluster, f"{namespace}/placed", "-o", "json"))
        plugin = _kubectl_plugin(cluster, tmp_path, f"{namespace}/placed")
    print(table)

    decision = raw["decisions"][-1]
    node = bound["placed"]
    assert decision["outcome"] == "Bound" and decision["node"] == node
    totals = dict(zip(decision["feasible"], decision["totals"], strict=True))
    assert totals[node] == max(totals.values())
    ties = {name for name, total in totals.items() if total == totals[node]}
    assert set(decision["ties"]) == ties
    # Per plugin: normalised x weight adds up to the total.
    for index, name in enumerate(decision["feasible"]):
        assert sum(p["normalized"][index] * p["weight"] for p in decision["scores"]) \
            == totals[name]
    score_rows = [line for line in table.splitlines()[table.splitlines().index(
        next(line for line in table.splitlines() if line.startswith("Score:"))) + 2:]
        if line.startswith("  ") and line.strip()]
    top_row = score_rows[0].split()
    assert top_row[0] in ties
    chosen_row = next(line for line in score_rows if line.split()[0] == node)
    assert "chosen" in chosen_row
    if len(ties) > 1:
        assert "tie" in chosen_row
        assert f"{len(ties)} nodes tie at the top score" in table
    assert plugin.stdout == table


def _kubectl_plugin(cluster: ClusterState, bin_dir: Path, pod: str
                    ) -> subprocess.CompletedProcess[str]:
    """`kubectl kpysched explain POD`, with kubectl-kpysched on the PATH as pip installs it
    (a console script calling kpysched.cli:kubectl_plugin)."""
    shim = bin_dir / "kubectl-kpysched"
    shim.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                    "from kpysched.cli import kubectl_plugin\n"
                    "sys.exit(kubectl_plugin())\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    result = subprocess.run(
        [str(build.binary_path("kubectl")), "kpysched", "explain", pod,
         "--kubeconfig", cluster.kubeconfig], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert result.returncode == 0, result.stderr
    return result


async def test_preemptor_names_the_victims_actually_deleted(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    for name, value in (("e2e-low", 10), ("e2e-high", 10000)):
        with contextlib.suppress(ApiException):
            await client.SchedulingV1Api(api).create_priority_class(
                {"metadata": {"name": name}, "value": value})
    nodes_to_clean += await kube.create_nodes(api, 2, prefix="full", cpu="2")
    core = client.CoreV1Api(api)
    for index, node in enumerate(nodes_to_clean):
        for half in range(2):
            body = kube.pod_body(f"low-{index}-{half}", scheduler_name=SCHEDULER, cpu="1",
                                 priority_class="e2e-low")
            body["spec"]["nodeName"] = node
            await core.create_namespaced_pod(namespace, body)
    with aggregated.decisions_api(cluster) as kp:
        await kube.create_pod(api, namespace, kube.pod_body(
            "urgent", scheduler_name=SCHEDULER, cpu="1500m", priority_class="e2e-high"))
        await kube.wait_bound(api, namespace, ["urgent"], timeout=60)
        deleted = {e["victim"] for e in kp.log_events()
                   if e.get("event") == "preemption.victim_deleted"}
        table = explained(cluster, f"{namespace}/urgent", "--all")
        raw = json.loads(explained(cluster, f"{namespace}/urgent", "-o", "json"))
    print(table)

    left = {p.metadata.name for p in (await core.list_namespaced_pod(namespace)).items}
    gone = {f"{namespace}/{name}" for name in
            {f"low-{i}-{h}" for i in range(2) for h in range(2)} - left}
    assert gone and gone == deleted
    preemption = next(d["preemption"] for d in raw["decisions"] if d["preemption"])
    chosen = next(c for c in preemption["candidates"] if c["node"] == preemption["chosen"])
    assert set(chosen["victims"]) == gone
    assert preemption["criterion"]
    assert f"chose {preemption['chosen']} by {preemption['criterion']}" in table
    for victim in gone:
        assert victim in table


async def test_a_pod_never_seen_says_so_and_exits_1(
    cluster: ClusterState, namespace: str,
) -> None:
    with aggregated.decisions_api(cluster):
        result = explain(cluster, f"{namespace}/nobody")
    assert result.returncode == 1, result.stderr
    assert f"kept no decision for pod {namespace}/nobody" in result.stderr


async def test_without_the_endpoint_explain_says_how_to_turn_it_on(
    cluster: ClusterState, namespace: str,
) -> None:
    with KpyschedProcess(cluster, log_level="info"):
        result = explain(cluster, f"{namespace}/any")
    assert result.returncode == 3
    assert "--enable-decision-endpoint" in result.stderr
