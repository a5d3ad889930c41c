"""NodeVolumeLimits' vector Filter agrees with its per-node Filter, node for node.

Hypothesis draws a small cluster of volumes: CSI PVs of three drivers, in-tree EBS and
GCE PVs (translated on nodes with a CSINode), hostPath PVs, claims bound, unbound with
a class (CSI, in-tree or unknown provisioner) or without one, missing claims, generic
ephemeral volumes owned or not, inline EBS volumes with good and bad IDs; nodes with
no CSINode, a CSINode without limits or with small ones, VolumeAttachments; pods with
such volumes on the nodes, and a pod to place. The vector verdict must equal the
per-node one on every row, and be None exactly when some node answers an Error (which
only the per-node form may say). The same plugin then judges again after pods were
placed and storage objects added, so the rows kept from the first round must follow.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.snapshot import Snapshot
from kpysched.config.features import Features
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins import node_volume_limits as nvl
from kpysched.plugins.node_volume_limits import translation
from tests.unit.builders import FakeHandle, make_node, make_pod, make_snapshot

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=200,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DRIVERS = ("ebs.csi.aws.com", "pd.csi.storage.gke.io", "other.csi.example.com")
NAMESPACE = "ns"
CLASSES = {"csi-class": DRIVERS[2], "ebs-in-tree": translation.AWS_EBS,
           "unknown": "example.com/unknown"}
PV_KINDS = ("csi", "csi", "csi", "csi", "ebs", "gce", "host-path")
VOLUME_KINDS = ("claim", "claim", "claim", "ephemeral", "inline", "config-map")


def _pv(name: str, kind: str, driver: str, zone: str | None) -> storage.PersistentVolume:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    if kind == "csi":
        spec = storage.PersistentVolumeSpec(csi=storage.CSIPersistentVolumeSource(
            driver=driver, volume_handle=f"handle-{name}"))
    elif kind == "ebs":
        spec = storage.PersistentVolumeSpec(aws_elastic_block_store={"volumeID": f"vol-{name}"})
    elif kind == "gce":
        spec = storage.PersistentVolumeSpec(gce_persistent_disk={"pdName": name})
    else:
        spec = storage.PersistentVolumeSpec(host_path={"path": "/tmp"})
    return storage.PersistentVolume(metadata=api.ObjectMeta(name=name, labels=labels), spec=spec)


@st.composite
def storage_objects(draw: st.DrawFn) -> dict[str, Any]:
    """PVs pv-0.., claims c-0.. (some bound to them, some not), classes, CSIDrivers."""
    pvs = [_pv(f"pv-{i}", draw(st.sampled_from(PV_KINDS)),
               draw(st.sampled_from((DRIVERS[0], DRIVERS[0], DRIVERS[0], *DRIVERS[1:]))),
               draw(st.sampled_from((None, "a", "a__b"))))
           for i in range(draw(st.integers(0, 6)))]
    claims = []
    for i in range(draw(st.integers(3, 7))):
        bound = draw(st.sampled_from(["", "pv-missing", *(pv.metadata.name for pv in pvs)] if i > 3
                                     else [f"pv-{i}"]))
        class_name = draw(st.sampled_from((None, "", *CLASSES)))
        claims.append(storage.PersistentVolumeClaim(
            metadata=api.ObjectMeta(name=f"c-{i}", namespace=NAMESPACE),
            spec=storage.PersistentVolumeClaimSpec(volume_name=bound,
                                                   storage_class_name=class_name)))
    classes = [storage.StorageClass(metadata=api.ObjectMeta(name=name), provisioner=provisioner)
               for name, provisioner in CLASSES.items() if draw(st.booleans())]
    drivers = [storage.CSIDriver(metadata=api.ObjectMeta(name=driver),
                                 spec=storage.CSIDriverSpec(
                                     prevent_pod_scheduling_if_missing=draw(st.booleans())))
               for driver in DRIVERS if draw(st.booleans())]
    return {"pvs": pvs, "claims": claims, "classes": classes, "drivers": drivers}


@st.composite
def volumes(draw: st.DrawFn) -> list[api.Volume]:
    found = []
    for index in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(VOLUME_KINDS))
        name = f"v{index}"
        if kind == "claim":
            claim = draw(st.sampled_from(("c-0", "c-1", "c-2", "c-3", "c-0", "c-1", "c-2",
                                          "c-4", "c-5", "c-missing")))
            found.append(api.Volume(name=name, persistent_volume_claim=(
                api.PersistentVolumeClaimVolumeSource(claim_name=claim))))
        elif kind == "ephemeral":
            found.append(api.Volume(name=name, ephemeral=api.EphemeralVolumeSource()))
        elif kind == "inline":
            volume_id = draw(st.sampled_from(("vol-inline", "aws://zone/vol-x", "bad/id/x")))
            found.append(api.Volume(name=name,
                                    aws_elastic_block_store={"volumeID": volume_id}))
        else:
            found.append(api.Volume(name=name))
    return found


def _pod(name: str, uid: str, pod_volumes: list[api.Volume], node: str = "") -> PodInfo:
    pod = make_pod(name, namespace=NAMESPACE).uid(uid)
    if node:
        pod = pod.node(node)
    pod.obj().spec.volumes.extend(pod_volumes)
    return pod.info()


def _ephemeral_claims(pod: PodInfo, owned: bool) -> list[storage.PersistentVolumeClaim]:
    """The claims of the pod's generic ephemeral volumes, owned by it or not."""
    owners = [api.OwnerReference(kind="Pod", name=pod.pod.metadata.name, uid=pod.uid,
                                 controller=True)] if owned else []
    return [storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=f"{pod.pod.metadata.name}-{volume.name}",
                                namespace=NAMESPACE, owner_references=owners),
        spec=storage.PersistentVolumeClaimSpec(storage_class_name="csi-class"))
        for volume in pod.pod.spec.volumes if volume.ephemeral is not None]


