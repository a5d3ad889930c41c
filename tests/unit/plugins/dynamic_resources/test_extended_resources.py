"""DRA-backed extended resources (DRAExtendedResource): the special claim's requests and
mappings (upstream's Test_createRequestsAndMappings_requests/_mappings,
extendeddynamicresources_test.go), Filter's decision, the extended resource -> DeviceClass
index (extendedresourcecache_test.go) and NodeResourcesFit's delegation (fit_test.go's
DRA cases, Test_isSchedulableAfterDeviceClassChange)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.informers.listers import ResourceListers
from kpysched.objects import api
from kpysched.objects.dra import (
    AllocationResult,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import extended_resources as er
from kpysched.plugins.node_resources import fit
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.hints import QUEUE, SKIP, hint_for

EXT = "example.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/"


def klass(name: str, explicit: str | None = None, created: str | None = None) -> DeviceClass:
    return DeviceClass(metadata=api.ObjectMeta(name=name, creation_timestamp=created),
                       spec=DeviceClassSpec(extended_resource_name=explicit))


class PodSpec:
    """st.MakePod's Res / InitReq / SidecarReq, naming containers as it does."""

    def __init__(self) -> None:
        self.pod = api.Pod(metadata=api.ObjectMeta(name="my-pod", namespace="default",
                                                   uid="1234"))

    def res(self, **requests: str) -> PodSpec:
        return self._add(False, f"con{len(self.pod.spec.containers)}", None, requests)

    def init(self, **requests: str) -> PodSpec:
        return self._add(True, f"init-con{len(self.pod.spec.init_containers)}", None, requests)

    def sidecar(self, **requests: str) -> PodSpec:
        return self._add(True, f"sidecar-con{len(self.pod.spec.init_containers)}", "Always",
                         requests)

    def _add(self, init: bool, name: str, restart: str | None,
             requests: Mapping[str, str]) -> PodSpec:
        # Keyword names stand for resource names: "gpu" is EXT, "gpu1" EXT + "1", ...
        named = {_resource(key): amount for key, amount in requests.items()}
        container = api.Container(name=name, restart_policy=restart,
                                  resources=api.ResourceRequirements(requests=dict(named)))
        (self.pod.spec.init_containers if init else self.pod.spec.containers).append(container)
        return self


def _resource(key: str) -> str:
    if key.startswith("implicit_"):
        return IMPLICIT + key.removeprefix("implicit_")
    return EXT + key.removeprefix("gpu")


def pod1() -> api.Pod:
    return PodSpec().res(gpu="1", gpu1="2").pod


def pod2() -> api.Pod:
    return PodSpec().res(gpu="1").res(gpu1="2").pod


def pod_init() -> api.Pod:
    return PodSpec().res(gpu="1").init(gpuinit="2").pod


def pod_init2() -> api.Pod:
    return PodSpec().res(gpu="1").init(gpuinit="1").init(gpuinit="2").pod


def pod_init3() -> api.Pod:
    return PodSpec().res(gpu="1").init(gpuinit="1").sidecar(gpuinit="1").init(gpuinit="2").pod


def pod1_init_implicit() -> api.Pod:
    return PodSpec().init(gpuinit="1", implicit_classInit="2").pod


def pod_init_implicit() -> api.Pod:
    return PodSpec().res(gpu="1").init(gpuinit="1").init(implicit_classInit="2").pod


RES = {EXT: 1}
RES2 = {EXT: 1, EXT + "1": 2}
RES_INIT = {EXT: 1, EXT + "init": 2}
RES_INIT_IMPLICIT = {EXT: 1, EXT + "init": 2, IMPLICIT + "classInit": 2}
DEV_MAP = {EXT: klass("class")}
DEV_MAP2 = {EXT: klass("class"), EXT + "1": klass("class1")}
DEV_MAP_INIT = {EXT: klass("class"), EXT + "init": klass("classInit"),
                IMPLICIT + "classInit": klass("classInit")}


def req(name: str, class_name: str, count: int) -> tuple[str, str, int]:
    return name, class_name, count


