"""VolumeBinding's queueing hints: upstream's volume_binding_test.go
TestIsSchedulableAfterCSINodeChange, ...PersistentVolumeClaimChange, ...StorageClassChange,
...CSIStorageCapacityChange and ...CSIDriverChange. A hint handed an object of the
wrong kind raises (the queue counts that as Queue, as upstream counts the error)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kpysched.framework.cluster_events import QueueingHint
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins.volume_binding import hints

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
Hint = Callable[[PodInfo, object, object], QueueingHint]


def pod(*, namespace: str = "default", claims: tuple[str, ...] = (),
        ephemeral: tuple[str, ...] = (), csi: tuple[str, ...] = (),
        empty_dir: bool = False) -> PodInfo:
    volumes = [api.Volume(persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
        claim_name=name)) for name in claims]
    volumes += [api.Volume(name=name, ephemeral=api.EphemeralVolumeSource())
                for name in ephemeral]
    volumes += [api.Volume(csi=api.CSIVolumeSource(driver=driver)) for driver in csi]
    if empty_dir:
        volumes.append(api.Volume(name="scratch"))
    return PodInfo.of(api.Pod(metadata=api.ObjectMeta(name="pod-a", namespace=namespace),
                              spec=api.PodSpec(volumes=volumes)))


def csi_node(migrated: str | None) -> storage.CSINode:
    annotations = {} if migrated is None else {hints.MIGRATED_PLUGINS_ANNOTATION: migrated}
    return storage.CSINode(metadata=api.ObjectMeta(name="csinode-a", annotations=annotations))


def claim(name: str) -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(metadata=api.ObjectMeta(name=name,
                                                                 namespace="default"))


def storage_class(*hostnames: str) -> storage.StorageClass:
    terms = [storage.TopologySelectorTerm(match_label_expressions=[
        storage.TopologySelectorLabelRequirement(key="kubernetes.io/hostname",
                                                 values=list(hostnames))])] if hostnames else []
    return storage.StorageClass(metadata=api.ObjectMeta(name="sc-a"), allowed_topologies=terms)


def capacity(amount: int | None = None, maximum: int | None = None
             ) -> storage.CSIStorageCapacity:
    return storage.CSIStorageCapacity(metadata=api.ObjectMeta(name="cap-a"), capacity=amount,
                                      maximum_volume_size=maximum)


def driver(name: str, storage_capacity: bool | None) -> storage.CSIDriver:
    return storage.CSIDriver(metadata=api.ObjectMeta(name=name),
                             spec=storage.CSIDriverSpec(storage_capacity=storage_capacity))


CASES: dict[str, tuple[Hint, PodInfo, object, object, QueueingHint]] = {
    # CSINode
    "CSINode is newly created": (hints.after_csi_node_change, pod(), None, csi_node(None),
                                 QUEUE),
    "CSINode's migrated-plugins annotations is added": (
        hints.after_csi_node_change, pod(), csi_node("test1"), csi_node("test1, test2"), QUEUE),
    "CSINode's migrated-plugins annotation is updated": (
        hints.after_csi_node_change, pod(), csi_node("test1"), csi_node("test2"), QUEUE),
    "CSINode is updated but migrated-plugins annotation gets unchanged": (
        hints.after_csi_node_change, pod(), csi_node("test1"), csi_node("test1"), SKIP),
    # PersistentVolumeClaim
    "pod has no pvc or ephemeral volumes": (
        hints.after_claim_change, pod(empty_dir=True), claim("pvc-b"), claim("pvc-b"), SKIP),
    "pvc of the same name in a different namespace is modified": (
        hints.after_claim_change, pod(namespace="ns-a", claims=("pvc-a", "pvc-b")), None,
        claim("pvc-b"), SKIP),
    "pod has no pvc that is being modified": (
        hints.after_claim_change, pod(claims=("pvc-a", "pvc-c")), claim("pvc-b"),
        claim("pvc-b"), SKIP),
    "pod has no generic ephemeral volume that is being modified": (
        hints.after_claim_change, pod(ephemeral=("ephemeral-a", "ephemeral-c")),
        claim("pod-a-ephemeral-b"), claim("pod-a-ephemeral-b"), SKIP),
    "pod has the pvc that is being modified": (
        hints.after_claim_change, pod(claims=("pvc-a", "pvc-b")), claim("pvc-b"),
        claim("pvc-b"), QUEUE),
    "pod has the generic ephemeral volume that is being modified": (
        hints.after_claim_change, pod(ephemeral=("ephemeral-a", "ephemeral-b")),
        claim("pod-a-ephemeral-b"), claim("pod-a-ephemeral-b"), QUEUE),
    # StorageClass
    "a new StorageClass": (hints.after_storage_class_change, pod(), None, storage_class(),
                           QUEUE),
    "AllowedTopologies changed": (hints.after_storage_class_change, pod(), storage_class(),
                                  storage_class("node-a"), QUEUE),
    "no change to the StorageClass": (hints.after_storage_class_change, pod(),
                                      storage_class(), storage_class(), SKIP),
    # CSIStorageCapacity
    "a new CSIStorageCapacity": (hints.after_capacity_change, pod(), None, capacity(), QUEUE),
    "limit increased (Capacity set)": (hints.after_capacity_change, pod(), capacity(),
                                       capacity(100), QUEUE),
    "limit increased (MaximumVolumeSize set)": (
        hints.after_capacity_change, pod(), capacity(), capacity(maximum=100), QUEUE),
    "limit increased (Capacity increase)": (hints.after_capacity_change, pod(), capacity(50),
                                            capacity(100), QUEUE),
    "limit increased (MaximumVolumeSize unset)": (
        hints.after_capacity_change, pod(), capacity(100, 50), capacity(100), QUEUE),
    "limit increased (MaximumVolumeSize increase)": (
        hints.after_capacity_change, pod(), capacity(100, 50), capacity(100, 60), QUEUE),
    "no change to the CSIStorageCapacity": (
        hints.after_capacity_change, pod(), capacity(100, 50), capacity(100, 50), SKIP),
    "limit equal (Capacity)": (hints.after_capacity_change, pod(), capacity(100),
                               capacity(100), SKIP),
    "limit equal (MaximumVolumeSize unset)": (
        hints.after_capacity_change, pod(), capacity(100, 50), capacity(50), SKIP),
    "limit decreased (Capacity)": (hints.after_capacity_change, pod(), capacity(100),
                                   capacity(90), SKIP),
    "limit decreased (MaximumVolumeSize)": (
        hints.after_capacity_change, pod(), capacity(maximum=100), capacity(maximum=90), SKIP),
    # CSIDriver
    "pod has no CSIDriver": (hints.after_csi_driver_change, pod(), driver("test1", None),
                             driver("test1", True), SKIP),
    "driver name in pod and csidriver name are different": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test2", True),
        driver("test2", False), SKIP),
    "original StorageCapacity is nil": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test1", None),
        driver("test1", None), SKIP),
    "original StorageCapacity is false": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test1", False),
        driver("test1", False), SKIP),
    "modified StorageCapacity is nil": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test1", True),
        driver("test1", None), QUEUE),
    "modified StorageCapacity is true": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test1", True),
        driver("test1", True), SKIP),
    "modified StorageCapacity is false": (
        hints.after_csi_driver_change, pod(csi=("test1",)), driver("test1", True),
        driver("test1", False), QUEUE),
}


@pytest.mark.parametrize(("hint", "rejected", "old", "new", "want"), CASES.values(),
                         ids=CASES.keys())
def test_hint(hint: Hint, rejected: PodInfo, old: object, new: object,
              want: QueueingHint) -> None:
    assert hint(rejected, old, new) is want


@pytest.mark.parametrize("hint", [
    hints.after_csi_node_change, hints.after_claim_change, hints.after_storage_class_change,
    hints.after_capacity_change, hints.after_csi_driver_change])
def test_unexpected_objects_raise(hint: Hint) -> None:
    with pytest.raises(TypeError):
        hint(pod(), object(), object())
