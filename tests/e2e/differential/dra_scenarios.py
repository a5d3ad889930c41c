"""Differential scenarios for DynamicResources (DRA, resource.k8s.io/v1), each with
exactly one right outcome: node, FailedScheduling text and every claim's allocation.

No driver or kubelet runs: the ResourceSlices are objects the scenario makes, one
per node (its pool named after the node), of the driver "gpu.example.com". A claim
"already allocated" has its status written by the test before the incoming pod
comes (as if a scheduler had allocated it and its existing pods had reserved it).

Where several nodes pass every other filter, the one the scenario means is the
busiest (`_busy`), so a scheduler that let DRA pass would pick another by score;
where one node is meant to win by DynamicResources' own score (prioritized lists),
the others are the idlest. Upstream's texts are in pkg/scheduler/framework/plugins/
dynamicresources of kubernetes v1.36.4.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.differential.model import (
    DeviceClassSpec,
    DeviceResult,
    NodeSpec,
    PodSpec,
    ResourceClaimSpec,
    Scenario,
    SliceSpec,
)

DRIVER = "gpu.example.com"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"


def N(role: str, **kw: Any) -> NodeSpec:  # noqa: N802 - table shorthand
    return NodeSpec(role, **kw)


def P(role: str = "incoming", *claims: dict[str, Any], **kw: Any) -> PodSpec:  # noqa: N802
    """A pod with these `spec.resourceClaims` entries (its container uses them all)."""
    spec = {"resourceClaims": list(claims)} if claims else {}
    return PodSpec(role, spec=spec, **kw)


def uses(claim: str, entry: str | None = None) -> dict[str, Any]:
    """A pod claim entry for the ResourceClaim `claim`."""
    return {"name": entry or claim, "resourceClaimName": claim}


def from_template(template: str, entry: str) -> dict[str, Any]:
    return {"name": entry, "resourceClaimTemplateName": template}


def gpu(name: str, model: str = "t4", memory: str = "16Gi", **attributes: Any,
        ) -> dict[str, Any]:
    """A device with a `model` attribute, `memory` capacity and further attributes
    (int or string)."""
    attrs: dict[str, Any] = {"model": {"string": model}}
    for key, value in attributes.items():
        attrs[key] = {"int": value} if isinstance(value, int) else {"string": value}
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": memory}}}


def tainted(device: dict[str, Any], effect: str = "NoSchedule") -> dict[str, Any]:
    return {**device, "taints": [{"key": "example.com/broken", "value": "true",
                                  "effect": effect}]}


def gpus(node: str, *devices: dict[str, Any], **kw: Any) -> SliceSpec:
    return SliceSpec(f"slice-{node}", node, devices, **kw)


def request(name: str = "gpu", device_class: str = "gpu", **exactly: Any) -> dict[str, Any]:
    """A DeviceRequest for exactly `count` (default 1) devices of a class; `selectors`
    are CEL expressions."""
    selectors = exactly.pop("selectors", ())
    body = {"deviceClassName": device_class, **exactly}
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": body}


def first_available(name: str, *alternatives: tuple[str, str]) -> dict[str, Any]:
    """A prioritized list: (subrequest name, device class) in order of preference."""
    return {"name": name, "firstAvailable": [
        {"name": sub, "deviceClassName": device_class} for sub, device_class in alternatives]}


def claim(role: str, *requests: dict[str, Any], **kw: Any) -> ResourceClaimSpec:
    return ResourceClaimSpec(role, requests or (request(),), **kw)


def allocated(role: str, node: str, *devices: str, reserved_for: tuple[str, ...] = (),
              request_name: str = "gpu") -> ResourceClaimSpec:
    """A claim of one request for `len(devices)` devices of node's pool, allocated."""
    return ResourceClaimSpec(
        role, (request(request_name, count=len(devices)),),
        allocated=tuple(DeviceResult(request_name, DRIVER, node, d) for d in devices),
        allocated_node=node, reserved_for=reserved_for)


