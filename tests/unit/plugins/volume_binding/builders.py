"""Objects and a fake API server for the VolumeBinding tests (upstream's binder_test.go
and test_utils.go fixtures, same names and shapes)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kpysched.api.response import ApiResponse
from kpysched.informers.listers import StorageListers
from kpysched.objects import api, storage

NODE_LABEL_KEY = "nodeKey"
NODE_LABEL_VALUE = "node1"
PROVISIONER = "test-provisioner"
HOSTNAME = "kubernetes.io/hostname"

WAIT_CLASS = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
WAIT_CLASS_WITH_PROVISIONER = "waitClassWithProvisioner"
TOPO_MISMATCH_CLASS = "topoMismatchClass"

PVC_UNBOUND, PVC_PREBOUND, PVC_BOUND, PVC_SELECTED_NODE = range(4)


def storage_class(name: str, mode: str | None, provisioner: str = "",
                  topology: Mapping[str, list[str]] | None = None) -> storage.StorageClass:
    terms = ([storage.TopologySelectorTerm(match_label_expressions=[
        storage.TopologySelectorLabelRequirement(key=key, values=values)
        for key, values in topology.items()])] if topology else [])
    return storage.StorageClass(metadata=api.ObjectMeta(name=name), provisioner=provisioner,
                                volume_binding_mode=mode, allowed_topologies=terms)


def binder_test_classes() -> list[storage.StorageClass]:
    wait = storage.BINDING_WAIT_FOR_FIRST_CONSUMER
    return [
        storage_class(WAIT_CLASS_WITH_PROVISIONER, wait, PROVISIONER,
                      {NODE_LABEL_KEY: [NODE_LABEL_VALUE, "reference-value"]}),
        storage_class(IMMEDIATE_CLASS, storage.BINDING_IMMEDIATE),
        storage_class(WAIT_CLASS, wait, "kubernetes.io/no-provisioner"),
        storage_class(TOPO_MISMATCH_CLASS, wait, PROVISIONER,
                      {NODE_LABEL_KEY: ["reference-value"]}),
    ]


def make_test_pvc(name: str, size: str, node: str, state: int, pv_name: str,
                  version: str, class_name: str | None) -> storage.PersistentVolumeClaim:
    """upstream's makeTestPVC (namespace testns, uid pvc-uid, Filesystem mode)."""
    annotations: dict[str, str] = {}
    volume_name = ""
    if state == PVC_SELECTED_NODE:
        annotations[storage.ANNOTATION_SELECTED_NODE] = node
    if state == PVC_BOUND:
        annotations[storage.ANNOTATION_BIND_COMPLETED] = "yes"
    if state in (PVC_BOUND, PVC_PREBOUND):
        volume_name = pv_name
    return storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace="testns", uid="pvc-uid",
                                resource_version=version, annotations=annotations),
        spec=storage.PersistentVolumeClaimSpec(
            resources=storage.VolumeResourceRequirements(requests={"storage": size}),
            storage_class_name=class_name, volume_mode="Filesystem", volume_name=volume_name))


def node_affinity(terms: Mapping[str, list[str]]) -> storage.VolumeNodeAffinity:
    return storage.VolumeNodeAffinity(required=api.NodeSelector(node_selector_terms=[
        api.NodeSelectorTerm(match_expressions=[
            api.NodeSelectorRequirement(key=key, operator="In", values=values)
            for key, values in terms.items()])]))


def claim_ref(claim: storage.PersistentVolumeClaim) -> storage.ObjectReference:
    meta = claim.metadata
    return storage.ObjectReference(kind="PersistentVolumeClaim", api_version="v1",
                                   namespace=meta.namespace, name=meta.name, uid=meta.uid,
                                   resource_version=meta.resource_version)


