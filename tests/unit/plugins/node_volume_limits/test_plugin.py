"""NodeVolumeLimits, with upstream's csi_test.go TestCSILimits table (its fixtures: four
PVs and claims "csi-<driver>-<j>" per driver, claims csi-4 (unbound, class csi-sc),
csi-5 (no class) and csi-6 (PV missing), a CSINode with or without limits, and
VolumeAttachments "va-<driver>-<j>" of those PVs), TestVolumeLimitScalingGate under
both releases, and the CSI translation of in-tree volumes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kpysched.config.features import DEFAULT, Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api, storage
from kpysched.plugins import node_volume_limits as nvl
from kpysched.plugins.node_volume_limits import translation
from kpysched.plugins.node_volume_limits.ebs_volume_id import ebs_volume_id
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod
from tests.unit.plugins.hints import registered

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_IN_TREE = translation.AWS_EBS
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
NODE = "node-for-max-pd-test-1"
CLASS = "csi-sc"
EXCEEDED = (Code.UNSCHEDULABLE, [nvl.REASON_MAX_VOLUME_COUNT_EXCEEDED])
OK = (Code.SUCCESS, [])


def claims_pod(name: str, *claims: str) -> PodBuilder:
    pod = make_pod(name, namespace="")
    for claim in claims:
        pod.obj().spec.volumes.append(api.Volume(
            name=claim, persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
                claim_name=claim)))
    return pod


def volumes_pod(name: str, *volumes: api.Volume, namespace: str = "",
                uid: str = "") -> PodBuilder:
    pod = make_pod(name, namespace=namespace).uid(uid)
    pod.obj().spec.volumes.extend(volumes)
    return pod


def ephemeral(name: str) -> api.Volume:
    return api.Volume(name=name, ephemeral=api.EphemeralVolumeSource())


def inline_ebs(volume_id: str) -> api.Volume:
    return api.Volume(aws_elastic_block_store={"volumeID": volume_id})


CONFIG_MAP_AND_SECRET = (api.Volume(name="config"), api.Volume(name="secret"))


def owned_claim(pod: PodBuilder, volume: str, *, owned: bool = True
                ) -> storage.PersistentVolumeClaim:
    meta = pod.obj().metadata
    owners = [api.OwnerReference(kind="Pod", name=meta.name, uid=meta.uid, controller=True)]
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(namespace=meta.namespace, name=f"{meta.name}-{volume}",
                                owner_references=owners if owned else []),
        spec=storage.PersistentVolumeClaimSpec(storage_class_name=CLASS))


RUNNING = claims_pod("running", f"csi-{EBS}-3")
PENDING = claims_pod("pending", "csi-4")
UNBOUND_2 = claims_pod("unbound-2", "csi-4")
MISSING_PV = claims_pod("missing-pv", "csi-6")
NO_CLASS = claims_pod("no-class", "csi-5")
GCE_TWO = claims_pod("gce-two", f"csi-{GCE}-1", f"csi-{GCE}-2")
IN_TREE_ONE = claims_pod("in-tree-one", f"csi-{AWS_IN_TREE}-0")
IN_TREE_TWO = claims_pod("in-tree-two", f"csi-{AWS_IN_TREE}-1", f"csi-{AWS_IN_TREE}-2")
EBS_ONE = claims_pod("ebs-one", f"csi-{EBS}-0")
EBS_TWO = claims_pod("ebs-two", f"csi-{EBS}-1", f"csi-{EBS}-2")
HOSTPATH_ONE = claims_pod("hostpath-one", f"csi-{HOSTPATH_IN_TREE}-0")
EPHEMERAL = volumes_pod("abc", ephemeral("xyz"), namespace="test", uid="12345")
EPHEMERAL_TWO = volumes_pod("abc", ephemeral("x"), ephemeral("y"), namespace="test",
                            uid="12345II")
INLINE = volumes_pod("inline", inline_ebs("aws-inline1"))
INLINE_SAME_ID = volumes_pod("inline-same-id", inline_ebs(f"csi-{EBS}-1"))
ONLY_CONFIG_MAP_AND_SECRET = volumes_pod("cm-secret", *CONFIG_MAP_AND_SECRET)
PVC_WITH_CONFIG_MAP_AND_SECRET = volumes_pod(
    "pvc-cm-secret", *CONFIG_MAP_AND_SECRET, api.Volume(
        persistent_volume_claim=api.PersistentVolumeClaimVolumeSource(
            claim_name=f"csi-{EBS}-0")))
EPHEMERAL_WITH_CONFIG_MAP_AND_SECRET = volumes_pod(
    "abc", *CONFIG_MAP_AND_SECRET, ephemeral("xyz"), namespace="test")
INLINE_WITH_CONFIG_MAP_AND_SECRET = volumes_pod(
    "inline-cm-secret", *CONFIG_MAP_AND_SECRET, inline_ebs("aws-inline1"))


def fixture_pv(driver: str, index: int) -> storage.PersistentVolume:
    name = f"csi-{driver}-{index}"
    if driver == AWS_IN_TREE:
        spec = storage.PersistentVolumeSpec(aws_elastic_block_store={"volumeID": name})
    elif driver == HOSTPATH_IN_TREE:
        spec = storage.PersistentVolumeSpec(host_path={"path": "/tmp"})
    else:
        spec = storage.PersistentVolumeSpec(
            csi=storage.CSIPersistentVolumeSource(driver=driver, volume_handle=name))
    return storage.PersistentVolume(metadata=api.ObjectMeta(name=name), spec=spec)


def fixture_claims(drivers: Sequence[str]) -> list[storage.PersistentVolumeClaim]:
    def claim(name: str, volume: str = "", class_name: str | None = None
              ) -> storage.PersistentVolumeClaim:
        return storage.PersistentVolumeClaim(
            metadata=api.ObjectMeta(name=name),
            spec=storage.PersistentVolumeClaimSpec(volume_name=volume,
                                                   storage_class_name=class_name))
    claims = [claim(f"csi-{driver}-{j}", f"csi-{driver}-{j}")
              for driver in drivers for j in range(4)]
    return [*claims, claim("csi-4", class_name=CLASS), claim("csi-5"),
            claim("csi-6", "missing-in-action", CLASS)]


def fixture_csi_node(limit_source: str, limit: int,
                     drivers: Sequence[str]) -> storage.CSINode | None:
    if not limit_source:
        return None
    allocatable = (storage.VolumeNodeResources(count=limit) if limit_source == "csinode"
                   else None)
    listed = [] if limit_source == "no-csi-driver" else drivers
    return storage.CSINode(
        metadata=api.ObjectMeta(name=NODE),
        spec=storage.CSINodeSpec(drivers=[
            storage.CSINodeDriver(name=driver, node_id=NODE, allocatable=allocatable)
            for driver in listed]))


def fixture_attachments(count: int, drivers: Sequence[str]) -> list[storage.VolumeAttachment]:
    return [storage.VolumeAttachment(
        metadata=api.ObjectMeta(name=f"va-{driver}-{j}"),
        spec=storage.VolumeAttachmentSpec(
            node_name=NODE, attacher=driver,
            source=storage.VolumeAttachmentSource(persistent_volume_name=f"csi-{driver}-{j}")))
        for driver in drivers for j in range(count)]


def make_plugin(drivers: Sequence[str], *, limit_source: str = "", limit: int = 0,
                attachments: int = 0, extra_claims: Sequence[storage.PersistentVolumeClaim] = (),
                extra_attachments: Sequence[storage.VolumeAttachment] = (),
                csi_drivers: Sequence[storage.CSIDriver] = (),
                features: Features = DEFAULT,
                ) -> nvl.NodeVolumeLimits:
    handle = FakeHandle(features_value=features)
    listers = handle.storage_listers
    for csi_driver in csi_drivers:
        listers.csi_drivers.on_add(csi_driver)
    for driver in drivers:
        for j in range(4):
            listers.persistent_volumes.on_add(fixture_pv(driver, j))
    for claim in [*fixture_claims(drivers), *extra_claims]:
        listers.persistent_volume_claims.on_add(claim)
    listers.storage_classes.on_add(storage.StorageClass(
        metadata=api.ObjectMeta(name=CLASS), provisioner=drivers[0]))
    csi_node = fixture_csi_node(limit_source, limit, drivers)
    if csi_node is not None:
        listers.csi_nodes.on_add(csi_node)
    for attachment in [*fixture_attachments(attachments, drivers), *extra_attachments]:
        listers.volume_attachments.on_add(attachment)
    return nvl.new(None, handle)


@dataclass
class Case:
    pod: PodBuilder
    drivers: tuple[str, ...]
    existing: tuple[PodBuilder, ...] = ()
    limit: int = 0
    limit_source: str = ""
    attachments: int = 0
    extra_claims: tuple[storage.PersistentVolumeClaim, ...] = ()
    want: tuple[Code, list[str]] = field(default_factory=lambda: OK)
    want_pre: Code = Code.SUCCESS


def case(name: str, *args: Any, **kwargs: Any) -> Any:
    return pytest.param(Case(*args, **kwargs), id=name)


MIGRATING = (AWS_IN_TREE, EBS)
# Upstream's fake lister spells the resource "persistentvolumeclaims"; the informer's
# lister kube-scheduler runs with names it in the singular.
EPHEMERAL_MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                     ['looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'])

CSI_LIMITS_CASES = [
    case("should count VolumeAttachments towards volume limit when no pods exist",
         EBS_ONE, (EBS,), limit=2, attachments=2, limit_source="csinode", want=EXCEEDED),
    case("should schedule pod when VolumeAttachments count does not exceed limit",
         EBS_ONE, (EBS,), limit=2, attachments=1, limit_source="csinode"),
    case("fits when node volume limit >= new pods CSI volume",
         EBS_ONE, (EBS,), (RUNNING, EBS_TWO), limit=4, limit_source="csinode"),
    case("doesn't when node volume limit <= pods CSI volume",
         EBS_ONE, (EBS,), (RUNNING, EBS_TWO), limit=2, limit_source="csinode", want=EXCEEDED),
    case("should when driver does not support volume limits",
         EBS_ONE, (EBS,), (RUNNING, EBS_TWO), limit=2, limit_source="csinode-with-no-limit"),
    case("count pending PVCs towards volume limit <= pods CSI volume",
         EBS_ONE, (EBS,), (PENDING, EBS_TWO), limit=2, limit_source="csinode", want=EXCEEDED),
    case("count multiple pending pvcs towards volume limit >= pods CSI volume",
         EBS_ONE, (EBS,), (PENDING, UNBOUND_2, EBS_TWO), limit=4, limit_source="csinode"),
    case("should count PVCs with invalid PV name but valid SC",
         EBS_ONE, (EBS,), (MISSING_PV, EBS_TWO), limit=2, limit_source="csinode",
         want=EXCEEDED),
    case("don't count pvcs with missing SC towards volume limit",
         EBS_ONE, (EBS,), (RUNNING, NO_CLASS), limit=2, limit_source="csinode"),
    case("count pvcs with the same type towards volume limit",
         EBS_ONE, (EBS, GCE), (GCE_TWO, EBS_TWO), limit=2, limit_source="csinode",
         want=EXCEEDED),
    case("don't count pvcs with different type towards volume limit",
         GCE_TWO, (EBS, GCE), (EBS_TWO, RUNNING), limit=2, limit_source="csinode"),
    case("should count in-tree volumes if migration is enabled",
         IN_TREE_ONE, MIGRATING, (IN_TREE_TWO,), limit=2, limit_source="csinode",
         want=EXCEEDED),
    case("nil csi node", INLINE, MIGRATING, (IN_TREE_TWO,)),
    case("should count unbound in-tree volumes if migration is enabled",
         PENDING, MIGRATING, (IN_TREE_TWO,), limit=2, limit_source="csinode", want=EXCEEDED),
    case("should not limit pod if volume used does not report limits",
         IN_TREE_ONE, MIGRATING, (IN_TREE_TWO,), limit=2,
         limit_source="csinode-with-no-limit"),
    case("should not count non-migratable in-tree volumes",
         HOSTPATH_ONE, (HOSTPATH_IN_TREE, EBS), (EBS_TWO,), limit=2, limit_source="csinode"),
    case("should count in-tree inline volumes if migration is enabled",
         INLINE, MIGRATING, (IN_TREE_TWO,), limit=2, limit_source="csinode", want=EXCEEDED),
    case("should count in-tree and csi volumes if migration is enabled "
         "(when scheduling in-tree volumes)",
         IN_TREE_ONE, MIGRATING, (EBS_TWO,), limit=2, limit_source="csinode", want=EXCEEDED),
    case("should count in-tree, inline and csi volumes if migration is enabled "
         "(when scheduling in-tree volumes)",
         INLINE, MIGRATING, (EBS_TWO, IN_TREE_ONE), limit=3, limit_source="csinode",
         want=EXCEEDED),
    case("should not count in-tree, inline and csi volumes if migration is enabled "
         "(when scheduling in-tree volumes)",
         INLINE_SAME_ID, MIGRATING, (EBS_TWO, IN_TREE_ONE), limit=3, limit_source="csinode"),
    case("should count in-tree and csi volumes if migration is enabled "
         "(when scheduling csi volumes)",
         EBS_ONE, MIGRATING, (IN_TREE_TWO,), limit=2, limit_source="csinode", want=EXCEEDED),
    case("ephemeral volume missing", EPHEMERAL, (EBS,), limit_source="csinode-with-no-limit",
         want=EPHEMERAL_MISSING),
    case("ephemeral volume not owned", EPHEMERAL, (EBS,),
         limit_source="csinode-with-no-limit",
         extra_claims=(owned_claim(EPHEMERAL, "xyz", owned=False),),
         want=(Code.ERROR,
               ["PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"])),
    case("ephemeral volume unbound", EPHEMERAL, (EBS,), limit_source="csinode-with-no-limit",
         extra_claims=(owned_claim(EPHEMERAL, "xyz"),)),
    case("ephemeral doesn't when node volume limit <= pods CSI volume",
         EPHEMERAL, (EBS,), (RUNNING, EBS_TWO), limit=2, limit_source="csinode",
         extra_claims=(owned_claim(EPHEMERAL, "xyz"),), want=EXCEEDED),
    case("ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
         EBS_ONE, (EBS,), (RUNNING, EPHEMERAL_TWO), limit=2, limit_source="csinode",
         extra_claims=(owned_claim(EPHEMERAL_TWO, "x"), owned_claim(EPHEMERAL_TWO, "y")),
         want=EXCEEDED),
    # Upstream's "ephemeral disabled" variant: the gate is long gone, the answer the same.
    case("persistent doesn't when node volume limit <= pods ephemeral CSI volume + "
         "persistent volume, ephemeral disabled",
         EBS_ONE, (EBS,), (RUNNING, EPHEMERAL, EBS_TWO), limit=3, limit_source="csinode",
         extra_claims=(owned_claim(EPHEMERAL, "xyz"),), want=EXCEEDED),
    case("persistent doesn't when node volume limit <= pods ephemeral CSI volume + "
         "persistent volume",
         EBS_ONE, (EBS,), (RUNNING, EPHEMERAL, EBS_TWO), limit=3, limit_source="csinode",
         extra_claims=(owned_claim(EPHEMERAL, "xyz"),), want=EXCEEDED),
    case("persistent okay when node volume limit > pods ephemeral CSI volume + "
         "persistent volume",
         EBS_ONE, (EBS,), (RUNNING, EPHEMERAL, EBS_TWO), limit=5, limit_source="csinode",
         extra_claims=(owned_claim(EPHEMERAL, "xyz"),)),
    case("skip Filter when the pod only uses secrets and configmaps",
         ONLY_CONFIG_MAP_AND_SECRET, (EBS,), limit=2, limit_source="csinode",
         want_pre=Code.SKIP),
    case("don't skip Filter when the pod has pvcs",
         PVC_WITH_CONFIG_MAP_AND_SECRET, (EBS,), limit=2, limit_source="csinode"),
    case("don't skip Filter when the pod has ephemeral volumes",
         EPHEMERAL_WITH_CONFIG_MAP_AND_SECRET, (EBS,), limit_source="csinode-with-no-limit",
         want=EPHEMERAL_MISSING),
    case("don't skip Filter when the pod has inline migratable volumes",
         INLINE_WITH_CONFIG_MAP_AND_SECRET, MIGRATING, (IN_TREE_TWO,), limit=2,
         limit_source="csinode", want=EXCEEDED),
    # A CSINode listing no driver does not stop the pod while no CSIDriver opts in to
    # preventPodSchedulingIfMissing (the gate's own table: test_volume_limit_scaling_gate).
    case("gate disabled - skip driver presence check", EBS_ONE, (EBS,),
         limit_source="no-csi-driver"),
]


def csi_driver(name: str, *, prevent_if_missing: bool | None) -> storage.CSIDriver:
    return storage.CSIDriver(metadata=api.ObjectMeta(name=name), spec=storage.CSIDriverSpec(
        prevent_pod_scheduling_if_missing=prevent_if_missing))


NOT_INSTALLED = (Code.UNSCHEDULABLE, [nvl.REASON_DRIVER_NOT_INSTALLED.format(EBS)])
ON_37 = Features(release=37)
OFF_37 = Features(release=37, overrides={nvl.VOLUME_LIMIT_SCALING: False})
ON_36 = Features(release=36, overrides={nvl.VOLUME_LIMIT_SCALING: True})


# Upstream's TestVolumeLimitScalingGate (a pod with one EBS claim), under each release's
# default and with the gate set against it: the gate decides, not the release.
@pytest.mark.parametrize(("features", "limit_source", "limit", "drivers", "want"), [
    pytest.param(ON_37, "no-csi-driver", 0, (csi_driver(EBS, prevent_if_missing=None),), OK,
                 id="gate enabled - allow scheduling when CSIDriver exists but "
                    "PreventPodSchedulingIfMissing is not set"),
    pytest.param(ON_37, "no-csi-driver", 0, (csi_driver(EBS, prevent_if_missing=False),), OK,
                 id="gate enabled - PreventPodSchedulingIfMissing false"),
    pytest.param(ON_37, "no-csi-driver", 0, (csi_driver(EBS, prevent_if_missing=True),),
                 NOT_INSTALLED, id="gate enabled - fail when driver not installed and "
                                   "PreventPodSchedulingIfMissing is true"),
    pytest.param(ON_37, "", 0, (csi_driver(EBS, prevent_if_missing=True),), NOT_INSTALLED,
                 id="gate enabled - no CSINode at all"),
    pytest.param(OFF_37, "no-csi-driver", 0, (csi_driver(EBS, prevent_if_missing=True),), OK,
                 id="gate disabled - skip driver presence check (regardless of CSIDriver "
                    "presence)"),
    pytest.param(Features(release=36), "no-csi-driver", 0,
                 (csi_driver(EBS, prevent_if_missing=True),), OK,
                 id="v1.36 default (gate off) - skip driver presence check"),
    pytest.param(ON_36, "no-csi-driver", 0, (csi_driver(EBS, prevent_if_missing=True),),
                 NOT_INSTALLED, id="v1.36 with the gate turned on"),
    pytest.param(ON_37, "csinode", 2, (csi_driver(EBS, prevent_if_missing=True),), OK,
                 id="gate enabled - driver installed within limit"),
    pytest.param(ON_37, "no-csi-driver", 0, (), OK,
                 id="gate enabled - allow scheduling when CSIDriver object missing"),
])
def test_volume_limit_scaling_gate(features: Features, limit_source: str, limit: int,
                                   drivers: Sequence[storage.CSIDriver],
                                   want: tuple[Code, list[str]]) -> None:
    plugin = make_plugin((EBS,), limit_source=limit_source, limit=limit, csi_drivers=drivers,
                         features=features)
    pre_code, status = run(plugin, EBS_ONE)
    assert pre_code == Code.SUCCESS
    assert status == want


def test_driver_check_comes_before_the_limits() -> None:
    """A missing driver is named even where the node has no limits at all."""
    plugin = make_plugin((EBS,), limit_source="", csi_drivers=(
        csi_driver(EBS, prevent_if_missing=True),), features=ON_37)
    assert run(plugin, EBS_ONE)[1] == NOT_INSTALLED
    assert run(plugin, ONLY_CONFIG_MAP_AND_SECRET)[0] == Code.SKIP


def run(plugin: nvl.NodeVolumeLimits, pod: PodBuilder, existing: Sequence[PodBuilder] = ()
        ) -> tuple[Code, tuple[Code, list[str]] | None]:
    state = CycleState()
    _, pre_status = plugin.pre_filter(state, pod.info(), [])
    if pre_status.code == Code.SKIP:
        return pre_status.code, None
    status = plugin.filter(state, pod.info(), make_node(NODE).info(*existing))
    return pre_status.code, (status.code, status.reasons)


@pytest.mark.parametrize("test", CSI_LIMITS_CASES)
def test_csi_limits(test: Case) -> None:
    plugin = make_plugin(test.drivers, limit_source=test.limit_source, limit=test.limit,
                         attachments=test.attachments, extra_claims=test.extra_claims)
    pre_code, status = run(plugin, test.pod, test.existing)
    assert pre_code == test.want_pre
    if pre_code != Code.SKIP:
        assert status == test.want


def test_filter_works_without_pre_filter_state() -> None:
    plugin = make_plugin((EBS,), limit=2, attachments=2, limit_source="csinode")
    status = plugin.filter(CycleState(), EBS_ONE.info(), make_node(NODE).info())
    assert (status.code, status.reasons) == EXCEEDED


def attachment(name: str, attacher: str, pv: str | None,
               node: str = NODE) -> storage.VolumeAttachment:
    return storage.VolumeAttachment(
        metadata=api.ObjectMeta(name=name),
        spec=storage.VolumeAttachmentSpec(
            node_name=node, attacher=attacher,
            source=storage.VolumeAttachmentSource(persistent_volume_name=pv)))


@pytest.mark.parametrize("skipped", [
    pytest.param(attachment("a", "", f"csi-{EBS}-1"), id="no attacher"),
    pytest.param(attachment("a", EBS, None), id="no PV name"),
    pytest.param(attachment("a", EBS, "gone"), id="PV not found"),
    pytest.param(attachment("a", EBS, f"csi-{AWS_IN_TREE}-1"), id="PV not a CSI volume"),
    pytest.param(attachment("a", EBS, f"csi-{EBS}-1", node="other"), id="other node"),
])
def test_attachments_that_do_not_count(skipped: storage.VolumeAttachment) -> None:
    plugin = make_plugin(MIGRATING, limit=1, limit_source="csinode",
                         extra_attachments=[skipped])
    assert run(plugin, EBS_ONE)[1] == OK


def test_attachment_of_the_pods_own_volume_still_counts_once_more() -> None:
    """Upstream dedupes attachments against the node's pods, not against the new pod."""
    plugin = make_plugin((EBS,), limit=1, limit_source="csinode",
                         extra_attachments=[attachment("a", EBS, f"csi-{EBS}-0")])
    assert run(plugin, EBS_ONE)[1] == EXCEEDED


