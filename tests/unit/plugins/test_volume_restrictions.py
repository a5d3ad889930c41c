"""VolumeRestrictions, with upstream's volume_restrictions_test.go tables (disk conflicts
of GCE PD, AWS EBS, RBD and iSCSI; ReadWriteOncePod access-mode conflicts)."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api, storage
from kpysched.plugins import volume_restrictions as vr
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod, make_snapshot
from tests.unit.plugins.hints import registered
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


def volume_pod(*sources: dict[str, Any], name: str = "pod") -> PodBuilder:
    pod = make_pod(name)
    for index, source in enumerate(sources):
        pod.obj().spec.volumes.append(api.Volume(name=f"v{index}", **source))
    return pod


def claim_pod(name: str, *claims: str, node: str = "node-1") -> PodBuilder:
    pod = make_pod(name).node(node)
    for claim in claims:
        pod.obj().spec.volumes.append(api.Volume(
            name=claim, persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
                claim_name=claim)))
    return pod


def claim(name: str, mode: str) -> storage.PersistentVolumeClaim:
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace="default"),
        spec=storage.PersistentVolumeClaimSpec(access_modes=[mode]))


def plugin(*claims: storage.PersistentVolumeClaim,
           nodes: tuple[NodeInfo, ...] = ()) -> vr.VolumeRestrictions:
    handle = FakeHandle(snapshot_value=make_snapshot(*nodes))
    for item in claims:
        handle.storage_listers.persistent_volume_claims.on_add(item)
    return vr.new(None, handle)


def run(plugin: vr.VolumeRestrictions, pod: PodBuilder,
        node: NodeInfo) -> tuple[Status, Status | None]:
    """PreFilter's status, and Filter's when PreFilter succeeded (else None)."""
    state = CycleState()
    _, pre_status = plugin.pre_filter(state, pod.info(), [])
    if not pre_status.ok:
        return pre_status, None
    return pre_status, plugin.filter(state, pod.info(), node)


DISK_CONFLICT = (Code.UNSCHEDULABLE, [vr.REASON_DISK_CONFLICT])


def disk_cases(kind: str, same: dict[str, Any], other: dict[str, Any]) -> list[Any]:
    """Upstream's table shape for one disk kind: nothing, one state, same, different."""
    cases = [
        pytest.param(volume_pod(), (), Code.SKIP, None, id=f"{kind}: nothing"),
        pytest.param(volume_pod(), (same,), Code.SKIP, None, id=f"{kind}: one state"),
        pytest.param(volume_pod(same), (same,), Code.SUCCESS, DISK_CONFLICT,
                     id=f"{kind}: same state"),
        pytest.param(volume_pod(other), (same,), Code.SUCCESS, None,
                     id=f"{kind}: different state"),
    ]
    if kind == "GCE":
        cases.append(pytest.param(volume_pod({}), (), Code.SKIP, None,
                                  id="GCE: pod with a volume that doesn't have restrictions"))
    return cases


DISK_CASES = [
    *disk_cases("GCE", GCE_FOO, GCE_BAR),
    *disk_cases("AWS", AWS_FOO, AWS_BAR),
    *disk_cases("RBD", RBD_AB, RBD_CD),
    *disk_cases("ISCSI", ISCSI_2016, ISCSI_2017),
]


@pytest.mark.parametrize(("pod", "on_node", "pre_code", "want"), DISK_CASES)
def test_disk_conflicts(pod: PodBuilder, on_node: tuple[dict[str, Any], ...], pre_code: Code,
                        want: tuple[Code, list[str]] | None) -> None:
    node = make_node("n").info(*(volume_pod(source, name="existing") for source in on_node))
    pre_status, status = run(plugin(), pod, node)
    assert pre_status.code == pre_code
    if pre_code == Code.SUCCESS:
        assert status is not None
        assert (status.code, status.reasons) == (want or (Code.SUCCESS, []))


READ_ONLY_CASES = [
    pytest.param({"pdName": "foo", "readOnly": True}, {"pdName": "foo", "readOnly": True},
                 "gce_persistent_disk", True, id="GCE both read-only share the disk"),
    pytest.param({"pdName": "foo", "readOnly": True}, {"pdName": "foo"},
                 "gce_persistent_disk", False, id="GCE one writer conflicts"),
    pytest.param({"volumeID": "foo", "readOnly": True}, {"volumeID": "foo", "readOnly": True},
                 "aws_elastic_block_store", False, id="AWS conflicts even read-only"),
    pytest.param({"iqn": "i", "readOnly": True}, {"iqn": "i", "readOnly": True},
                 "iscsi", True, id="iSCSI both read-only share the target"),
    pytest.param({"monitors": ["a", "b"], "pool": "p", "image": "i"},
                 {"monitors": ["b", "c"], "pool": "p", "image": "i"},
                 "rbd", False, id="RBD one shared monitor is the same image"),
    pytest.param({"monitors": ["a"], "pool": "p", "image": "i", "readOnly": True},
                 {"monitors": ["a"], "pool": "p", "image": "i", "readOnly": True},
                 "rbd", True, id="RBD both read-only share the image"),
    pytest.param({"monitors": ["a"], "pool": "p", "image": "i"},
                 {"monitors": ["a"], "pool": "q", "image": "i"},
                 "rbd", True, id="RBD other pool"),
]


