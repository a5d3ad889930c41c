"""VolumeZone's queueing hints, with upstream's TestIsSchedulableAfterPersistentVolumeClaimAdded,
TestIsSchedulableAfterStorageClassAdded and TestIsSchedulableAfterPersistentVolumeChange
(volume_zone_test.go), reached through the plugin's registrations."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins import volume_zone as vz
from tests.unit.builders import FakeHandle, make_pod
from tests.unit.plugins.hints import ERROR, PVC_ADDED, QUEUE, SKIP, Expected, check, hint_for

PLUGIN = vz.new(None, FakeHandle())
CLAIM_HINT = hint_for(PLUGIN, PVC_ADDED)
CLASS_HINT = hint_for(PLUGIN, ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD))
PV_HINT = hint_for(PLUGIN, ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.UPDATE))


def pod_with_volume(name: str, claim_name: str) -> PodInfo:
    """Upstream's createPodWithVolume: namespace default, one claim."""
    pod = make_pod(name, namespace="default")
    pod.obj().spec.volumes.append(api.Volume(
        name="v", persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
            claim_name=claim_name)))
    return pod.info()


def claim(name: str, namespace: str = "default",
          volume_name: str = "") -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace=namespace),
        spec=storage.PersistentVolumeClaimSpec(volume_name=volume_name))


def pv(**labels: str) -> storage.PersistentVolume:
    return storage.PersistentVolume(metadata=api.ObjectMeta(name="Vol_1", labels=labels))


NO_CLAIMS = make_pod("pod_1", namespace="default").info()


@pytest.mark.parametrize(("pod", "old", "new", "expected"), [
    pytest.param(pod_with_volume("pod_1", "PVC_1"), None, "not-a-pvc", ERROR,
                 id="error-wrong-new-object"),
    pytest.param(NO_CLAIMS, None, claim("PVC_1", volume_name="Vol_1"), SKIP,
                 id="pvc-was-added-but-pod-refers-no-pvc"),
    pytest.param(pod_with_volume("pod_1", "PVC_2"), None, claim("PVC_1", volume_name="Vol_1"),
                 SKIP, id="pvc-was-added-and-pod-was-bound-to-different-pvc"),
    pytest.param(pod_with_volume("pod_1", "PVC_1"), None,
                 claim("PVC_1", "ns1", volume_name="Vol_1"), SKIP,
                 id="pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns"),
    pytest.param(pod_with_volume("pod_1", "PVC_1"), None, claim("PVC_1", volume_name="Vol_1"),
                 QUEUE, id="pvc-was-added-and-pod-was-bound-to-the-pvc"),
    pytest.param(pod_with_volume("pod_1", "PVC_1"), claim("PVC_1"),
                 claim("PVC_1", volume_name="Vol_1"), QUEUE,
                 id="pvc-was-updated-and-pod-was-bound-to-the-pvc"),
    pytest.param(NO_CLAIMS, claim("PVC_1"), claim("PVC_1", volume_name="Vol_1"), SKIP,
                 id="pvc-was-updated-but-pod-refers-no-pvc"),
])
def test_schedulable_after_claim_change(pod: PodInfo, old: object, new: object,
                                        expected: Expected) -> None:
    check(CLAIM_HINT, pod, old, new, expected)


@pytest.mark.parametrize(("new", "expected"), [
    pytest.param("not-a-storageclass", ERROR, id="error-wrong-new-object"),
    pytest.param(storage.StorageClass(metadata=api.ObjectMeta(name="SC_1")), SKIP,
                 id="sc-doesn't-have-volume-binding-mode"),
    pytest.param(storage.StorageClass(metadata=api.ObjectMeta(name="SC_1"),
                                      volume_binding_mode=storage.BINDING_WAIT_FOR_FIRST_CONSUMER),
                 QUEUE, id="new-sc-is-wait-for-first-consumer-mode"),
    # Beyond upstream's table.
    pytest.param(storage.StorageClass(metadata=api.ObjectMeta(name="SC_1"),
                                      volume_binding_mode="Immediate"),
                 SKIP, id="new-sc-binds-immediately"),
])
def test_schedulable_after_storage_class_added(new: object, expected: Expected) -> None:
    check(CLASS_HINT, pod_with_volume("pod_1", "PVC_1"), None, new, expected)


ZONE_BETA = {vz.ZONE_BETA: "us-west1-a"}
BOTH_ZONES = {vz.ZONE_BETA: "us-west1-a", vz.ZONE: "zone"}


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(None, "not-a-pv", ERROR, id="error-wrong-new-object"),
    pytest.param("not-a-pv", pv(), ERROR, id="error-wrong-old-object"),
    pytest.param(None, pv(**{vz.ZONE_BETA: "us-west1-b"}), QUEUE, id="new-pv-was-added"),
    pytest.param(pv(**ZONE_BETA), pv(**{vz.ZONE_BETA: "us-west1-b"}), QUEUE,
                 id="pv-was-updated-and-changed-topology"),
    pytest.param(pv(**ZONE_BETA), pv(**BOTH_ZONES), QUEUE,
                 id="pv-was-updated-and-added-topology-label"),
    pytest.param(pv(**BOTH_ZONES), pv(**BOTH_ZONES), SKIP,
                 id="pv-was-updated-but-no-topology-is-changed"),
    # Beyond upstream's table: the same zones in another order, and labels the plugin
    # does not read.
    pytest.param(pv(**{vz.ZONE: "a__b"}), pv(**{vz.ZONE: "b__a"}), SKIP,
                 id="pv-multi-zone-value-reordered"),
    pytest.param(pv(**ZONE_BETA), pv(**ZONE_BETA, app="x"), SKIP,
                 id="pv-non-topology-label-added"),
])
def test_schedulable_after_pv_change(old: object, new: object, expected: Expected) -> None:
    check(PV_HINT, pod_with_volume("pod_1", "PVC_1"), old, new, expected)


def test_registrations_reach_the_hints() -> None:
    assert CLAIM_HINT is vz.schedulable_after_claim_change
    assert CLASS_HINT is vz.schedulable_after_storage_class_added
    assert PV_HINT is vz.schedulable_after_pv_change
    assert hint_for(PLUGIN, ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM,
                                         ActionType.UPDATE)) is CLAIM_HINT
    assert hint_for(PLUGIN, ClusterEvent(Resource.PERSISTENT_VOLUME,
                                         ActionType.ADD)) is PV_HINT
