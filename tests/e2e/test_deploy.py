"""Shipping kpysched: the Helm chart, the plain manifests in deploy/, the Grafana
dashboard and the alert rules, checked against the real kube-apiserver.

- `helm lint --strict` and `helm template` with the default values and with
  charts/kpysched/ci/nondefault-values.yaml (every knob changed);
- every rendered object accepted by a server-side dry-run with strict field
  validation, and the scheduler pod passing the "restricted" Pod Security Standard;
- deploy/ is the chart's default rendering (minus Helm's labels) and is accepted too;
- the KubeSchedulerConfiguration the chart writes loads in kpysched;
- every metric the dashboard and the alerts query is one a running kpysched exports.

ServiceMonitor and PrometheusRule need prometheus-operator's CRDs. No package
registry this project can reach ships them (npm's @kubernetes-models/
prometheus-operator carries compiled validators, not CRDs), so MINIMAL_CRDS below
declares the two kinds with a structural schema of the fields the chart writes
(names, types and required fields as upstream's CRDs have them). Strict field
validation then rejects a misspelt or misplaced field.

The smoke test that drives a running kpysched (schedule, events, conditions, Lease,
preemption) lives here too; tests/e2e/test_rbac.py runs it under the chart's RBAC.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import secrets
import subprocess
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from kpysched.api.client import RawApi
from kpysched.config import load_config
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.cluster import build, kube
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kpysched"
NONDEFAULT_VALUES = CHART / "ci" / "nondefault-values.yaml"
DASHBOARD = CHART / "dashboards" / "kpysched.json"
DEPLOY = ROOT / "deploy"
# Labels only Helm writes; deploy/ is the chart's rendering without them.
HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
HELM_ONLY_ANNOTATIONS = ("checksum/config",)

# --- helm -----------------------------------------------------------------------------


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = build.binary_path("helm")
    if not binary.is_file():
        raise AssertionError(f"helm is not built at {binary}: run `python -m tests.cluster build`")
    result = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


# The image deploy/ names and scripts/build-image.sh builds; the chart requires one.
LOCAL_IMAGE = ("--set", "image.repository=localhost/kpysched")


def render(release: str, namespace: str, *options: str) -> list[dict[str, Any]]:
    """`helm template` of the chart (the local image unless `options` set another):
    the objects, in helm's install order."""
    out = helm("template", release, str(CHART), "--namespace", namespace, *LOCAL_IMAGE,
               *options).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def find(objects: Iterable[Mapping[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [dict(o) for o in objects if o["kind"] == kind]


def scheduler_config(objects: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The KubeSchedulerConfiguration in the chart's config ConfigMap."""
    (config_map,) = [o for o in find(objects, "ConfigMap") if "config.yaml" in o["data"]]
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["config.yaml"])
    return config


VALUE_FILES = {"default": (), "nondefault": ("-f", str(NONDEFAULT_VALUES))}

# --- talking to the API server by kind ------------------------------------------------


class Resources:
    """Kind -> REST path by API discovery, so CRD kinds work like built-in ones."""

    def __init__(self, raw: RawApi) -> None:
        self.raw = raw
        self._known: dict[str, dict[str, tuple[str, bool]]] = {}

    async def _discover(self, api_version: str) -> dict[str, tuple[str, bool]]:
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        response = await self.raw.request("GET", path, throttle=False)
        if not response.ok:
            return {}
        listed = json.loads(response.body)["resources"]
        return {r["kind"]: (r["name"], r["namespaced"]) for r in listed if "/" not in r["name"]}

    async def collection(self, obj: Mapping[str, Any], timeout: float = 20.0) -> str:
        api_version, kind = obj["apiVersion"], obj["kind"]
        deadline = asyncio.get_running_loop().time() + timeout
        while kind not in self._known.get(api_version, {}):
            # A CRD just created takes a moment to appear in discovery.
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"the API server does not serve {api_version} {kind}")
            self._known[api_version] = await self._discover(api_version)
            if kind not in self._known[api_version]:
                await asyncio.sleep(0.2)
        plural, namespaced = self._known[api_version][kind]
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if namespaced:
            namespace = obj["metadata"].get("namespace")
            assert namespace, f"{kind} {obj['metadata']['name']} has no namespace"
            return f"{base}/namespaces/{namespace}/{plural}"
        return f"{base}/{plural}"

    async def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> None:
        """POST with strict field validation (unknown or duplicate fields are errors)."""
        query = {"fieldValidation": "Strict"}
        if dry_run:
            query["dryRun"] = "All"
        response = await self.raw.request("POST", await self.collection(obj), dict(obj),
                                          query=query, throttle=False)
        if not response.ok:
            raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: HTTP "
                                 f"{response.status}: {response.message()}")


    async def apply(self, obj: Mapping[str, Any]) -> None:
        """Server-side apply, as `kubectl apply --server-side` sends it."""
        path = f"{await self.collection(obj)}/{obj['metadata']['name']}"
        response = await self.raw.request(
            "PATCH", path, dict(obj), content_type="application/apply-patch+yaml",
            query={"fieldManager": "kpysched-tests", "fieldValidation": "Strict"},
            throttle=False)
        if not response.ok:
            raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: HTTP "
                                 f"{response.status}: {response.message()}")

    async def delete(self, obj: Mapping[str, Any]) -> None:
        path = f"{await self.collection(obj)}/{obj['metadata']['name']}"
        response = await self.raw.request("DELETE", path, throttle=False)
        if not response.ok and response.status != 404:
            raise AssertionError(f"{obj['kind']} {obj['metadata']['name']}: HTTP "
                                 f"{response.status}: {response.message()}")


def _crd(kind: str, plural: str, spec_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com", "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                      "listKind": f"{kind}List"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                    "metadata": {"type": "object"}, "spec": spec_schema}}}}],
        },
    }


