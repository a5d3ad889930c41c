"""Differential scenarios whose right answer differs between the two kube-scheduler
releases kpysched follows (issue 34): each has one expected upstream outcome per
release, and the outcomes exclude each other, so a kpysched that follows the wrong
release (and still equals upstream on the other) fails.

Two kinds:
- `CASES`: scenarios of their own, run under kube-scheduler of each release and
  kpysched on twin clusters of that release (tests/e2e/test_releases.py);
- `BATCH_EXPECTATIONS`: scenarios of the stateless batch (batch/scenarios.py), whose
  upstream outcome must also be this release's (batch/test_batch.py), so no extra
  scheduler start is needed for them.

What changed between v1.36.4 and v1.37.2, and which scenario shows it (or why none
can), is listed in docs/features.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client

from tests.cluster import kube, releases
from tests.e2e.differential.compare import KPYSCHED, UPSTREAM, TwinApis, both, check_kind
from tests.e2e.differential.dra_scenarios import DRA, GPU, gpu, gpus, request, uses
from tests.e2e.differential.dra_scenarios import claim as device_claim
from tests.e2e.differential.model import (
    CSINodeSpec,
    NodeSpec,
    Outcome,
    PodSpec,
    PvcSpec,
    PvSpec,
    Scenario,
)
from tests.e2e.differential.release_bind_once import BIND_ONCE_LABEL, BindOnce
from tests.e2e.differential.runner import (
    OUTCOME_TIMEOUT_SECONDS,
    ensure_priority_classes,
    run_scenario,
)

HOST = "kubernetes.io/hostname"
TEAM = "kpysched.test/team"


@dataclass(frozen=True)
class Expected:
    """Upstream's outcome under one release: the node (None: not bound) and what its
    first FailedScheduling note holds and lacks."""

    node: str | None
    holds: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    # check_kind's word for it, when not "bound" (a node) or "pending" (none).
    kind: str | None = None

    @property
    def scenario_kind(self) -> str:
        return self.kind or ("bound" if self.node else "pending")

    def excludes(self, other: Expected) -> bool:
        """No one outcome can meet both: another node, or a text one must hold that
        holds one the other must lack."""
        def clash(holds: tuple[str, ...], lacks: tuple[str, ...]) -> bool:
            return any(lacked in held for held in holds for lacked in lacks)

        return (self.node != other.node or clash(self.holds, other.lacks)
                or clash(other.holds, self.lacks))

    def problems(self, outcome: Outcome) -> list[str]:
        note = outcome.message or ""
        found = [f"node {outcome.node}, not {self.node}"] if outcome.node != self.node else []
        found += [f"note lacks {text!r}" for text in self.holds if text not in note]
        found += [f"note holds {text!r}" for text in self.lacks if text in note]
        return found


def check_release(name: str, expected: Mapping[str, Expected], release: str,
                  outcome: Outcome) -> None:
    """`outcome` (upstream's) is the one `release` gives, which no other release does."""
    assert set(expected) == set(releases.RELEASES), f"{name}: an outcome per release"
    mine = expected[release]
    assert all(mine.excludes(other) for r, other in expected.items() if r != release), (
        f"{name}: release {release}'s outcome must exclude every other release's")
    problems = mine.problems(outcome)
    assert not problems, f"{name} on {release}: {problems}\n {outcome.describe()}"


@dataclass(frozen=True)
class ReleaseCase:
    scenario: Scenario
    expected: Mapping[str, Expected]  # release ("1.36") -> upstream's outcome there
    # CSIDriver bodies the scenario needs beyond the model's (fields it has no word for),
    # made before the scenario and deleted after it, on each twin.
    csi_drivers: tuple[dict[str, Any], ...] = field(default=())
    # DeviceTaintRule bodies (resource.k8s.io/v1), made likewise where the API server
    # serves them (from v1.37; a v1.36 API server refuses them as unknown).
    device_taint_rules: tuple[dict[str, Any], ...] = field(default=())
    # The bind-once webhook (release_bind_once.py) fails the first binding of each of
    # the scenario's pods (its namespace carries BIND_ONCE_LABEL).
    first_binding_fails: bool = False
    # An existing pod (role) deleted once the incoming pod's first FailedScheduling is
    # out: what a queueing hint makes of the deletion. It does not count as a victim.
    delete_after_failure: str | None = None

    @property
    def name(self) -> str:
        return self.scenario.name


def _by_name(scenarios: list[Scenario], name: str) -> Scenario:
    return next(s for s in scenarios if s.name == name)


# InterPodAffinity: the incoming pod's namespaceSelector. v1.36 resolves it to names
# but also keeps matching the selector, against no labels at all, so a NotIn selector
# selects every namespace, its own (labelled team=x) included: the web pod on n0 counts
# and n0 is out. v1.37 keeps only the resolved names, which leave out the pod's own
# namespace: n0, much the emptier node, wins.
_IPA_NAMESPACE_SELECTOR = Scenario(
    "ipa-anti-affinity-namespace-selector-by-release",
    (NodeSpec("n0"), NodeSpec("n1")),
    PodSpec("incoming", spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST,
            "namespaceSelector": {"matchExpressions": [
                {"key": TEAM, "operator": "NotIn", "values": ["x"]}]}}]}}}),
    existing=(PodSpec("web", node="n0", labels={"app": "web"}),
              PodSpec("busy-n1", node="n1", cpu="2", memory="8Gi")),
    namespace_labels={TEAM: "x"},
)

