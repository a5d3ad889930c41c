"""VolumeBinding's PreBind: upstream's binder_test.go TestBindAPIUpdate, TestCheckBindings
and TestBindPodVolumes (delays and timeouts scaled down), then the plugin's whole
binding path: Reserve, PreBind against a fake PV controller, Unreserve after failures."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.informers.listers import StorageListers
from kpysched.metrics import SchedulerMetrics
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins.volume_binding import (
    REASON_BIND_CONFLICT,
    VolumeBinding,
    VolumeBindingArgs,
    prebind,
)
from kpysched.plugins.volume_binding.binder import (
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from kpysched.plugins.volume_binding.prebind import VolumeWriter
from tests.unit.builders import FakeHandle, make_node, make_snapshot
from tests.unit.plugins.volume_binding.builders import (
    NODE_LABEL_KEY,
    NODE_LABEL_VALUE,
    PVC_BOUND,
    PVC_PREBOUND,
    WAIT_CLASS,
    WAIT_CLASS_WITH_PROVISIONER,
    FakeStorageApi,
    add,
    binder_test_classes,
    bound_pvc,
    make_pod,
    make_test_pv,
    make_test_pvc,
    provisioned_pvc,
    provisioned_pvc2,
    pv_bound,
    pv_node1a,
    pv_node1a_bound,
    pv_node1b,
    pv_node1b_bound,
    pv_node2,
    selected_node_pvc,
    unbound_pvc,
    unbound_pvc2,
    with_annotation,
    with_version,
    without_annotations,
    without_claim_uid,
)

Claim = storage.PersistentVolumeClaim
Volume = storage.PersistentVolume

prebound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PVC_PREBOUND, "pv-node1a", "1",
                                    WAIT_CLASS)
bound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PVC_BOUND, "pv-node1a", "1",
                                 WAIT_CLASS)
provisioned_pvc_higher_version = with_version(provisioned_pvc2, "2")
provisioned_pvc_bound = make_test_pvc("provisioned-pvc", "1Gi", "", PVC_BOUND, "pv-bound", "1",
                                      WAIT_CLASS_WITH_PROVISIONER)

pv_node1b_bound_higher_version = with_version(pv_node1b_bound, "2")


def provision_ann(claim: Claim) -> Claim:
    return with_annotation(claim, storage.ANNOTATION_SELECTED_NODE, NODE_LABEL_VALUE)


NODES = {
    "node1": api.Node(metadata=api.ObjectMeta(name="node1",
                                              labels={NODE_LABEL_KEY: "node1"})),
    "node2": api.Node(metadata=api.ObjectMeta(name="node2",
                                              labels={NODE_LABEL_KEY: "node2"})),
}


@dataclass
class Env:
    listers: StorageListers
    binder: VolumeBinder
    api: FakeStorageApi
    nodes: dict[str, api.Node] = field(default_factory=lambda: dict(NODES))

    def writer(self, timeout: float = 10.0) -> VolumeWriter:
        return VolumeWriter(self.binder, self.api, self.nodes.get, timeout)


def make_env(cached: list[Any], in_api: list[Any] | None = None) -> Env:
    """Informers holding `cached`; the API server `in_api` (default: the same)."""
    listers = StorageListers()
    add(listers, *binder_test_classes(), *cached)
    fake = FakeStorageApi(listers)
    fake.put(*(cached if in_api is None else in_api))
    return Env(listers, VolumeBinder(listers), fake)


def assume(env: Env, bindings: list[BindingInfo], claims: list[Claim]) -> None:
    """upstream's assumeVolumes: the bindings as Reserve would have assumed them."""
    for binding in bindings:
        env.binder.pv_cache.assume(binding.pv)
    for claim in claims:
        env.binder.pvc_cache.assume(claim)


def _without_version(obj: Any) -> Any:
    return with_version(obj, "")


# ---- TestBindAPIUpdate ---------------------------------------------------------------

@dataclass
class ApiCase:
    bindings: list[BindingInfo] = field(default_factory=list)
    cached_pvs: list[Volume] = field(default_factory=list)
    api_pvs: list[Volume] | None = None
    provisioned: list[Claim] = field(default_factory=list)
    cached_pvcs: list[Claim] = field(default_factory=list)
    api_pvcs: list[Claim] | None = None
    should_fail: bool = False
    expected_pvs: list[Volume] = field(default_factory=list)
    expected_api_pvs: list[Volume] | None = None
    expected_pvcs: list[Claim] = field(default_factory=list)
    expected_api_pvcs: list[Claim] | None = None