_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
# prometheus-operator's Duration pattern.
_DURATION = {"type": "string", "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?"
                                          "(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_LABEL_SELECTOR = {"type": "object", "properties": {
    "matchLabels": _STRING_MAP,
    "matchExpressions": {"type": "array", "items": {
        "type": "object", "required": ["key", "operator"], "properties": {
            "key": _STRING, "operator": _STRING,
            "values": {"type": "array", "items": _STRING}}}}}}
MINIMAL_CRDS = [
    _crd("ServiceMonitor", "servicemonitors", {
        "type": "object", "required": ["selector"], "properties": {
            "selector": _LABEL_SELECTOR,
            "jobLabel": _STRING,
            "namespaceSelector": {"type": "object", "properties": {
                "any": {"type": "boolean"}, "matchNames": {"type": "array", "items": _STRING}}},
            "endpoints": {"type": "array", "items": {"type": "object", "properties": {
                "port": _STRING, "path": _STRING,
                "scheme": {"type": "string", "enum": ["http", "https", "HTTP", "HTTPS"]},
                "bearerTokenFile": _STRING,
                "tlsConfig": {"type": "object", "properties": {
                    "insecureSkipVerify": {"type": "boolean"}, "serverName": _STRING,
                    "caFile": _STRING,
                    # SecretOrConfigMap, as upstream's SafeTLSConfig.ca.
                    "ca": {"type": "object", "properties": {
                        kind: {"type": "object", "required": ["key"], "properties": {
                            "key": _STRING, "name": _STRING,
                            "optional": {"type": "boolean"}}}
                        for kind in ("secret", "configMap")}}}},
                "interval": _DURATION, "scrapeTimeout": _DURATION,
                "honorLabels": {"type": "boolean"}}}}}}),
    _crd("PrometheusRule", "prometheusrules", {
        "type": "object", "properties": {"groups": {"type": "array", "items": {
            "type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "minLength": 1},
                "interval": _DURATION,
                "rules": {"type": "array", "items": {
                    "type": "object", "required": ["expr"], "properties": {
                        "alert": _STRING, "record": _STRING,
                        "expr": {"x-kubernetes-int-or-string": True},
                        "for": _DURATION, "keep_firing_for": _DURATION,
                        "labels": _STRING_MAP, "annotations": _STRING_MAP}}}}}}}}),
]


async def ensure_minimal_crds(resources: Resources) -> None:
    for crd in MINIMAL_CRDS:
        try:
            await resources.create(crd)
        except AssertionError as error:
            if "409" not in str(error):  # already there from an earlier test
                raise


async def real_namespace(api: client.ApiClient, name: str, labels: Mapping[str, str] | None
                         = None) -> None:
    """A namespace with exactly this name (dry-run cannot create into a missing one)."""
    core = client.CoreV1Api(api)
    await core.create_namespace({"metadata": {"name": name, "labels": dict(labels or {})}})
    await kube.wait_default_service_account(api, name)


@pytest.fixture
async def resources(api: client.ApiClient) -> Resources:
    return Resources(RawApi(api, qps=0))


@pytest.fixture
async def namespaces_to_clean(api: client.ApiClient) -> Any:
    names: list[str] = []
    yield names
    for name in names:
        await kube.delete_namespace(api, name)


# --- chart and manifests ----------------------------------------------------------------


@pytest.mark.parametrize("values", sorted(VALUE_FILES))
def test_helm_lint_is_clean(values: str) -> None:
    result = helm("lint", "--strict", str(CHART), *LOCAL_IMAGE, *VALUE_FILES[values])
    findings = [line for line in result.stdout.splitlines()
                if line.startswith(("[WARNING]", "[ERROR]"))]
    assert findings == []


def test_monitoring_objects_are_off_by_default_and_the_rest_is_complete() -> None:
    default = {o["kind"] for o in render("kpysched", "kpysched")}
    assert default == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                       "RoleBinding", "ConfigMap", "Service", "Deployment",
                       "PodDisruptionBudget", "NetworkPolicy"}
    nondefault = {o["kind"] for o in render("batch", "kpysched", *VALUE_FILES["nondefault"])}
    # decisions.endpoint adds the decisions API: its APIService and serving certificate.
    assert nondefault == default | {"ServiceMonitor", "PrometheusRule", "APIService",
                                    "Secret"}


@pytest.mark.parametrize("values", sorted(VALUE_FILES))
def test_scheduler_config_loads_in_kpysched(values: str, tmp_path: Path) -> None:
    objects = render("rel", "sched-ns", *VALUE_FILES[values])
    config = scheduler_config(objects)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    loaded, profiles = load_config(path, full_registry(IN_TREE))
    election = loaded.leader_election
    assert election.leader_elect
    assert election.resource_name != "kube-scheduler"
    # The leader-election Role; with the decisions API another lets the leader label
    # its own pod (decisions-api.yaml).
    (role,) = [r for r in find(objects, "Role")
               if r["metadata"]["name"].endswith("-leader-election")]
    assert role["metadata"]["namespace"] == election.resource_namespace
    assert all(election.resource_name in rule.get("resourceNames", [election.resource_name])
               for rule in role["rules"])
    (deployment,) = find(objects, "Deployment")
    assert deployment["spec"]["replicas"] >= 2
    written = [p["schedulerName"] for p in config["profiles"]]
    assert [p.scheduler_name for p in profiles] == written


@pytest.mark.parametrize(("option", "message"), [
    ("leaderElection.resourceName=kube-scheduler", "must not be \"kube-scheduler\""),
    ("leaderElection.leaderElect=false", "must be true when replicas > 1"),
], ids=["default-scheduler-lease", "no-leader-election-with-replicas"])
def test_chart_refuses_settings_that_make_two_schedulers_race(option: str, message: str) -> None:
    result = helm("template", "kpysched", str(CHART), *LOCAL_IMAGE, "--set", option,
                  check=False)
    assert result.returncode != 0
    assert message in result.stderr


def test_chart_refuses_to_render_without_an_image() -> None:
    result = helm("template", "kpysched", str(CHART), check=False)
    assert result.returncode != 0
    assert "image.repository is required" in result.stderr
    assert "--set image.repository=REGISTRY/kpysched" in result.stderr


