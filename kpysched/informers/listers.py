"""Read-only indexes of the secondary resources plugins consult (Namespaces, PDBs,
Services, ReplicationControllers, ReplicaSets, StatefulSets, the storage objects of
the volume plugins and the resource.k8s.io objects of DynamicResources), fed by
informers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from kubernetes_asyncio import client

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.informers.reflector import Reflector
from kpysched.objects import api, coscheduling, dra, scheduling, storage
from kpysched.objects import composite_pod_groups as cpg_api
from kpysched.objects.extended_resource_classes import ExtendedResourceClasses


class _Meta(Protocol):
    name: str
    namespace: str
    uid: str


class _HasMeta(Protocol):
    @property
    def metadata(self) -> _Meta: ...


T = TypeVar("T", bound=_HasMeta)

# on_change(action, old, new): ADD with (None, added), UPDATE with (old, new), DELETE
# with (deleted, None); the objects are what queueing hints receive.
OnChange = Callable[[ActionType, Any, Any], object]
# What a change is passed on to: the queue's move_on_event(event, old, new).
Move = Callable[[ClusterEvent, Any, Any], object]


class Index(Generic[T]):
    """An informer handler that keeps objects by namespace/name and calls `on_change`
    after every add, update or delete (e.g. to move unschedulable pods)."""

    def __init__(self, on_change: OnChange | None = None) -> None:
        self._objects: dict[str, T] = {}
        self.on_change = on_change
        # Called before on_change with the same arguments: state a plugin keeps up to
        # date incrementally (DynamicResources' allocated devices) is current by the
        # time the change requeues the pods it may help.
        self.observers: list[OnChange] = []
        # Bumped by every add, update and delete: while it stays the same, so does every
        # object (lets a reader keep what it derived from them, say namespace labels).
        self.generation = 0

    def _changed(self, action: ActionType, old: T | None, new: T | None) -> None:
        self.generation += 1
        for observer in self.observers:
            observer(action, old, new)
        if self.on_change is not None:
            self.on_change(action, old, new)

    @staticmethod
    def key(obj: _HasMeta) -> str:
        meta = obj.metadata
        return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name

    def on_add(self, obj: T) -> None:
        self._objects[self.key(obj)] = obj
        self._changed(ActionType.ADD, None, obj)

    def on_update(self, old: T, new: T) -> None:
        self._objects[self.key(new)] = new
        self._changed(ActionType.UPDATE, old, new)

    def on_delete(self, obj: T) -> None:
        self._objects.pop(self.key(obj), None)
        self._changed(ActionType.DELETE, obj, None)

    def get(self, key: str) -> T | None:
        return self._objects.get(key)

    def values(self) -> list[T]:
        return list(self._objects.values())

    def in_namespace(self, namespace: str) -> list[T]:
        return [o for o in self._objects.values() if o.metadata.namespace == namespace]


# Resources kpysched schedules without when the API server refuses (403) or does not
# serve (404) their list, and what going without costs; such an informer reads as
# empty and counts as synced (reflector.py). DeviceTaintRules: a v1.37 API that a
# v1.36 API server does not serve, and that an RBAC rendered for v1.36 (deploy/) does
# not grant; kpysched may behave as 1.37 on such a cluster when it could not read the
# cluster's version at start. Every other informer is required, as upstream's are:
# without pods, nodes or the volume and DRA objects a placement can be wrong.
OPTIONAL_RESOURCES = {
    "devicetaintrules": "devices that DeviceTaintRules taint may be allocated (taints "
                        "published in ResourceSlices still apply)",
}


class Listers:
    """Indexes of the secondary resources, each fed by its own informer."""

    def __init__(self, *, generic_workload: bool = False, coscheduling: bool = False,
                 device_taint_rules: bool = False, composite_pod_groups: bool = False,
                 release: int = scheduling.NEWEST_API_RELEASE) -> None:
        self.namespaces: Index[api.Namespace] = Index()
        self.pdbs: Index[api.PodDisruptionBudget] = Index()
        self.services: Index[api.Service] = Index()
        self.replication_controllers: Index[api.ReplicationController] = Index()
        self.replica_sets: Index[api.ReplicaSet] = Index()
        self.stateful_sets: Index[api.StatefulSet] = Index()
        self.storage = StorageListers()
        # DeviceTaintRules only as v1.37 (the API does not exist in v1.36).
        self.resources = ResourceListers(device_taint_rules=device_taint_rules)
        # Only when the API server serves PodGroups (GenericWorkload), in the version
        # of the release kpysched behaves as.
        self.workloads = (WorkloadListers(release, composites=composite_pod_groups)
                          if generic_workload else None)
        # Only when a profile enables Coscheduling: its CRD must be installed then.
        self.coscheduling = CoschedulingListers() if coscheduling else None

    def reflectors(self, api_client: client.ApiClient) -> list[Reflector[Any]]:
        return [Reflector(api_client, path, kind, list_kind, index, resource=resource,
                          optional_impact=OPTIONAL_RESOURCES.get(resource))
                for path, kind, list_kind, index, resource in self.specs()]

    def specs(self) -> list[tuple[str, type[Any], type[Any], Index[Any], str]]:
        """(collection path, object type, list type, index, resource) per informer:
        what `reflectors` watches and what `kpysched snapshot` lists."""
        return [
            ("/api/v1/namespaces", api.Namespace, api.NamespaceList, self.namespaces,
             "namespaces"),
            ("/apis/policy/v1/poddisruptionbudgets", api.PodDisruptionBudget,
             api.PodDisruptionBudgetList, self.pdbs, "poddisruptionbudgets"),
            ("/api/v1/services", api.Service, api.ServiceList, self.services, "services"),
            ("/api/v1/replicationcontrollers", api.ReplicationController,
             api.ReplicationControllerList, self.replication_controllers,
             "replicationcontrollers"),
            ("/apis/apps/v1/replicasets", api.ReplicaSet, api.ReplicaSetList,
             self.replica_sets, "replicasets"),
            ("/apis/apps/v1/statefulsets", api.StatefulSet, api.StatefulSetList,
             self.stateful_sets, "statefulsets"),
            *self.storage.specs(),
            *self.resources.specs(),
            *(self.workloads.specs() if self.workloads is not None else ()),
            *(self.coscheduling.specs() if self.coscheduling is not None else ()),
        ]


class _RequeueingListers:
    """Indexes whose every change becomes a cluster event for the pods rejected by the
    plugins that read them, with the old and new object for their queueing hints."""

    def _by_resource(self) -> list[tuple[Resource, Index[Any]]]:
        raise NotImplementedError

    def requeue_with(self, move: Move) -> None:
        for kind, index in self._by_resource():
            index.on_change = (lambda action, old, new, kind=kind:
                               move(ClusterEvent(kind, action), old, new))


class StorageListers(_RequeueingListers):
    """The storage objects the volume plugins read (upstream's PV, PVC, StorageClass,
    CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment listers).

    kube-scheduler starts these informers with its default profile; so does kpysched,
    whatever the profile, so the RBAC it needs does not depend on the configuration.
    """

    def __init__(self) -> None:
        self.persistent_volumes: Index[storage.PersistentVolume] = Index()
        self.persistent_volume_claims: Index[storage.PersistentVolumeClaim] = Index()
        self.storage_classes: Index[storage.StorageClass] = Index()
        self.csi_nodes: Index[storage.CSINode] = Index()
        self.csi_drivers: Index[storage.CSIDriver] = Index()
        self.csi_storage_capacities: Index[storage.CSIStorageCapacity] = Index()
        self.volume_attachments: Index[storage.VolumeAttachment] = Index()

    def _by_resource(self) -> list[tuple[Resource, Index[Any]]]:
        return [
            (Resource.PERSISTENT_VOLUME, self.persistent_volumes),
            (Resource.PERSISTENT_VOLUME_CLAIM, self.persistent_volume_claims),
            (Resource.STORAGE_CLASS, self.storage_classes),
            (Resource.CSI_NODE, self.csi_nodes),
            (Resource.CSI_DRIVER, self.csi_drivers),
            (Resource.CSI_STORAGE_CAPACITY, self.csi_storage_capacities),
            (Resource.VOLUME_ATTACHMENT, self.volume_attachments),
        ]


    def specs(self) -> list[tuple[str, type[Any], type[Any], Index[Any], str]]:
        return [
            ("/api/v1/persistentvolumes", storage.PersistentVolume,
             storage.PersistentVolumeList, self.persistent_volumes, "persistentvolumes"),
            ("/api/v1/persistentvolumeclaims", storage.PersistentVolumeClaim,
             storage.PersistentVolumeClaimList, self.persistent_volume_claims,
             "persistentvolumeclaims"),
            ("/apis/storage.k8s.io/v1/storageclasses", storage.StorageClass,
             storage.StorageClassList, self.storage_classes, "storageclasses"),
            ("/apis/storage.k8s.io/v1/csinodes", storage.CSINode, storage.CSINodeList,
             self.csi_nodes, "csinodes"),
            ("/apis/storage.k8s.io/v1/csidrivers", storage.CSIDriver, storage.CSIDriverList,
             self.csi_drivers, "csidrivers"),
            ("/apis/storage.k8s.io/v1/csistoragecapacities", storage.CSIStorageCapacity,
             storage.CSIStorageCapacityList, self.csi_storage_capacities,
             "csistoragecapacities"),
            ("/apis/storage.k8s.io/v1/volumeattachments", storage.VolumeAttachment,
             storage.VolumeAttachmentList, self.volume_attachments, "volumeattachments"),
        ]


class ResourceListers(_RequeueingListers):
    """The resource.k8s.io/v1 objects DynamicResources reads: ResourceClaims,
    ResourceClaimTemplates, ResourceSlices and DeviceClasses.

    Started whatever the profile, as the storage informers are, so the RBAC kpysched
    needs does not depend on its configuration.
    """

    def __init__(self, device_taint_rules: bool = False) -> None:
        self.resource_claims: Index[dra.ResourceClaim] = Index()
        self.resource_claim_templates: Index[dra.ResourceClaimTemplate] = Index()
        self.resource_slices: Index[dra.ResourceSlice] = Index()
        self.device_classes: Index[dra.DeviceClass] = Index()
        # Extended resource name -> DeviceClass (DRAExtendedResource), current before
        # a DeviceClass change requeues anyone.
        self.extended_resource_classes = ExtendedResourceClasses()
        self.device_classes.observers.append(self.extended_resource_classes.observe)
        # DeviceTaintRules (resource.k8s.io/v1, GA and on from v1.37; v1.36 serves no
        # such API, so its informer is started only as 1.37). None: not watched.
        self.device_taint_rules: Index[dra.DeviceTaintRule] | None = (
            Index() if device_taint_rules else None)

    def device_class_for_extended_resource(self, name: str) -> dra.DeviceClass | None:
        """The DeviceClass backing extended resource `name`, explicitly or implicitly."""
        return self.extended_resource_classes.device_class(name)

    def _by_resource(self) -> list[tuple[Resource, Index[Any]]]:
        return [
            (Resource.RESOURCE_CLAIM, self.resource_claims),
            (Resource.RESOURCE_CLAIM_TEMPLATE, self.resource_claim_templates),
            (Resource.RESOURCE_SLICE, self.resource_slices),
            (Resource.DEVICE_CLASS, self.device_classes),
        ]

    def requeue_with(self, move: Move) -> None:
        super().requeue_with(move)
        if self.device_taint_rules is not None:
            # A rule taints (or stops tainting) the devices of slices: upstream's
            # tracker publishes that as updates of those ResourceSlices, so a pod a
            # taint kept out hears a ResourceSlice update, never a rule event.
            self.device_taint_rules.on_change = (
                lambda action, old, new: move(
                    ClusterEvent(Resource.RESOURCE_SLICE, ActionType.UPDATE), old, new))

    def specs(self) -> list[tuple[str, type[Any], type[Any], Index[Any], str]]:
        base = f"/apis/{dra.API_VERSION}"
        return [
            (f"{base}/resourceclaims", dra.ResourceClaim, dra.ResourceClaimList,
             self.resource_claims, "resourceclaims"),
            (f"{base}/resourceclaimtemplates", dra.ResourceClaimTemplate,
             dra.ResourceClaimTemplateList, self.resource_claim_templates,
             "resourceclaimtemplates"),
            (f"{base}/resourceslices", dra.ResourceSlice, dra.ResourceSliceList,
             self.resource_slices, "resourceslices"),
            (f"{base}/deviceclasses", dra.DeviceClass, dra.DeviceClassList,
             self.device_classes, "deviceclasses"),
            *([(f"{base}/devicetaintrules", dra.DeviceTaintRule,
                dra.DeviceTaintRuleList, self.device_taint_rules, "devicetaintrules")]
              if self.device_taint_rules is not None else []),
        ]


class WorkloadListers(_RequeueingListers):
    """The PodGroups GangScheduling reads, in the version the release serves
    (scheduling.k8s.io/v1alpha2 in v1.36, v1beta1 in v1.37), as that release's
    kube-scheduler watches them. Started only with GenericWorkload on, as kube-scheduler
    does: the API server serves them only then."""

    def __init__(self, release: int = scheduling.NEWEST_API_RELEASE, *,
                 composites: bool = False) -> None:
        self.pod_groups: Index[scheduling.PodGroup] = Index()
        self.api_version = scheduling.api_version(release)
        # v1.37's CompositePodGroups (v1alpha3), only with that alpha gate on.
        self.composite_pod_groups: Index[cpg_api.CompositePodGroup] | None = (
            Index() if composites else None)

    def _by_resource(self) -> list[tuple[Resource, Index[Any]]]:
        return [(Resource.POD_GROUP, self.pod_groups),
                *([(Resource.COMPOSITE_POD_GROUP, self.composite_pod_groups)]
                  if self.composite_pod_groups is not None else [])]

    def specs(self) -> list[tuple[str, type[Any], type[Any], Index[Any], str]]:
        return [(f"/apis/{self.api_version}/podgroups", scheduling.PodGroup,
                 scheduling.PodGroupList, self.pod_groups, "podgroups"),
                *([(f"/apis/{cpg_api.API_VERSION}/compositepodgroups",
                    cpg_api.CompositePodGroup,
                    cpg_api.CompositePodGroupList, self.composite_pod_groups,
                    "compositepodgroups")]
                  if self.composite_pod_groups is not None else [])]


class CoschedulingListers(_RequeueingListers):
    """scheduler-plugins' PodGroups (scheduling.x-k8s.io/v1alpha1) Coscheduling reads.
    Started only when a profile enables the plugin: the CRD may not be installed."""

    def __init__(self) -> None:
        self.pod_groups: Index[coscheduling.PodGroup] = Index()

    def _by_resource(self) -> list[tuple[Resource, Index[Any]]]:
        return [(Resource.COSCHEDULING_POD_GROUP, self.pod_groups)]

    def specs(self) -> list[tuple[str, type[Any], type[Any], Index[Any], str]]:
        return [(f"/apis/{coscheduling.API_VERSION}/podgroups", coscheduling.PodGroup,
                 coscheduling.PodGroupList, self.pod_groups, "podgroups.scheduling.x-k8s.io")]