API_UPDATE = {
    "nothing-to-bind-empty": ApiCase(),
    "one-binding": ApiCase(bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
                           cached_pvs=[pv_node1a], expected_pvs=[pv_node1a_bound]),
    "two-bindings": ApiCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound),
                  BindingInfo(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b], expected_pvs=[pv_node1a_bound, pv_node1b_bound]),
    "api-already-updated": ApiCase(bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
                                   cached_pvs=[pv_node1a_bound], expected_pvs=[pv_node1a_bound]),
    "api-update-failed": ApiCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound),
                  BindingInfo(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b], api_pvs=[pv_node1a, pv_node1b_bound_higher_version],
        expected_pvs=[pv_node1a_bound, pv_node1b],
        expected_api_pvs=[pv_node1a_bound, pv_node1b_bound_higher_version], should_fail=True),
    "one-provisioned-pvc": ApiCase(provisioned=[provision_ann(provisioned_pvc)],
                                   cached_pvcs=[provisioned_pvc],
                                   expected_pvcs=[provision_ann(provisioned_pvc)]),
    "provision-api-update-failed": ApiCase(
        provisioned=[provision_ann(provisioned_pvc), provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True),
    "binding-succeed, provision-api-update-failed": ApiCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)], cached_pvs=[pv_node1a],
        expected_pvs=[pv_node1a_bound],
        provisioned=[provision_ann(provisioned_pvc), provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True),
}


@pytest.mark.parametrize("case", API_UPDATE.values(), ids=API_UPDATE.keys())
async def test_bind_api_update(case: ApiCase) -> None:
    cached = [*case.cached_pvs, *case.cached_pvcs]
    in_api = [*(case.cached_pvs if case.api_pvs is None else case.api_pvs),
              *(case.cached_pvcs if case.api_pvcs is None else case.api_pvcs)]
    env = make_env(cached, in_api)
    bindings = [BindingInfo(b.pvc, b.pv) for b in case.bindings]
    assume(env, bindings, case.provisioned)
    claims = list(case.provisioned)
    if case.should_fail:
        with pytest.raises(BinderError, match="Operation cannot be fulfilled"):
            await env.writer().write_bindings(bindings, claims)
    else:
        await env.writer().write_bindings(bindings, claims)
    # Caches and API server compared without resourceVersions, which writes bump.
    for want in case.expected_pvs:
        got = env.binder.pv_cache.get(want.metadata.name)
        assert _without_version(got) == _without_version(want)
    for want in case.expected_pvcs:
        got = env.binder.pvc_cache.get(f"testns/{want.metadata.name}")
        assert _without_version(got) == _without_version(want)
    expected_api = [*(case.expected_pvs if case.expected_api_pvs is None
                      else case.expected_api_pvs),
                    *(case.expected_pvcs if case.expected_api_pvcs is None
                      else case.expected_api_pvcs)]
    for want in expected_api:
        got = env.api.objects[env.api._key(want)]
        assert _without_version(got) == _without_version(want)