@pytest.mark.parametrize(("pod", "extended", "mapping", "want"), [
    pytest.param(pod1(), {}, {}, [], id="nil"),
    pytest.param(pod1(), RES, DEV_MAP, [req("container-0-request-0", "class", 1)],
                 id="one resource match"),
    pytest.param(pod1(), RES2, DEV_MAP, [req("container-0-request-0", "class", 1)],
                 id="one resource match, one resource not match"),
    pytest.param(pod1(), RES2, DEV_MAP2, [req("container-0-request-0", "class", 1),
                                          req("container-0-request-1", "class1", 2)],
                 id="two resources match"),
    pytest.param(pod2(), RES2, DEV_MAP2, [req("container-0-request-0", "class", 1),
                                          req("container-1-request-0", "class1", 2)],
                 id="two containers match"),
    pytest.param(pod_init(), RES_INIT, DEV_MAP_INIT,
                 [req("container-0-request-0", "classInit", 2),
                  req("container-1-request-0", "class", 1)],
                 id="one init container, one regular container"),
    pytest.param(pod_init2(), RES_INIT, DEV_MAP_INIT,
                 [req("container-1-request-0", "classInit", 2),
                  req("container-2-request-0", "class", 1)],
                 id="two init containers, one regular container"),
    pytest.param(pod_init3(), RES_INIT, DEV_MAP_INIT,
                 [req("container-1-request-0", "classInit", 1),
                  req("container-2-request-0", "classInit", 2),
                  req("container-3-request-0", "class", 1)],
                 id="three init containers, one sidecar, one regular container"),
])
def test_create_requests(pod: api.Pod, extended: dict[str, int],
                         mapping: dict[str, DeviceClass],
                         want: list[tuple[str, str, int]]) -> None:
    requests, _ = er.create_requests_and_mappings(pod, extended, mapping.get)
    got = []
    for request in requests:
        assert request.exactly is not None
        assert request.exactly.allocation_mode == "ExactCount"
        got.append((request.name, request.exactly.device_class_name, request.exactly.count))
    assert got == want


def cer(container: str, resource: str, request: str) -> tuple[str, str, str]:
    return request, container, resource


@pytest.mark.parametrize(("pod", "extended", "mapping", "want"), [
    pytest.param(pod1(), RES2, DEV_MAP2,
                 [cer("con0", EXT, "container-0-request-0"),
                  cer("con0", EXT + "1", "container-0-request-1")],
                 id="one container, two requests"),
    pytest.param(pod1_init_implicit(), RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [cer("init-con0", IMPLICIT + "classInit", "container-0-request-0"),
                  cer("init-con0", EXT + "init", "container-0-request-1")],
                 id="one container, one explicit and one implicit request"),
    pytest.param(pod2(), RES2, DEV_MAP2,
                 [cer("con0", EXT, "container-0-request-0"),
                  cer("con1", EXT + "1", "container-1-request-0")],
                 id="two containers, two requests"),
    pytest.param(pod_init(), RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", EXT + "init", "container-0-request-0"),
                  cer("con0", EXT, "container-1-request-0")],
                 id="one init container, one regular container, one request"),
    pytest.param(pod_init2(), RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", EXT + "init", "container-1-request-0"),
                  cer("init-con1", EXT + "init", "container-1-request-0"),
                  cer("con0", EXT, "container-2-request-0")],
                 id="three containers (two are init container), two requests"),
    pytest.param(pod_init_implicit(), RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [cer("init-con0", EXT + "init", "container-0-request-0"),
                  cer("init-con1", IMPLICIT + "classInit", "container-1-request-0"),
                  cer("con0", EXT, "container-2-request-0")],
                 id="three containers (two are init container), explicit and implicit"),
    pytest.param(pod_init3(), RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", EXT + "init", "container-1-request-0"),
                  cer("sidecar-con1", EXT + "init", "container-1-request-0"),
                  cer("init-con2", EXT + "init", "container-2-request-0"),
                  cer("con0", EXT, "container-3-request-0")],
                 id="four containers (two are init container, one sidecar), three requests"),
])
def test_create_mappings(pod: api.Pod, extended: dict[str, int],
                         mapping: dict[str, DeviceClass],
                         want: list[tuple[str, str, str]]) -> None:
    _, mappings = er.create_requests_and_mappings(pod, extended, mapping.get)
    got = sorted((m.request_name, m.container_name, m.resource_name) for m in mappings)
    assert got == want