def make_test_pv(name: str, node: str, capacity: str, version: str,
                 bound_to: storage.PersistentVolumeClaim | None,
                 class_name: str) -> storage.PersistentVolume:
    """upstream's makeTestPV: Available, affinity nodeKey In [node], bound by controller."""
    annotations = {}
    if bound_to is not None:
        annotations[storage.ANNOTATION_BOUND_BY_CONTROLLER] = "yes"
    return storage.PersistentVolume(
        metadata=api.ObjectMeta(name=name, resource_version=version, annotations=annotations),
        spec=storage.PersistentVolumeSpec(
            capacity={"storage": capacity}, storage_class_name=class_name,
            volume_mode="Filesystem",
            node_affinity=node_affinity({NODE_LABEL_KEY: [node]}) if node else None,
            claim_ref=claim_ref(bound_to) if bound_to is not None else None),
        status=storage.PersistentVolumeStatus(phase="Available"))


def with_annotation(claim: storage.PersistentVolumeClaim, key: str,
                    value: str) -> storage.PersistentVolumeClaim:
    return msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
        claim.metadata, annotations={**claim.metadata.annotations, key: value}))


def without_annotations(claim: storage.PersistentVolumeClaim) -> storage.PersistentVolumeClaim:
    return msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
        claim.metadata, annotations={}))


def with_version(obj: Any, version: str) -> Any:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(
        obj.metadata, resource_version=version))


def without_claim_uid(volume: storage.PersistentVolume) -> storage.PersistentVolume:
    assert volume.spec.claim_ref is not None
    return msgspec.structs.replace(volume, spec=msgspec.structs.replace(
        volume.spec, claim_ref=msgspec.structs.replace(volume.spec.claim_ref, uid="")))


def make_csi_node(name: str, migrated: str) -> storage.CSINode:
    return storage.CSINode(metadata=api.ObjectMeta(
        name=name, annotations={"storage.alpha.kubernetes.io/migrated-plugins": migrated}))


def make_csi_driver(name: str, storage_capacity: bool) -> storage.CSIDriver:
    return storage.CSIDriver(metadata=api.ObjectMeta(name=name),
                             spec=storage.CSIDriverSpec(storage_capacity=storage_capacity))


def make_capacity(name: str, class_name: str, node_value: str | None, capacity: str,
                  maximum: str = "") -> storage.CSIStorageCapacity:
    """upstream's makeCapacity: node topology nodeKey=<node>, or every node."""
    topology = api.LabelSelector(
        match_labels={NODE_LABEL_KEY: node_value} if node_value is not None else {})
    return storage.CSIStorageCapacity(
        metadata=api.ObjectMeta(name=name), storage_class_name=class_name,
        node_topology=topology, capacity=capacity or None, maximum_volume_size=maximum or None)


def make_pod(name: str = "test-pod", namespace: str = "testns", node: str = "node1",
             claims: Iterable[storage.PersistentVolumeClaim] = (), *,
             ephemeral: Iterable[str] = (), uid: str = "") -> api.Pod:
    volumes = [api.Volume(name=f"vol{index}", persistent_volume_claim=(
        api.PersistentVolumeClaimVolumeSource(claim_name=claim.metadata.name)))
        for index, claim in enumerate(claims)]
    volumes += [api.Volume(name=volume, ephemeral=api.EphemeralVolumeSource())
                for volume in ephemeral]
    return api.Pod(metadata=api.ObjectMeta(name=name, namespace=namespace, uid=uid),
                   spec=api.PodSpec(node_name=node, volumes=volumes))


def listers_with(*objects: Any) -> StorageListers:
    listers = StorageListers()
    add(listers, *objects)
    return listers


def add(listers: StorageListers, *objects: Any) -> None:
    for obj in objects:
        _index(listers, obj).on_add(obj)