async def test_two_same_named_releases_install_in_two_namespaces(
    api: client.ApiClient, resources: Resources, namespaces_to_clean: list[str],
) -> None:
    """Server-side apply for real (no dry run): cluster-scoped names must not collide."""
    suffix = secrets.token_hex(3)
    releases = [render("kpysched", f"team-{team}-{suffix}") for team in ("a", "b")]
    cluster_scoped = [o for objects in releases for o in objects
                      if "namespace" not in o["metadata"]]
    try:
        for objects in releases:
            for name in sorted({o["metadata"]["namespace"] for o in objects
                                if "namespace" in o["metadata"]}):
                await real_namespace(api, name)
                namespaces_to_clean.append(name)
            for obj in objects:
                await resources.apply(obj)
        names = sorted(o["metadata"]["name"] for o in cluster_scoped if o["kind"] == "ClusterRole")
        assert names == [f"team-a-{suffix}:kpysched", f"team-b-{suffix}:kpysched"]
    finally:
        for obj in cluster_scoped:
            await resources.delete(obj)


def test_single_replica_may_run_without_leader_election() -> None:
    objects = render("solo", "solo", "--set", "replicas=1",
                     "--set", "leaderElection.leaderElect=false")
    assert scheduler_config(objects)["leaderElection"]["leaderElect"] is False
    assert find(objects, "Role") == [] and find(objects, "PodDisruptionBudget") == []