def test_init_container_reuses_a_later_long_lived_request() -> None:
    """An init container asking no more than a later sidecar holds gets no request."""
    pod = PodSpec().init(gpu="1").sidecar(gpu="2").res(gpu="1").pod
    requests, mappings = er.create_requests_and_mappings(pod, {EXT: 3}, DEV_MAP.get)
    assert [(r.name, r.exactly.count if r.exactly else 0) for r in requests] == [
        ("container-1-request-0", 2), ("container-2-request-0", 1)]
    assert [(m.container_name, m.request_name) for m in mappings] == [
        ("sidecar-con1", "container-1-request-0"), ("con0", "container-2-request-0"),
        ("init-con0", "container-1-request-0")]


def test_fractional_container_request_gets_no_device_request() -> None:
    pod = PodSpec().res(gpu="1500m").res(gpu="1000m").res(gpu="2").pod
    requests, _ = er.create_requests_and_mappings(pod, {EXT: 5}, DEV_MAP.get)
    assert [r.name for r in requests] == ["container-2-request-0"]


# ---- PreFilter helpers -------------------------------------------------------------


def test_has_device_class_mapped_extended_resource() -> None:
    mapping = {EXT: klass("class"), IMPLICIT + "other": klass("other")}
    assert er.has_device_class_mapped_extended_resource({EXT: 1}, mapping.get)
    assert er.has_device_class_mapped_extended_resource({IMPLICIT + "other": 2}, mapping.get)
    assert not er.has_device_class_mapped_extended_resource({EXT: 0}, mapping.get)
    assert not er.has_device_class_mapped_extended_resource({"example.com/x": 1}, mapping.get)
    # hugepages are scalar but never DRA extended resources
    assert not er.has_device_class_mapped_extended_resource(
        {"hugepages-2Mi": 1}, {"hugepages-2Mi": klass("h")}.get)


def test_special_claim_and_finding_it_again() -> None:
    pod = pod1()
    claim = er.new_special_claim(pod, uid="tmp-uid")
    assert claim.metadata.name == "<extended-resources>"
    assert er.is_special_claim_name(claim.metadata.name)
    assert claim.metadata.namespace == "default"
    assert claim.metadata.uid == "tmp-uid"
    assert claim.metadata.annotations == {
        "resource.kubernetes.io/extended-resource-claim": "true"}
    owner = claim.metadata.owner_references[0]
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller) == (
        "v1", "Pod", "my-pod", "1234", True)
    assert claim.spec.devices.requests == []
    assert er.new_special_claim(pod).metadata.uid  # a random temporary UID
    assert er.special_claim_generate_name(pod) == "my-pod-extended-resources-"

    assert er.find_extended_resource_claim(pod, [claim]) is claim
    other_uid = api.Pod(metadata=api.ObjectMeta(name="my-pod", uid="other"))
    assert er.find_extended_resource_claim(other_uid, [claim]) is None
    unannotated = ResourceClaim(metadata=api.ObjectMeta(
        name="c", owner_references=claim.metadata.owner_references))
    assert er.find_extended_resource_claim(pod, [unannotated]) is None
    not_controller = ResourceClaim(metadata=api.ObjectMeta(
        name="c", annotations=dict(claim.metadata.annotations),
        owner_references=[api.OwnerReference(name="my-pod", uid="1234")]))
    assert er.find_extended_resource_claim(pod, [not_controller]) is None


def test_claim_create_body() -> None:
    pod = pod1()
    node_claim, _, _ = er.filter_extended_resources(
        pod, {EXT: 1}, {}, DEV_MAP.get, True, er.new_special_claim(pod, uid="tmp"))
    assert node_claim is not None
    body = er.claim_create_body(node_claim, pod)
    assert body == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "namespace": "default", "generateName": "my-pod-extended-resources-",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod",
                                 "uid": "1234", "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": "class"}}]}},
    }


# ---- Filter ------------------------------------------------------------------------


def _claim_with(requests: list[DeviceRequest] | None = None,
                allocated: bool = False) -> ResourceClaim:
    claim = er.new_special_claim(pod1(), uid="tmp")
    return ResourceClaim(
        metadata=claim.metadata,
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests or [])),
        status=ResourceClaimStatus(allocation=AllocationResult() if allocated else None))