async def test_patches_change_only_what_binding_changes() -> None:
    env = make_env([pv_node1a, provisioned_pvc])
    bindings = [BindingInfo(unbound_pvc, pv_node1a_bound)]
    claims = [provision_ann(provisioned_pvc)]
    await env.writer().write_bindings(bindings, claims)
    assert env.api.patches == [
        ("/api/v1/persistentvolumes/pv-node1a", {
            "metadata": {"resourceVersion": "1",
                         "annotations": {storage.ANNOTATION_BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"claimRef": {
                "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "testns",
                "name": "unbound-pvc", "uid": "pvc-uid", "resourceVersion": "1",
                "fieldPath": None}}}),
        ("/api/v1/namespaces/testns/persistentvolumeclaims/provisioned-pvc", {
            "metadata": {"resourceVersion": "1",
                         "annotations": {storage.ANNOTATION_SELECTED_NODE: "node1"}}}),
    ]
    # What the API answered is kept, to know when the informer has caught up.
    assert bindings[0].pv.metadata.resource_version == "2"
    assert claims[0].metadata.resource_version == "2"


# ---- TestCheckBindings ---------------------------------------------------------------

@dataclass
class CheckCase:
    bindings: list[BindingInfo] = field(default_factory=list)
    provisioned: list[Claim] = field(default_factory=list)
    init_pvs: list[Volume] = field(default_factory=list)
    init_pvcs: list[Claim] = field(default_factory=list)
    api_pvs: list[Volume] = field(default_factory=list)
    api_pvcs: list[Claim] = field(default_factory=list)
    delete_pvs: bool = False
    delete_pvcs: bool = False
    error: str | None = None
    bound: bool = False


CHECK_BINDINGS = {
    "nothing-to-bind": CheckCase(bound=True),
    "binding-bound": CheckCase(bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
                               init_pvs=[pv_node1a_bound], init_pvcs=[bound_pvc_node1a],
                               bound=True),
    "binding-prebound": CheckCase(bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
                                  init_pvs=[pv_node1a_bound], init_pvcs=[prebound_pvc_node1a]),
    "binding-unbound": CheckCase(bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
                                 init_pvs=[pv_node1a_bound], init_pvcs=[unbound_pvc]),
    "binding-pvc-not-exists": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)], init_pvs=[pv_node1a_bound],
        error='failed to check binding: persistentvolumeclaims "testns/unbound-pvc" not found'),
    "binding-pv-not-exists": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)], init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a], delete_pvs=True,
        error='failed to check binding: persistentvolumes "pv-node1a" not found'),
    "binding-claimref-nil": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)], init_pvs=[pv_node1a],
        init_pvcs=[bound_pvc_node1a], api_pvs=[pv_node1a], api_pvcs=[bound_pvc_node1a],
        error='ClaimRef got reset for pv "pv-node1a"'),
    "binding-claimref-uid-empty": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)], init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a], api_pvs=[without_claim_uid(pv_node1a_bound)],
        api_pvcs=[bound_pvc_node1a], error='ClaimRef got reset for pv "pv-node1a"'),
    "binding-one-bound,one-unbound": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound),
                  BindingInfo(unbound_pvc2, pv_node1b_bound)],
        init_pvs=[pv_node1a_bound, pv_node1b_bound], init_pvcs=[bound_pvc_node1a, unbound_pvc2]),
    "provisioning-pvc-bound": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvs=[pv_bound],
        init_pvcs=[provisioned_pvc_bound], api_pvcs=[provision_ann(provisioned_pvc_bound)],
        bound=True),
    "provisioning-pvc-unbound": CheckCase(provisioned=[provision_ann(provisioned_pvc)],
                                          init_pvcs=[provision_ann(provisioned_pvc)]),
    "provisioning-pvc-not-exists": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvcs=[provisioned_pvc],
        delete_pvcs=True, error=('failed to check provisioning pvc: persistentvolumeclaims '
                                 '"testns/provisioned-pvc" not found')),
    "provisioning-pvc-annotations-nil": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvcs=[provisioned_pvc],
        api_pvcs=[provisioned_pvc],
        error='selectedNode annotation reset for PVC "provisioned-pvc"'),
    "provisioning-pvc-selected-node-dropped": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvcs=[provisioned_pvc],
        api_pvcs=[without_annotations(provisioned_pvc)],
        error='selectedNode annotation reset for PVC "provisioned-pvc"'),
    "provisioning-pvc-selected-node-wrong-node": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvcs=[provisioned_pvc],
        api_pvcs=[with_annotation(provisioned_pvc, storage.ANNOTATION_SELECTED_NODE,
                                  "wrong-node")],
        error='provisioning failed for PVC "provisioned-pvc"'),
    "binding-bound-provisioning-unbound": CheckCase(
        bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
        provisioned=[provision_ann(provisioned_pvc)], init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a, provision_ann(provisioned_pvc)]),
    "tolerate-provisioning-pvc-bound-pv-not-found": CheckCase(
        provisioned=[provision_ann(provisioned_pvc)], init_pvs=[pv_node1a],
        init_pvcs=[provisioned_pvc], api_pvcs=[provision_ann(provisioned_pvc_bound)],
        delete_pvs=True),
}


