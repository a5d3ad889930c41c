"""Listers: the secondary-resource indexes and the cluster events their changes become,
with the old and new objects the volume plugins' queueing hints read."""

from __future__ import annotations

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.informers.listers import Index, StorageListers
from kpysched.objects import api, storage


def claim(name: str, volume: str = "") -> storage.PersistentVolumeClaim:
    built = storage.PersistentVolumeClaim(metadata=storage.ObjectMeta(name=name,
                                                                      namespace="ns"))
    built.spec.volume_name = volume
    return built


def test_index_reports_each_change_with_its_objects() -> None:
    seen: list[tuple[ActionType, object, object]] = []
    index: Index[api.Namespace] = Index(lambda action, old, new: seen.append((action, old, new)))
    before = api.Namespace(metadata=api.ObjectMeta(name="team-a"))
    after = api.Namespace(metadata=api.ObjectMeta(name="team-a", labels={"team": "a"}))
    index.on_add(before)
    index.on_update(before, after)
    index.on_delete(after)
    assert seen == [(ActionType.ADD, None, before), (ActionType.UPDATE, before, after),
                    (ActionType.DELETE, after, None)]
    assert index.get("team-a") is None


def test_index_generation_counts_every_change() -> None:
    """InterPodAffinity keeps counts that depend on namespace labels while the namespaces
    index's generation stays the same (SchedulerHandle.namespace_labels_version)."""
    index: Index[api.Namespace] = Index()
    team = api.Namespace(metadata=api.ObjectMeta(name="team-a"))
    relabelled = api.Namespace(metadata=api.ObjectMeta(name="team-a", labels={"team": "a"}))
    seen = [index.generation]
    for change in (lambda: index.on_add(team), lambda: index.on_update(team, relabelled),
                   lambda: index.on_delete(relabelled)):
        change()
        seen.append(index.generation)
    assert seen == sorted(set(seen))  # it grew with each change


def test_storage_changes_become_their_resources_events() -> None:
    moves: list[tuple[ClusterEvent, object, object]] = []
    listers = StorageListers()
    listers.requeue_with(lambda event, old, new: moves.append((event, old, new)))
    pending, bound = claim("c"), claim("c", "pv-1")
    listers.persistent_volume_claims.on_add(pending)
    listers.persistent_volume_claims.on_update(pending, bound)
    assert moves == [
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), None, pending),
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE), pending, bound)]
    assert listers.persistent_volume_claims.get("ns/c") is bound


def test_device_taint_rules_are_watched_only_when_asked_and_requeue_as_slice_updates() -> None:
    from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
    from kpysched.informers.listers import Listers
    from kpysched.objects import dra
    from kpysched.objects.api import ObjectMeta

    as_136 = Listers()
    assert as_136.resources.device_taint_rules is None
    assert "devicetaintrules" not in {resource for *_, resource in as_136.specs()}

    as_137 = Listers(device_taint_rules=True)
    paths = {resource: path for path, *_, resource in as_137.specs()}
    assert paths["devicetaintrules"] == "/apis/resource.k8s.io/v1/devicetaintrules"
    moved: list[ClusterEvent] = []
    as_137.resources.requeue_with(lambda event, old, new: moved.append(event))
    rules = as_137.resources.device_taint_rules
    assert rules is not None
    rule = dra.DeviceTaintRule(metadata=ObjectMeta(name="gpu-maintenance"))
    rules.on_add(rule)
    rules.on_delete(rule)
    # Upstream's tracker publishes a rule as updates of the slices it taints.
    assert moved == [ClusterEvent(Resource.RESOURCE_SLICE, ActionType.UPDATE)] * 2
