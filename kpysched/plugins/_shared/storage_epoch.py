"""A number that moves whenever a storage object the volume plugins read changes.

The volume plugins keep what they work out from claims, PVs, classes, CSINodes and
VolumeAttachments across scheduling cycles (NodeVolumeLimits' per-node table,
VolumeBinding's migrated plugins) and must drop it when any of those changes. Each
informer index calls its observers on every add, update and delete; one StorageEpoch
per set of listers hears them all and counts.
"""

from __future__ import annotations

from typing import Any

from kpysched.framework.cluster_events import ActionType
from kpysched.framework.interfaces import StorageListers


class StorageEpoch:
    """`value` moves on every change of the watched listers; `csi_nodes` moves only on
    CSINode changes. `watching` is False when some lister cannot be followed (it has
    no observers): then nothing may be kept across cycles."""

    def __init__(self, listers: StorageListers) -> None:
        self.value = 0
        self.csi_nodes = 0
        watched = (listers.persistent_volumes, listers.persistent_volume_claims,
                   listers.storage_classes, listers.volume_attachments)
        observable = [getattr(lister, "observers", None)
                      for lister in (*watched, listers.csi_nodes)]
        self.watching = all(isinstance(observers, list) for observers in observable)
        if not self.watching:
            return
        for observers in observable[:-1]:
            assert isinstance(observers, list)
            observers.append(self._changed)
        csi_observers = observable[-1]
        assert isinstance(csi_observers, list)
        csi_observers.append(self._csi_node_changed)

    def _changed(self, action: ActionType, old: Any, new: Any) -> None:
        self.value += 1

    def _csi_node_changed(self, action: ActionType, old: Any, new: Any) -> None:
        self.value += 1
        self.csi_nodes += 1


def storage_epoch(listers: StorageListers) -> StorageEpoch:
    """The epoch already following these listers, else a new one: every volume plugin
    of every profile shares one (observers are never removed, so one per listers)."""
    observers = getattr(listers.persistent_volume_claims, "observers", None)
    for observer in observers if isinstance(observers, list) else ():
        owner = getattr(observer, "__self__", None)
        if isinstance(owner, StorageEpoch):
            return owner
    return StorageEpoch(listers)