@pytest.mark.parametrize(
    ("requests", "allocatable", "no_user_claim", "claim", "want_requests", "want_reason"), [
        pytest.param({EXT: 1}, {}, True, None, None, None, id="no special claim"),
        pytest.param({EXT: 1}, {}, True,
                     _claim_with([DeviceRequest(name="x", exactly=ExactDeviceRequest())]),
                     None, er.REASON_STALE_CLAIM, id="claim of a prior cycle"),
        pytest.param({EXT: 1, "example.com/other": 1}, {}, True, _claim_with(), None,
                     er.REASON_CANNOT_FIT, id="neither device plugin nor DRA"),
        pytest.param({"example.com/other": 1}, {"example.com/other": 0}, True, _claim_with(),
                     None, None, id="advertised at 0, not mapped: left to NodeResourcesFit"),
        pytest.param({EXT: 1}, {EXT: 4}, True, _claim_with(), None, None,
                     id="device plugin provides it"),
        pytest.param({EXT: 2}, {}, True, _claim_with(), ["container-0-request-0"], None,
                     id="node provides it through DRA"),
        pytest.param({EXT: 2}, {EXT: 0}, True, _claim_with(), ["container-0-request-0"], None,
                     id="advertised at 0: through DRA"),
        pytest.param({EXT: 0}, {}, True, _claim_with(), None, None, id="zero request"),
        pytest.param({EXT: 1}, {EXT: 4}, False, _claim_with(), [], None,
                     id="user claims: an empty node claim all the same"),
        pytest.param({EXT: 1}, {}, True, _claim_with(allocated=True), None, None,
                     id="already allocated"),
    ])
def test_filter_extended_resources(
    requests: dict[str, int], allocatable: dict[str, int], no_user_claim: bool,
    claim: ResourceClaim | None, want_requests: list[str] | None, want_reason: str | None,
) -> None:
    pod = PodSpec().res(gpu="2").pod
    node_claim, mappings, reason = er.filter_extended_resources(
        pod, requests, allocatable, DEV_MAP.get, no_user_claim, claim)
    assert reason == want_reason
    if want_requests is None:
        assert node_claim is None
        assert mappings == []
        return
    assert node_claim is not None and claim is not None
    assert [r.name for r in node_claim.spec.devices.requests] == want_requests
    assert node_claim.metadata == claim.metadata
    assert claim.spec.devices.requests == []  # the shared claim is untouched
    assert [(m.container_name, m.request_name) for m in mappings] == [
        ("con0", name) for name in want_requests]


# ---- the extended resource -> DeviceClass index ------------------------------------

NOW = "2025-06-01T12:00:00Z"
DAY_BEFORE = "2025-05-31T12:00:00Z"
HOUR_AFTER = "2025-06-01T13:00:00Z"


def _name(listers: ResourceListers, resource: str) -> str | None:
    found = listers.device_class_for_extended_resource(resource)
    return found.metadata.name if found is not None else None


def test_extended_resource_cache() -> None:
    """extendedresourcecache_test.go testExtendedResourceCache, through the informer index."""
    listers = ResourceListers()
    index = listers.device_classes
    class1 = klass("gpu-class", EXT, NOW)
    class2 = klass("fpga-class")
    class3 = klass("gpu-class-3", EXT, DAY_BEFORE)
    class4 = klass("gpu-class-4", EXT, HOUR_AFTER)
    class0 = klass("gpu-class-0", EXT, HOUR_AFTER)
    index.on_add(class1)
    index.on_add(class2)
    assert _name(listers, EXT) == "gpu-class"
    assert _name(listers, IMPLICIT + "fpga-class") == "fpga-class"
    assert _name(listers, IMPLICIT + "gpu-class") == "gpu-class"
    index.on_add(class3)  # older: gpu-class keeps the name
    assert _name(listers, EXT) == "gpu-class"
    index.on_add(class4)  # newer: takes it
    assert _name(listers, EXT) == "gpu-class-4"
    index.on_add(class0)  # same age, lower name: takes it
    assert _name(listers, EXT) == "gpu-class-0"
    modified = klass("gpu-class-0", "test.com/gpu", HOUR_AFTER)
    index.on_update(class0, modified)
    assert _name(listers, "test.com/gpu") == "gpu-class-0"
    assert _name(listers, EXT) is None  # nothing falls back to gpu-class-4
    index.on_delete(modified)
    assert _name(listers, "test.com/gpu") is None
    assert _name(listers, IMPLICIT + "gpu-class-0") is None