def expect_check_bindings(env: Env, case: CheckCase) -> None:
    """check_bindings on node1 answers case.bound, or raises case.error."""
    writer = env.writer()
    if case.error is not None:
        with pytest.raises(BinderError) as raised:
            writer.check_bindings("node1", case.bindings, case.provisioned)
        assert str(raised.value) == case.error
        return
    assert writer.check_bindings("node1", case.bindings, case.provisioned) is case.bound


@pytest.mark.parametrize("case", CHECK_BINDINGS.values(), ids=CHECK_BINDINGS.keys())
def test_check_bindings(case: CheckCase) -> None:
    env = make_env([*case.init_pvs, *case.init_pvcs])
    assume(env, case.bindings, case.provisioned)
    for obj in [*(case.init_pvs if case.delete_pvs else case.api_pvs),
                *(case.init_pvcs if case.delete_pvcs else case.api_pvcs)]:
        if (case.delete_pvs and isinstance(obj, Volume)) or (
                case.delete_pvcs and isinstance(obj, Claim)):
            env.api.delete(obj)
        else:
            env.api.update(obj)
    expect_check_bindings(env, case)


def _migration_pv(claim: Claim, *, migrated: bool) -> Volume:
    """upstream's makeTestPVForCSIMigration: zone labels, no node affinity (the CSI
    translation writes it), a GCE PD (migrated) or RBD (not migrated) source."""
    volume = make_test_pv("pv-migration-bound", "node1", "1G", "1", claim, WAIT_CLASS)
    volume.spec.node_affinity = None
    volume.metadata.labels = {"failure-domain.beta.kubernetes.io/zone": "us-east-1",
                              "failure-domain.beta.kubernetes.io/region": "us-east-1a"}
    if migrated:
        volume.spec.gce_persistent_disk = {"pdName": "test-disk", "fsType": "ext4"}
    else:
        volume.spec.rbd = {"image": "test-disk"}
    return volume


prov_migration_pvc_bound = make_test_pvc("pvc-migration-provisioned", "1Gi", "", PVC_BOUND,
                                         "pv-migration-bound", "1", WAIT_CLASS_WITH_PROVISIONER)
migration_pv_bound_to_unbound = _migration_pv(unbound_pvc, migrated=True)
ZONE1, ZONE2 = {"topology.gke.io/zone": "us-east-1"}, {"topology.gke.io/zone": "us-east-2"}
MIGRATED, NOT_MIGRATED = "kubernetes.io/gce-pd", ""

CHECK_BINDINGS_WITH_CSI_MIGRATION = {
    "provisioning-pvc-bound": (
        CheckCase(provisioned=[provision_ann(prov_migration_pvc_bound)],
                  init_pvs=[_migration_pv(make_test_pvc("pvc-migration-bound", "1G", "",
                                                        PVC_BOUND, "pv-migration-bound", "1",
                                                        WAIT_CLASS), migrated=True)],
                  init_pvcs=[prov_migration_pvc_bound],
                  api_pvcs=[provision_ann(prov_migration_pvc_bound)], bound=True),
        ZONE1, MIGRATED),
    "binding-node-pv-same-zone": (
        CheckCase(bindings=[BindingInfo(unbound_pvc, migration_pv_bound_to_unbound)],
                  init_pvs=[migration_pv_bound_to_unbound], init_pvcs=[unbound_pvc]),
        ZONE1, MIGRATED),
    "binding-without-csinode": (
        CheckCase(bindings=[BindingInfo(unbound_pvc, migration_pv_bound_to_unbound)],
                  init_pvs=[migration_pv_bound_to_unbound], init_pvcs=[unbound_pvc]),
        ZONE1, None),
    "binding-non-migrated-plugin": (
        CheckCase(bindings=[BindingInfo(unbound_pvc, migration_pv_bound_to_unbound)],
                  init_pvs=[migration_pv_bound_to_unbound], init_pvcs=[unbound_pvc]),
        ZONE1, NOT_MIGRATED),
    "binding-node-pv-in-different-zones": (
        CheckCase(bindings=[BindingInfo(unbound_pvc, migration_pv_bound_to_unbound)],
                  init_pvs=[migration_pv_bound_to_unbound], init_pvcs=[unbound_pvc],
                  error=('pv "pv-migration-bound" node affinity doesn\'t match node "node1": '
                         "no matching NodeSelectorTerms")),
        ZONE2, MIGRATED),
    "binding-node-pv-different-zones-migration-off": (
        CheckCase(bindings=[BindingInfo(unbound_pvc, _migration_pv(unbound_pvc,
                                                                   migrated=False))],
                  init_pvs=[_migration_pv(unbound_pvc, migrated=False)],
                  init_pvcs=[unbound_pvc]),
        ZONE2, MIGRATED),
}