# ImageLocality: an image volume counts towards the pod's image count from v1.37 on,
# which halves n1's image score here (one container image of 1000 MiB on half the
# nodes: v1.36 scores it 48, v1.37 24). n0 leads by ~37 on resources (n1 runs a busy
# pod): v1.36 picks n1, v1.37 n0.
_APP_IMAGE = "registry.example/release-app:1"
_IMAGE_VOLUME_COUNTED = Scenario(
    "image-volume-counted-by-release",
    (NodeSpec("n0"), NodeSpec("n1", images=((_APP_IMAGE, 1000 * 1024 * 1024),))),
    PodSpec("incoming", container={"image": _APP_IMAGE}, spec={"volumes": [
        {"name": "data", "image": {"reference": "registry.example/release-data:1",
                                   "pullPolicy": "IfNotPresent"}}]}),
    existing=(PodSpec("busy-n1", node="n1", cpu="1500m", memory="6Gi"),),
)

# NodeVolumeLimits with VolumeLimitScaling (beta, on from v1.37): a driver that asks
# for it (preventPodSchedulingIfMissing) keeps its volumes' pods off nodes whose
# CSINode does not list it. n0 has no CSINode: v1.37 refuses it and picks n1 (busy);
# v1.36 never asks and picks the idle n0. The field is new: the model has no word
# for it, so the case makes the CSIDriver itself (a literal name, used as it is).
_DRIVER = "disk.release.kpysched.test"
_DRIVER_NEEDED_ON_THE_NODE = Scenario(
    "nvl-driver-missing-on-node-by-release",
    (NodeSpec("n0"), NodeSpec("n1")),
    PodSpec("incoming", spec={"volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}),
    existing=(PodSpec("busy-n1", node="n1", cpu="2", memory="8Gi"),),
    pvs=(PvSpec("vol-data", source={"csi": {"driver": _DRIVER, "volumeHandle": "handle-data"}},
                claim="data"),),
    pvcs=(PvcSpec("data", volume="vol-data"),),
    csi_nodes=(CSINodeSpec("n1", {_DRIVER: None}),),
)

# DynamicResources' PostFilter, when it frees nothing: v1.36 adds "still not
# schedulable" to the FailedScheduling text, v1.37 nothing.
_NOT_SCHEDULABLE = "still not schedulable"
# The allocator's CEL runtime error: v1.37 names the device and, for a missing key,
# adds cel.EnhanceRuntimeError's hint. The device is gpu-1, the first whose model
# passes selector #0 (gpu-0 is a t4), so the first to reach #1's missing revision.
_ON_DEVICE = "selector #1 on device gpu.example.com/n0/gpu-1: CEL runtime error"
_OPTIONAL_HINT = "consider using CEL optional chaining"

# The allocator's 32-device limit: v1.36 checks a claim's total after validating all
# its requests, v1.37 each request as it goes, in other words.
_CLAIM_TOTAL = "number of requested devices 40 exceeds the claim limit of 32"
_REQUEST_TOTAL = ("request gpu: adding 40 devices exceeds the claim limit of 32, "
                  "with 0 already accounted for")
_CLAIM_LIMIT = Scenario(
    "dra-claim-limit-text-by-release", (NodeSpec("n0"),),
    PodSpec("incoming", spec={"resourceClaims": [uses("many")]}),
    device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0")),),
    resource_claims=(device_claim("many", request(count=40)),), expect="pending",
)

# DeviceTaintRules (DRADeviceTaintRules, GA and on in v1.37; v1.36 serves no such
# API): a rule tainting n0's only device keeps the claim off it, so v1.37 picks the
# busy n1. On v1.36 the rule cannot be made and the idle n0 wins.
_RULED_DEVICE = "gpu-ruled"
_DEVICE_TAINT_RULE = Scenario(
    "dra-device-taint-rule-by-release",
    (NodeSpec("n0"), NodeSpec("n1")),
    PodSpec("incoming", spec={"resourceClaims": [uses("gpu")]}),
    existing=(PodSpec("busy-n1", node="n1", cpu="2", memory="8Gi"),),
    device_classes=(GPU,),
    slices=(gpus("n0", gpu(_RULED_DEVICE)), gpus("n1", gpu("gpu-0"))),
    resource_claims=(device_claim("gpu"),),
)
_TAINT_RULE = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
               "metadata": {"name": "release-ruled-gpu"}, "spec": {
    "deviceSelector": {"driver": "gpu.example.com", "device": _RULED_DEVICE},
    "taint": {"key": "example.com/broken", "value": "true", "effect": "NoSchedule"}}}
DEVICE_TAINT_RULES_FROM = 37

# DefaultBinder: from v1.37 a binding the API server fails with an InternalError is
# tried again at once, and the pod binds with no FailedScheduling; v1.36 fails the
# binding cycle (FailedScheduling 'running Bind plugin "DefaultBinder": Internal
# error occurred: failed calling webhook ...') and binds on its next attempt.
_RUNNING_BIND = 'running Bind plugin "DefaultBinder"'
_FIRST_BINDING_FAILS = Scenario(
    "binder-first-binding-fails-by-release", (NodeSpec("n0"),), PodSpec("incoming"),
    expect="retried", namespace_labels={BIND_ONCE_LABEL: "true"})

# InterPodAffinity's queueing hint for a deleted pod: v1.37 retries the rejected pod
# when the deleted pod matched any of its required anti-affinity terms, v1.36 only
# when it matched all of them. The web pod matches one of two terms: once it is gone
# v1.37 places the pod at once, v1.36 leaves it among the unschedulable (until the
# five-minute flush, well past the outcome's 30 s).
_ANTI_AFFINITY = "didn't match pod anti-affinity rules"
_IPA_ANY_TERM_HINT = Scenario(
    "ipa-hint-deleted-pod-matching-one-anti-affinity-term-by-release",
    (NodeSpec("n0"),),
    PodSpec("incoming", spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST},
            {"labelSelector": {"matchLabels": {"tier": "db"}}, "topologyKey": HOST}]}}}),
    existing=(PodSpec("web", node="n0", labels={"app": "web"}),),
    expect="retried",
)

