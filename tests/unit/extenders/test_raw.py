"""Extenders are sent pods and nodes as the API server sent them (upstream sends the
objects of its informer cache): the informers keep each object's JSON beside it."""

from __future__ import annotations

import json

from kpysched.extenders import wire
from kpysched.extenders.raw import RawObjects
from kpysched.informers.decode import Decoder
from kpysched.objects.api import Node, NodeList, Pod, PodList

POD = {"kind": "Pod", "apiVersion": "v1",
       "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                    "managedFields": [{"manager": "kubectl"}],
                    "annotations": {"team": "gpu"}},
       "spec": {"containers": [{"name": "c", "image": "busybox"}], "dnsPolicy": "ClusterFirst"},
       "status": {"phase": "Pending", "qosClass": "BestEffort"}}
NODE = {"metadata": {"name": "n1", "uid": "nu1", "managedFields": [{"manager": "kubelet"}]},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                   "nodeInfo": {"kubeletVersion": "v1.36.4"}}}


def test_a_watched_pod_is_sent_whole_without_managed_fields_kind_or_api_version() -> None:
    raw = RawObjects(drop_managed_fields=True)
    decoder = Decoder("pods", Pod, PodList, raw.keep)
    line = json.dumps({"type": "ADDED", "object": POD}).encode()
    event = decoder.decode_event(line)
    pod = event.obj  # type: ignore[union-attr]
    sent = json.loads(wire.encode_pod(pod, raw))
    expected = json.loads(json.dumps(POD))
    del expected["kind"], expected["apiVersion"], expected["metadata"]["managedFields"]
    assert sent == expected


def test_listed_nodes_are_sent_whole_managed_fields_and_all() -> None:
    raw = RawObjects(drop_managed_fields=False)
    decoder = Decoder("nodes", Node, NodeList, raw.keep)
    items, _ = decoder.decode_list(json.dumps(
        {"metadata": {"resourceVersion": "1"}, "items": [NODE]}).encode())
    (node,) = items
    body = json.loads(wire.extender_args(b"{}", [node], None, wire.NodeBodies(raw)))
    assert body["Nodes"]["items"] == [NODE]


def test_an_object_not_kept_is_sent_from_its_slim_form() -> None:
    raw = RawObjects(drop_managed_fields=True)
    decoder = Decoder("pods", Pod, PodList, raw.keep)
    decoder.decode_event(json.dumps({"type": "ADDED", "object": POD}).encode())
    copy = Decoder("pods", Pod, PodList).decode_object(json.dumps(POD).encode())
    assert copy is not None
    sent = json.loads(wire.encode_pod(copy, raw))  # a copy: not the informer's object
    assert "dnsPolicy" not in sent["spec"] and sent["metadata"]["name"] == "p"


def test_objects_the_informer_no_longer_holds_are_dropped() -> None:
    raw = RawObjects(drop_managed_fields=True)
    live: dict[str, Pod] = {}
    raw.follow(lambda: live)
    decoder = Decoder("pods", Pod, PodList, raw.keep)
    for index in range(3000):
        document = {**POD, "metadata": {**POD["metadata"], "uid": f"u{index}"}}
        pod = decoder.decode_object(json.dumps(document).encode())
        assert pod is not None
        if index % 10 == 0:
            live[pod.metadata.uid] = pod  # the rest were deleted meanwhile
    assert len(raw) < 2500
    assert all(raw.json_of(pod) is not None for pod in live.values())