@pytest.mark.parametrize(("case", "zone", "migrated"), CHECK_BINDINGS_WITH_CSI_MIGRATION.values(),
                         ids=CHECK_BINDINGS_WITH_CSI_MIGRATION.keys())
def test_check_bindings_with_csi_migration(case: CheckCase, zone: dict[str, str],
                                           migrated: str | None) -> None:
    csi_nodes = [] if migrated is None else [storage.CSINode(metadata=api.ObjectMeta(
        name="node1", annotations={"storage.alpha.kubernetes.io/migrated-plugins": migrated}))]
    env = make_env([*case.init_pvs, *case.init_pvcs, *csi_nodes])
    env.nodes["node1"] = api.Node(metadata=api.ObjectMeta(name="node1", labels=zone))
    assume(env, case.bindings, case.provisioned)
    for obj in case.api_pvcs:
        env.api.update(obj)
    expect_check_bindings(env, case)


def test_check_bindings_unknown_node() -> None:
    env = make_env([])
    with pytest.raises(BinderError, match='failed to get node "gone": node "gone" not found'):
        env.writer().check_bindings("gone", [], [])


# ---- TestBindPodVolumes --------------------------------------------------------------

Delay = Callable[[Env], None]


def _bind_claim_to(volume_name: str) -> Delay:
    def delay(env: Env) -> None:
        claim = env.api.objects[("persistentvolumeclaims", "testns/unbound-pvc")]
        claim = msgspec.structs.replace(claim, spec=msgspec.structs.replace(
            claim.spec, volume_name=volume_name))
        env.api.update(with_annotation(claim, storage.ANNOTATION_BIND_COMPLETED, "yes"))
    return delay


def _provision(env: Env) -> None:
    claim = env.api.objects[("persistentvolumeclaims", "testns/provisioned-pvc")]
    env.api.update(make_test_pv("dynamic-pv", "node1", "1G", "1", claim, WAIT_CLASS))
    claim = msgspec.structs.replace(claim, spec=msgspec.structs.replace(
        claim.spec, volume_name="dynamic-pv"))
    env.api.update(with_annotation(claim, storage.ANNOTATION_BIND_COMPLETED, "yes"))


def _delete_claim(env: Env) -> None:
    env.api.delete(unbound_pvc)


def _bind_selected_to_node2(env: Env) -> None:
    claim = env.api.objects[("persistentvolumeclaims", "testns/provisioned-pvc")]
    claim = msgspec.structs.replace(claim, spec=msgspec.structs.replace(
        claim.spec, volume_name="pv-node2"))
    env.api.update(with_annotation(claim, storage.ANNOTATION_BIND_COMPLETED, "yes"))


@dataclass
class BindCase:
    init_pvs: list[Volume] = field(default_factory=list)
    init_pvcs: list[Claim] = field(default_factory=list)
    binding: BindingInfo | None = None
    to_provision: Claim | None = None
    api_pv: Volume | None = None
    api_pvc: Claim | None = None
    delay: Delay | None = None
    node_labels: dict[str, str] | None = None
    error: str | None = None


