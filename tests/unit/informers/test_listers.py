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
