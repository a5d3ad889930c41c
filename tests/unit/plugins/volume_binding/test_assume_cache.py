"""VolumeBinding's assume caches and Reserve/Unreserve: upstream's
passive_assume_cache_test.go (TestBasicCache, TestPVCacheWithIndex, TestAssume,
TestRestore, TestConcurrentAssume, TestAssumeUpdateCache, TestDelayedInformerEvent)
and binder_test.go's TestAssumePodVolumes and TestRevertAssumedPodVolumes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kpysched.informers.listers import Index, StorageListers
from kpysched.objects import api, storage
from kpysched.plugins.volume_binding.assume_cache import (
    AssumeCache,
    NotFoundError,
    OutOfSyncError,
)
from kpysched.plugins.volume_binding.binder import (
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from tests.unit.plugins.volume_binding.builders import (
    NODE_LABEL_VALUE,
    PVC_UNBOUND,
    WAIT_CLASS_WITH_PROVISIONER,
    add,
    binder_test_classes,
    bound_pvc,
    make_pod,
    make_test_pvc,
    provisioned_pvc,
    provisioned_pvc2,
    pv_bound,
    pv_node1a,
    pv_node1a_bound,
    pv_node1b,
    pv_node1b_bound,
    selected_node_pvc,
    unbound_pvc,
    unbound_pvc2,
    with_annotation,
)

Claim = storage.PersistentVolumeClaim


def make_obj(name: str, version: str, namespace: str = "",
             annotations: dict[str, str] | None = None) -> Claim:
    return Claim(metadata=api.ObjectMeta(name=name, namespace=namespace,
                                         resource_version=version,
                                         annotations=dict(annotations or {})))


def new_cache() -> tuple[Index[Claim], AssumeCache[Claim]]:
    informer: Index[Claim] = Index()
    return informer, AssumeCache(informer, "tests")


def _same(got: list[Claim], expected: dict[str, Claim]) -> None:
    assert len(got) == len(expected)
    for obj in got:
        assert obj is expected[obj.metadata.name]


def test_basic_cache() -> None:
    informer, cache = new_cache()
    with pytest.raises(NotFoundError, match='tests "nothere" not found'):
        cache.get("nothere")
    objects = {f"test-{i}": make_obj(f"test-{i}", "1") for i in range(10)}
    for obj in objects.values():
        informer.on_add(obj)
    _same(cache.overlay(informer.values()), objects)

    updated = make_obj("test-3", "1")
    informer.on_update(objects["test-3"], updated)
    objects["test-3"] = updated
    _same(cache.overlay(informer.values()), objects)

    informer.on_delete(objects.pop("test-7"))
    _same(cache.overlay(informer.values()), objects)


def test_cache_listing_by_index() -> None:
    """Listing a subset (as the PV cache lists one class) keeps identities."""
    informer, cache = new_cache()

    def listed(value: str) -> list[Claim]:
        return cache.overlay(o for o in informer.values()
                             if o.metadata.annotations["test"] == value)

    first = {f"test-{i}": make_obj(f"test-{i}", "1", annotations={"test": "test1"})
             for i in range(10)}
    second = {f"test2-{i}": make_obj(f"test2-{i}", "1", annotations={"test": "test2"})
              for i in range(10)}
    for obj in [*first.values(), *second.values()]:
        informer.on_add(obj)
    _same(listed("test1"), first)
    _same(listed("test2"), second)

    updated = make_obj("test-3", "2", annotations={"test": "test1"})
    informer.on_update(first["test-3"], updated)
    first["test-3"] = updated
    informer.on_delete(first.pop("test-7"))
    _same(listed("test1"), first)
    _same(listed("test2"), second)


ASSUME = {
    "success-same-version": (make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "5", "ns1"), True),
    "fail-new-higher-version": (make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "6", "ns1"),
                                False),
    "fail-old-not-found": (make_obj("pvc2", "5", "ns1"), make_obj("pvc1", "5", "ns1"), False),
    "fail-new-lower-version": (make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "4", "ns1"),
                               False),
    "fail-new-bad-version": (make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "a", "ns1"), False),
    "fail-old-bad-version": (make_obj("pvc1", "a", "ns1"), make_obj("pvc1", "5", "ns1"), False),
}


@pytest.mark.parametrize(("old", "new", "succeeds"), ASSUME.values(), ids=ASSUME.keys())
def test_assume(old: Claim, new: Claim, succeeds: bool) -> None:
    informer, cache = new_cache()
    informer.on_add(old)
    assert cache.get("ns1/" + old.metadata.name) is old
    if succeeds:
        cache.assume(new)
    else:
        with pytest.raises((NotFoundError, OutOfSyncError)):
            cache.assume(new)
    assert cache.get("ns1/" + old.metadata.name) is (new if succeeds else old)


def test_out_of_sync_message() -> None:
    informer, cache = new_cache()
    informer.on_add(make_obj("pvc1", "5", "ns1"))
    with pytest.raises(OutOfSyncError) as raised:
        cache.assume(make_obj("pvc1", "6", "ns1"))
    assert str(raised.value) == '"ns1/pvc1" is out of sync (stored: 5, assume: 6)'


def test_restore() -> None:
    informer, cache = new_cache()
    old, new = make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "5", "ns1")
    cache.restore(make_obj("", ""))  # restoring what was never assumed does nothing
    informer.on_add(old)
    cache.restore(old)
    assert cache.get("ns1/pvc1") is old
    cache.assume(new)
    assert cache.get("ns1/pvc1") is new
    cache.restore(new)
    assert cache.get("ns1/pvc1") is old


def test_concurrent_assume() -> None:
    informer, cache = new_cache()
    first, first_update = make_obj("pvc1", "5", "ns1"), make_obj("pvc1", "5", "ns1")
    informer.on_add(first)
    cache.assume(first_update)
    assert cache.get("ns1/pvc1") is first_update
    second, second_update = make_obj("pvc1", "7", "ns1"), make_obj("pvc1", "7", "ns1")
    informer.on_update(first, second)  # updated by someone else
    cache.assume(second_update)
    cache.restore(first_update)  # the first one failed with a conflict
    assert cache.get("ns1/pvc1") is second_update


def test_assumed_object_survives_a_resync_of_the_same_version() -> None:
    informer, cache = new_cache()
    obj = make_obj("test-pvc0", "1", "test-ns")
    informer.on_add(obj)
    assumed = with_annotation(obj, storage.ANNOTATION_SELECTED_NODE, "test-node")
    cache.assume(assumed)
    assert cache.get("test-ns/test-pvc0") is assumed
    informer.on_add(obj)
    assert cache.get("test-ns/test-pvc0") is assumed


def test_delayed_informer_event() -> None:
    """Upstream replays stale events after an assume; kpysched compares versions at
    read time, so only the version the index holds matters."""
    informer, cache = new_cache()
    current = make_obj("test-pvc0", "2", "test-ns")
    informer.on_add(current)
    assumed = with_annotation(current, storage.ANNOTATION_SELECTED_NODE, "test-node")
    cache.assume(assumed)
    assert cache.get("test-ns/test-pvc0") is assumed


def test_newer_informer_version_ends_the_assumption() -> None:
    informer, cache = new_cache()
    obj = make_obj("pvc1", "5", "ns1")
    informer.on_add(obj)
    cache.assume(make_obj("pvc1", "5", "ns1"))
    newer = make_obj("pvc1", "6", "ns1")
    informer.on_update(obj, newer)
    assert cache.get("ns1/pvc1") is newer
    informer.on_update(newer, obj)  # even if the old version came back, it stays spent
    assert cache.get("ns1/pvc1") is obj


def test_spent_assumptions_are_forgotten() -> None:
    informer, cache = new_cache()
    gone, kept = make_obj("gone", "1", "ns"), make_obj("kept", "1", "ns")
    informer.on_add(gone)
    informer.on_add(kept)
    cache.assume(make_obj("gone", "1", "ns"))
    informer.on_delete(gone)
    cache.assume(make_obj("kept", "1", "ns"))
    assert list(cache._assumed) == ["ns/kept"]


# ---- Reserve / Unreserve (binder_test.go) -------------------------------------------

provisioned_pvc_higher_version = make_test_pvc("provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "",
                                               "2", WAIT_CLASS_WITH_PROVISIONER)


def _binder(*objects: object) -> VolumeBinder:
    listers = StorageListers()
    add(listers, *binder_test_classes(), *objects)
    return VolumeBinder(listers)


@dataclass
class AssumeCase:
    pod_pvcs: list[Claim]
    pvs: list[storage.PersistentVolume]
    bindings: list[BindingInfo] = field(default_factory=list)
    provisions: list[DynamicProvision] = field(default_factory=list)
    should_fail: bool = False
    all_bound: bool = False
    want_bindings: list[BindingInfo] | None = None  # None: bindings
    want_provisions: list[DynamicProvision] | None = None  # None: provisions


ASSUME_POD_VOLUMES = {
    "all-bound": AssumeCase([bound_pvc], [pv_bound], all_bound=True),
    "one-binding": AssumeCase([unbound_pvc], [pv_node1a],
                              bindings=[BindingInfo(unbound_pvc, pv_node1a)],
                              want_bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)]),
    "two-bindings": AssumeCase(
        [unbound_pvc, unbound_pvc2], [pv_node1a, pv_node1b],
        bindings=[BindingInfo(unbound_pvc, pv_node1a), BindingInfo(unbound_pvc2, pv_node1b)],
        want_bindings=[BindingInfo(unbound_pvc, pv_node1a_bound),
                       BindingInfo(unbound_pvc2, pv_node1b_bound)]),
    "pv-already-bound": AssumeCase([unbound_pvc], [pv_node1a_bound],
                                   bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)]),
    "tmpupdate-failed": AssumeCase(
        [unbound_pvc], [pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a), BindingInfo(unbound_pvc2, pv_node1b)],
        should_fail=True),
    "one-binding, one-pvc-provisioned": AssumeCase(
        [unbound_pvc, provisioned_pvc], [pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)],
        provisions=[DynamicProvision(provisioned_pvc)],
        want_bindings=[BindingInfo(unbound_pvc, pv_node1a_bound)],
        want_provisions=[DynamicProvision(selected_node_pvc)]),
    "one-binding, one-provision-tmpupdate-failed": AssumeCase(
        [unbound_pvc, provisioned_pvc_higher_version], [pv_node1a],
        bindings=[BindingInfo(unbound_pvc, pv_node1a)],
        provisions=[DynamicProvision(provisioned_pvc2)], should_fail=True),
}


def _assert_assumed(binder: VolumeBinder, bindings: list[BindingInfo],
                    claims: list[Claim]) -> None:
    for binding in bindings:
        ref = binder.pv_cache.get(binding.pv.metadata.name).spec.claim_ref
        assert ref is not None
        assert (ref.namespace, ref.name) == (binding.pvc.metadata.namespace,
                                             binding.pvc.metadata.name)
    for claim in claims:
        cached = binder.pvc_cache.get(f"testns/{claim.metadata.name}")
        assert cached.metadata.annotations[storage.ANNOTATION_SELECTED_NODE] == NODE_LABEL_VALUE


def _assert_restored(binder: VolumeBinder, bindings: list[BindingInfo],
                     claims: list[Claim]) -> None:
    for binding in bindings:
        name = binding.pv.metadata.name
        if binder.listers.persistent_volumes.get(name) is not None:  # else never assumable
            assert binder.pv_cache.get(name) is binder.pv_cache.get_api_obj(name)
    for claim in claims:
        cached = binder.pvc_cache.get(f"testns/{claim.metadata.name}")
        assert storage.ANNOTATION_SELECTED_NODE not in cached.metadata.annotations


@pytest.mark.parametrize("case", ASSUME_POD_VOLUMES.values(), ids=ASSUME_POD_VOLUMES.keys())
def test_assume_pod_volumes(case: AssumeCase) -> None:
    binder = _binder(*case.pod_pvcs, *case.pvs)
    pod = make_pod(claims=case.pod_pvcs)
    found = PodVolumes(list(case.bindings), list(case.provisions))
    claims = [p.pvc for p in case.provisions]
    if case.should_fail:
        with pytest.raises(BinderError):
            binder.assume_pod_volumes(pod, "node1", found)
        _assert_restored(binder, case.bindings, claims)
        return
    assert binder.assume_pod_volumes(pod, "node1", found) is case.all_bound
    if case.all_bound:
        return
    want_bindings = case.bindings if case.want_bindings is None else case.want_bindings
    want_provisions = case.provisions if case.want_provisions is None else case.want_provisions
    _assert_assumed(binder, want_bindings, [p.pvc for p in want_provisions])
    assert found.static_bindings == want_bindings
    assert found.dynamic_provisions == want_provisions


def test_revert_assumed_pod_volumes() -> None:
    binder = _binder(unbound_pvc, provisioned_pvc, pv_node1a)
    pod = make_pod(claims=[unbound_pvc, provisioned_pvc])
    found = PodVolumes([BindingInfo(unbound_pvc, pv_node1a)],
                       [DynamicProvision(provisioned_pvc)])
    assert not binder.assume_pod_volumes(pod, "node1", found)
    _assert_assumed(binder, [BindingInfo(unbound_pvc, pv_node1a_bound)], [selected_node_pvc])
    binder.revert_assumed_pod_volumes(found)
    _assert_restored(binder, [BindingInfo(unbound_pvc, pv_node1a)], [provisioned_pvc])
