"""The chart's RBAC is exactly what kpysched needs: enough, and nothing to spare.

kpysched runs as a separate process authenticated as the chart's ServiceAccount
through the in-cluster path, as it would in a pod: a token from the TokenRequest
API, the cluster CA and the namespace laid out as the kubelet mounts them (in the
directory $KPYSCHED_INCLUSTER_DIR points at), KUBERNETES_SERVICE_HOST/PORT set, no
kubeconfig. The API server runs with RBAC on.

With every rule of the chart's ClusterRole and Role, the smoke test passes (Lease
taken and renewed, pods bound, FailedScheduling event and PodScheduled condition for
a pod that fits nowhere, a preemption that deletes its victim), and then a scraper's
ServiceAccount token, bound to the ClusterRole the chart documents for scrapers, gets
/metrics over HTTPS (kpysched's TokenReview and SubjectAccessReview succeed). Then, for each rule
alone, the same setup without that rule: the smoke must fail at the step that rule
serves, and kpysched's log must show the API server refusing exactly that request to
the ServiceAccount. RULES below is the table; a test checks it names every rule the
chart renders, so a new rule cannot skip the proof.

list and watch of one resource are one rule: an informer needs both, and a list
without a watch (or a watch without a list) is no informer.

Each case (the full RBAC, or the chart's minus one rule) is a release of its own: its
namespaces, ServiceAccount, roles, Lease, scheduler name (the chart's profile renamed to
the release: nothing in the RBAC names it), nodes, classes and devices. The cases share
nothing, so they run side by side (CASES_AT_ONCE), each kpysched process alone with
exactly its own RBAC: most of a case is waiting, on kpysched's start and on the step
the missing rule breaks, and one after another they took ~9 minutes.

The chart is rendered for the cluster's release (helm's --kube-version), as `helm
install` renders it for the cluster it installs into: on a v1.37 cluster it also
grants list and watch on DeviceTaintRules, which kpysched watches only as 1.37. That
resource is optional: without the rule kpysched schedules all the same, reading the
rules as none, so its proof is the refusal in kpysched's log and the warning that says
what going without it means, with the smoke passing.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from kpysched.api.client import RawApi
from tests.cluster import kube, releases
from tests.cluster.cluster import ClusterState, log_tail
from tests.cluster.kpysched_process import KpyschedProcess
from tests.e2e.test_deploy import (
    SMOKE_STEPS,
    STEP_TIMEOUT_SECONDS,
    SmokeOutcome,
    SmokeWorld,
    find,
    render,
    scheduler_config,
)

pytestmark = pytest.mark.e2e

# Short leader-election durations so a leader that cannot renew gives up quickly.
FAST_ELECTION = ("--set", "leaderElection.leaseDuration=4s",
                 "--set", "leaderElection.renewDeadline=3s",
                 "--set", "leaderElection.retryPeriod=1s")
# The step a missing rule breaks is given this long (success takes about a second).
BROKEN_STEP_SECONDS = 6.0
# Then the refusal (and an optional resource's warning) may take this long to be logged.
EVIDENCE_SECONDS = 10.0
# Cases run side by side, this many at once: most of a case is waiting (on kpysched's
# start, on the step it breaks), and each is isolated from the others (_case).
CASES_AT_ONCE = 8
# kpysched's stop: graceful with the full RBAC; SIGKILL after this long without a rule.
STOP_SECONDS, STOP_WITHOUT_A_RULE_SECONDS = 30.0, 2.0
LEASE = "<lease>"  # stands for the Lease name in RULES
# After the smoke steps: GET /metrics with a scraper's token answers 200.
SCRAPE_STEP = "metrics-scraped"
# The module's release is the selected one (it carries no release marker); the chart
# is rendered for it.
RELEASE = releases.selected()
FOR_THE_CLUSTER = ("--kube-version", RELEASE.kubernetes_version)
# kpysched's warning when an optional resource's list is refused (or not served).
OPTIONAL_UNAVAILABLE = "informer.optional_unavailable"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: str  # ClusterRole or Role
    rule: Mapping[str, Any]
    # The smoke step that fails without it; None for an optional resource, without
    # which the smoke passes (kpysched warns that it reads the resource as empty).
    breaks: str | None
    refused: tuple[str, str]  # (verb, resource) the API server then refuses

    def matches(self, rendered: Mapping[str, Any], lease: str) -> bool:
        expected = {k: [lease if v == LEASE else v for v in values]
                    for k, values in self.rule.items()}
        return dict(rendered) == expected


def _informer(id_: str, group: str, resource: str) -> Rule:
    # kpysched campaigns for the Lease only once every informer has listed.
    return Rule(id_, "ClusterRole", {"apiGroups": [group], "resources": [resource],
                                     "verbs": ["list", "watch"]},
                "lease-acquired", ("list", resource))


RULES = [
    _informer("pods-list-watch", "", "pods"),
    Rule("pods-delete", "ClusterRole",
         {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]},
         "preemption", ("delete", "pods")),
    Rule("pods-binding-create", "ClusterRole",
         {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
         "pods-bound", ("create", "pods/binding")),
    Rule("pods-status-patch", "ClusterRole",
         {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]},
         "pod-scheduled-condition", ("patch", "pods/status")),
    _informer("nodes-list-watch", "", "nodes"),
    _informer("namespaces-list-watch", "", "namespaces"),
    _informer("services-list-watch", "", "services"),
    _informer("replicationcontrollers-list-watch", "", "replicationcontrollers"),
    _informer("replicasets-list-watch", "apps", "replicasets"),
    _informer("statefulsets-list-watch", "apps", "statefulsets"),
    _informer("persistentvolumeclaims-list-watch", "", "persistentvolumeclaims"),
    _informer("persistentvolumes-list-watch", "", "persistentvolumes"),
    Rule("persistentvolumes-patch", "ClusterRole",
         {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["patch"]},
         "volumes-bound", ("patch", "persistentvolumes")),
    Rule("persistentvolumeclaims-patch", "ClusterRole",
         {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["patch"]},
         "volumes-bound", ("patch", "persistentvolumeclaims")),
    _informer("storageclasses-list-watch", "storage.k8s.io", "storageclasses"),
    _informer("csinodes-list-watch", "storage.k8s.io", "csinodes"),
    _informer("csidrivers-list-watch", "storage.k8s.io", "csidrivers"),
    _informer("csistoragecapacities-list-watch", "storage.k8s.io", "csistoragecapacities"),
    _informer("volumeattachments-list-watch", "storage.k8s.io", "volumeattachments"),
    _informer("resourceclaims-list-watch", "resource.k8s.io", "resourceclaims"),
    _informer("resourceclaimtemplates-list-watch", "resource.k8s.io",
              "resourceclaimtemplates"),
    _informer("resourceslices-list-watch", "resource.k8s.io", "resourceslices"),
    _informer("deviceclasses-list-watch", "resource.k8s.io", "deviceclasses"),
    Rule("resourceclaims-get-update", "ClusterRole",
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
          "verbs": ["get", "update"]},
         "devices-allocated", ("update", "resourceclaims")),
    Rule("resourceclaims-status-update-patch", "ClusterRole",
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
          "verbs": ["update", "patch"]},
         "devices-allocated", ("update", "resourceclaims/status")),
    Rule("resourceclaims-binding-update-patch", "ClusterRole",
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/binding"],
          "verbs": ["update", "patch"]},
         "devices-allocated", ("update", "resourceclaims/binding")),
    Rule("resourceclaims-create", "ClusterRole",
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
          "verbs": ["create"]},
         "devices-allocated", ("create", "resourceclaims")),
    Rule("resourceclaims-delete", "ClusterRole",
         {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
          "verbs": ["delete"]},
         "stale-claim-replaced", ("delete", "resourceclaims")),
    _informer("poddisruptionbudgets-list-watch", "policy", "poddisruptionbudgets"),
    Rule("events-create", "ClusterRole",
         {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
         "failed-scheduling-event", ("create", "events")),
    Rule("tokenreviews-create", "ClusterRole",
         {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
          "verbs": ["create"]},
         SCRAPE_STEP, ("create", "tokenreviews")),
    Rule("subjectaccessreviews-create", "ClusterRole",
         {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
          "verbs": ["create"]},
         SCRAPE_STEP, ("create", "subjectaccessreviews")),
    *([Rule("devicetaintrules-list-watch", "ClusterRole",
            {"apiGroups": ["resource.k8s.io"], "resources": ["devicetaintrules"],
             "verbs": ["list", "watch"]},
            None, ("list", "devicetaintrules"))] if RELEASE.minor >= 37 else []),
    Rule("lease-create", "Role",
         {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
         "lease-acquired", ("create", "leases")),
    Rule("lease-get", "Role",
         {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
          "resourceNames": [LEASE], "verbs": ["get"]},
         "lease-acquired", ("get", "leases")),
    Rule("lease-update", "Role",
         {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
          "resourceNames": [LEASE], "verbs": ["update"]},
         "lease-renewed", ("update", "leases")),
]


def test_the_table_names_every_rule_the_chart_grants() -> None:
    objects = render("table", "table-ns", *FOR_THE_CLUSTER)
    lease = scheduler_config(objects)["leaderElection"]["resourceName"]
    for kind in ("ClusterRole", "Role"):
        (role,) = find(objects, kind)
        rendered = role["rules"]
        table = [r for r in RULES if r.kind == kind]
        assert len(rendered) == len(table)
        for rule in rendered:
            assert any(r.matches(rule, lease) for r in table), (
                f"{kind} rule {rule} is not in RULES: add it with the smoke step it serves")


class InClusterKpysched(KpyschedProcess):
    """`kpysched run` with no kubeconfig: credentials only from the in-cluster files,
    serving HTTPS with the chart's authentication and authorization flags."""

    def __init__(self, state: ClusterState, release: Release) -> None:
        super().__init__(state, release.config, wait_for="server.listening", secure=True,
                         extra_args=release.serving_args, env={
                             "KPYSCHED_INCLUSTER_DIR": str(release.incluster_dir),
                             "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                             "KUBERNETES_SERVICE_PORT": str(state.apiserver_port),
                         })
        for variable in ("KUBECONFIG", "KPYSCHED_KUBECONFIG"):
            self.env.pop(variable, None)