def test_claim_of_a_pod_already_there_that_is_gone_is_not_counted() -> None:
    plugin = make_plugin((EBS,), limit=1, limit_source="csinode")
    assert run(plugin, EBS_ONE, [claims_pod("gone", "no-such-claim")])[1] == OK


@pytest.mark.parametrize(("volume", "reason"), [
    pytest.param(inline_ebs("aws://us-east-1a/disk-1"),
                 "failed to translate Kubernetes ID to EBS Volume ID "
                 "Invalid format for AWS volume (aws://us-east-1a/disk-1)", id="EBS bad ID"),
    pytest.param(api.Volume(azure_disk={"diskURI": "uri", "kind": "Shared"}),
                 "kind(Shared) is not supported in csi migration", id="Azure disk not managed"),
])
def test_untranslatable_inline_volume_is_a_filter_error(volume: api.Volume, reason: str) -> None:
    volume.name = "data"
    plugin = make_plugin(MIGRATING, limit=2, limit_source="csinode")
    assert run(plugin, volumes_pod("p", volume))[1] == (
        Code.ERROR, [f"converting volume(data) from inline to csi: {reason}"])


def test_untranslatable_inline_volume_on_a_node_without_csinode_is_ignored() -> None:
    plugin = make_plugin(MIGRATING)
    assert run(plugin, volumes_pod("p", api.Volume(azure_disk={"kind": "Shared"})))[1] == OK


