"""VolumeBinding's per-node decisions: upstream's binder_test.go tables
TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning (each
with no CSIDriver, one with capacity tracking and one without),
TestFindPodVolumesWithCSIMigration, TestCapacity and TestFindAssumeVolumes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kpysched.informers.listers import StorageListers
from kpysched.objects import api, storage
from kpysched.plugins.volume_binding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from tests.unit.plugins.volume_binding.builders import (
    IMMEDIATE_CLASS,
    NODE_LABEL_KEY,
    PROVISIONER,
    PVC_BOUND,
    PVC_PREBOUND,
    PVC_SELECTED_NODE,
    PVC_UNBOUND,
    TOPO_MISMATCH_CLASS,
    WAIT_CLASS,
    WAIT_CLASS_WITH_PROVISIONER,
    add,
    binder_test_classes,
    bound_pvc,
    make_capacity,
    make_csi_driver,
    make_csi_node,
    make_pod,
    make_test_pv,
    make_test_pvc,
    provisioned_pvc,
    pv_bound,
    pv_node1a,
    pv_node1a_bound,
    pv_node1b,
    pv_node2,
    selected_node_pvc,
    unbound_pvc,
    unbound_pvc2,
)

prebound_pvc = make_test_pvc("prebound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1", WAIT_CLASS)
immediate_unbound_pvc = make_test_pvc("immediate-unbound-pvc", "1G", "", PVC_UNBOUND, "", "1",
                                      IMMEDIATE_CLASS)
immediate_bound_pvc = make_test_pvc("immediate-bound-pvc", "1G", "", PVC_BOUND,
                                    "pv-bound-immediate", "1", IMMEDIATE_CLASS)
no_provisioner_pvc = make_test_pvc("no-provisioner-pvc", "1Gi", "", PVC_UNBOUND, "", "1",
                                   WAIT_CLASS)
topo_mismatch_pvc = make_test_pvc("topo-mismatch-pvc", "1Gi", "", PVC_UNBOUND, "", "1",
                                  TOPO_MISMATCH_CLASS)
bound_migration_pvc = make_test_pvc("pvc-migration-bound", "1G", "", PVC_BOUND,
                                    "pv-migration-bound", "1", WAIT_CLASS)


def _generic_pvc(owned: bool) -> storage.PersistentVolumeClaim:
    claim = make_test_pvc("test-pod-test-volume", "1G", "", PVC_BOUND, "pv-bound", "1",
                          IMMEDIATE_CLASS)
    if owned:
        claim.metadata.owner_references = [
            api.OwnerReference(name="test-pod", uid="", controller=True)]
    return claim


conflicting_generic_pvc = _generic_pvc(owned=False)
correct_generic_pvc = _generic_pvc(owned=True)
pv_bound_generic = make_test_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT_CLASS)

pv_node1c = make_test_pv("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
pv_bound_immediate = make_test_pv("pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc,
                                  IMMEDIATE_CLASS)
pv_bound_immediate_node2 = make_test_pv("pv-bound-immediate", "node2", "1G", "1",
                                        immediate_bound_pvc, IMMEDIATE_CLASS)

TEST_NODE_LABELS = {NODE_LABEL_KEY: "node1"}


def _migration_pv() -> storage.PersistentVolume:
    volume = make_test_pv("pv-migration-bound", "node1", "1G", "1", bound_migration_pvc,
                          WAIT_CLASS)
    volume.spec.node_affinity = None  # written by CSI translation upstream
    volume.metadata.labels = {"failure-domain.beta.kubernetes.io/zone": "us-east-1",
                              "failure-domain.beta.kubernetes.io/region": "us-east-1a"}
    volume.spec.gce_persistent_disk = {"pdName": "test-disk", "fsType": "ext4"}
    return volume


def _binder(*objects: object) -> VolumeBinder:
    listers = StorageListers()
    add(listers, *binder_test_classes(), *objects)
    return VolumeBinder(listers)


def find_pod_volumes(binder: VolumeBinder, pod: api.Pod, node_name: str = "node1",
                     labels: dict[str, str] | None = None) -> tuple[PodVolumes, list[str]]:
    """upstream's findPodVolumes test helper: claims, then the node's verdict."""
    claims = binder.get_pod_volume_claims(pod)
    if claims.unbound_immediate:
        raise BinderError("pod has unbound immediate PersistentVolumeClaims")
    return binder.find_pod_volumes(pod, claims, node_name,
                                   TEST_NODE_LABELS if labels is None else labels)


@dataclass
class Scenario:
    pvs: list[storage.PersistentVolume] = field(default_factory=list)
    pod_pvcs: list[storage.PersistentVolumeClaim] = field(default_factory=list)
    cache_pvcs: list[storage.PersistentVolumeClaim] | None = None  # None: pod_pvcs
    pod: api.Pod | None = None
    bindings: list[BindingInfo] = field(default_factory=list)
    provisions: list[DynamicProvision] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    should_fail: bool = False
    needs_capacity: bool = False


def _ephemeral_pod(volume: str) -> api.Pod:
    return make_pod(ephemeral=[volume])


WITHOUT_PROVISIONING = {
    "no-volumes": Scenario(pod=make_pod()),
    "no-pvcs": Scenario(pod=api.Pod(
        metadata=api.ObjectMeta(name="test-pod", namespace="testns"),
        spec=api.PodSpec(node_name="node1", volumes=[api.Volume(name="empty")]))),
    "pvc-not-found": Scenario(cache_pvcs=[], pod_pvcs=[bound_pvc], should_fail=True),
    "bound-pvc": Scenario(pod_pvcs=[bound_pvc], pvs=[pv_bound]),
    "bound-pvc,pv-not-exists": Scenario(pod_pvcs=[bound_pvc], reasons=[REASON_PV_NOT_EXIST]),
    "prebound-pvc": Scenario(pod_pvcs=[prebound_pvc], pvs=[pv_node1a_bound], should_fail=True),
    "unbound-pvc,pv-same-node": Scenario(
        pod_pvcs=[unbound_pvc], pvs=[pv_node2, pv_node1a, pv_node1b],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)]),
    "unbound-pvc,pv-different-node": Scenario(pod_pvcs=[unbound_pvc], pvs=[pv_node2],
                                              reasons=[REASON_BIND_CONFLICT]),
    "two-unbound-pvcs": Scenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2], pvs=[pv_node1a, pv_node1b],
        bindings=[BindingInfo(unbound_pvc, pv_node1a), BindingInfo(unbound_pvc2, pv_node1b)]),
    "two-unbound-pvcs,order-by-size": Scenario(
        pod_pvcs=[unbound_pvc2, unbound_pvc], pvs=[pv_node1a, pv_node1b],
        bindings=[BindingInfo(unbound_pvc, pv_node1a), BindingInfo(unbound_pvc2, pv_node1b)]),
    "two-unbound-pvcs,partial-match": Scenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2], pvs=[pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)], reasons=[REASON_BIND_CONFLICT]),
    "one-bound,one-unbound": Scenario(
        pod_pvcs=[unbound_pvc, bound_pvc], pvs=[pv_bound, pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)]),
    "one-bound,one-unbound,no-match": Scenario(
        pod_pvcs=[unbound_pvc, bound_pvc], pvs=[pv_bound, pv_node2],
        reasons=[REASON_BIND_CONFLICT]),
    "one-prebound,one-unbound": Scenario(pod_pvcs=[unbound_pvc, prebound_pvc],
                                         pvs=[pv_node1a, pv_node1b], should_fail=True),
    "immediate-bound-pvc": Scenario(pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate]),
    "immediate-bound-pvc-wrong-node": Scenario(
        pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate_node2],
        reasons=[REASON_NODE_CONFLICT]),
    "immediate-unbound-pvc": Scenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": Scenario(
        pod_pvcs=[immediate_unbound_pvc, bound_pvc], pvs=[pv_bound], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-unbound": Scenario(
        pod_pvcs=[immediate_unbound_pvc, unbound_pvc], should_fail=True),
    "generic-ephemeral,no-pvc": Scenario(pod=_ephemeral_pod("no-such-pvc"), should_fail=True),
    "generic-ephemeral,with-pvc": Scenario(pod=_ephemeral_pod("test-volume"),
                                           cache_pvcs=[correct_generic_pvc],
                                           pvs=[pv_bound_generic]),
    "generic-ephemeral,wrong-pvc": Scenario(pod=_ephemeral_pod("test-volume"),
                                            cache_pvcs=[conflicting_generic_pvc],
                                            pvs=[pv_bound_generic], should_fail=True),
}

WITH_PROVISIONING = {
    "one-provisioned": Scenario(pod_pvcs=[provisioned_pvc],
                                provisions=[DynamicProvision(provisioned_pvc)],
                                needs_capacity=True),
    "two-unbound-pvcs,one-matched,one-provisioned": Scenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc], pvs=[pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)],
        provisions=[DynamicProvision(provisioned_pvc)], needs_capacity=True),
    "one-bound,one-provisioned": Scenario(
        pod_pvcs=[bound_pvc, provisioned_pvc], pvs=[pv_bound],
        provisions=[DynamicProvision(provisioned_pvc)], needs_capacity=True),
    "one-binding,one-selected-node": Scenario(
        pod_pvcs=[bound_pvc, selected_node_pvc], pvs=[pv_bound],
        provisions=[DynamicProvision(selected_node_pvc)], needs_capacity=True),
    "immediate-unbound-pvc": Scenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "one-immediate-bound,one-provisioned": Scenario(
        pod_pvcs=[immediate_bound_pvc, provisioned_pvc], pvs=[pv_bound_immediate],
        provisions=[DynamicProvision(provisioned_pvc)], needs_capacity=True),
    "invalid-provisioner": Scenario(pod_pvcs=[no_provisioner_pvc],
                                    reasons=[REASON_BIND_CONFLICT]),
    "volume-topology-unsatisfied": Scenario(pod_pvcs=[topo_mismatch_pvc],
                                            reasons=[REASON_BIND_CONFLICT]),
}

DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": make_csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": make_csi_driver(PROVISIONER, False),
}


def _run(scenario: Scenario, driver: storage.CSIDriver | None) -> None:
    cached = scenario.pod_pvcs if scenario.cache_pvcs is None else scenario.cache_pvcs
    binder = _binder(*scenario.pvs, *cached, *([driver] if driver else []))
    pod = scenario.pod or make_pod(claims=scenario.pod_pvcs)
    if scenario.should_fail:
        with pytest.raises(BinderError):
            find_pod_volumes(binder, pod)
        return
    found, reasons = find_pod_volumes(binder, pod)
    want_reasons, want_provisions = scenario.reasons, scenario.provisions
    if scenario.needs_capacity and driver is not None and driver.spec.storage_capacity:
        # Without CSIStorageCapacity objects, provisioning is blocked.
        want_reasons, want_provisions = [*want_reasons, REASON_NOT_ENOUGH_SPACE], []
    assert reasons == want_reasons
    assert found.static_bindings == scenario.bindings
    assert found.dynamic_provisions == want_provisions


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=DRIVERS.keys())
@pytest.mark.parametrize("scenario", WITHOUT_PROVISIONING.values(),
                         ids=WITHOUT_PROVISIONING.keys())
def test_find_pod_volumes_without_provisioning(scenario: Scenario,
                                               driver: storage.CSIDriver | None) -> None:
    _run(scenario, driver)


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=DRIVERS.keys())
@pytest.mark.parametrize("scenario", WITH_PROVISIONING.values(), ids=WITH_PROVISIONING.keys())
def test_find_pod_volumes_with_provisioning(scenario: Scenario,
                                            driver: storage.CSIDriver | None) -> None:
    _run(scenario, driver)


ZONE1 = {"topology.gke.io/zone": "us-east-1"}
ZONE2 = {"topology.gke.io/zone": "us-east-2"}
CSI_MIGRATION = {
    "pvc-bound": (ZONE1, make_csi_node("node1", "kubernetes.io/gce-pd"), []),
    "pvc-bound,csinode-not-migrated": (ZONE1, make_csi_node("node1", ""), []),
    "pvc-bound,missing-csinode": (ZONE1, None, []),
    "pvc-bound,node-different-zone": (
        ZONE2, make_csi_node("node1", "kubernetes.io/gce-pd"), [REASON_NODE_CONFLICT]),
}


@pytest.mark.parametrize(("labels", "csi_node", "reasons"), CSI_MIGRATION.values(),
                         ids=CSI_MIGRATION.keys())
def test_find_pod_volumes_with_csi_migration(labels: dict[str, str],
                                             csi_node: storage.CSINode | None,
                                             reasons: list[str]) -> None:
    binder = _binder(_migration_pv(), bound_migration_pvc, *([csi_node] if csi_node else []))
    _, got = find_pod_volumes(binder, make_pod(claims=[bound_migration_pvc]), labels=labels)
    assert got == reasons


network_attached = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi")
node1_capacity = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "1Gi")
node2_capacity = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node2", "1Gi")

# (capacities, the capacity chosen or None, reasons). Upstream names every capacity
# "net", so a later one replaces an earlier one in the informer, as here.
CAPACITY = {
    "network-attached": ([network_attached], network_attached, []),
    "local-storage": ([node1_capacity], node1_capacity, []),
    "multiple": ([network_attached, node2_capacity, node1_capacity], node1_capacity, []),
    "no-storage": ([], None, [REASON_NOT_ENOUGH_SPACE]),
    "wrong-node": ([make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node2", "1Gi")], None,
                   [REASON_NOT_ENOUGH_SPACE]),
    "wrong-storage-class": ([make_capacity("net", WAIT_CLASS, "node1", "1Gi")], None,
                            [REASON_NOT_ENOUGH_SPACE]),
    "insufficient-storage": ([make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "1Mi")],
                             None, [REASON_NOT_ENOUGH_SPACE]),
    "insufficient-volume-size": (
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "1Gi", "1Mi")], None,
        [REASON_NOT_ENOUGH_SPACE]),
    "zero-storage": ([make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "0Mi")], None,
                     [REASON_NOT_ENOUGH_SPACE]),
    "zero-volume-size": ([make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "", "0Mi")],
                         None, [REASON_NOT_ENOUGH_SPACE]),
    "nil-storage": ([make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, "node1", "")], None,
                    [REASON_NOT_ENOUGH_SPACE]),
}


@pytest.mark.parametrize("opt_in", [True, False], ids=["StorageCapacity=true",
                                                       "StorageCapacity=false"])
@pytest.mark.parametrize(("capacities", "chosen", "reasons"), CAPACITY.values(),
                         ids=CAPACITY.keys())
def test_capacity(capacities: list[storage.CSIStorageCapacity],
                  chosen: storage.CSIStorageCapacity | None, reasons: list[str],
                  opt_in: bool) -> None:
    binder = _binder(make_csi_driver(PROVISIONER, opt_in), *capacities, provisioned_pvc)
    found, got = find_pod_volumes(binder, make_pod(claims=[provisioned_pvc]))
    if not opt_in:
        assert got == []
        assert found.dynamic_provisions == [DynamicProvision(provisioned_pvc)]
        return
    assert got == reasons
    want = [] if reasons else [DynamicProvision(provisioned_pvc, chosen)]
    assert found.dynamic_provisions == want


def test_find_assume_volumes_keeps_the_chosen_pv() -> None:
    binder = _binder(pv_node2, pv_node1a, pv_node1c, unbound_pvc)
    pod = make_pod(claims=[unbound_pvc])
    found, reasons = find_pod_volumes(binder, pod)
    assert reasons == []
    assert not binder.assume_pod_volumes(pod, "node1", found)
    chosen = found.static_bindings
    assert [b.pv.spec.claim_ref is not None for b in chosen] == [True]
    # The assumed PV is now pre-bound to the claim: every later search returns it.
    for _ in range(5):
        again, reasons = find_pod_volumes(binder, pod)
        assert reasons == []
        assert again.static_bindings == chosen


def test_selected_node_elsewhere_is_a_bind_conflict() -> None:
    other = make_test_pvc("provisioned-pvc", "1Gi", "node2", PVC_SELECTED_NODE, "", "1",
                          WAIT_CLASS_WITH_PROVISIONER)
    # The bound claim's PV is missing too: every reason is reported, in upstream's order.
    binder = _binder(bound_pvc, other)
    found, reasons = find_pod_volumes(binder, make_pod(claims=[bound_pvc, other]))
    assert reasons == [REASON_BIND_CONFLICT, REASON_PV_NOT_EXIST]
    assert found == PodVolumes()


def test_untranslatable_bound_pv_is_an_error() -> None:
    """A bound in-tree PV the node migrated but csi-translation-lib cannot translate."""
    volume = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
    volume.spec.azure_disk = {"diskURI": "uri", "kind": "Shared"}
    binder = _binder(bound_pvc, volume, make_csi_node("node1", "kubernetes.io/azure-disk"))
    with pytest.raises(BinderError, match=r"^could not translate pv: kind\(Shared\) is not "):
        find_pod_volumes(binder, make_pod(claims=[bound_pvc]))
