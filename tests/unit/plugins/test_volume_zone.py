"""VolumeZone, with upstream's volume_zone_test.go tables (TestSingleZone, TestMultiZone,
TestWithBinding). As there, Filter also runs after a PreFilter that failed or skipped:
it then works the PVs out itself."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api, storage
from kpysched.plugins import volume_zone as vz
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered

ZONE_BETA, REGION_BETA = vz.ZONE_BETA, vz.REGION_BETA
ZONE, REGION = vz.ZONE, vz.REGION
CONFLICT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [vz.REASON_CONFLICT])
OK = (Code.SUCCESS, [])
SKIP = (Code.SKIP, [])


def pv(name: str, **labels: str) -> storage.PersistentVolume:
    return storage.PersistentVolume(metadata=api.ObjectMeta(name=name, labels=labels))


def pvc(name: str, volume: str = "", class_name: str | None = None
        ) -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace="default"),
        spec=storage.PersistentVolumeClaimSpec(volume_name=volume,
                                               storage_class_name=class_name))


def pod_with_claim(claim: str) -> PodBuilder:
    pod = make_pod("pod_1")
    pod.obj().spec.volumes.append(api.Volume(
        name="v", persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
            claim_name=claim)))
    return pod


def plugin(pvs: Sequence[storage.PersistentVolume],
           pvcs: Sequence[storage.PersistentVolumeClaim],
           classes: Sequence[storage.StorageClass] = ()) -> vz.VolumeZone:
    handle = FakeHandle()
    listers = handle.storage_listers
    for volume in pvs:
        listers.persistent_volumes.on_add(volume)
    for claim in pvcs:
        listers.persistent_volume_claims.on_add(claim)
    for storage_class in classes:
        listers.storage_classes.on_add(storage_class)
    return vz.new(None, handle)


def check(zone: vz.VolumeZone, pod: PodBuilder, node_labels: dict[str, str],
          want_pre: tuple[Code, list[str]], want: tuple[Code, list[str]]) -> None:
    state = CycleState()
    _, pre_status = zone.pre_filter(state, pod.info(), [])
    assert (pre_status.code, pre_status.reasons) == want_pre
    node = make_node("host1").labels(node_labels).info()
    status = zone.filter(state, pod.info(), node)
    assert (status.code, status.reasons) == want


SINGLE_ZONE = plugin(
    [pv("Vol_1", **{ZONE_BETA: "us-west1-a"}),
     pv("Vol_2", **{REGION_BETA: "us-west1", "uselessLabel": "none"}),
     pv("Vol_3", **{REGION_BETA: "us-west1"}),
     pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
     pv("Vol_Stable_2", **{REGION: "us-west1", "uselessLabel": "none"}),
     pv("Vol_Stable_3", **{ZONE: "us-west1-a", REGION: "us-west1-a"})],
    [pvc("PVC_1", "Vol_1"), pvc("PVC_2", "Vol_2"), pvc("PVC_3", "Vol_3"),
     pvc("PVC_4", "Vol_not_exist"), pvc("PVC_Stable_1", "Vol_Stable_1"),
     pvc("PVC_Stable_2", "Vol_Stable_2"), pvc("PVC_Stable_3", "Vol_Stable_3")])

SINGLE_ZONE_CASES = [
    pytest.param(make_pod("pod_1"), {ZONE_BETA: "us-west1-a"}, SKIP, OK,
                 id="pod without volume"),
    pytest.param(pod_with_claim("PVC_1"), {}, OK, OK, id="node without labels"),
    pytest.param(pod_with_claim("PVC_1"), {ZONE_BETA: "us-west1-a", "uselessLabel": "none"},
                 OK, OK, id="beta zone label matched"),
    pytest.param(pod_with_claim("PVC_2"), {REGION_BETA: "us-west1", "uselessLabel": "none"},
                 OK, OK, id="beta region label matched"),
    pytest.param(pod_with_claim("PVC_2"), {REGION_BETA: "no_us-west1", "uselessLabel": "none"},
                 OK, CONFLICT, id="beta region label doesn't match"),
    pytest.param(pod_with_claim("PVC_1"), {ZONE_BETA: "no_us-west1-a", "uselessLabel": "none"},
                 OK, CONFLICT, id="beta zone label doesn't match"),
    pytest.param(pod_with_claim("PVC_Stable_1"), {ZONE: "us-west1-a", "uselessLabel": "none"},
                 OK, OK, id="zone label matched"),
    pytest.param(pod_with_claim("PVC_Stable_2"), {REGION: "us-west1", "uselessLabel": "none"},
                 OK, OK, id="region label matched"),
    pytest.param(pod_with_claim("PVC_Stable_2"), {REGION: "no_us-west1", "uselessLabel": "none"},
                 OK, CONFLICT, id="region label doesn't match"),
    pytest.param(pod_with_claim("PVC_Stable_1"), {ZONE: "no_us-west1-a", "uselessLabel": "none"},
                 OK, CONFLICT, id="zone label doesn't match"),
    pytest.param(pod_with_claim("PVC_Stable_3"), {ZONE: "us-west1-a"}, OK, CONFLICT,
                 id="pv with zone and region, node with only zone"),
    pytest.param(pod_with_claim("PVC_Stable_1"), {ZONE_BETA: "us-west1-a"}, OK, CONFLICT,
                 id="pv with zone,node with beta zone"),
    pytest.param(pod_with_claim("PVC_1"), {ZONE: "us-west1-a"}, OK, OK,
                 id="pv with beta label,node with ga label, matched"),
    pytest.param(pod_with_claim("PVC_1"), {ZONE: "us-west1-b"}, OK, CONFLICT,
                 id="pv with beta label,node with ga label, don't match"),
]


@pytest.mark.parametrize(("pod", "node_labels", "want_pre", "want"), SINGLE_ZONE_CASES)
def test_single_zone(pod: PodBuilder, node_labels: dict[str, str],
                     want_pre: tuple[Code, list[str]], want: tuple[Code, list[str]]) -> None:
    check(SINGLE_ZONE, pod, node_labels, want_pre, want)


MULTI_ZONE = plugin(
    [pv("Vol_1", **{ZONE_BETA: "us-west1-a"}),
     pv("Vol_2", **{ZONE_BETA: "us-west1-b", "uselessLabel": "none"}),
     pv("Vol_3", **{ZONE_BETA: "us-west1-c__us-west1-a"}),
     pv("Vol_Stable_1", **{ZONE: "us-west1-a"}),
     pv("Vol_Stable_2", **{ZONE: "us-west1-c__us-west1-a"})],
    [pvc("PVC_1", "Vol_1"), pvc("PVC_2", "Vol_2"), pvc("PVC_3", "Vol_3"),
     pvc("PVC_4", "Vol_not_exist"), pvc("PVC_Stable_1", "Vol_Stable_1"),
     pvc("PVC_Stable_2", "Vol_Stable_2")])

MULTI_ZONE_CASES = [
    pytest.param(pod_with_claim("PVC_3"), {}, OK, OK, id="node without labels"),
    pytest.param(pod_with_claim("PVC_3"), {ZONE_BETA: "us-west1-a", "uselessLabel": "none"},
                 OK, OK, id="beta zone label matched"),
    pytest.param(pod_with_claim("PVC_1"), {ZONE_BETA: "us-west1-b", "uselessLabel": "none"},
                 OK, CONFLICT, id="beta zone label doesn't match"),
    pytest.param(pod_with_claim("PVC_Stable_2"), {ZONE: "us-west1-a", "uselessLabel": "none"},
                 OK, OK, id="zone label matched"),
    pytest.param(pod_with_claim("PVC_Stable_1"), {ZONE: "us-west1-b", "uselessLabel": "none"},
                 OK, CONFLICT, id="zone label doesn't match"),
]


@pytest.mark.parametrize(("pod", "node_labels", "want_pre", "want"), MULTI_ZONE_CASES)
def test_multi_zone(pod: PodBuilder, node_labels: dict[str, str],
                    want_pre: tuple[Code, list[str]], want: tuple[Code, list[str]]) -> None:
    check(MULTI_ZONE, pod, node_labels, want_pre, want)


WITH_BINDING = plugin(
    [pv("Vol_1", **{ZONE_BETA: "us-west1-a"})],
    [pvc("PVC_1", "Vol_1"), pvc("PVC_NoSC", class_name="Class_0"), pvc("PVC_EmptySC"),
     pvc("PVC_WaitSC", class_name="Class_Wait"),
     pvc("PVC_ImmediateSC", class_name="Class_Immediate")],
    [storage.StorageClass(metadata=api.ObjectMeta(name="Class_Immediate")),
     storage.StorageClass(metadata=api.ObjectMeta(name="Class_Wait"),
                          volume_binding_mode=storage.BINDING_WAIT_FOR_FIRST_CONSUMER)])


def unresolvable(reason: str) -> tuple[Code, list[str]]:
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [reason]


WITH_BINDING_CASES = [
    pytest.param(pod_with_claim("PVC_1"), OK, OK, id="label zone failure domain matched"),
    pytest.param(pod_with_claim("PVC_EmptySC"),
                 unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
                 unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
                 id="unbound volume empty storage class"),
    # Upstream's table has the fake lister's "storageclasses.storage.k8s.io"; the
    # informer's lister that kube-scheduler runs with names the resource in the singular.
    pytest.param(pod_with_claim("PVC_NoSC"),
                 unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
                 unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
                 id="unbound volume no storage class"),
    pytest.param(pod_with_claim("PVC_ImmediateSC"),
                 unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
                 unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
                 id="unbound volume immediate binding mode"),
    pytest.param(pod_with_claim("PVC_WaitSC"), SKIP, OK, id="unbound volume wait binding mode"),
]


@pytest.mark.parametrize(("pod", "want_pre", "want"), WITH_BINDING_CASES)
def test_with_binding(pod: PodBuilder, want_pre: tuple[Code, list[str]],
                      want: tuple[Code, list[str]]) -> None:
    check(WITH_BINDING, pod, {ZONE_BETA: "us-west1-a", "uselessLabel": "none"}, want_pre, want)


MISSING_CASES = [
    pytest.param("PVC_missing", 'persistentvolumeclaim "PVC_missing" not found',
                 id="claim not found"),
    pytest.param("PVC_4", 'persistentvolume "Vol_not_exist" not found', id="pv not found"),
    pytest.param("", "PersistentVolumeClaim had no name", id="claim without name"),
]


@pytest.mark.parametrize(("claim", "reason"), MISSING_CASES)
def test_missing_objects_are_unresolvable(claim: str, reason: str) -> None:
    check(SINGLE_ZONE, pod_with_claim(claim), {ZONE: "us-west1-a"}, unresolvable(reason),
          unresolvable(reason))


def test_bound_immediate_class_claim_is_unresolvable_without_its_pv_name() -> None:
    zone = plugin([], [pvc("claim", class_name="fast")],
                  [storage.StorageClass(metadata=api.ObjectMeta(name="fast"),
                                        volume_binding_mode="Immediate")])
    check(zone, pod_with_claim("claim"), {}, unresolvable("PersistentVolume had no name"),
          unresolvable("PersistentVolume had no name"))


def test_beta_class_annotation_wins_over_the_field() -> None:
    claim = pvc("claim", class_name="missing")
    claim.metadata.annotations = {storage.ANNOTATION_BETA_STORAGE_CLASS: "wait"}
    zone = plugin([], [claim], [storage.StorageClass(
        metadata=api.ObjectMeta(name="wait"),
        volume_binding_mode=storage.BINDING_WAIT_FOR_FIRST_CONSUMER)])
    check(zone, pod_with_claim("claim"), {}, SKIP, OK)


def test_label_with_a_blank_zone_is_ignored() -> None:
    zone = plugin([pv("v", **{ZONE: "us-west1-a__ ", REGION: "us-west1"})], [pvc("c", "v")])
    check(zone, pod_with_claim("c"), {ZONE: "elsewhere", REGION: "us-west1"}, OK, OK)


def test_spec_and_events() -> None:
    assert vz.SPEC.extension_points() == ["preFilter", "filter"]
    assert registered(plugin([], [])) == [
        (ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), False),
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
         True),
        (ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE), True),
    ]
