"""NodeVolumeLimits' queueing hints, with upstream's TestCSILimitsQHint,
TestCSILimitsAddedPVCQHint, TestCSILimitsDeletedVolumeAttachmentQHint and
TestCSILimitsAfterCSINodeUpdatedQHint (csi_test.go), reached through the plugin's
registrations."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    Resource,
)
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins import node_volume_limits as nvl
from kpysched.plugins.node_volume_limits import hints
from tests.unit.builders import FakeHandle, make_pod
from tests.unit.plugins.hints import ERROR, PVC_ADDED, QUEUE, SKIP, Expected, check, hint_for

PLUGIN = nvl.new(None, FakeHandle())
POD_DELETED = hint_for(PLUGIN, ASSIGNED_POD_DELETE)
CLAIM_ADDED = hint_for(PLUGIN, PVC_ADDED)
ATTACHMENT_DELETED = hint_for(PLUGIN, ClusterEvent(Resource.VOLUME_ATTACHMENT,
                                                   ActionType.DELETE))
CSI_NODE_UPDATED = hint_for(PLUGIN, ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE))

EBS = "ebs.csi.aws.com"


def claim_volume(claim_name: str) -> api.Volume:
    return api.Volume(name=claim_name, persistent_volume_claim=(
        api.PersistentVolumeClaimVolumeSource(claim_name=claim_name)))


def pod(*volumes: api.Volume, name: str = "pod", namespace: str = "",
        node: str = "", nominated: str = "") -> PodInfo:
    builder = make_pod(name, namespace=namespace)
    if node:
        builder.node(node)
    builder.obj().spec.volumes.extend(volumes)
    builder.obj().status.nominated_node_name = nominated
    return builder.info()


EBS_POD = pod(claim_volume("csi-ebs.csi.aws.com-2"))
INLINE_EBS = api.Volume(aws_elastic_block_store={})


@pytest.mark.parametrize(("deleted", "expected"), [
    pytest.param(pod(claim_volume("placeholder"), node="csi-node"), QUEUE,
                 id="return a Queue when a deleted pod has a PVC"),
    pytest.param(pod(INLINE_EBS, node="csi-node"), QUEUE,
                 id="return a Queue when a deleted pod has a inline migratable volume"),
    pytest.param(pod(node="csi-node"), SKIP,
                 id="return a QueueSkip when a deleted pod doesn't have any volume"),
    pytest.param(pod(claim_volume("csi-ebs.csi.aws.com-0")), SKIP,
                 id="return a QueueSkip when a deleted pod is not scheduled."),
    # Beyond upstream's table.
    pytest.param(pod(claim_volume("csi-ebs.csi.aws.com-0"), nominated="csi-node"), QUEUE,
                 id="queue when the deleted pod was only nominated"),
    pytest.param(pod(api.Volume(name="config"), node="csi-node"), SKIP,
                 id="skip when the deleted pod's volumes never count"),
    pytest.param(pod(api.Volume(name="eph", ephemeral=api.EphemeralVolumeSource()),
                     node="csi-node"), QUEUE,
                 id="queue when the deleted pod had a generic ephemeral volume"),
    pytest.param("not-a-pod", ERROR, id="error-wrong-old-object"),
])
def test_schedulable_after_pod_deleted(deleted: object, expected: Expected) -> None:
    check(POD_DELETED, EBS_POD, deleted, None, expected)


def added_claim(name: str = "", namespace: str = "") -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(metadata=api.ObjectMeta(name=name,
                                                                 namespace=namespace))


@pytest.mark.parametrize(("target", "added", "expected"), [
    pytest.param(pod(namespace="ns1"), added_claim(namespace="ns2"), SKIP,
                 id="a pod isn't in the same namespace as an added PVC"),
    pytest.param(pod(claim_volume("pvc1"), namespace="ns1"), added_claim("pvc1", "ns1"), QUEUE,
                 id="a pod is in the same namespace as an added PVC"),
    pytest.param(pod(api.Volume(name="ephemeral", ephemeral=api.EphemeralVolumeSource()),
                     name="pod1", namespace="ns1"),
                 added_claim("pod1-ephemeral", "ns1"), QUEUE,
                 id="a pod has an ephemeral volume related to an added PVC"),
    pytest.param(pod(claim_volume("pvc1"), namespace="ns1"), added_claim("pvc2", "ns1"), SKIP,
                 id="a pod doesn't have the same PVC as an added PVC"),
    pytest.param(pod(namespace="ns1"), added_claim("pvc2", "ns1"), SKIP,
                 id="a pod doesn't have any PVC attached"),
    # Beyond upstream's table.
    pytest.param(pod(claim_volume("pvc1"), namespace="ns1"), "not-a-pvc", ERROR,
                 id="error-wrong-new-object"),
])
def test_schedulable_after_claim_added(target: PodInfo, added: object,
                                       expected: Expected) -> None:
    check(CLAIM_ADDED, target, None, added, expected)


def attachment(attacher: str, pv_name: str | None = None,
               inline_driver: str | None = None) -> storage.VolumeAttachment:
    inline = None if inline_driver is None else {"csi": {"driver": inline_driver}}
    return storage.VolumeAttachment(
        metadata=api.ObjectMeta(name="volumeattachment1"),
        spec=storage.VolumeAttachmentSpec(
            attacher=attacher, node_name="fake-node",
            source=storage.VolumeAttachmentSource(persistent_volume_name=pv_name,
                                                  inline_volume_spec=inline)))


INLINE_EBS_TEST = api.Volume(aws_elastic_block_store={"volumeID": "test"})
INLINE_GCE_TEST = api.Volume(gce_persistent_disk={"pdName": "test"})
GKE_PV1 = attachment("test.storage.gke.io", pv_name="pv1")
EBS_INLINE = attachment(EBS, inline_driver=EBS)


@pytest.mark.parametrize(("target", "deleted", "expected"), [
    pytest.param(pod(claim_volume("pvc1"), namespace="ns1"), GKE_PV1, QUEUE,
                 id="a pod has PVC when VolumeAttachment is deleting"),
    pytest.param(pod(INLINE_EBS_TEST, namespace="ns1"), EBS_INLINE, QUEUE,
                 id="a pod has an Inline Migratable volume (AWSEBSDriver) when "
                    "VolumeAttachment (AWSEBSDriver) is deleting (match)"),
    pytest.param(pod(INLINE_GCE_TEST, namespace="ns1"), EBS_INLINE, SKIP,
                 id="a pod has an Inline Migratable volume (GCEPDDriver) when "
                    "VolumeAttachment (AWSEBSDriver) is deleting (no match)"),
    pytest.param(pod(INLINE_EBS_TEST, claim_volume("pvc1"), namespace="ns1"), EBS_INLINE,
                 QUEUE, id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when "
                           "VolumeAttachment (AWSEBSDriver) is deleting"),
    pytest.param(pod(INLINE_EBS_TEST, claim_volume("pvc1"), namespace="ns1"), GKE_PV1,
                 QUEUE, id="a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when "
                           "VolumeAttachment (test.storage.gke.io) is deleting"),
    pytest.param(pod(namespace="ns1"), GKE_PV1, SKIP,
                 id="a pod has no PVC when VolumeAttachment is deleting"),
    # Beyond upstream's table: the untranslatable inline volume is an error (Queue),
    # the drivers of Azure File and vSphere (never migrated by the scheduler) still
    # match, and an inline volume that is not migratable is passed over.
    pytest.param(pod(api.Volume(name="bad", aws_elastic_block_store={"volumeID": "aws://x/y"})),
                 EBS_INLINE, ERROR, id="untranslatable inline EBS volume"),
    pytest.param(pod(api.Volume(azure_disk={"diskURI": "d", "kind": "Shared"})),
                 attachment("disk.csi.azure.com"), ERROR, id="unmanaged azure disk"),
    pytest.param(pod(api.Volume(azure_file={"shareName": "s"})),
                 attachment("file.csi.azure.com"), QUEUE, id="inline azure file matches"),
    pytest.param(pod(api.Volume(vsphere_volume={"volumePath": "p"})),
                 attachment("csi.vsphere.vmware.com"), QUEUE, id="inline vsphere matches"),
    pytest.param(pod(api.Volume(name="config"), INLINE_GCE_TEST),
                 attachment("pd.csi.storage.gke.io"), QUEUE,
                 id="non-migratable volume passed over"),
    pytest.param(pod(claim_volume("pvc1")), "not-a-volume-attachment", ERROR,
                 id="error-wrong-old-object"),
])
def test_schedulable_after_volume_attachment_deleted(target: PodInfo, deleted: object,
                                                     expected: Expected) -> None:
    check(ATTACHMENT_DELETED, target, deleted, None, expected)


def csi_node(*drivers: tuple[str, int | None]) -> storage.CSINode:
    return storage.CSINode(
        metadata=api.ObjectMeta(name="test-node"),
        spec=storage.CSINodeSpec(drivers=[
            storage.CSINodeDriver(
                name=name, node_id="test-node",
                allocatable=None if count is None else storage.VolumeNodeResources(count=count))
            for name, count in drivers]))


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param(csi_node((EBS, 1)), csi_node((EBS, 2)), QUEUE, id="limit raised, queue"),
    pytest.param(csi_node((EBS, 2)), csi_node((EBS, 1)), SKIP,
                 id="limit decreased, skip queueing"),
    pytest.param(csi_node((EBS, 1)), csi_node((EBS, 1)), SKIP,
                 id="limit unchanged, skip queueing"),
    # Beyond upstream's table: a new driver counts from 0, and a removed limit reads
    # as 0 (upstream does not queue for it, though Filter then sees no limit).
    pytest.param(csi_node(), csi_node((EBS, 1)), QUEUE, id="driver with a limit added"),
    pytest.param(csi_node(), csi_node((EBS, None)), SKIP, id="driver without a limit added"),
    pytest.param(csi_node((EBS, 1)), csi_node((EBS, None)), SKIP, id="limit removed"),
    pytest.param(csi_node((EBS, 1)), csi_node(), SKIP, id="driver removed"),
    pytest.param(csi_node((EBS, 2)), csi_node((EBS, 2), ("other", 1)), QUEUE,
                 id="second driver added"),
    pytest.param("not-a-csinode", csi_node((EBS, 1)), ERROR, id="error-wrong-old-object"),
])
def test_schedulable_after_csi_node_updated(old: object, new: object,
                                            expected: Expected) -> None:
    target = pod(claim_volume("csi-ebs.csi.aws.com-0"), name="test-pod", namespace="ns1")
    check(CSI_NODE_UPDATED, target, old, new, expected)


def test_registrations_reach_the_hints() -> None:
    assert POD_DELETED is hints.after_pod_deleted
    assert CLAIM_ADDED is hints.after_claim_added
    assert ATTACHMENT_DELETED is hints.after_volume_attachment_deleted
    assert CSI_NODE_UPDATED is hints.after_csi_node_updated
    added = [r for r in PLUGIN.events_to_register()
             if r.event.matches(ClusterEvent(Resource.CSI_NODE, ActionType.ADD))]
    assert len(added) == 1 and added[0].hint is None
