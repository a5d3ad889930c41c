"""VolumeBinding's vector Filter and Score agree with the per-node forms, and what
Reserve and PreBind read after the vector Filter is what they read after the per-node
one.

Hypothesis draws bound claims of CSI, EBS and GCE PVs (with and without node affinity
and zone labels), unbound and missing claims, nodes in two zones with and without a
CSINode that names the in-tree plugins it migrated. Wherever the vector form answers,
every node must pass node by node with nothing to bind; it must answer whenever the
pod's claims are all bound to PVs without node affinity that no CSINode migrates.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins.node_volume_limits import translation
from kpysched.plugins.volume_binding import STATE_KEY, VolumeBinding, new
from kpysched.plugins.volume_binding.csi_migration import MIGRATED_PLUGINS_ANNOTATION
from kpysched.plugins.volume_binding.plugin import _State
from tests.unit.builders import FakeHandle, make_node, make_snapshot
from tests.unit.plugins.volume_binding.builders import node_affinity

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=200,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ZONE = "topology.kubernetes.io/zone"
WAIT_CLASS = "wait"
PV_KINDS = ("csi", "ebs", "gce")
MIGRATIONS = (None, "", f"{translation.AWS_EBS}", f"{translation.GCE_PD},{translation.AWS_EBS}")


def _pv(name: str, kind: str, affinity: str | None, zone_label: str | None
        ) -> storage.PersistentVolume:
    if kind == "csi":
        spec = storage.PersistentVolumeSpec(csi=storage.CSIPersistentVolumeSource(
            driver="ebs.csi.aws.com", volume_handle=name))
    elif kind == "ebs":
        spec = storage.PersistentVolumeSpec(aws_elastic_block_store={"volumeID": f"vol-{name}"})
    else:
        spec = storage.PersistentVolumeSpec(gce_persistent_disk={"pdName": name})
    spec.storage_class_name = WAIT_CLASS
    spec.capacity = {"storage": "1Gi"}
    if affinity is not None:
        spec.node_affinity = node_affinity({ZONE: [affinity]})
    labels = {ZONE: zone_label} if zone_label else {}
    return storage.PersistentVolume(metadata=api.ObjectMeta(name=name, labels=labels),
                                    spec=spec,
                                    status=storage.PersistentVolumeStatus(phase="Available"))


@st.composite
def cases(draw: st.DrawFn) -> tuple[FakeHandle, PodInfo]:
    handle = FakeHandle(features_value=Features(release=draw(st.sampled_from((36, 37)))))
    listers = handle.storage_listers
    listers.storage_classes.on_add(storage.StorageClass(
        metadata=api.ObjectMeta(name=WAIT_CLASS), provisioner="kubernetes.io/no-provisioner",
        volume_binding_mode=storage.BINDING_WAIT_FOR_FIRST_CONSUMER))
    claims = []
    for index in range(draw(st.integers(1, 3))):
        name = f"c-{index}"
        pv_name = f"pv-{index}"
        kind = draw(st.sampled_from(("bound", "bound", "bound", "unbound", "missing-pv",
                                     "missing")))
        if kind != "missing-pv":
            listers.persistent_volumes.on_add(_pv(
                pv_name, draw(st.sampled_from(PV_KINDS)),
                draw(st.sampled_from((None, None, "a", "b"))),
                draw(st.sampled_from((None, "a")))))
        claim = storage.PersistentVolumeClaim(
            metadata=api.ObjectMeta(name=name, namespace="default"),
            spec=storage.PersistentVolumeClaimSpec(
                storage_class_name=WAIT_CLASS,
                resources=storage.VolumeResourceRequirements(requests={"storage": "1Gi"})))
        if kind in ("bound", "missing-pv"):
            claim.spec.volume_name = pv_name
            claim.metadata.annotations = {storage.ANNOTATION_BIND_COMPLETED: "yes"}
        if kind != "missing":
            listers.persistent_volume_claims.on_add(claim)
        claims.append(name)
    infos = []
    for index in range(draw(st.integers(1, 5))):
        name = f"n{index}"
        infos.append(make_node(name).label(ZONE, draw(st.sampled_from(("a", "b")))).info())
        migrated = draw(st.sampled_from(MIGRATIONS))
        if migrated is not None:
            annotations = {MIGRATED_PLUGINS_ANNOTATION: migrated} if migrated else {}
            listers.csi_nodes.on_add(storage.CSINode(metadata=api.ObjectMeta(
                name=name, annotations=annotations)))
    handle.snapshot_value = make_snapshot(*infos)
    pod = PodInfo.of(api.Pod(
        metadata=api.ObjectMeta(name="p", namespace="default", uid="uid-p"),
        spec=api.PodSpec(volumes=[api.Volume(name=claim, persistent_volume_claim=(
            api.PersistentVolumeClaimVolumeSource(claim_name=claim))) for claim in claims])))
    return handle, pod


def _simple(handle: FakeHandle, pod: PodInfo) -> bool:
    """All claims bound to existing PVs without affinity that no CSINode migrates."""
    listers = handle.storage_listers
    migrated = {name for csi_node in listers.csi_nodes.values() for name in
                csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "").split(",")}
    for volume in pod.pod.spec.volumes:
        assert volume.persistent_volume_claim is not None
        claim = listers.persistent_volume_claims.get(
            f"default/{volume.persistent_volume_claim.claim_name}")
        if claim is None or storage.ANNOTATION_BIND_COMPLETED not in claim.metadata.annotations:
            return False
        pv = listers.persistent_volumes.get(claim.spec.volume_name)
        if pv is None or pv.spec.node_affinity is not None:
            return False
        plugin = translation.pv_plugin(pv)
        if plugin is not None and plugin.name in migrated:
            return False
    return True


@_SETTINGS
@given(cases())
def test_vector_filter_and_score_match_per_node_forms(case: tuple[FakeHandle, PodInfo]) -> None:
    handle, pod = case
    snapshot = handle.snapshot_value
    nodes = snapshot.node_infos
    per_node: VolumeBinding = new(None, handle)
    vector: VolumeBinding = new(None, handle)
    state_a, state_b = CycleState(), CycleState()
    _, status = per_node.pre_filter(state_a, pod, nodes)
    assert vector.pre_filter(state_b, pod, nodes)[1].code == status.code
    if not status.ok:
        return
    statuses = [per_node.filter(state_a, pod, info) for info in nodes]
    mask = vector.filter_vector(state_b, pod, snapshot)
    assert (mask is not None) == _simple(handle, pod)
    if mask is None:
        return
    assert mask.tolist() == [s.ok for s in statuses]
    data_a, data_b = state_a.get(STATE_KEY), state_b.get(STATE_KEY)
    assert isinstance(data_a, _State) and isinstance(data_b, _State)
    rows = snapshot.index
    if per_node.pre_score(state_a, pod, nodes).ok:
        assert vector.pre_score(state_b, pod, nodes).ok
        scores = vector.score_rows(state_b, pod, snapshot,
                                   np.array([rows[n.name] for n in nodes]))
        assert scores is not None
        assert scores.tolist() == [per_node.score(state_a, pod, info)[0] for info in nodes]
    chosen = nodes[-1].name
    assert per_node.reserve(state_a, pod, chosen).ok
    assert vector.reserve(state_b, pod, chosen).ok
    assert data_a.all_bound == data_b.all_bound
    assert (per_node.pre_bind_pre_flight(state_a, pod, chosen).code
            == vector.pre_bind_pre_flight(state_b, pod, chosen).code)
    assert data_b.pod_volumes_by_node[chosen] == data_a.pod_volumes_by_node[chosen]


def test_in_tree_pvs_on_a_migrating_node_are_judged_node_by_node() -> None:
    handle = FakeHandle()
    listers = handle.storage_listers
    listers.persistent_volumes.on_add(_pv("pv-0", "ebs", None, None))
    listers.persistent_volume_claims.on_add(storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name="c-0", namespace="default",
                                annotations={storage.ANNOTATION_BIND_COMPLETED: "yes"}),
        spec=storage.PersistentVolumeClaimSpec(volume_name="pv-0")))
    handle.snapshot_value = make_snapshot(make_node("n0").info(), make_node("n1").info())
    pod = PodInfo.of(api.Pod(
        metadata=api.ObjectMeta(name="p", namespace="default"),
        spec=api.PodSpec(volumes=[api.Volume(name="v", persistent_volume_claim=(
            api.PersistentVolumeClaimVolumeSource(claim_name="c-0")))])))
    plugin = new(None, handle)

    def mask_now() -> object:
        state = CycleState()
        assert plugin.pre_filter(state, pod, handle.snapshot_value.node_infos)[1].ok
        return plugin.filter_vector(state, pod, handle.snapshot_value)

    assert mask_now() is not None
    listers.csi_nodes.on_add(storage.CSINode(metadata=api.ObjectMeta(
        name="n1", annotations={MIGRATED_PLUGINS_ANNOTATION: translation.AWS_EBS})))
    assert mask_now() is None
