"""kpysched installed and run in-cluster as an operator does (issue 12, acceptance).

From an empty cluster with one real node (kubelet + containerd) and, later, KWOK nodes:

1. the image built from the Dockerfile (scripts/build-image.sh) and imported into the
   node's containerd;
2. `helm install` of charts/kpysched with the harness's helm, default values except
   image.repository (pullPolicy stays IfNotPresent: the image is already there);
3. both replicas Ready, non-root with a read-only root filesystem, one holding the Lease;
4. a 10-replica Deployment with schedulerName kpysched Running on KWOK nodes and a
   bare pod really running on the real node, with kpysched's Scheduled events (also in
   `kubectl describe`); plus a pod no node fits and one whose binding an admission
   policy refuses, so the unschedulable and bind-failure panels have data;
5. the leader pod deleted and the other replica leading within leaseDuration +
   retryPeriod; then `helm upgrade` with a changed profile rolling both replicas with
   never two leading at once (each replica's /metrics polled), and no pod scheduled
   twice through all of it;
6. Prometheus (built from the module proxy, run on the host) scraping the pods through
   Kubernetes service discovery over HTTPS with a ServiceAccount token, and every
   dashboard panel query returning data over the run (every alert expression
   evaluating, and quiet);
7. GET /metrics without a token refused, with Prometheus's token answered;
8. `helm uninstall` leaving no kpysched object behind.

Run alone: `.venv/bin/python -m pytest -m in_cluster` (needs root: buildah,
containerd, kube-proxy's iptables rules). Around the real node it also runs what a
real cluster has and the harness does not: kube-scheduler (it places kpysched's own
pods) and kube-proxy with the `kubernetes` Service reachable from pods
(tests/cluster/pod_network.py). `KPYSCHED_DASHBOARD_SNAPSHOT=<file.json>` saves the
panels' range query results (docs/dashboard.png is drawn from them by
scripts/render-dashboard.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import build, kpysched_image, kube, kubectl, nodes, pod_network, prometheus
from tests.cluster import cluster as harness
from tests.cluster.processes import log_tail
from tests.cluster.realnode import node
from tests.cluster.realnode.images import HELLO_IMAGE
from tests.cluster.state import ClusterState
from tests.e2e.test_deploy import CHART, DASHBOARD, dashboard_queries, render

pytestmark = [pytest.mark.e2e, pytest.mark.in_cluster]

RELEASE = NAMESPACE = "kpysched"
LEASE = "kpysched"
LEASE_DURATION, RETRY_PERIOD = 15.0, 2.0  # the chart's defaults (values.yaml)
REAL_NODE = "kpysched-node"
# KWOK nodes run nothing: the usual taint keeps every pod but the test's workload off
# them (kpysched's own replacement pods above all, which must really run).
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
PANEL_VARIABLES = {"$__rate_interval": "1m", "$job": "kpysched-metrics",
                   "$namespace": NAMESPACE, "$instance": ".+"}
# How long the panels may take to show data after the API server's restart (a few
# scrapes), and the quiet alerts to go quiet after the failing pods are deleted (a
# scrape after it): waited for, not slept.
PANELS_TIMEOUT_SECONDS = ALERTS_QUIET_TIMEOUT_SECONDS = 60.0


@dataclass(slots=True)
class InCluster:
    state: ClusterState
    directory: Path
    # scripts/build-image.sh, run while the cluster and the node start (it waits mostly
    # on PyPI): the OCI archive's path once built.
    image: Future[Path]


async def _with_api(state: ClusterState, work: Any) -> Any:
    async with kube.api_client(state) as api:
        return await work(api)


@pytest.fixture(scope="module")
def in_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InCluster]:
    # A short path: containerd's socket under it must fit a unix socket name.
    directory = Path(os.environ.get("KPYSCHED_IN_CLUSTER_DIR") or
                     tmp_path_factory.mktemp("incl")) / "c"
    with ThreadPoolExecutor(max_workers=1) as image_builder:
        image = image_builder.submit(kpysched_image.build)
        state = harness.up(directory, harness.FULL)
        network = None
        try:
            node.start(state)
            network = asyncio.run(_with_api(state, lambda api: pod_network.start(state, api)))
            yield InCluster(state, directory, image)
        finally:
            problems: list[str] = []
            if network is not None:
                problems += asyncio.run(_with_api(state,
                                                  lambda api: pod_network.stop(network, api)))
            problems += node.stop(directory)
            harness.down(directory)
            assert not problems, f"clean-up failed: {problems}"


def _wait(what: str, timeout: float, check: Any, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last})")


def _helm(state: ClusterState, *args: str) -> str:
    from tests.e2e.test_deploy import helm
    return helm(*args, "--kubeconfig", state.kubeconfig).stdout


def _scheduler_pods(state: ClusterState) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kubectl.get_json(
        state, "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def _assert_api_server_admitted(state: ClusterState) -> None:
    """With the decisions API on, the chart's NetworkPolicy admits the addresses the
    cluster publishes for the API server (what the aggregator connects from)."""
    slices = kubectl.get_json(state, "endpointslices", "-n", "default", "-l",
                              "kubernetes.io/service-name=kubernetes")["items"]
    addresses = {a for s in slices for e in s.get("endpoints", []) for a in e["addresses"]}
    assert addresses, slices
    (policy,) = kubectl.get_json(state, "networkpolicies", "-n", NAMESPACE, "-l",
                                 f"app.kubernetes.io/instance={RELEASE}")["items"]
    admitted = {peer["ipBlock"]["cidr"] for rule in policy["spec"]["ingress"]
                for peer in rule["from"] if "ipBlock" in peer}
    assert {f"{a}/128" if ":" in a else f"{a}/32" for a in addresses} <= admitted, policy


def _labelled_leaders(state: ClusterState) -> list[str]:
    return sorted(p["metadata"]["name"] for p in _scheduler_pods(state)
                  if p["metadata"].get("labels", {}).get("kpysched.io/leader") == "true")


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions", []))


def _holder(state: ClusterState) -> str:
    lease = kubectl.get_json(state, "lease", LEASE, "-n", NAMESPACE)
    holder: str = lease["spec"].get("holderIdentity") or ""
    return holder


def _metrics_status(url: str, token: str | None) -> int:
    return _fetch_metrics(url, token)[0]


def _fetch_metrics(url: str, token: str | None) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"}
                                     if token else {})
    # No proxy from the environment: the pod network is on this machine.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(request, timeout=5) as response:
            status: int = response.status
            return status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


# A ValidatingAdmissionPolicy refusing the binding of pods named bind-refused-*: the API
# server answers kpysched's POST pods/binding with 403/422, a real bind failure.
REFUSE_BINDING = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: kpysched-e2e-refuse-binding}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"],
         resources: ["pods/binding"]}
  validations:
    - expression: "!object.metadata.name.startsWith('bind-refused')"
      message: "this e2e test refuses the binding"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: kpysched-e2e-refuse-binding}
spec:
  policyName: kpysched-e2e-refuse-binding
  validationActions: [Deny]
"""