def _index(listers: StorageListers, obj: Any) -> Any:
    return {
        storage.PersistentVolume: listers.persistent_volumes,
        storage.PersistentVolumeClaim: listers.persistent_volume_claims,
        storage.StorageClass: listers.storage_classes,
        storage.CSINode: listers.csi_nodes,
        storage.CSIDriver: listers.csi_drivers,
        storage.CSIStorageCapacity: listers.csi_storage_capacities,
    }[type(obj)]


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 merge patch."""
    merged = dict(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        elif isinstance(value, Mapping):
            merged[key] = _merge({}, value)
        else:
            merged[key] = value
    return merged


def _conflict(resource: str, name: str) -> ApiResponse:
    message = (f'Operation cannot be fulfilled on {resource} "{name}": the object has been '
               "modified; please apply your changes to the latest version and try again")
    return ApiResponse(409, msgspec.json.encode({"kind": "Status", "code": 409,
                                                 "message": message}))


@dataclass
class FakeStorageApi:
    """PVs and claims as the API server holds them. A merge patch must carry the
    current resourceVersion (else 409) and bumps it; `propagate` passes every write
    on to the informer indexes at once, as a watch would."""

    listers: StorageListers
    propagate: bool = True
    objects: dict[tuple[str, str], Any] = field(default_factory=dict)
    patches: list[tuple[str, Any]] = field(default_factory=list)

    def put(self, *objects: Any) -> None:
        """Objects as the API server holds them (the informers are not told)."""
        for obj in objects:
            self.objects[self._key(obj)] = obj

    def update(self, obj: Any) -> Any:
        """An Update by someone else (the PV controller, a user): the object replaces the
        stored one with the next resourceVersion, and the informers hear of it."""
        key = self._key(obj)
        stored = self.objects.get(key)
        version = int(stored.metadata.resource_version) + 1 if stored is not None else 1
        updated = with_version(obj, str(version))
        self.objects[key] = updated
        _index(self.listers, updated).on_add(updated)
        return updated

    def delete(self, obj: Any) -> None:
        self.objects.pop(self._key(obj), None)
        _index(self.listers, obj).on_delete(obj)

    @staticmethod
    def _key(obj: Any) -> tuple[str, str]:
        kind = "persistentvolumes" if isinstance(obj, storage.PersistentVolume) else (
            "persistentvolumeclaims")
        meta = obj.metadata
        return kind, f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> ApiResponse:
        assert method == "PATCH", method
        self.patches.append((path, body))
        parts = path.strip("/").split("/")
        if parts[2] == "persistentvolumes":
            resource, key, kind = "persistentvolumes", parts[3], storage.PersistentVolume
        else:
            resource, key = "persistentvolumeclaims", f"{parts[3]}/{parts[5]}"
            kind = storage.PersistentVolumeClaim  # type: ignore[assignment]
        stored = self.objects.get((resource, key))
        name = key.rsplit("/", 1)[-1]
        if stored is None:
            return ApiResponse(404, msgspec.json.encode(
                {"kind": "Status", "code": 404, "message": f'{resource} "{name}" not found'}))
        if body["metadata"]["resourceVersion"] != stored.metadata.resource_version:
            return _conflict(resource, name)
        merged = _merge(msgspec.to_builtins(stored), body)
        merged["metadata"]["resourceVersion"] = str(int(stored.metadata.resource_version) + 1)
        updated = msgspec.convert(merged, kind)
        self.objects[(resource, key)] = updated
        if self.propagate:
            _index(self.listers, updated).on_add(updated)
        return ApiResponse(200, msgspec.json.encode(updated))


# The claims and volumes several binder tests share (upstream's binder_test.go declares
# them once for its package); treat them as read-only.
unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", PVC_UNBOUND, "", "1", WAIT_CLASS)
bound_pvc = make_test_pvc("bound-pvc", "1G", "", PVC_BOUND, "pv-bound", "1", WAIT_CLASS)
provisioned_pvc = make_test_pvc("provisioned-pvc", "1Gi", "", PVC_UNBOUND, "", "1",
                                WAIT_CLASS_WITH_PROVISIONER)
provisioned_pvc2 = make_test_pvc("provisioned-pvc2", "1Gi", "", PVC_UNBOUND, "", "1",
                                 WAIT_CLASS_WITH_PROVISIONER)
selected_node_pvc = make_test_pvc("provisioned-pvc", "1Gi", NODE_LABEL_VALUE, PVC_SELECTED_NODE,
                                  "", "1", WAIT_CLASS_WITH_PROVISIONER)
pv_node1a = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
pv_node1b = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
pv_node2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
pv_bound = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
pv_node1a_bound = make_test_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT_CLASS)
pv_node1b_bound = make_test_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT_CLASS)