@st.composite
def csi_nodes(draw: st.DrawFn, node: str) -> storage.CSINode | None:
    if draw(st.integers(0, 4)) == 0:
        return None
    drivers = []
    for driver in DRIVERS:
        if draw(st.booleans()):
            count = draw(st.sampled_from((None, 0, 1, 1, 2, 2, 3)))
            drivers.append(storage.CSINodeDriver(
                name=driver, allocatable=None if count is None else storage.VolumeNodeResources(
                    count=count)))
    return storage.CSINode(metadata=api.ObjectMeta(name=node),
                           spec=storage.CSINodeSpec(drivers=drivers))


@st.composite
def clusters(draw: st.DrawFn) -> tuple[FakeHandle, list[PodInfo], list[tuple[str, PodInfo]]]:
    objects = draw(storage_objects())
    handle = FakeHandle(features_value=Features(
        release=37 if draw(st.booleans()) else 36))
    listers = handle.storage_listers
    for pv in objects["pvs"]:
        listers.persistent_volumes.on_add(pv)
    for claim in objects["claims"]:
        listers.persistent_volume_claims.on_add(claim)
    for storage_class in objects["classes"]:
        listers.storage_classes.on_add(storage_class)
    for driver in objects["drivers"]:
        listers.csi_drivers.on_add(driver)
    node_names = [f"n{i}" for i in range(draw(st.integers(1, 6)))]
    for name in node_names:
        csi_node = draw(csi_nodes(name))
        if csi_node is not None:
            listers.csi_nodes.on_add(csi_node)
    for index in range(draw(st.integers(0, 6))):
        pv = draw(st.sampled_from(["pv-missing", *(pv.metadata.name for pv in objects["pvs"])]))
        listers.volume_attachments.on_add(storage.VolumeAttachment(
            metadata=api.ObjectMeta(name=f"va-{index}"),
            spec=storage.VolumeAttachmentSpec(
                attacher=draw(st.sampled_from(("", DRIVERS[0], DRIVERS[0], *DRIVERS))),
                node_name=draw(st.sampled_from(node_names)),
                source=storage.VolumeAttachmentSource(persistent_volume_name=pv))))
    placed: list[tuple[str, PodInfo]] = []
    for index in range(draw(st.integers(0, 12))):
        node = draw(st.sampled_from(node_names))
        pod = _pod(f"p{index}", f"uid-p{index}", draw(volumes()), node)
        for claim in _ephemeral_claims(pod, owned=draw(st.integers(0, 5)) > 0):
            listers.persistent_volume_claims.on_add(claim)
        placed.append((node, pod))
    later = [_pod(f"q{index}", f"uid-q{index}", draw(volumes()))
             for index in range(2)]
    for pod in later:
        if draw(st.integers(0, 3)) > 0:
            for claim in _ephemeral_claims(pod, owned=draw(st.integers(0, 5)) > 0):
                listers.persistent_volume_claims.on_add(claim)
    handle.snapshot_value = make_snapshot(*(
        make_node(name).info(*(pod for node, pod in placed if node == name))
        for name in node_names))
    return handle, later, placed


def _judge(plugin: nvl.NodeVolumeLimits, pod: PodInfo, snapshot: Snapshot) -> None:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snapshot.node_infos)
    if status.code == Code.SKIP:
        return
    expected: list[Status] = [plugin.filter(state, pod, info) for info in snapshot.node_infos]
    mask = plugin.filter_vector(state, pod, snapshot)
    errors = [s for s in expected if s.code == Code.ERROR]
    if errors:
        assert mask is None, [s.message() for s in errors]
        return
    assert mask is not None
    assert mask.tolist() == [s.ok for s in expected]