def _workload(namespace: str) -> str:
    pod = {"schedulerName": "kpysched", "nodeSelector": {"type": "kwok"},
           "tolerations": [{**KWOK_TAINT, "operator": "Equal"}],
           "containers": [{"name": "app", "image": "kpysched.local/hello:test"}]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}},
    }
    nowhere = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "fits-nowhere", "namespace": namespace},
               "spec": {**pod, "nodeSelector": {"no-such-label": "x"}}}
    refused = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "bind-refused", "namespace": namespace}, "spec": pod}
    on_real_node = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "hello-real", "namespace": namespace},
                    "spec": {"schedulerName": "kpysched",
                             "nodeSelector": {"kubernetes.io/hostname": REAL_NODE},
                             "containers": [{"name": "hello", "image": HELLO_IMAGE,
                                             "imagePullPolicy": "Never"}]}}
    return "\n---\n".join(json.dumps(o) for o in (deployment, nowhere, refused,
                                                  on_real_node))


def test_helm_install_schedule_fail_over_scrape_and_uninstall(in_cluster: InCluster) -> None:
    state = in_cluster.state
    started = time.time()
    phases = _Phases()

    # 1. The image, built without a registry (begun by the fixture) and imported into
    #    the node's containerd.
    kpysched_image.import_into_node(in_cluster.directory, in_cluster.image.result())
    phases.done("image built and imported")

    # 2. helm install, default values except the image and the decision endpoint (the
    #    decisions API for `kpysched explain`, step 4).
    _helm(state, "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
          "--set", f"image.repository={kpysched_image.REPOSITORY}",
          "--set", "decisions.endpoint=true", "--wait", "--timeout", "5m")
    phases.done("helm install")

    # 3. Both replicas Ready on the real node, non-root, read-only root; one leads.
    pods = _wait("two Ready kpysched pods", 120,
                 lambda: [p for p in _scheduler_pods(state) if _ready(p)]
                 if len([p for p in _scheduler_pods(state) if _ready(p)]) == 2 else None)
    for pod in pods:
        assert pod["spec"]["nodeName"] == REAL_NODE
        (container,) = pod["spec"]["containers"]
        assert container["image"] == kpysched_image.IMAGE
        security = {**pod["spec"].get("securityContext", {}),
                    **container.get("securityContext", {})}
        assert security["runAsNonRoot"] is True and security["readOnlyRootFilesystem"] is True
    names = {p["metadata"]["name"] for p in pods}
    leader = _wait("a Lease holder", 60,
                   lambda: next((n for n in names if _holder(state).startswith(n)), None))
    _assert_api_server_admitted(state)
    # Only the leader's pod is labelled, so the decisions Service reaches no standby.
    _wait(f"only {leader} labelled the leader", 30, lambda: _labelled_leaders(state) == [leader])
    phases.done("both replicas Ready, one leading")

    # 6 and 7. Prometheus, with a ServiceAccount token allowed to get /metrics, from
    #    before the workload so the leader's scheduling is scraped.
    kubectl.run(state, "create", "serviceaccount", "prometheus", "-n", NAMESPACE)
    kubectl.run(state, "create", "clusterrole", "kpysched-e2e-metrics-reader",
                "--non-resource-url=/metrics", "--verb=get")
    kubectl.run(state, "create", "clusterrolebinding", "kpysched-e2e-metrics-reader",
                "--clusterrole=kpysched-e2e-metrics-reader",
                f"--serviceaccount={NAMESPACE}:prometheus")
    token = kubectl.run(state, "create", "token", "prometheus", "-n", NAMESPACE).stdout.strip()
    metrics_url = f"https://{pods[0]['status']['podIP']}:10259/metrics"
    assert _metrics_status(metrics_url, None) in (401, 403)
    assert _metrics_status(metrics_url, "not-a-token") == 401
    assert _metrics_status(metrics_url, token) == 200
    server = prometheus.start(state, in_cluster.directory / "prometheus", NAMESPACE, RELEASE,
                              token)
    try:
        _wait("both kpysched pods scraped", 60, lambda: len(
            [t for t in server.targets() if t["health"] == "up"]) == 2)
        phases.done("Prometheus scraping")
        _place_workload(state)
        phases.done("workload placed")
        # Two scrapes of the leader's work before it goes, so its rates exist.
        _wait("the leader's scheduled attempts scraped twice", 60, lambda: server.query(
            'count_over_time(scheduler_schedule_attempts_total{result="scheduled"}[1m]) >= 2'))
        _fail_over(state, names, leader)
        phases.done("fail-over")
        # The new leader places pods too, and watches end when kube-apiserver
        # restarts, so the informer panels get data.
        kubectl.run(state, "scale", "deployment", "web", "-n", "work", "--replicas=12")
        _wait("12 Running web pods", 120, lambda: _running_web(state) == 12)
        _upgrade_without_two_leaders(state, token)
        _assert_bound_once(state)
        phases.done("scale and upgrade")
        harness.restart_apiserver(in_cluster.directory)
        _check_panels(server, started)  # waits for a few scrapes after the restart
        phases.done("API server restarted, panels")
        # The deliberately failing pods go; then no alert that watches for a stuck or
        # leaderless scheduler may fire.
        kubectl.run(state, "delete", "pod", "fits-nowhere", "bind-refused", "-n", "work")
        _check_alerts(server)  # waits for a scrape after the deletion
        phases.done("alerts")
    except BaseException:
        print(log_tail(server.log))
        raise
    finally:
        server.stop()
        print(f"phases (s): {phases}")

    # 8. helm uninstall leaves no kpysched object.
    kubectl.run(state, "delete", "namespace", "work", "--wait=true", "--timeout=120s")
    _helm(state, "uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    # Terminating pods included: uninstall --wait does not wait for them.
    _wait("kpysched's pods gone", 120, lambda: not kubectl.run(
        state, "get", "pods", "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={RELEASE}",
        "-o", "name").stdout.strip())
    leftovers = kubectl.run(state, "get", "all,configmaps,serviceaccounts,roles,rolebindings,"
                            "clusterroles,clusterrolebindings,poddisruptionbudgets",
                            "-A", "-l", f"app.kubernetes.io/instance={RELEASE}",
                            "-o", "name").stdout.split()
    assert leftovers == []


class _Phases:
    """Seconds each step took, printed (never asserted) to show where the time goes."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._took: dict[str, float] = {}

    def done(self, name: str) -> None:
        now = time.monotonic()
        self._took[name], self._last = round(now - self._last, 1), now

    def __str__(self) -> str:
        return str(self._took)


def _running_web(state: ClusterState) -> int:
    return len([p for p in kubectl.get_json(state, "pods", "-n", "work", "-l", "app=web")["items"]
                if p["status"].get("phase") == "Running"
                and p["spec"].get("nodeName", "").startswith("kwok-node")])


def _place_workload(state: ClusterState) -> None:
    """Step 4: workloads placed by the in-cluster kpysched."""
    asyncio.run(_with_api(state, lambda api: nodes.add(api, 3, nodes.NodeShape(
        cpu="4", memory="32Gi", pods=110, zones=3, labels={}, taints=[KWOK_TAINT]))))
    kubectl.run(state, "apply", "-f", "-", stdin=REFUSE_BINDING)
    kubectl.run(state, "create", "namespace", "work")
    _wait_policy_effective(state, "work")
    kubectl.run(state, "apply", "-f", "-", stdin=_workload("work"))
    _wait("10 Running web pods", 120, lambda: _running_web(state) == 10)
    _wait("hello-real Running on the real node", 120, lambda: kubectl.get_json(
        state, "pod", "hello-real", "-n", "work")["status"].get("phase") == "Running")
    events = kubectl.get_json(state, "events.events.k8s.io", "-n", "work")["items"]
    assert {e["reportingController"] for e in events if e["reason"] == "Scheduled"} == \
        {"kpysched"}
    described = kubectl.run(state, "describe", "pod", "hello-real", "-n", "work").stdout
    assert "Scheduled" in described and "kpysched" in described, described
    _wait("FailedScheduling for fits-nowhere", 60, lambda: any(
        e["reason"] == "FailedScheduling" and e["regarding"]["name"] == "fits-nowhere"
        for e in kubectl.get_json(state, "events.events.k8s.io", "-n", "work")["items"]))
    _explain_in_cluster(state)


def _explain_in_cluster(state: ClusterState) -> None:
    """`kpysched explain` and `kubectl get --raw` through the chart's APIService: the
    API server authenticates the admin and proxies to the leader pod (aggregator routing
    to the pod IP); nothing is read from the Lease."""
    explained = subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "explain", "work/fits-nowhere"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "KUBECONFIG": state.kubeconfig})
    assert explained.returncode == 0, explained.stderr
    assert "Unschedulable" in explained.stdout, explained.stdout
    assert "nodes are available" in explained.stdout, explained.stdout
    assert "asked the API server" in explained.stderr, explained.stderr
    raw = json.loads(kubectl.run(
        state, "get", "--raw",
        "/apis/decisions.kpysched.io/v1alpha1/namespaces/work/pods/fits-nowhere").stdout)
    assert raw["kind"] == "PodDecisions" and raw["decisions"], raw


def _wait_policy_effective(state: ClusterState, namespace: str) -> None:
    """kube-apiserver loads admission policies asynchronously: until it refuses a
    dry-run binding of a probe pod (one no scheduler handles), kpysched's real binding
    could still go through."""
    probe = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "bind-refused-probe", "namespace": namespace},
             "spec": {"schedulerName": "nobody", "containers": [
                 {"name": "c", "image": HELLO_IMAGE}]}}
    kubectl.run(state, "apply", "-f", "-", stdin=json.dumps(probe))
    binding = json.dumps({"apiVersion": "v1", "kind": "Binding",
                          "metadata": {"name": "bind-refused-probe"},
                          "target": {"kind": "Node", "name": REAL_NODE}})
    path = f"/api/v1/namespaces/{namespace}/pods/bind-refused-probe/binding?dryRun=All"
    _wait("the binding policy in force", 30, lambda: "refuses the binding" in kubectl.run(
        state, "create", "--raw", path, "-f", "-", stdin=binding, check=False).stderr)
    kubectl.run(state, "delete", "pod", "bind-refused-probe", "-n", namespace)


def _leading_in_order(token: str, ips: list[str]) -> set[str]:
    """The pod IPs whose /metrics says they lead, scraped one after another in `ips`'
    order (terminating replicas included; one not listening does not lead)."""
    leading: set[str] = set()
    for ip in ips:
        try:
            status, body = _fetch_metrics(f"https://{ip}:10259/metrics", token)
        except OSError:
            continue  # not listening (yet, or any more): not leading
        if status == 200 and re.search(
                r"^leader_election_master_status\{[^}]*\} 1(\.0)?$", body, re.MULTILINE):
            leading.add(ip)
    return leading


def _leaders_now(state: ClusterState, token: str) -> int:
    """Replicas that led at one same instant. The replicas are scraped in turn, so a
    hand-over between two scrapes (the old leader read before it let go, the new one
    after it took the Lease) would look like two leaders. When one pass sees more than
    one, a second pass in the reverse order confirms: a replica that says it leads in
    both passes led throughout the interval in which each other one said so too."""
    pods = kubectl.get_json(state, "pods", "-n", NAMESPACE, "-l",
                            f"app.kubernetes.io/instance={RELEASE}")["items"]
    ips = [ip for pod in pods if (ip := pod.get("status", {}).get("podIP"))]
    first = _leading_in_order(token, ips)
    if len(first) <= 1:
        return len(first)
    second = _leading_in_order(token, list(reversed(ips)))
    return len(first & second)


def _upgrade_without_two_leaders(state: ClusterState, token: str) -> None:
    """`helm upgrade` with a changed profile rolls both replicas (the config checksum
    changes the pod template) and no two replicas ever lead at once."""
    profiles = json.dumps([{"schedulerName": "kpysched", "plugins": {
        "score": {"disabled": [{"name": "ImageLocality"}]}}}])
    before = {p["metadata"]["name"] for p in _scheduler_pods(state)}
    upgrade = subprocess.Popen(
        [str(build.binary_path("helm")), "upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE,
         "--kubeconfig", state.kubeconfig, "--reuse-values", "--set-json",
         f"profiles={profiles}", "--wait", "--timeout", "5m"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    most = 0
    while upgrade.poll() is None:
        most = max(most, _leaders_now(state, token))
        time.sleep(0.3)
    output = upgrade.stdout.read() if upgrade.stdout else ""
    assert upgrade.returncode == 0, output
    assert most <= 1, f"{most} replicas led at once during the upgrade"
    _wait("two new Ready replicas", 120, lambda: (
        len([p for p in _scheduler_pods(state) if _ready(p)]) == 2
        and not before & {p["metadata"]["name"] for p in _scheduler_pods(state)}))
    _wait("a new replica leading", 60, lambda: any(
        _holder(state).startswith(p["metadata"]["name"]) for p in _scheduler_pods(state)))


def _assert_bound_once(state: ClusterState) -> None:
    """Through fail-over and upgrade, no pod was scheduled twice."""
    events = kubectl.get_json(state, "events.events.k8s.io", "-n", "work")["items"]
    counts: dict[str, int] = {}
    for event in events:
        if event["reason"] == "Scheduled":
            name = event["regarding"]["name"]
            counts[name] = counts.get(name, 0) + int(event.get("deprecatedCount") or 1)
    assert counts and all(n == 1 for n in counts.values()), counts


def _fail_over(state: ClusterState, names: set[str], leader: str) -> None:
    """Step 5: delete the leader pod; another replica leads within leaseDuration +
    retryPeriod, and the replacement pod comes up Ready on the real node.

    The leader releases its Lease as it stops, so whichever candidate tries first takes
    it: the standby, or the Deployment's replacement for the deleted pod when it starts
    before the standby's next retry (seen in CI: replacement 3 s after the release,
    the standby's retry later). Either is a correct fail-over."""
    # The leader's log is gone with its pod: follow it, to show a slow hand-over.
    follow = subprocess.Popen(
        [str(build.binary_path("kubectl")), f"--kubeconfig={state.kubeconfig}", "logs",
         "-f", leader, "-n", NAMESPACE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    time.sleep(1)
    deleted = time.monotonic()
    kubectl.run(state, "delete", "pod", leader, "-n", NAMESPACE, "--wait=false")
    try:
        new_holder = _wait("another replica to lead", LEASE_DURATION + RETRY_PERIOD,
                           lambda: (holder if (holder := _holder(state))
                                    and not holder.startswith(leader) else None),
                           interval=0.2)
    except AssertionError:
        follow.kill()
        print("leader's log:", *(follow.stdout.read() if follow.stdout else "").splitlines()[-40:],
              sep="\n")
        for standby in names - {leader}:
            print("standby's log:", kubectl.run(state, "logs", standby, "-n", NAMESPACE,
                                                "--tail=40", check=False).stdout)
        raise
    follow.kill()
    print(f"fail-over took {time.monotonic() - deleted:.1f}s")
    # The holder is a live scheduler pod: the standby or the replacement.
    live = [p["metadata"]["name"] for p in _scheduler_pods(state)
            if p["metadata"].get("deletionTimestamp") is None]
    assert any(new_holder.startswith(name) for name in live), (new_holder, live)
    _wait("two Ready kpysched pods again", 120,
          lambda: len([p for p in _scheduler_pods(state) if _ready(p)]) == 2)
    assert {p["spec"]["nodeName"] for p in _scheduler_pods(state)} == {REAL_NODE}
    _wait("the new leader's pod alone labelled", 30, lambda: (
        labelled := _labelled_leaders(state)) and len(labelled) == 1
        and new_holder.startswith(labelled[0]))


def _panel_exprs() -> list[str]:
    exprs = dashboard_queries(json.loads(DASHBOARD.read_text()))
    for variable, value in PANEL_VARIABLES.items():
        exprs = [expr.replace(variable, value) for expr in exprs]
    return exprs


def _check_panels(server: prometheus.Prometheus, since: float) -> None:
    """Every panel's query returns at least one series over the run, as Grafana asks:
    asked again until all do (a panel fed by the last step shows it only after a
    scrape or two), for up to PANELS_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + PANELS_TIMEOUT_SECONDS
    while True:
        now = time.time()
        results = {expr: server.query_range(expr, since, now) for expr in _panel_exprs()}
        if all(results.values()) or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    snapshot = os.environ.get("KPYSCHED_DASHBOARD_SNAPSHOT")
    if snapshot:
        Path(snapshot).write_text(json.dumps(
            {"dashboard": json.loads(DASHBOARD.read_text()), "variables": PANEL_VARIABLES,
             "start": since, "end": now, "results": results}, indent=1))
    empty = [expr for expr, series in results.items() if not series]
    raw = server.query_range("scheduler_schedule_attempts_total", since, now)
    assert empty == [], (f"panel queries without data: {empty}\n"
                         f"attempt counters over the run: {raw}")


# Quiet on a healthy scheduler. The error-ratio and bind-failure alerts watch rates
# this run raises on purpose (the refused binding), so they are only evaluated.
MUST_BE_QUIET = {"KpyschedNoLeader", "KpyschedPodsPendingTooLong",
                 "KpyschedPodsNotLeavingActiveQueue"}


def _check_alerts(server: prometheus.Prometheus) -> None:
    """Each alert expression of the rendered PrometheusRule (for this release) parses
    and evaluates against the live series; those in MUST_BE_QUIET return nothing once
    a scrape has seen the failing pods gone (waited for, up to
    ALERTS_QUIET_TIMEOUT_SECONDS)."""
    objects = render(RELEASE, NAMESPACE, "--set", "prometheusRule.enabled=true")
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    alerts = [alert for group in rule["spec"]["groups"] for alert in group["rules"]]
    assert {alert["alert"] for alert in alerts} >= MUST_BE_QUIET
    quiet = [alert for alert in alerts if alert["alert"] in MUST_BE_QUIET]
    deadline = time.monotonic() + ALERTS_QUIET_TIMEOUT_SECONDS
    while any(server.query(str(alert["expr"])) for alert in quiet) \
            and time.monotonic() < deadline:
        time.sleep(1.0)
    for alert in alerts:
        result = server.query(str(alert["expr"]))  # raises unless Prometheus accepts it
        print(f"{alert['alert']}: {result}")
        if alert["alert"] in MUST_BE_QUIET:
            assert result == [], f"{alert['alert']} would fire: {result}"