@dataclass(slots=True)
class Release:
    """The chart's ServiceAccount, roles and bindings, applied for real."""

    namespace: str
    config: dict[str, Any]
    account: str
    incluster_dir: Path
    serving_args: tuple[str, ...]  # the Deployment's --authentication-*/--authorization-*
    scraper_token: str  # a ServiceAccount bound to the scraper ClusterRole

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.account}"


async def _post(raw: RawApi, path: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    response = await raw.request("POST", path, dict(obj), throttle=False)
    assert response.ok, f"{obj['kind']}: HTTP {response.status}: {response.message()}"
    created: dict[str, Any] = json.loads(response.body)
    return created


_PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}
SCRAPER = "scraper"


def _scraper_objects(namespace: str) -> list[dict[str, Any]]:
    """A ServiceAccount bound to the ClusterRole values.yaml documents for scrapers."""
    name = f"{namespace}-{SCRAPER}"
    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": SCRAPER, "namespace": namespace}},
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": namespace}]},
    ]


async def _token(raw: RawApi, namespace: str, account: str) -> str:
    review = await _post(raw, f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                          "spec": {"expirationSeconds": 3600}})
    token: str = review["status"]["token"]
    return token


async def _wait_until_authorized(raw: RawApi, namespace: str, account: str,
                                 role: Mapping[str, Any], timeout: float = 10.0) -> None:
    """The authorizer learns of new bindings through a watch: wait until it grants the
    role's first rule, so kpysched's first requests are not refused by that lag."""
    rule = role["rules"][0]
    resource, _, subresource = rule["resources"][0].partition("/")
    attributes = {"verb": rule["verbs"][0], "group": rule["apiGroups"][0],
                  "resource": resource, "subresource": subresource,
                  "namespace": role["metadata"].get("namespace", namespace),
                  "name": rule.get("resourceNames", [""])[0]}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": f"system:serviceaccount:{namespace}:{account}",
                       "groups": ["system:serviceaccounts",
                                  f"system:serviceaccounts:{namespace}", "system:authenticated"],
                       "resourceAttributes": attributes}}
    deadline = asyncio.get_running_loop().time() + timeout
    while not (await _post(raw, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                           review))["status"].get("allowed"):
        assert asyncio.get_running_loop().time() < deadline, f"{attributes} never allowed"
        await asyncio.sleep(0.1)