def test_inline_volumes_of_plugins_never_migrated_are_not_counted() -> None:
    """Azure File and vSphere make PreFilter run, but the scheduler never translates them."""
    plugin = make_plugin((translation.AZURE_FILE, "file.csi.azure.com"), limit=0,
                         limit_source="csinode")
    pod = volumes_pod("p", api.Volume(azure_file={"shareName": "s", "secretName": "x"}))
    assert run(plugin, pod) == (Code.SUCCESS, OK)


def test_pending_claim_of_a_class_whose_in_tree_provisioner_is_not_migrated() -> None:
    plugin = make_plugin((translation.VSPHERE, "csi.vsphere.vmware.com"), limit=0,
                         limit_source="csinode")
    assert run(plugin, PENDING)[1] == OK


def test_claim_without_a_name_is_an_error() -> None:
    plugin = make_plugin((EBS,), limit=1, limit_source="csinode")
    assert run(plugin, claims_pod("p", ""))[1] == (
        Code.ERROR, ["PersistentVolumeClaim had no name"])


def gce_pv(**labels: str) -> storage.PersistentVolume:
    return storage.PersistentVolume(
        metadata=api.ObjectMeta(name="pv", labels=labels),
        spec=storage.PersistentVolumeSpec(gce_persistent_disk={"pdName": "disk"}))