BIND_POD_VOLUMES = {
    "nothing-to-bind-empty": BindCase(),
    "already-bound": BindCase(binding=BindingInfo(unbound_pvc, pv_node1a_bound),
                              init_pvs=[pv_node1a_bound], init_pvcs=[bound_pvc_node1a]),
    "binding-static-pv-succeeds-after-time": BindCase(
        init_pvs=[pv_node1a], init_pvcs=[unbound_pvc],
        binding=BindingInfo(unbound_pvc, pv_node1a_bound), delay=_bind_claim_to("pv-node1a")),
    "binding-dynamic-pv-succeeds-after-time": BindCase(
        to_provision=provision_ann(provisioned_pvc), init_pvcs=[provisioned_pvc],
        delay=_provision),
    "bound-by-pv-controller-before-bind": BindCase(
        init_pvs=[pv_node1a], init_pvcs=[unbound_pvc],
        binding=BindingInfo(unbound_pvc, pv_node1a_bound), api_pv=pv_node1a_bound,
        api_pvc=bound_pvc_node1a,
        error=('Operation cannot be fulfilled on persistentvolumes "pv-node1a": the object '
               "has been modified; please apply your changes to the latest version and try "
               "again")),
    "binding-times-out": BindCase(
        binding=BindingInfo(unbound_pvc, pv_node1a_bound), init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc], error="binding volumes: context deadline exceeded"),
    "binding-fails": BindCase(
        binding=BindingInfo(unbound_pvc2, pv_node1b_bound), init_pvs=[pv_node1b],
        init_pvcs=[unbound_pvc2], error="binding volumes: context deadline exceeded"),
    "check-fails": BindCase(
        binding=BindingInfo(unbound_pvc, pv_node1a_bound), init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc], delay=_delete_claim,
        error=('binding volumes: failed to check binding: persistentvolumeclaims '
               '"testns/unbound-pvc" not found')),
    "node-affinity-fails": BindCase(
        binding=BindingInfo(unbound_pvc, pv_node1a_bound), init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a], node_labels={},
        error=('binding volumes: pv "pv-node1a" node affinity doesn\'t match node "node1": '
               "no matching NodeSelectorTerms")),
    "node-affinity-fails-dynamic-provisioning": BindCase(
        init_pvs=[pv_node1a, pv_node2], init_pvcs=[selected_node_pvc],
        to_provision=selected_node_pvc, delay=_bind_selected_to_node2,
        error=('binding volumes: pv "pv-node2" node affinity doesn\'t match node "node1": '
               "no matching NodeSelectorTerms")),
}
# Upstream's "pod-deleted-after-time" is not ported: the Handle offers no pod lister, so a
# deleted pod's PreBind ends at the timeout (or when the claims bind), not at once.


@pytest.fixture
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prebind, "POLL_INTERVAL_SECONDS", 0.01)


@pytest.mark.usefixtures("fast_polls")
@pytest.mark.parametrize("case", BIND_POD_VOLUMES.values(), ids=BIND_POD_VOLUMES.keys())
async def test_bind_pod_volumes(case: BindCase) -> None:
    env = make_env([*case.init_pvs, *case.init_pvcs])
    if case.node_labels is not None:
        env.nodes["node1"] = api.Node(metadata=api.ObjectMeta(name="node1",
                                                              labels=case.node_labels))
    bindings = [case.binding] if case.binding is not None else []
    claims = [case.to_provision] if case.to_provision is not None else []
    assume(env, bindings, claims)
    for obj in (case.api_pv, case.api_pvc):
        if obj is not None:
            env.api.update(obj)
    found = PodVolumes([BindingInfo(b.pvc, b.pv) for b in bindings],
                       [DynamicProvision(claim) for claim in claims])

    async def later(delay: Delay) -> None:
        await asyncio.sleep(0.05)  # after the API writes, while PreBind waits
        delay(env)

    delayed = asyncio.create_task(later(case.delay)) if case.delay is not None else None
    outcome: Awaitable[None] = env.writer(timeout=0.5).bind_pod_volumes("node1", found)
    if case.error is None:
        await outcome
    else:
        with pytest.raises(BinderError) as raised:
            await outcome
        assert str(raised.value) == case.error
    if delayed is not None:
        delayed.cancel()


async def test_zero_timeout_gives_up_at_once() -> None:
    env = make_env([pv_node1a_bound, bound_pvc_node1a])
    found = PodVolumes([BindingInfo(unbound_pvc, pv_node1a_bound)])
    with pytest.raises(BinderError, match="context deadline exceeded"):
        await env.writer(timeout=0).bind_pod_volumes("node1", found)


# ---- the plugin's binding path ---------------------------------------------------------

def _node_info(name: str) -> NodeInfo:
    return make_node(name).label(NODE_LABEL_KEY, name).info()