def test_device_class_mapping() -> None:
    """extendedresourcecache_test.go testDeviceClassMapping."""
    listers = ResourceListers()
    classes = listers.extended_resource_classes
    class1 = klass("gpu-class", EXT)
    listers.device_classes.on_add(class1)
    listers.device_classes.on_add(klass("tpu-class"))
    assert classes.extended_resource("gpu-class") == EXT
    assert classes.extended_resource("tpu-class") == ""
    modified = klass("gpu-class", "my.com/gpu")
    listers.device_classes.on_update(class1, modified)
    assert classes.extended_resource("gpu-class") == "my.com/gpu"
    listers.device_classes.on_delete(modified)
    assert classes.extended_resource("gpu-class") == ""


def test_losing_class_gets_no_mapping_and_delete_drops_the_winners() -> None:
    """Upstream's quirks, kept: a class that loses the explicit name gets not even its
    implicit name; an unchanged explicit name keeps the previous object; deleting the
    loser removes the winner's explicit mapping."""
    listers = ResourceListers()
    winner = klass("a", EXT, NOW)
    loser = klass("b", EXT, DAY_BEFORE)
    listers.device_classes.on_add(winner)
    listers.device_classes.on_add(loser)
    assert _name(listers, IMPLICIT + "b") is None
    relabelled = DeviceClass(metadata=api.ObjectMeta(name="a", creation_timestamp=NOW,
                                                     labels={"x": "y"}), spec=winner.spec)
    listers.device_classes.on_update(winner, relabelled)
    assert listers.device_class_for_extended_resource(EXT) is winner
    listers.device_classes.on_delete(loser)
    assert _name(listers, EXT) is None
    assert _name(listers, IMPLICIT + "a") == "a"


# ---- NodeResourcesFit --------------------------------------------------------------

DRA_EXT = "extended.resource.dra.io/something"


def _fit_with_classes(*classes: DeviceClass) -> fit.NodeResourcesFit:
    handle = FakeHandle()
    for class_ in classes:
        handle.resource_listers.device_classes.on_add(class_)
    return fit.new(None, handle)


def _filter(plugin: fit.NodeResourcesFit, pod: PodInfo, node: NodeInfo) -> tuple[Code, list[str]]:
    state = CycleState()
    plugin.pre_filter(state, pod, [node])
    status = plugin.filter(state, pod, node)
    return status.code, list(status.reasons)


def _node(**scalars: str) -> NodeInfo:
    builder = make_node("n").capacity({"cpu": "4", "memory": "4Gi", "pods": "10",
                                       **{_scalar(k): v for k, v in scalars.items()}})
    info = NodeInfo("n")
    info.set_node(builder.obj())
    return info


def _scalar(key: str) -> str:
    return {"dra": DRA_EXT, "aaa": "example.com/aaa", "bbb": "example.com/bbb"}[key]


@pytest.mark.parametrize(("requests", "node", "want"), [
    pytest.param({DRA_EXT: "1"}, _node(), (Code.SUCCESS, []),
                 id="extended resource backed by DRA"),
    pytest.param({"example.com/bbb": "1"}, _node(),
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient example.com/bbb"]),
                 id="extended resource NOT backed by DRA"),
    pytest.param({DRA_EXT: "1"}, _node(dra="0"), (Code.SUCCESS, []),
                 id="advertised at 0: left to DRA"),
    pytest.param({DRA_EXT: "3"}, _node(dra="2"),
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"Insufficient {DRA_EXT}"]),
                 id="advertised by a device plugin: checked here"),
    pytest.param({IMPLICIT + "device-class-name": "1"}, _node(), (Code.SUCCESS, []),
                 id="implicit name"),
])
def test_fit_delegates_dra_backed_resources(requests: dict[str, str], node: NodeInfo,
                                            want: tuple[Code, list[str]]) -> None:
    plugin = _fit_with_classes(klass("device-class-name", DRA_EXT))
    pod = PodInfo.of(make_pod("p").req({"cpu": "1", **requests}).obj())
    assert _filter(plugin, pod, node) == want
    assert plugin.filter_vector(CycleState(), pod, FakeHandle().snapshot) is None


