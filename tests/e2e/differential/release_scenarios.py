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
can), is listed in docs/features.md; release_run.py runs a case and checks an outcome.
"""

from __future__ import annotations

from tests.e2e.differential.dra_scenarios import DRA, GPU, gpu, gpus, request, uses
from tests.e2e.differential.dra_scenarios import claim as device_claim
from tests.e2e.differential.model import (
    CSINodeSpec,
    NodeSpec,
    PodSpec,
    PvcSpec,
    PvSpec,
    Scenario,
)
from tests.e2e.differential.release_bind_once import BIND_ONCE_LABEL
from tests.e2e.differential.release_run import Expected, ReleaseCase

HOST = "kubernetes.io/hostname"
TEAM = "kpysched.test/team"


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