class PVController:
    """Completes what the scheduler started, as kube-controller-manager's PV controller
    does: a PV given a claimRef gets its claim bound to it; a claim given a selected
    node is provisioned."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.requests = env.api.request

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        response = await self.requests(method, path, body, **kw)
        if response.ok:
            asyncio.get_running_loop().call_later(0.02, self._complete, path)
        return response

    def _complete(self, path: str) -> None:
        api_ = self.env.api
        if "/persistentvolumes/" in path:
            volume = api_.objects[("persistentvolumes", path.rsplit("/", 1)[-1])]
            ref = volume.spec.claim_ref
            claim = api_.objects[("persistentvolumeclaims", f"{ref.namespace}/{ref.name}")]
        else:
            namespace, name = path.split("/")[4], path.rsplit("/", 1)[-1]
            claim = api_.objects[("persistentvolumeclaims", f"{namespace}/{name}")]
            volume = api_.update(make_test_pv("pvc-" + name, claim.metadata.annotations[
                storage.ANNOTATION_SELECTED_NODE], "1Gi", "1", claim, WAIT_CLASS))
        bound = msgspec.structs.replace(claim, spec=msgspec.structs.replace(
            claim.spec, volume_name=volume.metadata.name))
        api_.update(with_annotation(bound, storage.ANNOTATION_BIND_COMPLETED, "yes"))


def _plugin(env: Env, client: Any, timeout: int = 10, **handle_fields: Any) -> VolumeBinding:
    handle = FakeHandle(snapshot_value=make_snapshot(_node_info("node1"), _node_info("node2")),
                        storage_listers=env.listers, api_client=client, **handle_fields)
    plugin = VolumeBinding(VolumeBindingArgs(bindTimeoutSeconds=timeout),
                           handle)  # type: ignore[arg-type]
    plugin.binder = env.binder
    return plugin


def _schedule(plugin: VolumeBinding, pod: PodInfo) -> CycleState:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [])
    assert status.ok, status
    for name in ("node1", "node2"):
        plugin.filter(state, pod, _node_info(name))
    assert plugin.reserve(state, pod, "node1").ok
    return state


@pytest.mark.usefixtures("fast_polls")
async def test_static_and_dynamic_claims_are_bound_through_the_pv_controller() -> None:
    env = make_env([pv_node1a, pv_node2, unbound_pvc, provisioned_pvc])
    plugin = _plugin(env, PVController(env))
    pod = PodInfo.of(make_pod(claims=[unbound_pvc, provisioned_pvc], node=""))
    state = _schedule(plugin, pod)
    assert plugin.pre_bind_pre_flight(state, pod, "node1").ok
    status = await plugin.pre_bind(state, pod, "node1")
    assert status.ok, status
    claims = env.listers.persistent_volume_claims
    assert [claims.get(f"testns/{name}").spec.volume_name  # type: ignore[union-attr]
            for name in ("unbound-pvc", "provisioned-pvc")] == ["pv-node1a", "pvc-provisioned-pvc"]


@pytest.mark.usefixtures("fast_polls")
async def test_pv_deleted_during_pre_bind_fails_and_the_next_cycle_decides_afresh() -> None:
    env = make_env([pv_node1a, unbound_pvc])

    class DeletesThePV:
        async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
            response = await env.api.request(method, path, body, **kw)
            asyncio.get_running_loop().call_later(
                0.02, env.api.delete, env.listers.persistent_volumes.get("pv-node1a"))
            return response

    plugin = _plugin(env, DeletesThePV())
    pod = PodInfo.of(make_pod(claims=[unbound_pvc], node=""))
    state = _schedule(plugin, pod)
    status = await plugin.pre_bind(state, pod, "node1")
    assert (status.code, status.reasons) == (Code.ERROR, [
        'binding volumes: failed to check binding: persistentvolumes "pv-node1a" not found'])
    plugin.unreserve(state, pod, "node1")
    # The claim was never touched, and the next cycle finds no volume for it.
    claim = env.listers.persistent_volume_claims.get("testns/unbound-pvc")
    assert claim is unbound_pvc
    retry = CycleState()
    assert plugin.pre_filter(retry, pod, [])[1].ok
    got = plugin.filter(retry, pod, _node_info("node1"))
    assert (got.code, got.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                       [REASON_BIND_CONFLICT])


async def test_conflict_fails_pre_bind_and_unreserve_frees_the_pv() -> None:
    env = make_env([pv_node1a, unbound_pvc])
    plugin = _plugin(env, env.api)
    pod = PodInfo.of(make_pod(claims=[unbound_pvc], node=""))
    state = _schedule(plugin, pod)
    assert plugin.binder.pv_cache.get("pv-node1a").spec.claim_ref is not None
    env.api.update(pv_node1a)  # someone else wrote the PV meanwhile
    status = await plugin.pre_bind(state, pod, "node1")
    assert status.code == Code.ERROR
    assert status.reasons[0].startswith(
        'Operation cannot be fulfilled on persistentvolumes "pv-node1a"')
    plugin.unreserve(state, pod, "node1")
    assert plugin.binder.pv_cache.get("pv-node1a").spec.claim_ref is None


async def test_all_bound_pod_needs_no_pre_bind() -> None:
    env = make_env([pv_bound, bound_pvc])
    plugin = _plugin(env, None)  # any API call would fail
    pod = PodInfo.of(make_pod(claims=[bound_pvc], node=""))
    state = _schedule(plugin, pod)
    assert plugin.pre_bind_pre_flight(state, pod, "node1").code == Code.SKIP
    assert (await plugin.pre_bind(state, pod, "node1")).ok


@pytest.mark.usefixtures("fast_polls")
async def test_a_pod_deleted_during_pre_bind_stops_the_wait() -> None:
    """Issue 33 item 8: upstream's checkBindings asks the pod lister each time and gives
    up once the pod is gone, instead of waiting out bindTimeoutSeconds with its
    volumes assumed. The bind stage's failure is counted."""
    env = make_env([pv_node1a, unbound_pvc])  # no PV controller: the claim never binds
    pod = PodInfo.of(make_pod(claims=[unbound_pvc], node=""))
    informer = {"testns/test-pod": pod.pod}
    metrics = SchedulerMetrics(process_metrics=False)
    plugin = _plugin(env, env.api, timeout=600, informer_pods=informer,
                     plugin_metrics=metrics)
    state = _schedule(plugin, pod)
    asyncio.get_running_loop().call_later(0.05, informer.clear)
    status = await asyncio.wait_for(plugin.pre_bind(state, pod, "node1"), 5)
    assert (status.code, status.reasons) == (Code.ERROR, [
        'binding volumes: pod does not exist any more: pod "test-pod" not found'])
    assert metrics.registry.get_sample_value(
        "scheduler_volume_scheduling_stage_error_total", {"operation": "bind"}) == 1