def test_fit_without_classes_still_rejects() -> None:
    plugin = _fit_with_classes()
    pod = PodInfo.of(make_pod("p").req({DRA_EXT: "1"}).obj())
    assert _filter(plugin, pod, _node()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [f"Insufficient {DRA_EXT}"])


def test_fit_class_added_later_is_seen() -> None:
    handle = FakeHandle()
    plugin = fit.new(None, handle)
    pod = PodInfo.of(make_pod("p").req({DRA_EXT: "1"}).obj())
    assert _filter(plugin, pod, _node())[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    handle.resource_listers.device_classes.on_add(klass("c", DRA_EXT))
    assert _filter(plugin, pod, _node()) == (Code.SUCCESS, [])


def _class_pod(**scalars: str) -> PodInfo:
    return PodInfo.of(make_pod("p").req({"memory": "2", **scalars}).obj())


DEVICE_CLASS_ADD = ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD)


@pytest.mark.parametrize(("pod", "old", "new", "want"), [
    pytest.param(_class_pod(), klass(""), klass(""), SKIP,
                 id="skip-queue-on-class-nil-extended-resource-name"),
    pytest.param(_class_pod(), klass("", EXT), klass("", EXT), SKIP,
                 id="skip-queue-on-class-same-extended-resource-name"),
    pytest.param(_class_pod(**{IMPLICIT + "gpuclass": "1"}), None, klass("gpuclass", EXT),
                 QUEUE, id="queue-on-class-add-with-implicit-extended-resource-name"),
    pytest.param(_class_pod(**{IMPLICIT + "gpuclass": "1"}), None, klass("myclass", EXT),
                 SKIP, id="skip-on-class-add-with-implicit-extended-resource-name-not-matching"),
    pytest.param(_class_pod(**{"example.com/othergpu": "1"}), None, klass("myclass", EXT),
                 SKIP, id="skip-on-class-add-with-explicit-extended-resource-name-not-matching"),
    pytest.param(_class_pod(**{IMPLICIT + "gpuclass": "1"}), klass("gpuclass"),
                 klass("gpuclass", EXT), SKIP,
                 id="skip-on-class-update-with-implicit-extended-resource-name"),
    pytest.param(_class_pod(**{EXT: "1"}), None, klass("", EXT), QUEUE,
                 id="queue-on-class-add-with-extended-resource-name"),
    pytest.param(_class_pod(**{EXT: "1"}), klass(""), klass("", EXT), QUEUE,
                 id="queue-on-class-update-with-extended-resource-name"),
])
def test_fit_device_class_hint(pod: PodInfo, old: DeviceClass | None, new: DeviceClass,
                               want: object) -> None:
    hint = hint_for(_fit_with_classes(), DEVICE_CLASS_ADD)
    assert hint(pod, old, new) == want


def test_fit_device_class_hint_wrong_object_raises() -> None:
    hint = hint_for(_fit_with_classes(), DEVICE_CLASS_ADD)
    with pytest.raises((TypeError, ValueError)):
        hint(_class_pod(), None, "not-a-class")


NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)


def test_fit_node_hints_count_dra_backed_resources() -> None:
    plugin = _fit_with_classes(klass("device-class-name", DRA_EXT))
    pod = PodInfo.of(make_pod("p").req({"cpu": "1", DRA_EXT: "1"}).obj())
    small = make_node("n").capacity({"cpu": "4", "pods": "10"}).obj()
    bigger = make_node("n").capacity({"cpu": "8", "pods": "10"}).obj()
    hint = hint_for(plugin, NODE_ADD)
    assert hint(pod, None, small) == QUEUE  # fits: the node leaves DRA_EXT to DRA
    # No resource grew, but the node leaves a requested resource to DRA (upstream's
    # haveAnyRequestedResourcesIncreased says yes then).
    assert hint_for(plugin, NODE_UPDATE)(pod, small, small) == QUEUE
    assert hint_for(plugin, NODE_UPDATE)(pod, small, bigger) == QUEUE
    without = _fit_with_classes()
    assert hint_for(without, NODE_ADD)(pod, None, small) == SKIP