CASES: list[ReleaseCase] = [
    ReleaseCase(_IPA_NAMESPACE_SELECTOR, {"1.36": Expected("n1"), "1.37": Expected("n0")}),
    ReleaseCase(_IMAGE_VOLUME_COUNTED, {"1.36": Expected("n1"), "1.37": Expected("n0")}),
    ReleaseCase(_DRIVER_NEEDED_ON_THE_NODE, {"1.36": Expected("n0"), "1.37": Expected("n1")},
                csi_drivers=({"metadata": {"name": _DRIVER},
                              "spec": {"attachRequired": True,
                                       "preventPodSchedulingIfMissing": True}},)),
    ReleaseCase(_by_name(DRA, "dra-no-device-anywhere"),
                {"1.36": Expected(None, holds=(_NOT_SCHEDULABLE,)),
                 "1.37": Expected(None, lacks=(_NOT_SCHEDULABLE,))}),
    ReleaseCase(_by_name(DRA, "dra-request-cel-runtime-error"),
                {"1.36": Expected(None, lacks=(_ON_DEVICE, _OPTIONAL_HINT)),
                 "1.37": Expected(None, holds=(_ON_DEVICE, _OPTIONAL_HINT))}),
    ReleaseCase(_CLAIM_LIMIT,
                {"1.36": Expected(None, holds=(_CLAIM_TOTAL,), lacks=(_REQUEST_TOTAL,)),
                 "1.37": Expected(None, holds=(_REQUEST_TOTAL,), lacks=(_CLAIM_TOTAL,))}),
    ReleaseCase(_DEVICE_TAINT_RULE, {"1.36": Expected("n0"), "1.37": Expected("n1")},
                device_taint_rules=(_TAINT_RULE,)),
    ReleaseCase(_FIRST_BINDING_FAILS,
                {"1.36": Expected("n0", holds=(_RUNNING_BIND,), kind="retried"),
                 "1.37": Expected("n0", lacks=(_RUNNING_BIND,))},
                first_binding_fails=True),
    ReleaseCase(_IPA_ANY_TERM_HINT,
                {"1.36": Expected(None, holds=(_ANTI_AFFINITY,)),
                 "1.37": Expected("n0", holds=(_ANTI_AFFINITY,), kind="retried")},
                delete_after_failure="web"),
]