def test_gang_scheduling_turns_on_the_gates_and_the_pod_group_rules_together() -> None:
    def gang_parts(objects: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
        (deployment,) = find(objects, "Deployment")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        rules = [rule for role in find(objects, "ClusterRole") for rule in role["rules"]
                 if "scheduling.k8s.io" in rule.get("apiGroups", ())]
        return [a for a in args if a.startswith("--feature-gates")], rules

    assert gang_parts(render("plain", "plain")) == ([], [])
    # The gates follow the cluster's release: v1.37 refuses GangScheduling (folded into
    # GenericWorkload), v1.36 needs both.
    expected_gates = {"1.36.4": "GenericWorkload=true,GangScheduling=true",
                      "1.37.2": "GenericWorkload=true"}
    for kube_version, expected in expected_gates.items():
        gates, rules = gang_parts(render("gang", "gang", "--set", "gangScheduling.enabled=true",
                                         "--kube-version", kube_version))
        assert gates == [f"--feature-gates={expected}"], kube_version
        assert [(r["resources"], r["verbs"]) for r in rules] == [
            (["podgroups"], ["list", "watch"]), (["podgroups/status"], ["patch"])]


def test_gang_scheduling_extra_gates_follow_v1_37_and_read_composite_pod_groups() -> None:
    def parts(*options: str) -> tuple[list[str], list[list[str]]]:
        objects = render("gang", "gang", "--set", "gangScheduling.enabled=true", *options)
        (deployment,) = find(objects, "Deployment")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        resources = [rule["resources"] for role in find(objects, "ClusterRole")
                     for rule in role["rules"] if "scheduling.k8s.io" in rule.get("apiGroups", ())]
        return [a for a in args if a.startswith("--feature-gates")], resources

    gates, resources = parts("--set", "gangScheduling.extraGates={TopologyAwareWorkloadScheduling,"
                             "CompositePodGroup}", "--kube-version", "1.37.2")
    assert gates == ["--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true,"
                     "CompositePodGroup=true"]
    assert resources == [["podgroups"], ["podgroups/status"], ["compositepodgroups"]]
    # Without CompositePodGroup, no read access to its objects.
    gates, resources = parts("--set", "gangScheduling.extraGates={DRAWorkloadResourceClaims}",
                             "--kube-version", "1.37.2")
    assert gates == ["--feature-gates=GenericWorkload=true,DRAWorkloadResourceClaims=true"]
    assert resources == [["podgroups"], ["podgroups/status"]]
    # v1.36 has none of them (kpysched would refuse each there): helm says so at once.
    refused = helm("template", "gang", str(CHART), "--namespace", "gang", *LOCAL_IMAGE,
                   "--set", "gangScheduling.enabled=true", "--set",
                   "gangScheduling.extraGates={PodGroupPreemptionPolicy}",
                   "--kube-version", "1.36.4", check=False)
    assert refused.returncode != 0
    assert "gangScheduling.extraGates: [PodGroupPreemptionPolicy] are gates of Kubernetes " \
        "v1.37; this cluster is v1.36.4" in refused.stderr
    # A name that is not one of them is refused by the values schema, naming the field.
    typo = helm("template", "gang", str(CHART), "--namespace", "gang", *LOCAL_IMAGE,
                "--set", "gangScheduling.extraGates={CompositePodGroups}",
                "--kube-version", "1.37.2", check=False)
    assert typo.returncode != 0 and "extraGates" in typo.stderr, typo.stderr


def _ingress(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (policy,) = find(objects, "NetworkPolicy")
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress (the API server) stays open
    (deployment,) = find(objects, "Deployment")
    assert policy["spec"]["podSelector"]["matchLabels"] == (
        deployment["spec"]["selector"]["matchLabels"])
    rules: list[dict[str, Any]] = policy["spec"]["ingress"]
    return rules


def test_network_policy_admits_only_prometheus_to_the_secure_port_by_default() -> None:
    # Issue 31: no NetworkPolicy; any pod could reach the secure port.
    (rule,) = _ingress(render("kpysched", "kpysched"))
    assert rule["ports"] == [{"port": "http-metrics", "protocol": "TCP"}]
    assert rule["from"] == [{"namespaceSelector": {}, "podSelector": {
        "matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]


def test_network_policy_sources_come_from_values() -> None:
    (rule,) = _ingress(render("batch", "kpysched", *VALUE_FILES["nondefault"]))
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
         "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}},
        {"ipBlock": {"cidr": "10.0.0.0/24"}},
    ]
    # No source at all: the policy admits nothing (the port is closed to other pods).
    assert _ingress(render("x", "x", "--set-json", "networkPolicy.scrapers=[]")) == []
    assert find(render("x", "x", "--set", "networkPolicy.enabled=false"), "NetworkPolicy") == []


def test_network_policy_refuses_a_scraper_without_a_selector() -> None:
    result = helm("template", "x", str(CHART), *LOCAL_IMAGE,
                  "--set", "networkPolicy.scrapers[0].podSelector=null", check=False)
    assert result.returncode != 0
    assert "networkPolicy" in result.stderr, result.stderr


def _claim_writes(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((resource, verb) for role in find(objects, "ClusterRole")
                  for rule in role["rules"] if "resource.k8s.io" in rule.get("apiGroups", ())
                  for resource in rule["resources"] for verb in rule["verbs"]
                  if verb not in ("list", "watch"))


@pytest.mark.parametrize(("options", "writes"), [
    pytest.param((), True, id="default-profile"),
    pytest.param(("--set", "profiles[0].schedulerName=a",
                  "--set", "profiles[0].plugins.multiPoint.disabled[0].name=DynamicResources"),
                 False, id="plugin-disabled"),
    pytest.param(("--set", "profiles[0].schedulerName=a",
                  "--set", "profiles[0].plugins.multiPoint.disabled[0].name=*"),
                 False, id="all-disabled"),
    pytest.param(("--set", "profiles[0].schedulerName=a",
                  "--set", "profiles[0].plugins.multiPoint.disabled[0].name=*",
                  "--set", "profiles[0].plugins.multiPoint.enabled[0].name=DynamicResources"),
                 True, id="re-enabled"),
    pytest.param(("--set", "profiles[0].schedulerName=a",
                  "--set", "profiles[0].plugins.multiPoint.disabled[0].name=DynamicResources",
                  "--set", "profiles[1].schedulerName=b"),
                 True, id="another-profile-runs-it"),
])
def test_resource_claim_writes_only_while_a_profile_runs_dynamic_resources(
        options: tuple[str, ...], writes: bool) -> None:
    # Issue 31: create/delete on resourceclaims were granted with the feature off.
    # Issue 33: claims are updated whole as read (get after a conflict), their status
    # updated, and a reservation removed by a patch, as kube-scheduler writes them.
    expected = [("resourceclaims", "create"), ("resourceclaims", "delete"),
                ("resourceclaims", "get"), ("resourceclaims", "update"),
                ("resourceclaims/binding", "patch"), ("resourceclaims/binding", "update"),
                ("resourceclaims/status", "patch"), ("resourceclaims/status", "update")]
    assert _claim_writes(render("dra", "dra", *options)) == (expected if writes else [])


def _scrape_tls(*options: str) -> dict[str, Any]:
    objects = render("kpysched", "kpysched", "--set", "serviceMonitor.enabled=true", *options)
    (monitor,) = find(objects, "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    tls: dict[str, Any] = endpoint["tlsConfig"]
    return tls


def test_service_monitor_verifies_kpysched_with_a_ca_when_given_one() -> None:
    # Default, as before: self-signed per replica, so encrypted but not verified.
    assert _scrape_tls() == {"insecureSkipVerify": True}
    assert _scrape_tls("--set", "serviceMonitor.tls.caSecret.name=kpysched-decisions-tls") == {
        "ca": {"secret": {"name": "kpysched-decisions-tls", "key": "ca.crt"}},
        "serverName": "kpysched-decisions.kpysched.svc", "insecureSkipVerify": False}
    assert _scrape_tls("--set", "serviceMonitor.tls.caFile=/etc/prometheus/ca/ca.crt",
                       "--set", "serviceMonitor.tls.serverName=kpysched.example.com") == {
        "caFile": "/etc/prometheus/ca/ca.crt", "serverName": "kpysched.example.com",
        "insecureSkipVerify": False}
    both = helm("template", "x", str(CHART), *LOCAL_IMAGE, "--set", "serviceMonitor.enabled=true",
                "--set", "serviceMonitor.tls.caFile=/ca.crt",
                "--set", "serviceMonitor.tls.caSecret.name=s", check=False)
    assert both.returncode != 0 and "not both" in both.stderr


def test_coscheduling_adds_the_plugin_its_rules_and_the_crd(tmp_path: Path) -> None:
    def cosched_rules(objects: list[dict[str, Any]]) -> list[tuple[list[str], list[str]]]:
        return [(rule["resources"], rule["verbs"])
                for role in find(objects, "ClusterRole") for rule in role["rules"]
                if "scheduling.x-k8s.io" in rule.get("apiGroups", ())]

    plain = render("plain", "plain")
    assert cosched_rules(plain) == [] and find(plain, "CustomResourceDefinition") == []
    objects = render("cs", "cs", "-f", str(NONDEFAULT_VALUES),
                     "--set", "coscheduling.enabled=true",
                     "--set", "coscheduling.args.permitWaitingTimeSeconds=10")
    assert cosched_rules(objects) == [(["podgroups"], ["list", "watch"]),
                                      (["podgroups/status"], ["patch"])]
    # The chart's CRD is the one deploy/ ships, kept when the release goes.
    (crd,) = find(objects, "CustomResourceDefinition")
    shipped = yaml.safe_load(
        (ROOT / "deploy" / "crds" / "scheduling.x-k8s.io_podgroups.yaml").read_text())
    assert crd["spec"] == shipped["spec"]
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    # Every profile (the nondefault values have two) runs Coscheduling, and the file
    # loads in kpysched with it as the one queueSort and its args parsed.
    config = scheduler_config(objects)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    _, profiles = load_config(path, full_registry(IN_TREE))
    assert len(profiles) == 2
    for profile in profiles:
        assert profile.plugins["queueSort"] == ("Coscheduling",)
        assert "Coscheduling" in profile.plugins["permit"]
        args = profile.args["Coscheduling"]
        assert args is not None and args.permit_waiting_time_seconds == 10  # type: ignore[attr-defined]
    without_crd = render("cs", "cs", "--set", "coscheduling.enabled=true",
                         "--set", "coscheduling.installCRD=false")
    assert find(without_crd, "CustomResourceDefinition") == []
    assert len(cosched_rules(without_crd)) == 2


@pytest.mark.parametrize("values", sorted(VALUE_FILES))
async def test_every_rendered_object_passes_server_side_dry_run(
    values: str, api: client.ApiClient, resources: Resources, namespaces_to_clean: list[str],
) -> None:
    suffix = secrets.token_hex(3)
    release_namespace = f"kpysched-{values}-{suffix}"
    objects = render(f"rel-{suffix}", release_namespace, *VALUE_FILES[values])
    needed = {o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]}
    # kube-system exists already (the decisions API's RoleBinding for the reader role).
    for name in sorted(needed - {"kube-system"}):
        await real_namespace(api, name)
        namespaces_to_clean.append(name)
    if find(objects, "ServiceMonitor") or find(objects, "PrometheusRule"):
        await ensure_minimal_crds(resources)
    failures = []
    for obj in objects:
        try:
            await resources.create(obj, dry_run=True)
        except AssertionError as error:
            failures.append(str(error))
    assert failures == []


@pytest.mark.parametrize("values", sorted(VALUE_FILES))
async def test_scheduler_pod_meets_the_restricted_pod_security_standard(
    values: str, api: client.ApiClient, resources: Resources, namespaces_to_clean: list[str],
) -> None:
    """Pod Security admission enforces on Pods, not on Deployments: dry-run the pod the
    Deployment would create in a namespace that enforces "restricted"."""
    name = f"kpysched-pss-{secrets.token_hex(3)}"
    await real_namespace(api, name, {"pod-security.kubernetes.io/enforce": "restricted",
                                     "pod-security.kubernetes.io/enforce-version": "latest"})
    namespaces_to_clean.append(name)
    objects = render("pss", name, *VALUE_FILES[values])
    for account in find(objects, "ServiceAccount"):
        await resources.create(account)  # admission looks the pod's account up
    (deployment,) = find(objects, "Deployment")
    template = deployment["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**template["metadata"], "name": "kpysched-0", "namespace": name},
           "spec": template["spec"]}
    await resources.create(pod, dry_run=True)


def _without_helm_labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    cleaned = copy.deepcopy(dict(obj))
    template = cleaned.get("spec", {}).get("template", {}).get("metadata")
    for meta in (cleaned["metadata"], template):
        if meta is None:
            continue
        for label in HELM_ONLY_LABELS:
            meta.get("labels", {}).pop(label, None)
        for annotation in HELM_ONLY_ANNOTATIONS:
            meta.get("annotations", {}).pop(annotation, None)
        if meta.get("annotations") == {}:
            del meta["annotations"]
    return cleaned


def deploy_objects() -> list[dict[str, Any]]:
    """What `kubectl apply -k deploy/` applies. The kustomization only lists files, so
    reading them is the whole build (no kubectl needed here)."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert set(kustomization) == {"apiVersion", "kind", "resources"}, (
        "deploy/kustomization.yaml uses transformers this test does not apply")
    objects = []
    for name in kustomization["resources"]:
        objects += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    listed = {p.name for p in DEPLOY.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == listed, "a manifest in deploy/ is not applied"
    return objects


def test_deploy_manifests_are_the_chart_s_default_rendering() -> None:
    chart = [_without_helm_labels(o) for o in render("kpysched", "kpysched",
                                                     "--set", "dashboards.enabled=false")]
    plain = [o for o in deploy_objects() if o["kind"] != "Namespace"]

    def key(obj: Mapping[str, Any]) -> tuple[str, str]:
        return obj["kind"], obj["metadata"]["name"]

    assert sorted(map(key, plain)) == sorted(map(key, chart))
    by_key = {key(o): o for o in chart}
    for obj in plain:
        assert obj == by_key[key(obj)], f"deploy/ differs from the chart in {key(obj)}"


async def test_deploy_manifests_pass_server_side_dry_run(
    api: client.ApiClient, resources: Resources, namespaces_to_clean: list[str],
) -> None:
    objects = deploy_objects()
    (namespace,) = find(objects, "Namespace")
    # Created for real: nothing can be dry-run into a namespace that does not exist.
    await resources.create(namespace)
    namespaces_to_clean.append(namespace["metadata"]["name"])
    await kube.wait_default_service_account(api, namespace["metadata"]["name"])
    failures = []
    for obj in objects:
        if obj["kind"] != "Namespace":
            try:
                await resources.create(obj, dry_run=True)
            except AssertionError as error:
                failures.append(str(error))
    assert failures == []


def test_notes_tell_how_to_select_the_scheduler(cluster: ClusterState) -> None:
    """NOTES.txt as `helm install` prints it (server dry-run: nothing is installed)."""
    result = helm("install", "notes", str(CHART), "--namespace", "default", "--dry-run=server",
                  *LOCAL_IMAGE,
                  "--kubeconfig", cluster.kubeconfig)
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "schedulerName: kpysched" in notes
    assert "kubectl -n default get lease notes-kpysched" in notes


# --- dashboard and alerts against live metrics ---------------------------------------

_PROMQL_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                    "group_right", "bool", "offset", "inf", "nan"}


def promql_metric_names(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers that are not functions,
    aggregations, keywords, label names or parts of strings and durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^{}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges, subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", text):
        if text[match.end():].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group(0).lower() not in _PROMQL_KEYWORDS:
            names.add(match.group(0))
    return names


@pytest.mark.parametrize(("expr", "names"), [
    ('sum by (queue) (scheduler_pending_pods{job=~"$job"} unless on (instance) '
     '(leader_election_master_status{job=~"$job"} == 0))',
     {"scheduler_pending_pods", "leader_election_master_status"}),
    ('histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="y{z}"}[$__rate_interval])))',
     {"a_bucket"}),
    ("(sum(rate(b_total[5m])) or vector(0)) == 0 and c > 1e3 offset 5m", {"b_total", "c"}),
], ids=["join", "quantile", "keywords"])
def test_promql_metric_names(expr: str, names: set[str]) -> None:
    assert promql_metric_names(expr) == names


def dashboard_queries(dashboard: Mapping[str, Any]) -> list[str]:
    def panels(items: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    return [target["expr"] for panel in panels(dashboard["panels"])
            for target in panel.get("targets", [])]


def dashboard_metric_names(dashboard: Mapping[str, Any]) -> set[str]:
    names = set().union(*(promql_metric_names(e) for e in dashboard_queries(dashboard)))
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query or "")
        names |= set(re.findall(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", text))
    return names


def exported_names(exposition: str) -> tuple[set[str], set[str]]:
    """(every series name the families on /metrics can have, those with samples now)."""
    declared: set[str] = set()
    sampled: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                "summary": ("", "_sum", "_count")}
    for family in text_string_to_metric_families(exposition):
        declared |= {family.name + s for s in suffixes.get(family.type, ("",))}
        sampled |= {sample.name for sample in family.samples}
    return declared, sampled


def test_dashboard_is_valid_json_with_the_issue_s_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    used = dashboard_metric_names(dashboard)
    assert {
        "scheduler_schedule_attempts_total",  # throughput, attempts by result
        "scheduler_scheduling_attempt_duration_seconds_bucket",
        "scheduler_pod_scheduling_sli_duration_seconds_bucket",
        "scheduler_pending_pods",  # by queue
        "scheduler_unschedulable_pods",  # by plugin
        "scheduler_preemption_attempts_total", "scheduler_preemption_victims_sum",
        "kpysched_bind_failures_total",
        "leader_election_master_status",
        "kpysched_event_loop_lag_seconds_bucket",
    } <= used
    (config_map,) = [o for o in render("kpysched", "kpysched") if o["kind"] == "ConfigMap"
                     and "kpysched.json" in o.get("data", {})]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["kpysched.json"]) == dashboard


async def test_dashboard_and_alerts_query_only_metrics_kpysched_exports(
    cluster: ClusterState, api: client.ApiClient, namespace: str, nodes_to_clean: list[str],
) -> None:
    objects = render("metrics", namespace, *VALUE_FILES["nondefault"])
    alert_names: set[str] = set()
    for rule_object in find(objects, "PrometheusRule"):
        for group in rule_object["spec"]["groups"]:
            for rule in group["rules"]:
                alert_names |= promql_metric_names(str(rule["expr"]))
    dashboard_names = dashboard_metric_names(json.loads(DASHBOARD.read_text()))
    assert alert_names and dashboard_names

    config = scheduler_config(render("metrics", namespace))
    world = await SmokeWorld.create(api, namespace, config, nodes_to_clean)
    try:
        with KpyschedProcess(cluster, config, wait_for="server.listening") as kp:
            outcome = await world.run(api, kp)
            assert outcome.failed is None, outcome.describe()
            _, body = kp.get("/metrics")
    finally:
        await world.delete(api)
    declared, sampled = exported_names(body)
    assert alert_names - declared == set()
    assert dashboard_names - declared == set()
    # The smoke scheduled, failed, preempted and led: those panels have data.
    assert {"scheduler_schedule_attempts_total", "scheduler_pending_pods",
            "scheduler_pod_scheduling_sli_duration_seconds_bucket",
            "scheduler_preemption_attempts_total",
            "scheduler_preemption_victims_bucket", "leader_election_master_status",
            "kpysched_event_loop_lag_seconds_bucket"} <= sampled


# --- the smoke test: what a working kpysched visibly does ---------------------------------

SMOKE_STEPS = ("lease-acquired", "lease-renewed", "pods-bound", "failed-scheduling-event",
               "pod-scheduled-condition", "preemption", "volumes-bound", "devices-allocated",
               "stale-claim-replaced")
STEP_TIMEOUT_SECONDS = 30.0


@dataclass(slots=True)
class SmokeOutcome:
    passed: list[str] = field(default_factory=list)
    failed: str | None = None
    reason: str = ""

    def describe(self) -> str:
        return f"passed {self.passed}; failed {self.failed}: {self.reason}"


@dataclass(slots=True)
class SmokeWorld:
    """Objects the smoke needs, made by the admin before kpysched starts: a roomy node
    for a pod that fits, a 1-CPU node holding a low-priority victim, a pod no node
    matches, two PriorityClasses for the preemption, and two WaitForFirstConsumer
    claims for VolumeBinding's PreBind writes: one a static PV on the roomy node
    matches (PreBind patches the PV's claimRef), one of a provisioning class (PreBind
    patches the claim's selected-node annotation; the smoke then plays the
    provisioner), and a ResourceClaim for a device published on the roomy node
    (DynamicResources' PreBind adds its finalizer, then writes the allocation and the
    pod's reservation), and a pod asking for an extended resource that class backs
    (PreBind creates its claim and records it in the pod's status)."""

    namespace: str
    scheduler_name: str
    lease_namespace: str
    lease_name: str
    label: str
    low_priority: str
    high_priority: str

    @property
    def static_class(self) -> str:
        return f"{self.label}-static"

    @property
    def provisioned_class(self) -> str:
        return f"{self.label}-provisioned"

    @property
    def static_volume(self) -> str:
        return f"{self.label}-static"

    @property
    def provisioned_volume(self) -> str:
        return f"{self.label}-provisioned"

    @property
    def device_class(self) -> str:
        return f"{self.label}-gpu"

    @property
    def device_slice(self) -> str:
        return f"{self.label}-gpus"

    @classmethod
    async def create(cls, api: client.ApiClient, namespace: str, config: Mapping[str, Any],
                     nodes_to_clean: list[str]) -> SmokeWorld:
        election = config["leaderElection"]
        label = f"smoke-{secrets.token_hex(3)}"
        world = cls(namespace, config["profiles"][0]["schedulerName"],
                    election["resourceNamespace"], election["resourceName"], label,
                    f"{label}-low", f"{label}-high")
        scheduling = client.SchedulingV1Api(api)
        for name, value in ((world.low_priority, 10), (world.high_priority, 1000)):
            await scheduling.create_priority_class({"metadata": {"name": name}, "value": value})
        nodes_to_clean += await kube.create_nodes(api, 1, prefix=f"{label}-roomy", cpu="4",
                                                  labels={"smoke": f"{label}-roomy"})
        nodes_to_clean += await kube.create_nodes(api, 1, prefix=f"{label}-tight", cpu="1",
                                                  labels={"smoke": f"{label}-tight"})
        for name, node, spec in (("fits", "roomy", {}),
                                 ("unfit", "nowhere", {}),
                                 ("victim", "tight",
                                  {"cpu": "800m", "priority_class": world.low_priority})):
            await kube.create_pod(api, namespace, kube.pod_body(
                name, scheduler_name=world.scheduler_name,
                node_selector={"smoke": f"{label}-{node}"}, **spec))
        await world._create_volumes(api)
        await world._create_devices(api, nodes_to_clean[-2])
        return world

    async def _create_devices(self, api: client.ApiClient, node: str) -> None:
        resource = client.ResourceV1Api(api)
        # The class selects this world's own driver: worlds side by side (test_rbac runs
        # its cases so) never take each other's devices, nor land on each other's nodes.
        driver = f"{self.label}.gpu.kpysched.test"
        await resource.create_device_class({"metadata": {"name": self.device_class}, "spec": {
            "extendedResourceName": self.gpu,
            "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
        await resource.create_resource_slice({
            "metadata": {"name": self.device_slice},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(3)]}})
        await resource.create_namespaced_resource_claim(self.namespace, {
            "metadata": {"name": "device"},
            "spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": self.device_class}}]}}})
        body = kube.pod_body("uses-device", scheduler_name=self.scheduler_name)
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "device"}]
        await kube.create_pod(api, self.namespace, body)
        # An extended resource no node advertises, backed by the class: kpysched makes
        # the pod's claim for it.
        body = kube.pod_body("uses-extended", scheduler_name=self.scheduler_name)
        body["spec"]["containers"][0]["resources"]["requests"][self.gpu] = "1"
        body["spec"]["containers"][0]["resources"]["limits"] = {self.gpu: "1"}
        await kube.create_pod(api, self.namespace, body)
        # The same, gated until the smoke has left a claim for it as an attempt that
        # did not bind would: kpysched must delete that claim and make a new one.
        body = kube.pod_body("uses-extended-again", scheduler_name=self.scheduler_name)
        body["spec"]["containers"][0]["resources"]["requests"][self.gpu] = "1"
        body["spec"]["containers"][0]["resources"]["limits"] = {self.gpu: "1"}
        body["spec"]["schedulingGates"] = [{"name": "smoke.kpysched.test/stale-claim"}]
        await kube.create_pod(api, self.namespace, body)

    @property
    def gpu(self) -> str:
        return f"{self.label}.kpysched.test/gpu"

    async def _create_volumes(self, api: client.ApiClient) -> None:
        core, storage = client.CoreV1Api(api), client.StorageV1Api(api)
        roomy = {"smoke": f"{self.label}-roomy"}
        await storage.create_storage_class(kube.storage_class_body(self.static_class))
        await storage.create_storage_class(kube.storage_class_body(
            self.provisioned_class, provisioner="smoke.provisioner.kpysched.test"))
        await core.create_persistent_volume(kube.pv_body(
            self.static_volume, storage_class=self.static_class,
            node_affinity={"smoke": [roomy["smoke"]]}))
        for claim, storage_class in (("static", self.static_class),
                                     ("provisioned", self.provisioned_class)):
            await core.create_namespaced_persistent_volume_claim(
                self.namespace, kube.pvc_body(claim, storage_class=storage_class))
            body = kube.pod_body(f"uses-{claim}", scheduler_name=self.scheduler_name,
                                 node_selector=roomy)
            body["spec"]["volumes"] = [{"name": "data",
                                        "persistentVolumeClaim": {"claimName": claim}}]
            await kube.create_pod(api, self.namespace, body)

    async def delete(self, api: client.ApiClient) -> None:
        scheduling, storage = client.SchedulingV1Api(api), client.StorageV1Api(api)
        core = client.CoreV1Api(api)
        deletions = [(scheduling.delete_priority_class, name)
                     for name in (self.low_priority, self.high_priority)]
        deletions += [(storage.delete_storage_class, name)
                      for name in (self.static_class, self.provisioned_class)]
        resource = client.ResourceV1Api(api)
        deletions += [(resource.delete_resource_slice, self.device_slice),
                      (resource.delete_device_class, self.device_class)]
        # Retained PVs outlive the namespace's claims; they go here.
        deletions += [(core.delete_persistent_volume, name)
                      for name in (self.static_volume, self.provisioned_volume)]
        for delete, name in deletions:
            try:
                await delete(name)
            except ApiException as error:
                if error.status != 404:
                    raise

    async def run(self, api: client.ApiClient, kp: KpyschedProcess,
                  *, short_step: str | None = None, short_timeout: float = 6.0) -> SmokeOutcome:
        """Run the steps in order until one fails. `short_step` is the step expected to
        fail: it gets `short_timeout` instead of the generous default."""
        core = client.CoreV1Api(api)
        leases = client.CoordinationV1Api(api)
        seen: dict[str, Any] = {}

        async def lease_spec() -> Any:
            try:
                lease = await leases.read_namespaced_lease(self.lease_name, self.lease_namespace)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise
            return lease.spec

        async def pod(name: str) -> Any:
            try:
                return await core.read_namespaced_pod(name, self.namespace)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise

        async def lease_acquired() -> bool:
            spec = await lease_spec()
            if spec is None or not spec.holder_identity:
                return False
            seen["holder"], seen["renewed"] = spec.holder_identity, spec.renew_time
            return True

        async def lease_renewed() -> bool:
            spec = await lease_spec()
            return bool(spec and spec.holder_identity == seen["holder"]
                        and spec.renew_time > seen["renewed"])

        async def pods_bound() -> bool:
            found = [await pod(name) for name in ("fits", "victim")]
            return all(p is not None and p.spec.node_name for p in found)

        async def failed_scheduling_event() -> bool:
            listed = await client.EventsV1Api(api).list_namespaced_event(
                self.namespace, field_selector="regarding.name=unfit")
            return any(e.reason == "FailedScheduling"
                       and e.reporting_controller == self.scheduler_name for e in listed.items)

        async def pod_scheduled_condition() -> bool:
            unfit = await pod("unfit")
            return any(c.type == "PodScheduled" and c.status == "False"
                       and c.reason == "Unschedulable" for c in unfit.status.conditions or [])

        async def preemption() -> bool:
            if "preemptor" not in seen:
                seen["preemptor"] = await kube.create_pod(api, self.namespace, kube.pod_body(
                    "preemptor", scheduler_name=self.scheduler_name, cpu="800m",
                    priority_class=self.high_priority,
                    node_selector={"smoke": f"{self.label}-tight"}))
            victim, preemptor = await pod("victim"), await pod("preemptor")
            return victim is None and bool(preemptor.spec.node_name)

        async def volumes_bound() -> bool:
            """PreBind patched the static PV's claimRef (the PV controller then binds) and
            the provisioned claim's selected node; the smoke provisions that claim as an
            external provisioner would, and both pods end bound."""
            claim = await core.read_namespaced_persistent_volume_claim(
                "provisioned", self.namespace)
            selected = (claim.metadata.annotations or {}).get(
                "volume.kubernetes.io/selected-node")
            if selected and "provisioned" not in seen:
                seen["provisioned"] = await core.create_persistent_volume(kube.pv_body(
                    self.provisioned_volume, storage_class=self.provisioned_class,
                    node_affinity={"kubernetes.io/hostname": [selected]},
                    claim=(self.namespace, "provisioned")))
            static = await core.read_namespaced_persistent_volume_claim("static", self.namespace)
            pods = [await pod("uses-static"), await pod("uses-provisioned")]
            return (static.spec.volume_name == self.static_volume and selected is not None
                    and all(p is not None and p.spec.node_name for p in pods))

        async def devices_allocated() -> bool:
            claim = await client.ResourceV1Api(api).read_namespaced_resource_claim(
                "device", self.namespace)
            users = [await pod("uses-device"), await pod("uses-extended")]
            extended = users[1].status.extended_resource_claim_status if users[1] else None
            return bool(claim.status and claim.status.allocation and claim.status.reserved_for
                        and extended is not None and extended.resource_claim_name
                        and all(p is not None and p.spec.node_name for p in users))

        async def stale_claim_replaced() -> bool:
            resource = client.ResourceV1Api(api)
            if "stale" not in seen:
                gated = await pod("uses-extended-again")
                seen["roomy"] = (await pod("uses-device")).spec.node_name
                seen["stale"] = await resource.create_namespaced_resource_claim(
                    self.namespace, {
                        "metadata": {
                            "name": "stale", "finalizers": [
                                "resource.kubernetes.io/delete-protection"],
                            "annotations": {
                                "resource.kubernetes.io/extended-resource-claim": "true"},
                            "ownerReferences": [{
                                "apiVersion": "v1", "kind": "Pod", "name": gated.metadata.name,
                                "uid": gated.metadata.uid, "controller": True}]},
                        "spec": {"devices": {"requests": [{"name": "container-0-request-0",
                                                           "exactly": {"deviceClassName":
                                                                       self.device_class}}]}}})
                await core.patch_namespaced_pod("uses-extended-again", self.namespace,
                                                {"spec": {"schedulingGates": None}})
            claims = await resource.list_namespaced_resource_claim(self.namespace)
            if "stale" in {c.metadata.name for c in claims.items}:
                return False
            if "nudged" not in seen:
                # DynamicResources does not register claim deletion (nor does upstream):
                # a node label change is what retries the pod after PostFilter's delete.
                seen["nudged"] = await core.patch_node(seen["roomy"], {"metadata": {
                    "labels": {"smoke-nudge": "stale-claim-gone"}}})
            replaced = await pod("uses-extended-again")
            return replaced is not None and bool(replaced.spec.node_name)

        checks: dict[str, Callable[[], Awaitable[bool]]] = {
            "lease-acquired": lease_acquired, "lease-renewed": lease_renewed,
            "pods-bound": pods_bound, "failed-scheduling-event": failed_scheduling_event,
            "pod-scheduled-condition": pod_scheduled_condition, "preemption": preemption,
            "volumes-bound": volumes_bound, "devices-allocated": devices_allocated,
            "stale-claim-replaced": stale_claim_replaced,
        }
        assert tuple(checks) == SMOKE_STEPS
        outcome = SmokeOutcome()
        for step, check in checks.items():
            timeout = short_timeout if step == short_step else STEP_TIMEOUT_SECONDS
            reason = await _eventually(check, timeout, kp)
            if reason is not None:
                outcome.failed, outcome.reason = step, reason
                return outcome
            outcome.passed.append(step)
        return outcome


async def _eventually(check: Callable[[], Awaitable[bool]], timeout: float,
                      kp: KpyschedProcess) -> str | None:
    """None once `check` holds; why not, if it did not within `timeout`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if await check():
            return None
        assert kp.process is not None
        if kp.process.poll() is not None:
            return f"kpysched exited with {kp.process.returncode}"
        if asyncio.get_running_loop().time() > deadline:
            return f"not within {timeout:.0f}s"
        await asyncio.sleep(0.2)
