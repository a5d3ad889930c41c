"""In-tree volume sources of upstream's volume_restrictions_test.go, shared by the
VolumeRestrictions Filter and hint tests: two disks of each kind that conflict only
with themselves."""

from __future__ import annotations

GCE_FOO = {"gce_persistent_disk": {"pdName": "foo"}}
GCE_BAR = {"gce_persistent_disk": {"pdName": "bar"}}
AWS_FOO = {"aws_elastic_block_store": {"volumeID": "foo"}}
AWS_BAR = {"aws_elastic_block_store": {"volumeID": "bar"}}
RBD_AB = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_CD = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI_2016 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "fsType": "ext4", "lun": 0,
                        "iqn": "iqn.2016-12.server:storage.target01"}}
ISCSI_2017 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "fsType": "ext4", "lun": 0,
                        "iqn": "iqn.2017-12.server:storage.target01"}}