async def _make_csi_drivers(api: client.ApiClient, bodies: tuple[dict[str, Any], ...]) -> None:
    storage = client.StorageV1Api(api)
    for body in bodies:
        await storage.create_csi_driver(body)


async def _delete_csi_drivers(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                              ) -> None:
    storage = client.StorageV1Api(api)
    for body in bodies:
        await storage.delete_csi_driver(body["metadata"]["name"])


_TAINT_RULES = "/apis/resource.k8s.io/v1/devicetaintrules"
_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


async def _make_taint_rules(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                            release: str) -> None:
    """The rules, on a release that serves them; refused as unknown on one that does
    not (a sign the case's premise holds)."""
    served = releases.get(release).minor >= DEVICE_TAINT_RULES_FROM
    for body in bodies:
        try:
            await api.call_api(_TAINT_RULES, "POST", body=body, header_params=_JSON,
                               auth_settings=["BearerToken"], _return_http_data_only=True)
        except client.ApiException as error:
            if served or error.status != 404:
                raise
        else:
            assert served, f"a v{release} API server made a DeviceTaintRule"


async def _delete_taint_rules(api: client.ApiClient, bodies: tuple[dict[str, Any], ...],
                              release: str) -> None:
    if releases.get(release).minor < DEVICE_TAINT_RULES_FROM:
        return
    for body in bodies:
        await api.call_api(f"{_TAINT_RULES}/{body['metadata']['name']}", "DELETE",
                           header_params=_JSON, auth_settings=["BearerToken"],
                           _return_http_data_only=True)


