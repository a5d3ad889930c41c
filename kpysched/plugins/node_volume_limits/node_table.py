"""What NodeVolumeLimits' Filter needs to know of each node apart from the pod to place,
kept per snapshot row across scheduling cycles for the vector form.

Per row: the node's CSINode, its limits per driver, the CSI volumes its pods use (by
unique name) and how many volumes of each driver are in use there (those plus the
volumes its VolumeAttachments hold for no pod there), and whether counting its pods'
volumes ends in an error (the Filter then answers that error on this node). A row is
worked out again when the snapshot replaced it (its column version moved); every row
when a storage object changed (the StorageEpoch moved) or the node list did.

Columns per driver (limit, -1 for none; volumes in use; listed in the CSINode) are made
on first use and kept up to date with the rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.objects import storage

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
# Unique volume name ("<driver>/<handle>") -> driver.
Volumes = dict[str, str]


@dataclass(slots=True)
class NodeVolumes:
    """One node as the Filter sees it, the pod to place aside."""

    csi_node: storage.CSINode | None = None
    limits: dict[str, int] = field(default_factory=dict)
    # Volumes the node's pods use; only worked out on nodes with limits.
    attached: Volumes = field(default_factory=dict)
    in_use: Counter[str] = field(default_factory=Counter)
    # Counting the pods' volumes ends in an error status (Filter's answer there).
    error: bool = False


@dataclass(slots=True)
class _DriverColumns:
    limit: IntArray
    in_use: IntArray
    listed: BoolArray


def _listed(csi_node: storage.CSINode | None, driver: str) -> bool:
    return csi_node is not None and any(d.name == driver for d in csi_node.spec.drivers)


class NodeTable:
    """The rows of one snapshot (the last one refreshed against)."""

    def __init__(self, build: Callable[[NodeInfo], NodeVolumes]) -> None:
        self._build = build
        self._names: tuple[str, ...] | None = None
        self._epoch = -1
        self._versions: IntArray = np.zeros(0, dtype=np.int64)
        self.rows: list[NodeVolumes] = []
        self.has_csi_node: BoolArray = np.zeros(0, dtype=np.bool_)
        self.limited: BoolArray = np.zeros(0, dtype=np.bool_)
        self.errors: BoolArray = np.zeros(0, dtype=np.bool_)
        # Unique volume name -> rows whose pods use it.
        self.pod_holders: dict[str, set[int]] = {}
        self._drivers: dict[str, _DriverColumns] = {}

    def refresh(self, snapshot: Snapshot, epoch: int) -> None:
        versions = snapshot.columns.version
        if snapshot.names is not self._names or epoch != self._epoch:
            self._rebuild(snapshot)
        else:
            for row in np.flatnonzero(versions != self._versions).tolist():
                self._set_row(row, self._build(snapshot.node_infos[row]))
        self._names, self._epoch = snapshot.names, epoch
        self._versions = versions.copy()

    def _rebuild(self, snapshot: Snapshot) -> None:
        size = len(snapshot.node_infos)
        self.rows = [NodeVolumes() for _ in range(size)]
        self.has_csi_node = np.zeros(size, dtype=np.bool_)
        self.limited = np.zeros(size, dtype=np.bool_)
        self.errors = np.zeros(size, dtype=np.bool_)
        self.pod_holders = {}
        self._drivers = {}
        for row, info in enumerate(snapshot.node_infos):
            self._set_row(row, self._build(info))

    def _set_row(self, row: int, entry: NodeVolumes) -> None:
        for unique in self.rows[row].attached:
            holders = self.pod_holders.get(unique)
            if holders is not None:
                holders.discard(row)
                if not holders:
                    del self.pod_holders[unique]
        self.rows[row] = entry
        for unique in entry.attached:
            self.pod_holders.setdefault(unique, set()).add(row)
        self.has_csi_node[row] = entry.csi_node is not None
        self.limited[row] = bool(entry.limits)
        self.errors[row] = entry.error
        for driver, columns in self._drivers.items():
            self._fill(columns, row, entry, driver)

    @staticmethod
    def _fill(columns: _DriverColumns, row: int, entry: NodeVolumes, driver: str) -> None:
        columns.limit[row] = entry.limits.get(driver, -1)
        columns.in_use[row] = entry.in_use[driver]
        columns.listed[row] = _listed(entry.csi_node, driver)

    def driver(self, driver: str) -> _DriverColumns:
        """Per row: the driver's limit (-1: none), its volumes in use, and whether the
        CSINode lists it."""
        columns = self._drivers.get(driver)
        if columns is None:
            size = len(self.rows)
            columns = _DriverColumns(np.full(size, -1, dtype=np.int64),
                                     np.zeros(size, dtype=np.int64),
                                     np.zeros(size, dtype=np.bool_))
            for row, entry in enumerate(self.rows):
                self._fill(columns, row, entry, driver)
            self._drivers[driver] = columns
        return columns