@pytest.mark.parametrize(("pv", "want"), [
    pytest.param(gce_pv(), ("projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk", ""),
                 id="no zone"),
    pytest.param(gce_pv(**{"topology.kubernetes.io/zone": "us-central1-a"}),
                 ("projects/UNSPECIFIED/zones/us-central1-a/disks/disk", ""), id="zonal"),
    pytest.param(gce_pv(**{"failure-domain.beta.kubernetes.io/zone": "us-central1-a__us-central1-c",
                           "topology.kubernetes.io/zone": "ignored"}),
                 ("projects/UNSPECIFIED/regions/us-central1/disks/disk", ""),
                 id="regional from the beta label"),
])
def test_gce_pv_handles(pv: storage.PersistentVolume, want: tuple[str, str]) -> None:
    plugin = translation.pv_plugin(pv)
    assert plugin is not None
    assert translation.pv_handle(plugin, pv) == want


@pytest.mark.parametrize("zones", ["us-central1-a__europe-west1-b", "a__b"])
def test_gce_pv_of_zones_without_one_region_cannot_be_translated(zones: str) -> None:
    pv = gce_pv(**{"topology.kubernetes.io/zone": zones})
    plugin = translation.pv_plugin(pv)
    assert plugin is not None
    assert translation.pv_handle(plugin, pv)[1]