async def _run(api: client.ApiClient, case: ReleaseCase, scheduler: str, release: str,
               bind_once: BindOnce | None) -> Outcome:
    await ensure_priority_classes(api)
    admission = client.AdmissionregistrationV1Api(api)
    webhook = None
    if case.first_binding_fails:
        assert bind_once is not None, f"{case.name} needs the bind-once webhook"
        webhook = bind_once.configuration()
        await admission.create_validating_webhook_configuration(webhook)
    await _make_csi_drivers(api, case.csi_drivers)
    await _make_taint_rules(api, case.device_taint_rules, release)
    try:
        if case.delete_after_failure is None:
            return await run_scenario(api, case.scenario, scheduler)
        # The run's namespace is made inside run_scenario: a label of this run's own
        # finds it (an earlier run's may still be terminating).
        mark = secrets.token_hex(4)
        scenario = dataclasses.replace(case.scenario, namespace_labels={
            **case.scenario.namespace_labels, _RUN_LABEL: mark})
        outcome, _ = await asyncio.gather(
            run_scenario(api, scenario, scheduler),
            _delete_after_failure(api, mark, case.delete_after_failure))
        return dataclasses.replace(outcome,
                                   victims=outcome.victims - {case.delete_after_failure})
    finally:
        await _delete_taint_rules(api, case.device_taint_rules, release)
        await _delete_csi_drivers(api, case.csi_drivers)
        if webhook is not None:
            await admission.delete_validating_webhook_configuration(
                webhook["metadata"]["name"])


_RUN_LABEL = "kpysched.test/release-run"


async def _delete_after_failure(api: client.ApiClient, mark: str, role: str) -> None:
    """Delete pod `role` of the run marked `mark` once its incoming pod has failed."""
    core = client.CoreV1Api(api)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OUTCOME_TIMEOUT_SECONDS
    namespace: str | None = None
    while loop.time() < deadline:
        if namespace is None:
            listed = await core.list_namespace(label_selector=f"{_RUN_LABEL}={mark}")
            namespace = listed.items[0].metadata.name if listed.items else None
        if namespace is not None and await kube.events(api, namespace, "FailedScheduling",
                                                       regarding="incoming"):
            await core.delete_namespaced_pod(role, namespace, grace_period_seconds=0)
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"no FailedScheduling for the incoming pod of run {mark}")


async def follows_release(apis: TwinApis, case: ReleaseCase, release: str,
                          bind_once: BindOnce | None = None) -> None:
    """The case under kube-scheduler of `release` and under kpysched (which took that
    release from the cluster): upstream's outcome is this release's, and kpysched's is
    upstream's."""
    upstream, ours = await both(_run(apis.upstream, case, UPSTREAM, release, bind_once),
                                _run(apis.kpysched, case, KPYSCHED, release, bind_once))
    expected = case.expected[release]
    check_kind(dataclasses.replace(case.scenario, expect_node=expected.node,
                                   expect=expected.scenario_kind), upstream)
    check_release(case.name, case.expected, release, upstream)
    assert ours == upstream, (f"\n upstream: {upstream.describe()}\n kpysched: "
                              f"{ours.describe()}")


# DefaultPreemption: from v1.37 a preemption that found its node says so in the
# preemptor's FailedScheduling text ("preemption: found a potential placement for pod
# on node N, preempting K victims"); v1.36's text has no preemption part at all.
_FOUND = "preemption: found a potential placement for pod on node"


def _preempts_on(node: str, victims: int) -> dict[str, Expected]:
    found = f"{_FOUND} {node}, preempting {victims} victims"
    return {"1.36": Expected(node, lacks=("preemption:",)),
            "1.37": Expected(node, holds=(found,))}


# Batch scenario name -> its upstream outcome per release.
BATCH_EXPECTATIONS: dict[str, dict[str, Expected]] = {
    "preempt-within-the-pods-node-affinity": _preempts_on("n1", 1),
    "preempt-the-host-port-holder": _preempts_on("n0", 1),
}