@pytest.mark.parametrize(("wanted", "used", "field", "fits"), READ_ONLY_CASES)
def test_read_only_sharing(wanted: dict[str, Any], used: dict[str, Any], field: str,
                           fits: bool) -> None:
    node = make_node("n").info(volume_pod({field: used}, name="existing"))
    _, status = run(plugin(), volume_pod({field: wanted}), node)
    assert status is not None
    assert status.ok is fits


POD_WITH_ONE = claim_pod("pod-with-one-pvc", "claim-with-rwop-1")
POD_WITH_TWO = claim_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
POD_ONE_CONFLICT = claim_pod("pod-with-one-conflict", "claim-with-rwop-1")
POD_TWO_CONFLICTS = claim_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2")
POD_RWX = claim_pod("pod-with-rwx", "claim-with-rwx")
RWOP_1 = claim("claim-with-rwop-1", storage.READ_WRITE_ONCE_POD)
RWOP_2 = claim("claim-with-rwop-2", storage.READ_WRITE_ONCE_POD)
RWX = claim("claim-with-rwx", "ReadWriteMany")

ACCESS_MODE_CASES = [
    pytest.param(make_pod(), (), (), (Code.SKIP, []), None, id="nothing"),
    pytest.param(POD_WITH_ONE, (), (),
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                  ['persistentvolumeclaim "claim-with-rwop-1" not found']),
                 None, id="failed to get PVC"),
    pytest.param(POD_WITH_ONE, (POD_RWX,), (RWOP_1, RWX), (Code.SKIP, []), None,
                 id="no access mode conflict"),
    pytest.param(POD_ONE_CONFLICT, (POD_WITH_ONE, POD_RWX), (RWOP_1, RWX), (Code.SUCCESS, []),
                 (Code.UNSCHEDULABLE, [vr.REASON_READ_WRITE_ONCE_POD_CONFLICT]),
                 id="access mode conflict, unschedulable"),
    pytest.param(POD_TWO_CONFLICTS, (POD_WITH_TWO, POD_RWX), (RWOP_1, RWOP_2, RWX),
                 (Code.SUCCESS, []),
                 (Code.UNSCHEDULABLE, [vr.REASON_READ_WRITE_ONCE_POD_CONFLICT]),
                 id="two conflicts, unschedulable"),
]


@pytest.mark.parametrize(("pod", "existing", "claims", "want_pre", "want"), ACCESS_MODE_CASES)
def test_access_mode_conflicts(pod: PodBuilder, existing: tuple[PodBuilder, ...],
                               claims: tuple[storage.PersistentVolumeClaim, ...],
                               want_pre: tuple[Code, list[str]],
                               want: tuple[Code, list[str]] | None) -> None:
    node = make_node("node-1").info(*existing)
    pre_status, status = run(plugin(*claims, nodes=(node,)), pod, node)
    assert (pre_status.code, pre_status.reasons) == want_pre
    if want is not None:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (*want, vr.NAME)


def test_claim_in_use_on_another_node_blocks_every_node() -> None:
    user = make_node("node-1").info(POD_WITH_ONE)
    empty = make_node("node-2").info()
    _, status = run(plugin(RWOP_1, nodes=(user, empty)), POD_ONE_CONFLICT, empty)
    assert status is not None
    assert status.reasons == [vr.REASON_READ_WRITE_ONCE_POD_CONFLICT]


def test_claims_of_other_namespaces_are_not_in_use() -> None:
    elsewhere = make_pod("other", namespace="other").node("node-1")
    elsewhere.obj().spec.volumes = list(POD_WITH_ONE.obj().spec.volumes)
    node = make_node("node-1").info(elsewhere)
    pre_status, _ = run(plugin(RWOP_1, nodes=(node,)), POD_ONE_CONFLICT, node)
    assert pre_status.code == Code.SKIP


def test_remove_and_add_pod_track_the_claim_user() -> None:
    """Preemption removes the user of the claim; nominated pods add one."""
    node = make_node("node-1").info(POD_WITH_ONE)
    restrictions = plugin(RWOP_1, nodes=(node,))
    pod = POD_ONE_CONFLICT.info()
    state = CycleState()
    _, status = restrictions.pre_filter(state, pod, [])
    assert status.ok
    without = state.clone()
    assert restrictions.remove_pod(without, pod, POD_WITH_ONE.info(), node).ok
    assert restrictions.filter(without, pod, node).ok
    assert restrictions.filter(state, pod, node).code == Code.UNSCHEDULABLE, (
        "the clone's update must not leak into the original state")
    assert restrictions.add_pod(without, pod, POD_WITH_ONE.info(), node).ok
    assert restrictions.filter(without, pod, node).code == Code.UNSCHEDULABLE


def test_filter_without_pre_filter_state_is_an_error() -> None:
    status = plugin().filter(CycleState(), volume_pod(GCE_FOO).info(), make_node("n").info())
    assert (status.code, status.reasons) == (
        Code.ERROR, ['cannot read "PreFilterVolumeRestrictions" from cycleState'])


def test_spec_and_events() -> None:
    assert vr.SPEC.extension_points() == ["preFilter", "filter"]
    assert registered(plugin()) == [
        (ClusterEvent(Resource.POD, ActionType.DELETE), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD), False),
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), True),
    ]