@pytest.mark.parametrize(("kubernetes_id", "want"), [
    pytest.param("vol-123", ("vol-123", ""), id="bare"),
    pytest.param("anything", ("anything", ""), id="bare ids are not checked"),
    pytest.param("aws://us-east-1a/vol-123", ("vol-123", ""), id="url"),
    pytest.param("aws:///vol-123/", ("vol-123", ""), id="no zone, slashes trimmed"),
    pytest.param("aws://us-east-1a/vol-1%32", ("vol-12", ""), id="path unescaped"),
    pytest.param("aws://us-east-1a/vol-1?x=y#frag", ("vol-1", ""), id="query and fragment"),
    pytest.param("aws://vol-123", ("", "Invalid format for AWS volume (aws://vol-123)"),
                 id="id as host"),
    pytest.param("aws://z/vol-1%zz",
                 ("", 'Invalid disk name (aws://z/vol-1%zz): parse "aws://z/vol-1%zz": '
                      'invalid URL escape "%zz"'), id="bad escape"),
    pytest.param("aws://z:port/vol-1",
                 ("", 'Invalid disk name (aws://z:port/vol-1): parse "aws://z:port/vol-1": '
                      'invalid port ":port" after host'), id="bad port"),
    pytest.param("aws://us east/vol-1",
                 ("", 'Invalid disk name (aws://us east/vol-1): parse "aws://us east/vol-1": '
                      'invalid character " " in host name'), id="bad host"),
    pytest.param("aws://z/vol-1\n",
                 ("", 'Invalid disk name (aws://z/vol-1\n): parse "aws://z/vol-1\\n": '
                      'net/url: invalid control character in URL'), id="control character"),
    pytest.param("aws://z/vol-1#%g",
                 ("", 'Invalid disk name (aws://z/vol-1#%g): parse "aws://z/vol-1#%g": '
                      'invalid URL escape "%g"'), id="bad fragment escape"),
])
def test_ebs_volume_id(kubernetes_id: str, want: tuple[str, str]) -> None:
    assert ebs_volume_id(kubernetes_id) == want


def test_spec_and_events() -> None:
    assert nvl.SPEC.extension_points() == ["preFilter", "filter"]
    assert registered(make_plugin((EBS,))) == [
        (ClusterEvent(Resource.CSI_NODE, ActionType.ADD), False),
        (ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE), True),
        (ClusterEvent(Resource.POD, ActionType.DELETE), True),
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), True),
        (ClusterEvent(Resource.VOLUME_ATTACHMENT, ActionType.DELETE), True),
    ]