@asynccontextmanager
async def _installed(api: client.ApiClient, cluster: ClusterState, directory: Path,
                     without: Rule | None) -> AsyncIterator[Release]:
    """The chart's identity and RBAC objects (minus `without`) applied in a fresh release
    namespace, the in-cluster files laid out; all deleted when the block ends."""
    raw = RawApi(api, qps=0)
    made: list[tuple[str, str]] = []  # cluster-scoped objects to delete
    namespace = await kube.create_namespace(api, prefix="kpysched-rbac")
    try:
        release = f"rbac-{secrets.token_hex(3)}"
        # Its own scheduler name: the cases run side by side, and each kpysched must
        # schedule only its own smoke's pods (the RBAC does not name the profile).
        objects = await asyncio.to_thread(
            render, release, namespace, *FAST_ELECTION, *FOR_THE_CLUSTER,
            "--set", f"profiles[0].schedulerName={release}")
        config = scheduler_config(objects)
        lease = config["leaderElection"]["resourceName"]
        roles = []
        for kind, path in _PATHS.items():
            for obj in find(objects, kind):
                if without is not None and kind == without.kind:
                    kept = [r for r in obj["rules"] if not without.matches(r, lease)]
                    assert len(kept) == len(obj["rules"]) - 1, f"{without.id} not in the {kind}"
                    obj["rules"] = kept
                if "rules" in obj:
                    roles.append(obj)
                await _post(raw, path.format(ns=obj["metadata"].get("namespace")), obj)
                if "{ns}" not in path:
                    made.append((path, obj["metadata"]["name"]))
        (account,) = find(objects, "ServiceAccount")
        name = account["metadata"]["name"]
        for role in roles:
            await _wait_until_authorized(raw, namespace, name, role)
        for obj in _scraper_objects(namespace):
            await _post(raw, _PATHS[obj["kind"]].format(ns=namespace), obj)
            if obj["kind"] != "ServiceAccount":
                made.append((_PATHS[obj["kind"]], obj["metadata"]["name"]))
        incluster = directory / namespace
        incluster.mkdir()
        (incluster / "token").write_text(await _token(raw, namespace, name))
        shutil.copy(cluster.ca_file, incluster / "ca.crt")
        (incluster / "namespace").write_text(namespace)
        (deployment,) = find(objects, "Deployment")
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        serving = tuple(a for a in args if a.startswith(("--authentication-",
                                                         "--authorization-")))
        yield Release(namespace, config, name, incluster, serving,
                      await _token(raw, namespace, SCRAPER))
    finally:
        for path, object_name in made:
            response = await raw.request("DELETE", f"{path}/{object_name}", throttle=False)
            assert response.ok or response.status == 404, response.message()
        await kube.delete_namespace(api, namespace)


