"""VolumeRestrictions' queueing hints, with upstream's Test_isSchedulableAfterPodDeleted
and Test_isSchedulableAfterPersistentVolumeClaimChange (volume_restrictions_test.go),
reached through the plugin's registrations."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.framework.cluster_events import (
    ASSIGNED_POD_DELETE,
)
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins import volume_restrictions as vr
from tests.unit.builders import FakeHandle, make_pod
from tests.unit.plugins.hints import ERROR, PVC_ADDED, QUEUE, SKIP, Expected, check, hint_for
from tests.unit.plugins.in_tree_volumes import (
    AWS_BAR,
    AWS_FOO,
    GCE_BAR,
    GCE_FOO,
    ISCSI_2016,
    ISCSI_2017,
    RBD_AB,
    RBD_CD,
)

PLUGIN = vr.new(None, FakeHandle())
POD_DELETED = hint_for(PLUGIN, ASSIGNED_POD_DELETE)
CLAIM_ADDED = hint_for(PLUGIN, PVC_ADDED)


def volume_pod(source: dict[str, Any], name: str = "pod", namespace: str = "") -> PodInfo:
    pod = make_pod(name, namespace=namespace)
    pod.obj().spec.volumes.append(api.Volume(name="v", **source))
    return pod.info()


def claim_pod(name: str, *claims: str, namespace: str = "default",
              node: str = "") -> PodInfo:
    pod = make_pod(name, namespace=namespace)
    if node:
        pod.node(node)
    for claim_name in claims:
        pod.obj().spec.volumes.append(api.Volume(
            name=claim_name, persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
                claim_name=claim_name)))
    return pod.info()


def claim(name: str, namespace: str = "default") -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace=namespace),
        spec=storage.PersistentVolumeClaimSpec(access_modes=["ReadWriteMany"]))


@pytest.mark.parametrize(("pod", "deleted", "expected"), [
    pytest.param(volume_pod(GCE_FOO), volume_pod(GCE_FOO, "other"), QUEUE,
                 id="queue-new-object-gcedisk-conflict"),
    pytest.param(volume_pod(GCE_FOO), volume_pod(GCE_BAR, "other"), SKIP,
                 id="skip-new-object-gcedisk-no-conflict"),
    pytest.param(volume_pod(AWS_FOO), volume_pod(AWS_FOO, "other"), QUEUE,
                 id="queue-new-object-awsdisk-conflict"),
    pytest.param(volume_pod(AWS_FOO), volume_pod(AWS_BAR, "other"), SKIP,
                 id="skip-new-object-awsdisk-no-conflict"),
    pytest.param(volume_pod(RBD_AB), volume_pod(RBD_AB, "other"), QUEUE,
                 id="queue-new-object-rbddisk-conflict"),
    pytest.param(volume_pod(RBD_AB), volume_pod(RBD_CD, "other"), SKIP,
                 id="skip-new-object-rbddisk-no-conflict"),
    pytest.param(volume_pod(ISCSI_2016), volume_pod(ISCSI_2016, "other"), QUEUE,
                 id="queue-new-object-iscsidisk-conflict"),
    pytest.param(volume_pod(ISCSI_2016), volume_pod(ISCSI_2017, "other"), SKIP,
                 id="skip-new-object-iscsidisk-no-conflict"),
    pytest.param(claim_pod("pod1", "claim-rwop"), claim_pod("pod2", "claim-rwop"), QUEUE,
                 id="queue-has-same-claim"),
    pytest.param(claim_pod("pod1", "claim-1-rwop"), claim_pod("pod2", "claim-2-rwop"), SKIP,
                 id="skip-no-same-claim"),
    # Beyond upstream's table.
    pytest.param(volume_pod(GCE_FOO), volume_pod(GCE_FOO, "other", namespace="ns1"), SKIP,
                 id="skip-conflicting-disk-in-another-namespace"),
    pytest.param(claim_pod("pod1", "claim-rwop"),
                 claim_pod("pod2", "claim-rwop", namespace="ns1"), SKIP,
                 id="skip-same-claim-name-in-another-namespace"),
    pytest.param(volume_pod(GCE_FOO), "not-a-pod", ERROR, id="error-wrong-old-object"),
])
def test_schedulable_after_pod_deleted(pod: PodInfo, deleted: object,
                                       expected: Expected) -> None:
    check(POD_DELETED, pod, deleted, None, expected)


WITH_ONE_CLAIM = claim_pod("pod-with-one-pvc", "claim-with-rwx-1", node="node-1")
WITH_TWO_CLAIMS = claim_pod("pod-with-two-pvcs", "claim-with-rwx-1", "claim-with-rwx-2",
                            node="node-1")
IN_KUBE_SYSTEM = claim_pod("pod-with-one-pvc", "claim-with-rwx-1", namespace="kube-system",
                           node="claim-with-rwx-2")


@pytest.mark.parametrize(("pod", "old", "new", "expected"), [
    pytest.param(WITH_TWO_CLAIMS, None, claim("claim-with-rwx-1"), QUEUE,
                 id="queue-new-object-pvc-belong-pod"),
    pytest.param(WITH_ONE_CLAIM, None, claim("claim-with-rwx-2"), SKIP,
                 id="skip-new-object-unused"),
    pytest.param(WITH_ONE_CLAIM, None, claim("claim-with-rwx-2"), SKIP,
                 id="skip-nil-old-object"),
    pytest.param(WITH_ONE_CLAIM, None, claim("claim-with-rwx-2"), SKIP,
                 id="skip-new-object-not-belong-pod"),
    pytest.param(IN_KUBE_SYSTEM, None, claim("claim-with-rwx-1"), SKIP,
                 id="skip-new-object-namespace-not-equal-pod"),
    # Beyond upstream's table.
    pytest.param(WITH_ONE_CLAIM, None, "not-a-pvc", ERROR, id="error-wrong-new-object"),
])
def test_schedulable_after_claim_added(pod: PodInfo, old: object, new: object,
                                       expected: Expected) -> None:
    check(CLAIM_ADDED, pod, old, new, expected)


def test_registrations_reach_the_hints() -> None:
    assert POD_DELETED is vr.schedulable_after_pod_deleted
    assert CLAIM_ADDED is vr.schedulable_after_claim_added