@_SETTINGS
@given(clusters(), st.data())
def test_vector_filter_matches_per_node_filter(
        cluster: tuple[FakeHandle, list[PodInfo], list[tuple[str, PodInfo]]],
        data: st.DataObject) -> None:
    handle, pods, _ = cluster
    plugin = nvl.new(None, handle)
    snapshot = handle.snapshot_value
    _judge(plugin, pods[0], snapshot)
    # Pods placed on nodes (the snapshot replaces their rows), and a storage object
    # added: the rows kept from the first rounds must follow.
    for index in range(2):
        row = data.draw(st.integers(0, len(snapshot.node_infos) - 1))
        placed = snapshot.node_infos[row].clone()
        placed.add_pod(_pod(f"r{index}", f"uid-r{index}", data.draw(volumes()), placed.name))
        snapshot.replace(placed)
        _judge(plugin, pods[0], snapshot)
    change = data.draw(st.sampled_from(("claim", "csi-node", "attachment", "none")))
    listers = handle.storage_listers
    if change == "claim":
        listers.persistent_volume_claims.on_add(storage.PersistentVolumeClaim(
            metadata=api.ObjectMeta(name="c-missing", namespace=NAMESPACE),
            spec=storage.PersistentVolumeClaimSpec(volume_name="pv-0")))
    elif change == "csi-node":
        listers.csi_nodes.on_add(storage.CSINode(
            metadata=api.ObjectMeta(name=placed.name), spec=storage.CSINodeSpec(drivers=[
                storage.CSINodeDriver(name=driver, allocatable=storage.VolumeNodeResources(
                    count=1)) for driver in DRIVERS])))
    elif change == "attachment":
        listers.volume_attachments.on_add(storage.VolumeAttachment(
            metadata=api.ObjectMeta(name="va-new"), spec=storage.VolumeAttachmentSpec(
                attacher=DRIVERS[0], node_name=placed.name,
                source=storage.VolumeAttachmentSource(persistent_volume_name="pv-0"))))
    _judge(plugin, pods[0], snapshot)
    _judge(plugin, pods[1], snapshot)


def test_in_tree_claims_on_nodes_without_csi_nodes_pass_every_row() -> None:
    """SchedulingInTreePVs' shape: bound EBS PVs, no CSINode anywhere: all rows pass."""
    handle = FakeHandle()
    listers = handle.storage_listers
    listers.persistent_volumes.on_add(_pv("pv-0", "ebs", DRIVERS[0], None))
    listers.persistent_volume_claims.on_add(storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name="c-0", namespace=NAMESPACE),
        spec=storage.PersistentVolumeClaimSpec(volume_name="pv-0")))
    handle.snapshot_value = make_snapshot(*(make_node(f"n{i}").info() for i in range(3)))
    claim = api.Volume(name="v", persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
        claim_name="c-0"))
    plugin = nvl.new(None, handle)
    state = CycleState()
    pod = _pod("p", "uid-p", [claim])
    assert plugin.pre_filter(state, pod, handle.snapshot_value.node_infos)[1].ok
    mask = plugin.filter_vector(state, pod, handle.snapshot_value)
    assert mask is not None and mask.tolist() == [True, True, True]


def test_csi_limits_count_the_pods_on_each_node() -> None:
    """SchedulingCSIPVs' shape: a CSINode with a limit of 2 on every node; a node
    holding two volumes of the driver is full, one holding the pod's own volume is not."""
    handle = FakeHandle()
    listers = handle.storage_listers
    driver = DRIVERS[0]
    for i in range(4):
        listers.persistent_volumes.on_add(_pv(f"pv-{i}", "csi", driver, None))
        listers.persistent_volume_claims.on_add(storage.PersistentVolumeClaim(
            metadata=api.ObjectMeta(name=f"c-{i}", namespace=NAMESPACE),
            spec=storage.PersistentVolumeClaimSpec(volume_name=f"pv-{i}")))
    for i in range(3):
        listers.csi_nodes.on_add(storage.CSINode(
            metadata=api.ObjectMeta(name=f"n{i}"), spec=storage.CSINodeSpec(drivers=[
                storage.CSINodeDriver(name=driver,
                                      allocatable=storage.VolumeNodeResources(count=2))])))

    def claim(name: str) -> api.Volume:
        return api.Volume(name=name, persistent_volume_claim=(
            api.PersistentVolumeClaimVolumeSource(claim_name=name)))

    full = [_pod("a", "uid-a", [claim("c-1")], "n0"), _pod("b", "uid-b", [claim("c-2")], "n0")]
    sharing = [_pod("c", "uid-c", [claim("c-0")], "n1"), _pod("d", "uid-d", [claim("c-3")], "n1")]
    handle.snapshot_value = make_snapshot(make_node("n0").info(*full),
                                          make_node("n1").info(*sharing), make_node("n2").info())
    plugin = nvl.new(None, handle)
    state = CycleState()
    pod = _pod("p", "uid-p", [claim("c-0")])
    assert plugin.pre_filter(state, pod, handle.snapshot_value.node_infos)[1].ok
    mask = plugin.filter_vector(state, pod, handle.snapshot_value)
    assert mask is not None and mask.tolist() == [False, True, True]