@asynccontextmanager
async def _running(kp: KpyschedProcess, stop_timeout: float) -> AsyncIterator[KpyschedProcess]:
    """The process started and stopped in a thread: start() and stop() wait by sleeping,
    and the other cases' checks run on this event loop meanwhile."""
    await asyncio.to_thread(kp.start)
    try:
        yield kp
    finally:
        await asyncio.to_thread(kp.stop, stop_timeout)


async def _scrape(kp: KpyschedProcess, release: Release, outcome: SmokeOutcome,
                  timeout: float) -> None:
    """The step after the smoke: GET /metrics with the scraper's token answers 200."""
    if outcome.failed is not None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (answer := await asyncio.to_thread(kp.get, "/metrics", release.scraper_token))[0] \
            != 200:
        if loop.time() > deadline:
            outcome.failed, outcome.reason = SCRAPE_STEP, f"HTTP {answer[0]}: {answer[1][:300]}"
            return
        await asyncio.sleep(0.5)
    outcome.passed.append(SCRAPE_STEP)


def _refusals(kp: KpyschedProcess, release: Release, verb: str,
              resource: str) -> list[dict[str, Any]]:
    """Log events in which the API server refused `verb resource` to the ServiceAccount."""
    needle = f'User "{release.user}" cannot {verb} resource "{resource}"'
    return [event for event in kp.log_events()
            if any(isinstance(value, str) and needle in value for value in event.values())]


