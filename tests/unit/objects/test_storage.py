"""Decoding the storage objects as the API server sends them."""

from __future__ import annotations

import msgspec

from kpysched.objects import storage


def test_csinode_without_drivers_reads_null_as_empty() -> None:
    """Lists without omitempty come back null once empty (a kubelet's CSINode on a node
    without CSI drivers): they must decode, not be dropped as malformed."""
    raw = b'{"metadata": {"name": "n1"}, "spec": {"drivers": null}}'
    assert msgspec.json.decode(raw, type=storage.CSINode).spec.drivers == []
    raw = b'{"spec": {"drivers": [{"name": "d", "nodeID": "n1", "topologyKeys": null}]}}'
    [driver] = msgspec.json.decode(raw, type=storage.CSINode).spec.drivers
    assert (driver.name, driver.node_id, driver.topology_keys) == ("d", "n1", [])


def test_volume_attributes_class_names() -> None:
    claim = msgspec.json.decode(b'{"spec": {"volumeAttributesClassName": "gold"}}',
                                type=storage.PersistentVolumeClaim)
    volume = msgspec.json.decode(b'{"spec": {"volumeAttributesClassName": "gold"}}',
                                 type=storage.PersistentVolume)
    assert claim.spec.volume_attributes_class_name == volume.spec.volume_attributes_class_name \
        == "gold"