@pytest.mark.usefixtures("fast_polls")
async def test_without_a_pod_lister_the_wait_goes_on() -> None:
    """A simulation has no pod informer: the pod counts as present."""
    env = make_env([pv_node1a, unbound_pvc])
    plugin = _plugin(env, PVController(env))
    pod = PodInfo.of(make_pod(claims=[unbound_pvc], node=""))
    state = _schedule(plugin, pod)
    assert (await plugin.pre_bind(state, pod, "node1")).ok


def test_a_filter_error_is_counted_as_the_predicate_stage() -> None:
    """scheduler_volume_scheduling_stage_error_total{operation="predicate"}: FindPodVolumes
    failed (here: the class of a claim to provision went away after PreFilter)."""
    env = make_env([provisioned_pvc])
    metrics = SchedulerMetrics(process_metrics=False)
    plugin = _plugin(env, env.api, plugin_metrics=metrics)
    pod = PodInfo.of(make_pod(claims=[provisioned_pvc], node=""))
    state = CycleState()
    assert plugin.pre_filter(state, pod, [])[1].ok
    env.listers.storage_classes.on_delete(
        env.listers.storage_classes.get(WAIT_CLASS_WITH_PROVISIONER))  # type: ignore[arg-type]
    got = plugin.filter(state, pod, _node_info("node1"))
    assert (got.code, got.reasons) == (Code.ERROR, [
        f'failed to find storage class "{WAIT_CLASS_WITH_PROVISIONER}"'])
    assert metrics.registry.get_sample_value(
        "scheduler_volume_scheduling_stage_error_total", {"operation": "predicate"}) == 1