def _busy(node: str) -> PodSpec:
    """A claim-less pod that makes `node` the least attractive by score."""
    return PodSpec(f"busy-{node}", node=node, cpu="2", memory="8Gi")


def _user(node: str, *claims: str, role: str | None = None, cpu: str = "100m") -> PodSpec:
    """An existing pod on `node` that uses (and reserves) these claims."""
    return P(role or f"user-{node}", *(uses(c) for c in claims), node=node, cpu=cpu)


GPU = DeviceClassSpec("gpu", (f'device.driver == "{DRIVER}"',))
A100 = DeviceClassSpec("a100", (f'device.driver == "{DRIVER}"',
                                f'device.attributes["{DRIVER}"].model == "a100"'))
T4 = DeviceClassSpec("t4", (f'device.driver == "{DRIVER}"',
                            f'device.attributes["{DRIVER}"].model == "t4"'))
BIG_MEMORY = DeviceClassSpec("big", (
    f'device.driver == "{DRIVER}"',
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'))
# One rune, four bytes in UTF-8.
WIDE = "\U0001f600"
# A selector the API server admits that passes cel-go's actual-cost limit (1,000,000).
# Four replaces grow 20 runes to 3.2 million (12.8 MB) for ~34,000; then indexOf. The
# API server's estimate prices indexOf by runes (320,000; 353,700 in all, accepted);
# cel-go charges k8s' traversalCost, which counts bytes (1,280,000; 1,313,689 in all).
# Nested all() over literal lists and string growth by cel.bind are priced by their
# estimate as they run: the API server refuses those past the limit ("too complex").
COSTLY = (f'cel.bind(s, "{WIDE * 20}", s.replace("{WIDE}", s).replace("{WIDE}", s)'
          f'.replace("{WIDE}", s).replace("{WIDE}", s).indexOf("b") < 0)')
COST_LIMIT_EXCEEDED = "CEL runtime error: operation cancelled: actual cost limit exceeded"
TOLERATE_BROKEN = {"key": "example.com/broken", "operator": "Exists", "effect": "NoSchedule"}
TWO = (N("n0"), N("n1"))
THREE = (N("n0"), N("n1"), N("n2"))


CLAIMS: list[Scenario] = [
    # A pod with no claim on nodes that publish devices: DynamicResources scores every
    # node 0 (kpysched in one vector), so the resource scores alone decide.
    Scenario("dra-claimless-pod-scored-by-resources", THREE, P("incoming"),
             device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0")), gpus("n2", gpu("gpu-0"))),
             existing=(_busy("n0"), _busy("n1")), expect_node="n2"),
    Scenario("dra-one-claim-only-node-with-device", THREE, P("incoming", uses("gpu")),
             device_classes=(GPU,), slices=(gpus("n1", gpu("gpu-0")),),
             resource_claims=(claim("gpu"),), existing=(_busy("n1"),),
             expect_node="n1", expect_devices={"gpu": ("n1/gpu-0",)}),
    Scenario("dra-two-claims-need-two-devices", TWO,
             P("incoming", uses("gpu-a"), uses("gpu-b")), device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"), gpu("gpu-1"))),
             resource_claims=(claim("gpu-a"), claim("gpu-b")), existing=(_busy("n1"),),
             expect_node="n1",
             expect_devices={"gpu-a": ("n1/gpu-0",), "gpu-b": ("n1/gpu-1",)}),
    Scenario("dra-request-count-two", TWO, P("incoming", uses("pair")), device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"), gpu("gpu-1"))),
             resource_claims=(claim("pair", request(count=2)),), existing=(_busy("n1"),),
             expect_node="n1", expect_devices={"pair": ("n1/gpu-0", "n1/gpu-1")}),
    Scenario("dra-no-device-anywhere", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0")),),
             resource_claims=(claim("gpu", request(count=2)),),
             expect="pending", expect_reason=f"2 {CANNOT_ALLOCATE}"),
    Scenario("dra-template-claim", THREE, P("incoming", from_template("gpu-template", "gpu")),
             device_classes=(GPU,), slices=(gpus("n2", gpu("gpu-0")),),
             resource_claims=(claim("gpu-template", template=True),), existing=(_busy("n2"),),
             expect_node="n2", expect_devices={"incoming/gpu": ("n2/gpu-0",)}),
    # Claims are allocated in the order of the pod's entries: the template's first.
    Scenario("dra-template-and-claim", TWO,
             P("incoming", from_template("gpu-template", "scratch"), uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"), gpu("gpu-1"))),
             resource_claims=(claim("gpu-template", template=True), claim("gpu")),
             existing=(_busy("n1"),), expect_node="n1",
             expect_devices={"incoming/scratch": ("n1/gpu-0",), "gpu": ("n1/gpu-1",)}),
]

SHARED_AND_ALLOCATED: list[Scenario] = [
    # A claim in use by a pod on n1 is shared by the incoming pod: it can only go there.
    Scenario("dra-shared-claim-reserved-by-running-pod", THREE,
             P("incoming", uses("shared")), device_classes=(GPU,),
             slices=tuple(gpus(n, gpu("gpu-0")) for n in ("n0", "n1", "n2")),
             resource_claims=(allocated("shared", "n1", "gpu-0", reserved_for=("user-n1",)),),
             existing=(_busy("n1"), _user("n1", "shared")), expect_node="n1",
             expect_devices={"shared": ("n1/gpu-0",)}),
    # Allocated (by an earlier pod, now gone) on n2, not reserved by anyone.
    Scenario("dra-claim-allocated-on-another-node", THREE,
             P("incoming", uses("gpu")), device_classes=(GPU,),
             slices=tuple(gpus(n, gpu("gpu-0")) for n in ("n0", "n1", "n2")),
             resource_claims=(allocated("gpu", "n2", "gpu-0"),), existing=(_busy("n2"),),
             expect_node="n2", expect_devices={"gpu": ("n2/gpu-0",)}),
    # Allocated on n0, which is full, and reserved by nobody: PostFilter deallocates the
    # claim, and the next attempt allocates it on n1.
    Scenario("dra-unreserved-claim-on-full-node-deallocated", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             resource_claims=(allocated("gpu", "n0", "gpu-0"),),
             existing=(PodSpec("full-n0", node="n0", cpu="4"),), expect="retried",
             expect_node="n1", expect_reason="deallocation of ResourceClaim completed",
             expect_devices={"gpu": ("n1/gpu-0",)}),
    # The claim's node is full, and a running pod holds the claim: nowhere to go.
    Scenario("dra-shared-claim-node-full", TWO, P("incoming", uses("shared")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             resource_claims=(allocated("shared", "n0", "gpu-0", reserved_for=("user-n0",)),),
             existing=(_user("n0", "shared", cpu="4"),),
             expect="pending", expect_reason=f"1 {NOT_AVAILABLE}"),
    # Every device is taken by claims of running pods.
    Scenario("dra-devices-exhausted", TWO, P("incoming", uses("gpu")), device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             resource_claims=(claim("gpu"),
                              allocated("taken-0", "n0", "gpu-0", reserved_for=("user-n0",)),
                              allocated("taken-1", "n1", "gpu-0", reserved_for=("user-n1",))),
             existing=(_user("n0", "taken-0"), _user("n1", "taken-1")),
             expect="pending", expect_reason=f"2 {CANNOT_ALLOCATE}"),
    # n0's only device is taken; n1's is free, though n1 is busier.
    Scenario("dra-device-taken-on-one-node", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             resource_claims=(claim("gpu"),
                              allocated("taken", "n0", "gpu-0", reserved_for=("user-n0",))),
             existing=(_user("n0", "taken"), _busy("n1")), expect_node="n1",
             expect_devices={"gpu": ("n1/gpu-0",), "taken": ("n0/gpu-0",)}),
    # An allocated device is skipped on the same node: gpu-0 is taken, gpu-1 is not.
    Scenario("dra-allocated-device-skipped", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0"), gpu("gpu-1")),),
             resource_claims=(claim("gpu"),
                              allocated("taken", "n0", "gpu-0", reserved_for=("user-n0",))),
             existing=(_user("n0", "taken"),), expect_node="n0",
             expect_devices={"gpu": ("n0/gpu-1",)}),
]

SELECTORS: list[Scenario] = [
    Scenario("dra-class-cel-attribute", TWO, P("incoming", uses("gpu")),
             device_classes=(A100,),
             slices=(gpus("n0", gpu("gpu-0", "t4")), gpus("n1", gpu("gpu-0", "a100"))),
             resource_claims=(claim("gpu", request(device_class="a100")),),
             existing=(_busy("n1"),), expect_node="n1", expect_devices={"gpu": ("n1/gpu-0",)}),
    Scenario("dra-class-cel-capacity", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(BIG_MEMORY,),
             slices=(gpus("n0", gpu("small", memory="16Gi"), gpu("large", memory="80Gi")),),
             resource_claims=(claim("gpu", request(device_class="big")),),
             expect_node="n0", expect_devices={"gpu": ("n0/large",)}),
    Scenario("dra-request-cel-attribute", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0", "t4", revision=3), gpu("gpu-1", "a100", revision=1),
                          gpu("gpu-2", "a100", revision=2)),),
             resource_claims=(claim("gpu", request(selectors=(
                 f'device.attributes["{DRIVER}"].model == "a100"',
                 f'device.attributes["{DRIVER}"].revision >= 2'))),),
             expect_node="n0", expect_devices={"gpu": ("n0/gpu-2",)}),
    # A selector that reads an attribute a device lacks fails at runtime: an error
    # for the pod, not a device that does not match.
    Scenario("dra-request-cel-runtime-error", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0", "t4"), gpu("gpu-1", "a100"),
                          gpu("gpu-2", "a100", revision=2)),),
             resource_claims=(claim("gpu", request(selectors=(
                 f'device.attributes["{DRIVER}"].model == "a100"',
                 f'device.attributes["{DRIVER}"].revision >= 2'))),),
             expect="pending", expect_reason="CEL runtime error: no such key: revision"),
    # Past the cost limit: an error for the pod (no device that merely does not match).
    # The pods created right after it are scheduled meanwhile, one with a claim of its
    # own on the same node's devices.
    Scenario("dra-request-cel-actual-cost-limit", TWO, P("incoming", uses("costly")),
             device_classes=(GPU,), slices=(gpus("n1", gpu("gpu-0"), gpu("gpu-1")),),
             resource_claims=(claim("costly", request(selectors=(COSTLY,))), claim("cheap")),
             existing=(_busy("n1"),), then=(P("cheap", uses("cheap")), P("plain")),
             expect="pending", expect_reason=COST_LIMIT_EXCEEDED,
             expect_devices={"cheap": ("n1/gpu-0",)}),
    Scenario("dra-request-cel-capacity", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0", memory="16Gi")),
                     gpus("n1", gpu("gpu-0", memory="80Gi"))),
             resource_claims=(claim("gpu", request(selectors=(
                 f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',))),),
             existing=(_busy("n1"),), expect_node="n1", expect_devices={"gpu": ("n1/gpu-0",)}),
    Scenario("dra-request-cel-matches-nothing", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             resource_claims=(claim("gpu", request(selectors=(
                 f'device.attributes["{DRIVER}"].model == "h100"',))),),
             expect="pending", expect_reason=f"2 {CANNOT_ALLOCATE}"),
    # Two devices on one NUMA node: only n1 has such a pair.
    Scenario("dra-match-attribute-node", TWO, P("incoming", uses("pair")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0", numa=0), gpu("gpu-1", numa=1)),
                     gpus("n1", gpu("gpu-0", numa=0), gpu("gpu-1", numa=0))),
             resource_claims=(claim("pair", request(count=2), constraints=(
                 {"matchAttribute": f"{DRIVER}/numa"},)),),
             existing=(_busy("n1"),), expect_node="n1",
             expect_devices={"pair": ("n1/gpu-0", "n1/gpu-1")}),
    Scenario("dra-match-attribute-picks-pair", (N("n0"),), P("incoming", uses("pair")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0", numa=0), gpu("gpu-1", numa=1),
                          gpu("gpu-2", numa=1)),),
             resource_claims=(claim("pair", request(count=2), constraints=(
                 {"matchAttribute": f"{DRIVER}/numa"},)),),
             expect_node="n0", expect_devices={"pair": ("n0/gpu-1", "n0/gpu-2")}),
    Scenario("dra-device-class-missing", TWO, P("incoming", uses("gpu")),
             slices=(gpus("n0", gpu("gpu-0")),),
             resource_claims=(claim("gpu", request(device_class="ghost")),),
             expect="pending", expect_reason="device class ghost does not exist"),
]

PRIORITIZED_LIST: list[Scenario] = [
    Scenario("dra-first-available-falls-back", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(A100, T4), slices=(gpus("n0", gpu("gpu-0", "t4")),),
             resource_claims=(claim("gpu", first_available(
                 "gpu", ("big", "a100"), ("small", "t4"))),),
             expect_node="n0", expect_devices={"gpu": ("n0/gpu-0",)}),
    Scenario("dra-first-available-prefers-first", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(A100, T4),
             slices=(gpus("n0", gpu("gpu-0", "t4"), gpu("gpu-1", "a100")),),
             resource_claims=(claim("gpu", first_available(
                 "gpu", ("big", "a100"), ("small", "t4"))),),
             expect_node="n0", expect_devices={"gpu": ("n0/gpu-1",)}),
    # Both nodes fit; the node that gets the first choice scores higher (a light pod on
    # n0 makes n1 win by every other score).
    Scenario("dra-first-available-scores-first-choice", TWO, P("incoming", uses("gpu")),
             device_classes=(A100, T4),
             slices=(gpus("n0", gpu("gpu-0", "a100")), gpus("n1", gpu("gpu-0", "t4"))),
             resource_claims=(claim("gpu", first_available(
                 "gpu", ("big", "a100"), ("small", "t4"))),),
             existing=(PodSpec("light-n0", node="n0", cpu="200m", memory="100Mi"),),
             expect_node="n0", expect_devices={"gpu": ("n0/gpu-0",)}),
]

TAINTS_AND_MODES: list[Scenario] = [
    Scenario("dra-device-taint-no-schedule", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", tainted(gpu("gpu-0"))), gpus("n1", gpu("gpu-0"))),
             resource_claims=(claim("gpu"),), existing=(_busy("n1"),),
             expect_node="n1", expect_devices={"gpu": ("n1/gpu-0",)}),
    Scenario("dra-device-taint-everywhere", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", tainted(gpu("gpu-0"))), gpus("n1", tainted(gpu("gpu-0")))),
             resource_claims=(claim("gpu"),),
             expect="pending", expect_reason=f"2 {CANNOT_ALLOCATE}"),
    Scenario("dra-device-taint-tolerated", TWO, P("incoming", uses("gpu")),
             device_classes=(GPU,), slices=(gpus("n1", tainted(gpu("gpu-0"))),),
             resource_claims=(claim("gpu", request(tolerations=[TOLERATE_BROKEN])),),
             existing=(_busy("n1"),), expect_node="n1", expect_devices={"gpu": ("n1/gpu-0",)}),
    # All: every matching device of the node, and none may be taken (n1's gpu-0 is).
    Scenario("dra-allocation-mode-all", TWO, P("incoming", uses("all")),
             device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0"), gpu("gpu-1"), gpu("gpu-2")),
                     gpus("n1", gpu("gpu-0"), gpu("gpu-1"))),
             resource_claims=(claim("all", request(allocationMode="All")),
                              allocated("taken", "n1", "gpu-0", reserved_for=("user-n1",))),
             existing=(_busy("n0"), _user("n1", "taken")), expect_node="n0",
             expect_devices={"all": ("n0/gpu-0", "n0/gpu-1", "n0/gpu-2")}),
    # Admin access may use a device another claim holds (namespace must allow it).
    Scenario("dra-admin-access-to-taken-device", (N("n0"),), P("incoming", uses("admin")),
             device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0")),),
             resource_claims=(claim("admin", request(adminAccess=True)),
                              allocated("taken", "n0", "gpu-0", reserved_for=("user-n0",))),
             existing=(_user("n0", "taken"),),
             namespace_labels={ADMIN_ACCESS_LABEL: "true"}, expect_node="n0",
             expect_devices={"admin": ("n0/gpu-0",)}),
    # Partitions share the physical GPU's memory counter: with half-0 taken, the whole
    # GPU no longer fits, half-1 does.
    Scenario("dra-partitionable-device", (N("n0"),), P("incoming", uses("gpu")),
             device_classes=(GPU,),
             slices=(gpus("n0", *(
                 {**gpu(name, memory=memory), "consumesCounters": [
                     {"counterSet": "gpu-0-memory", "counters": {"memory": {"value": memory}}}]}
                 for name, memory in (("whole", "80Gi"), ("half-0", "40Gi"),
                                      ("half-1", "40Gi"))),
                 shared_counters=({"name": "gpu-0-memory",
                                   "counters": {"memory": {"value": "80Gi"}}},)),),
             resource_claims=(claim("gpu"),
                              allocated("taken", "n0", "half-0", reserved_for=("user-n0",))),
             existing=(_user("n0", "taken"),), expect_node="n0",
             expect_devices={"gpu": ("n0/half-1",)}),
]

GATED_AND_EXTENDED: list[Scenario] = [
    # PreEnqueue holds a pod whose claim does not exist: no attempt, no event.
    Scenario("dra-claim-missing", TWO, P("incoming", uses("ghost")), device_classes=(GPU,),
             slices=(gpus("n0", gpu("gpu-0")),), expect="gated"),
    Scenario("dra-template-missing", TWO, P("incoming", from_template("ghost", "gpu")),
             device_classes=(GPU,), slices=(gpus("n0", gpu("gpu-0")),), expect="gated"),
    # Extended resources backed by DRA: no node advertises example.com/gpu; the class
    # names it and n1's devices serve it.
    Scenario("dra-extended-resource", THREE,
             PodSpec("incoming", container={"resources": {
                 "requests": {"cpu": "100m", "memory": "100Mi", "example.com/gpu": "1"},
                 "limits": {"example.com/gpu": "1"}}}),
             device_classes=(DeviceClassSpec("gpu", GPU.selectors,
                                             extended_resource_name="example.com/gpu"),),
             slices=(gpus("n1", gpu("gpu-0")),), existing=(_busy("n1"),),
             expect_node="n1", expect_devices={"incoming/extended-resources": ("n1/gpu-0",)}),
    Scenario("dra-extended-resource-unavailable", TWO,
             PodSpec("incoming", container={"resources": {
                 "requests": {"cpu": "100m", "memory": "100Mi", "example.com/gpu": "2"},
                 "limits": {"example.com/gpu": "2"}}}),
             device_classes=(DeviceClassSpec("gpu", GPU.selectors,
                                             extended_resource_name="example.com/gpu"),),
             slices=(gpus("n0", gpu("gpu-0")), gpus("n1", gpu("gpu-0"))),
             expect="pending"),
]

DRA: list[Scenario] = (CLAIMS + SHARED_AND_ALLOCATED + SELECTORS + PRIORITIZED_LIST
                       + TAINTS_AND_MODES + GATED_AND_EXTENDED)
