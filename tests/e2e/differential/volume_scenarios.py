"""Differential scenarios for pods with volumes: VolumeBinding, VolumeZone,
VolumeRestrictions and NodeVolumeLimits, each with exactly one right outcome.

Every scenario that binds leaves one feasible node, and where there are others, the
feasible one is the busiest (`_busy`): a scheduler that let the volume pass would
pick another by score, so agreeing on the node is never a coin toss. `expect_*` say
what upstream must do for the scenario to test what its name says. Upstream's
reason texts are in pkg/scheduler/framework/plugins/{volumebinding,volumezone,
volumerestrictions,nodevolumelimits} of kubernetes v1.36.4.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.differential.model import (
    IMMEDIATE,
    CapacitySpec,
    CSIDriverSpec,
    CSINodeSpec,
    NodeSpec,
    PodSpec,
    PvcSpec,
    PvSpec,
    Scenario,
    StorageClassSpec,
)

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
GCE_PD = "pd.csi.storage.gke.io"  # what CSI migration counts gcePersistentDisk as
AWS_EBS = "ebs.csi.aws.com"  # ... and awsElasticBlockStore

NODE_AFFINITY_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
NO_PV_TO_BIND = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_STORAGE = "node(s) did not have enough free storage"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ZONE_CONFLICT = "node(s) had no available volume zone"
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                 "access mode already in-use by another pod")
MAX_VOLUMES = "node(s) exceed max volume count"


def N(role: str, **kw: Any) -> NodeSpec:  # noqa: N802 - table shorthand
    return NodeSpec(role, **kw)


def P(role: str = "incoming", *volumes: dict[str, Any], **kw: Any) -> PodSpec:  # noqa: N802
    return PodSpec(role, spec={"volumes": list(volumes)}, **kw)


def claim(name: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def ephemeral(name: str, storage_class: str, request: str = "1Gi") -> dict[str, Any]:
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
        "resources": {"requests": {"storage": request}}}}}}


def gce_pd(disk: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": f"gce-{disk}", "gcePersistentDisk": {"pdName": disk, "readOnly": read_only}}


def aws_ebs(volume_id: str) -> dict[str, Any]:
    return {"name": f"ebs-{volume_id}", "awsElasticBlockStore": {"volumeID": volume_id}}


def inline_csi(name: str, driver: str) -> dict[str, Any]:
    return {"name": name, "csi": {"driver": driver}}


def csi_source(driver: str, handle: str) -> dict[str, Any]:
    return {"csi": {"driver": driver, "volumeHandle": handle}}


GKE_ZONE = "topology.gke.io/zone"  # the zone label GCE PD's CSI driver publishes
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
# Nodes whose kubelet runs in-tree GCE PD volumes through the CSI driver: only the
# driver's zone label, and a CSINode that says so.
GKE_NODES = tuple(N(f"n{i}", labels={GKE_ZONE: "abc"[i]}) for i in range(3))
GKE_CSI_NODES = tuple(CSINodeSpec(f"n{i}", {GCE_PD: None},
                                  annotations={MIGRATED_PLUGINS: "kubernetes.io/gce-pd"})
                      for i in range(3))


STATIC = StorageClassSpec("static")  # WaitForFirstConsumer, kubernetes.io/no-provisioner
MANUAL = StorageClassSpec("manual", binding_mode=IMMEDIATE)
PROVISIONED = StorageClassSpec("fast", provisioner="disk")  # the test provisioner serves it
IN_ZONE_B = StorageClassSpec("fast", provisioner="disk", allowed_topologies={ZONE: ("b",)})
TWO_ZONES = (N("n0", labels={ZONE: "a"}), N("n1", labels={ZONE: "b"}))
THREE_ZONES = tuple(N(f"n{i}", labels={ZONE: "abc"[i]}) for i in range(3))


def _bound_csi(*claims: str, driver: str = "disk") -> tuple[tuple[PvSpec, ...],
                                                          tuple[PvcSpec, ...]]:
    """CSI volumes of `driver`, one per claim, pre-bound to it (no class, no affinity)."""
    return (tuple(PvSpec(f"vol-{c}", source=csi_source(driver, f"handle-{c}"), claim=c)
                  for c in claims),
            tuple(PvcSpec(c) for c in claims))


def _busy(node: str) -> PodSpec:
    """A volume-less pod that makes `node` the least attractive by score."""
    return PodSpec(f"busy-{node}", node=node, cpu="2", memory="8Gi")


_LIMIT_AB = _bound_csi("a", "b")
_LIMIT_ABC = _bound_csi("a", "b", "c")
_LIMIT_A = _bound_csi("a")

VOLUME_BINDING: list[Scenario] = [
    Scenario("vb-bound-claim-follows-pv-node-affinity", (N("n0"), N("n1"), N("n2")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("pv", "static", node="n1", claim="data"),),
             pvcs=(PvcSpec("data", "static"),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "pv"}),
    Scenario("vb-bound-claim-pv-node-affinity-conflict", TWO_ZONES,
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("pv", "static", affinity={ZONE: ("c",)}),),
             pvcs=(PvcSpec("data", "static", volume="pv"),),
             expect="pending", expect_reason=f"2 {NODE_AFFINITY_CONFLICT}"),
    Scenario("vb-unbound-immediate-claim", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(MANUAL,),
             pvs=(PvSpec("too-small", "manual", capacity="1Gi"),),
             pvcs=(PvcSpec("data", "manual", request="5Gi"),),
             expect="pending", expect_reason=UNBOUND_IMMEDIATE),
    Scenario("vb-immediate-claim-bound-by-pv-controller", (N("n0"), N("n1"), N("n2")),
             P("incoming", claim("data")), storage_classes=(MANUAL,),
             pvs=(PvSpec("pv", "manual", node="n2"),),
             pvcs=(PvcSpec("data", "manual", bound=True),),
             existing=(_busy("n2"),), expect_node="n2", expect_claims={"data": "pv"}),
    Scenario("vb-claim-prebound-to-missing-pv", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvcs=(PvcSpec("data", "static", volume="ghost"),),
             expect="pending", expect_reason=UNBOUND_IMMEDIATE),
    Scenario("vb-wffc-static-pv-on-one-node", (N("n0"), N("n1"), N("n2")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("local-n2", "static", node="n2"),),
             pvcs=(PvcSpec("data", "static"),),
             existing=(_busy("n2"),), expect_node="n2", expect_claims={"data": "local-n2"}),
    Scenario("vb-wffc-smallest-fit", (N("n0"),),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("big", "static", capacity="50Gi"),
                  PvSpec("mid", "static", capacity="5Gi"),
                  PvSpec("tiny", "static", capacity="1Gi")),
             pvcs=(PvcSpec("data", "static", request="3Gi"),),
             expect_node="n0", expect_claims={"data": "mid"}),
    # Claims are matched smallest first: in pod order, y (2Gi) would take pv2 and x
    # (1Gi) pv4; smallest first, x takes pv2 and y pv4.
    Scenario("vb-wffc-smallest-claim-matched-first", (N("n0"),),
             P("incoming", claim("y"), claim("x")), storage_classes=(STATIC,),
             pvs=(PvSpec("pv2", "static", capacity="2Gi"),
                  PvSpec("pv4", "static", capacity="4Gi")),
             pvcs=(PvcSpec("y", "static", request="2Gi"), PvcSpec("x", "static", request="1Gi")),
             expect_claims={"x": "pv2", "y": "pv4"}),
    Scenario("vb-wffc-no-available-pv", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("small", "static", capacity="1Gi", node="n0"),),
             pvcs=(PvcSpec("data", "static", request="5Gi"),),
             expect="pending", expect_reason=f"2 {NO_PV_TO_BIND}"),
    Scenario("vb-wffc-access-modes", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("rwo", "static", node="n0"),
                  PvSpec("rwx", "static", node="n1", access_modes=("ReadWriteMany",))),
             pvcs=(PvcSpec("data", "static", access_modes=("ReadWriteMany",)),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "rwx"}),
    Scenario("vb-wffc-claim-selector", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("plain", "static", node="n0"),
                  PvSpec("ssd", "static", node="n1", labels={"disk": "ssd"})),
             pvcs=(PvcSpec("data", "static", selector={"disk": "ssd"}),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "ssd"}),
    Scenario("vb-provisioned-allowed-topologies", THREE_ZONES,
             P("incoming", claim("data")), storage_classes=(IN_ZONE_B,),
             pvcs=(PvcSpec("data", "fast", request="2Gi"),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "provisioned@n1"}),
    Scenario("vb-provisioned-allowed-topologies-nowhere", TWO_ZONES,
             P("incoming", claim("data")),
             storage_classes=(StorageClassSpec("fast", provisioner="disk",
                                               allowed_topologies={ZONE: ("z",)}),),
             pvcs=(PvcSpec("data", "fast"),),
             expect="pending", expect_reason=f"2 {NO_PV_TO_BIND}"),
    Scenario("vb-capacity-insufficient", TWO_ZONES,
             P("incoming", claim("data")), storage_classes=(PROVISIONED,),
             csi_drivers=(CSIDriverSpec("disk", storage_capacity=True),),
             capacities=(CapacitySpec("cap-a", "fast", {ZONE: "a"}, capacity="5Gi"),
                         CapacitySpec("cap-b", "fast", {ZONE: "b"}, capacity="1Gi")),
             pvcs=(PvcSpec("data", "fast", request="10Gi"),),
             expect="pending", expect_reason=f"2 {NOT_ENOUGH_STORAGE}"),
    Scenario("vb-capacity-zone-with-room", TWO_ZONES,
             P("incoming", claim("data")), storage_classes=(PROVISIONED,),
             csi_drivers=(CSIDriverSpec("disk", storage_capacity=True),),
             capacities=(CapacitySpec("cap-a", "fast", {ZONE: "a"}, capacity="5Gi"),
                         CapacitySpec("cap-b", "fast", {ZONE: "b"}, capacity="50Gi")),
             pvcs=(PvcSpec("data", "fast", request="10Gi"),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "provisioned@n1"}),
    # maximumVolumeSize, where given, is the limit, not the total capacity.
    Scenario("vb-capacity-maximum-volume-size", TWO_ZONES,
             P("incoming", claim("data")), storage_classes=(PROVISIONED,),
             csi_drivers=(CSIDriverSpec("disk", storage_capacity=True),),
             capacities=(CapacitySpec("cap-a", "fast", {ZONE: "a"}, capacity="100Gi",
                                      maximum_volume_size="5Gi"),
                         CapacitySpec("cap-b", "fast", {ZONE: "b"}, capacity="20Gi")),
             pvcs=(PvcSpec("data", "fast", request="10Gi"),),
             existing=(_busy("n1"),), expect_node="n1", expect_claims={"data": "provisioned@n1"}),
    Scenario("vb-ephemeral-provisioned", THREE_ZONES,
             P("incoming", ephemeral("scratch", "fast")), storage_classes=(IN_ZONE_B,),
             existing=(_busy("n1"),), expect_node="n1",
             expect_claims={"incoming-scratch": "provisioned@n1"}),
    Scenario("vb-ephemeral-no-pv", (N("n0"), N("n1")),
             P("incoming", ephemeral("scratch", "static")), storage_classes=(STATIC,),
             expect="pending", expect_reason=f"2 {NO_PV_TO_BIND}"),
    # Issue 33 item 11: a bound in-tree GCE PD with only a zone label is checked as the
    # CSI driver sees it (csi-translation-lib turns the label into affinity to the
    # driver's zone label); untranslated, every node would pass.
    Scenario("vb-csi-migrated-pv-zone-label-becomes-affinity", GKE_NODES,
             P("incoming", claim("data")), csi_nodes=GKE_CSI_NODES,
             pvs=(PvSpec("pd", labels={ZONE: "b"}, claim="data",
                         source={"gcePersistentDisk": {"pdName": "disk-1"}}),),
             pvcs=(PvcSpec("data"),), existing=(_busy("n1"),), expect_node="n1",
             expect_claims={"data": "pd"}),
    Scenario("vb-csi-migrated-pv-zone-label-conflict", GKE_NODES[:2],
             P("incoming", claim("data")), csi_nodes=GKE_CSI_NODES[:2],
             pvs=(PvSpec("pd", labels={ZONE: "z"}, claim="data",
                         source={"gcePersistentDisk": {"pdName": "disk-1"}}),),
             pvcs=(PvcSpec("data"),), expect="pending",
             expect_reason=f"2 {NODE_AFFINITY_CONFLICT}"),
    Scenario("missing-claim-not-found", (N("n0"), N("n1")),
             P("incoming", claim("missing")),
             expect="pending", expect_reason='persistentvolumeclaim "missing" not found'),
]

VOLUME_ZONE: list[Scenario] = [
    Scenario("vz-zonal-pv-picks-its-zone", THREE_ZONES,
             P("incoming", claim("data")),
             pvs=(PvSpec("pv", labels={ZONE: "b"}, claim="data"),), pvcs=(PvcSpec("data"),),
             existing=(_busy("n1"),), expect_node="n1"),
    Scenario("vz-zonal-pv-conflict", TWO_ZONES,
             P("incoming", claim("data")),
             pvs=(PvSpec("pv", labels={ZONE: "c"}, claim="data"),), pvcs=(PvcSpec("data"),),
             expect="pending", expect_reason=f"2 {ZONE_CONFLICT}"),
    Scenario("vz-node-without-zone-labels-passes", (N("n0", labels={ZONE: "a"}), N("n1")),
             P("incoming", claim("data")),
             pvs=(PvSpec("pv", labels={ZONE: "b"}, claim="data"),), pvcs=(PvcSpec("data"),),
             existing=(_busy("n1"),), expect_node="n1"),
    Scenario("vz-beta-zone-label-on-pv", THREE_ZONES,
             P("incoming", claim("data")),
             pvs=(PvSpec("pv", labels={BETA_ZONE: "c"}, claim="data"),), pvcs=(PvcSpec("data"),),
             existing=(_busy("n2"),), expect_node="n2"),
]

VOLUME_RESTRICTIONS: list[Scenario] = [
    Scenario("vr-rwop-claim-in-use", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(STATIC,),
             pvs=(PvSpec("pv", "static", access_modes=("ReadWriteOncePod",), claim="data"),),
             pvcs=(PvcSpec("data", "static", access_modes=("ReadWriteOncePod",)),),
             existing=(P("holder", claim("data"), node="n0"),),
             expect="pending", expect_reason=f"2 {RWOP_CONFLICT}"),
    Scenario("vr-gce-pd-conflict-avoided", (N("n0"), N("n1")),
             P("incoming", gce_pd("disk-1")),
             existing=(_busy("n1"), P("user", gce_pd("disk-1"), node="n0"),), expect_node="n1"),
    Scenario("vr-gce-pd-conflict-everywhere", (N("n0"), N("n1")),
             P("incoming", gce_pd("disk-1")),
             existing=(P("user-0", gce_pd("disk-1"), node="n0"),
                       P("user-1", gce_pd("disk-1", read_only=True), node="n1")),
             expect="pending", expect_reason=f"2 {DISK_CONFLICT}"),
    Scenario("vr-gce-pd-read-only-shared", (N("n0"),),
             P("incoming", gce_pd("disk-1", read_only=True)),
             existing=(P("reader", gce_pd("disk-1", read_only=True), node="n0"),),
             expect_node="n0"),
    Scenario("vr-aws-ebs-conflict-everywhere", (N("n0"), N("n1")),
             P("incoming", aws_ebs("vol-1")),
             existing=(P("user-0", aws_ebs("vol-1"), node="n0"),
                       P("user-1", aws_ebs("vol-1"), node="n1")),
             expect="pending", expect_reason=f"2 {DISK_CONFLICT}"),
]

NODE_VOLUME_LIMITS: list[Scenario] = [
    Scenario("nvl-csi-limit-avoids-full-node", (N("n0"), N("n1")),
             P("incoming", claim("b")), pvs=_LIMIT_AB[0], pvcs=_LIMIT_AB[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}), CSINodeSpec("n1", {"disk": 3})),
             existing=(_busy("n1"), P("user-a", claim("a"), node="n0"),), expect_node="n1"),
    Scenario("nvl-csi-limit-everywhere", (N("n0"), N("n1")),
             P("incoming", claim("c")), pvs=_LIMIT_ABC[0], pvcs=_LIMIT_ABC[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}), CSINodeSpec("n1", {"disk": 1})),
             existing=(P("user-a", claim("a"), node="n0"), P("user-b", claim("b"), node="n1")),
             expect="pending", expect_reason=f"2 {MAX_VOLUMES}"),
    # Two pods on n0 share claim a: one volume attached, so b is the second of two.
    Scenario("nvl-shared-volume-counted-once", (N("n0"),),
             P("incoming", claim("b")), pvs=_LIMIT_AB[0], pvcs=_LIMIT_AB[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 2}),),
             existing=(P("user-1", claim("a"), node="n0"), P("user-2", claim("a"), node="n0")),
             expect_node="n0"),
    Scenario("nvl-attached-volume-is-not-new", (N("n0"),),
             P("incoming", claim("a")), pvs=_LIMIT_A[0], pvcs=_LIMIT_A[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}),),
             existing=(P("user", claim("a"), node="n0"),), expect_node="n0"),
    Scenario("nvl-gce-pd-inline-counted-as-csi", (N("n0"), N("n1")),
             P("incoming", gce_pd("disk-2")),
             csi_nodes=(CSINodeSpec("n0", {GCE_PD: 1}), CSINodeSpec("n1", {GCE_PD: 2})),
             existing=(_busy("n1"), P("user", gce_pd("disk-1"), node="n0"),), expect_node="n1"),
    Scenario("nvl-aws-ebs-inline-limit-everywhere", (N("n0"), N("n1")),
             P("incoming", aws_ebs("vol-3")),
             csi_nodes=(CSINodeSpec("n0", {AWS_EBS: 1}), CSINodeSpec("n1", {AWS_EBS: 1})),
             existing=(P("user-0", aws_ebs("vol-1"), node="n0"),
                       P("user-1", aws_ebs("vol-2"), node="n1")),
             expect="pending", expect_reason=f"2 {MAX_VOLUMES}"),
    # An unbound claim counts against its class's provisioner (the CSI driver).
    Scenario("nvl-unbound-claim-counted-by-class", (N("n0"), N("n1")),
             P("incoming", claim("data")), storage_classes=(PROVISIONED,),
             pvs=_LIMIT_A[0], pvcs=(*_LIMIT_A[1], PvcSpec("data", "fast")),
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}), CSINodeSpec("n1", {"disk": 1})),
             existing=(_busy("n1"), P("user", claim("a"), node="n0"),),
             expect_node="n1", expect_claims={"data": "provisioned@n1"}),
    Scenario("nvl-ephemeral-claim-counted", (N("n0"), N("n1")),
             P("incoming", ephemeral("scratch", "fast")), storage_classes=(PROVISIONED,),
             pvs=_LIMIT_A[0], pvcs=_LIMIT_A[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}), CSINodeSpec("n1", {"disk": 1})),
             existing=(_busy("n1"), P("user", claim("a"), node="n0"),),
             expect_node="n1", expect_claims={"incoming-scratch": "provisioned@n1"}),
    # CSI ephemeral inline volumes are not attached: the limit does not count them.
    Scenario("nvl-inline-csi-not-counted", (N("n0"),),
             P("incoming", inline_csi("scratch", "disk")), pvs=_LIMIT_A[0], pvcs=_LIMIT_A[1],
             csi_nodes=(CSINodeSpec("n0", {"disk": 1}),),
             existing=(P("user", claim("a"), node="n0"),), expect_node="n0"),
]

VOLUME: list[Scenario] = VOLUME_BINDING + VOLUME_ZONE + VOLUME_RESTRICTIONS + NODE_VOLUME_LIMITS