@dataclass(slots=True)
class CaseResult:
    """What one case saw: the smoke's outcome and kpysched's log, or the error that
    stopped the case (raised again by its test)."""

    user: str = ""
    outcome: SmokeOutcome | None = None
    refusals: list[dict[str, Any]] = field(default_factory=list)
    warned: list[dict[str, Any]] = field(default_factory=list)
    log: str = ""
    tail: str = ""
    error: BaseException | None = None

    def seen(self) -> SmokeOutcome:
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome


async def _evidence(kp: KpyschedProcess, release: Release, rule: Rule,
                    result: CaseResult) -> None:
    """The refusal of the rule's request in kpysched's log (and, for an optional
    resource, the warning), waited for a little: a loaded machine may log it late."""
    deadline = asyncio.get_running_loop().time() + EVIDENCE_SECONDS
    while True:
        result.refusals = _refusals(kp, release, *rule.refused)
        result.warned = [e for e in kp.log_events() if e.get("event") == OPTIONAL_UNAVAILABLE
                         and e.get("resource") == rule.refused[1]]
        complete = result.refusals and (rule.breaks is not None or result.warned)
        if complete or asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.5)


async def _case(cluster: ClusterState, directory: Path, rule: Rule | None) -> CaseResult:
    """The smoke under the chart's RBAC, minus `rule` (none: all of it): its own
    namespaces, release, scheduler name, Lease, nodes and classes, so that it shares
    nothing with the cases running beside it."""
    result = CaseResult()
    nodes: list[str] = []
    async with kube.api_client(cluster) as api, \
            _installed(api, cluster, directory, rule) as release:
        result.user = release.user
        namespace = await kube.create_namespace(api)
        try:
            world = await SmokeWorld.create(api, namespace, release.config, nodes)
            try:
                # Without a rule, what the case shows is in the log before the stop: a
                # leader's graceful stop (up to 10 s draining what the missing rule holds
                # up) is cut short. With all of them, the stop is watched too.
                stop = STOP_SECONDS if rule is None else STOP_WITHOUT_A_RULE_SECONDS
                async with _running(InClusterKpysched(cluster, release), stop) as kp:
                    if rule is None:
                        result.outcome = await world.run(api, kp)
                        await _scrape(kp, release, result.outcome, STEP_TIMEOUT_SECONDS)
                    else:
                        result.outcome = await world.run(api, kp, short_step=rule.breaks,
                                                         short_timeout=BROKEN_STEP_SECONDS)
                        await _scrape(kp, release, result.outcome, BROKEN_STEP_SECONDS)
                        await _evidence(kp, release, rule, result)
                result.log = kp.log_path.read_text(errors="replace")
                result.tail = log_tail(kp.log_path)
            finally:
                await world.delete(api)
        finally:
            await kube.delete_namespace(api, namespace)
            await kube.delete_nodes(api, nodes)
    return result


def _longest_first(rule: Rule | None) -> int:
    """Cases that get further into the smoke take longer: they start first, so that the
    short ones fill the gaps at the end."""
    steps = (*SMOKE_STEPS, SCRAPE_STEP)
    return -len(steps) if rule is None or rule.breaks is None else -steps.index(rule.breaks)


async def _run_cases(cluster: ClusterState, directory: Path,
                     rules: list[Rule | None]) -> dict[str | None, CaseResult]:
    slots = asyncio.Semaphore(CASES_AT_ONCE)
    loop = asyncio.get_running_loop()
    took: dict[str, float] = {}

    async def one(rule: Rule | None) -> CaseResult:
        async with slots:
            began = loop.time()
            try:
                return await _case(cluster, directory, rule)
            except Exception as error:  # reported by that case's own test
                return CaseResult(error=error)
            finally:
                took["all rules" if rule is None else rule.id] = loop.time() - began

    began = loop.time()
    ordered = sorted(rules, key=_longest_first)
    results = await asyncio.gather(*(one(rule) for rule in ordered))
    # Shown with -s or -rP; never asserted.
    longest = sorted(took.items(), key=lambda item: -item[1])[:3]
    print(f"{len(rules)} cases, {CASES_AT_ONCE} at once, in {loop.time() - began:.0f} s; "
          f"longest: {', '.join(f'{name} {seconds:.0f} s' for name, seconds in longest)}")
    return {None if rule is None else rule.id: result
            for rule, result in zip(ordered, results, strict=True)}


@pytest.fixture(scope="module")
def cases(request: pytest.FixtureRequest, cluster: ClusterState,
          tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, CaseResult]:
    """Every case the session's selection holds of this module (the full RBAC and each
    rule removed alone), run CASES_AT_ONCE at a time on an event loop of their own;
    each test then checks its case."""
    selected = [item for item in request.session.items if isinstance(item, pytest.Function)
                and item.module is request.module and "cases" in item.fixturenames]
    rules: list[Rule | None] = []
    for item in selected:
        rule = item.callspec.params["rule"] if hasattr(item, "callspec") else None
        assert rule is None or isinstance(rule, Rule)
        rules.append(rule)
    directory = tmp_path_factory.mktemp("rbac-incluster")
    with ThreadPoolExecutor(max_workers=1) as loop_thread:
        return loop_thread.submit(asyncio.run, _run_cases(cluster, directory, rules)).result()


def test_smoke_passes_with_the_chart_s_rbac_through_the_in_cluster_path(
    cases: dict[str | None, CaseResult],
) -> None:
    case = cases[None]
    outcome = case.seen()
    assert outcome.failed is None, f"{outcome.describe()}\n{case.log[-3000:]}"
    assert "forbidden" not in case.log.lower()  # nothing kpysched did was refused


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_without_the_rule_the_smoke_fails_where_that_rule_is_used(
    rule: Rule, cases: dict[str | None, CaseResult],
) -> None:
    case = cases[rule.id]
    outcome = case.seen()
    assert outcome.failed == rule.breaks, f"{outcome.describe()}\n{case.tail}"
    assert case.refusals, (f"kpysched's log shows no refusal of {' '.join(rule.refused)} "
                           f"to {case.user}:\n{case.tail}")
    # An optional resource: the smoke passed, and kpysched said why it went without.
    assert rule.breaks is not None or case.warned, (
        f"no {OPTIONAL_UNAVAILABLE} warning:\n{case.tail}")
