"""Read-only indexes of the secondary resources plugins consult (Namespaces, PDBs,
Services, ReplicationControllers, ReplicaSets, StatefulSets), fed by informers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from kubernetes_asyncio import client

from kpysched.informers import Reflector
from kpysched.objects import api


class _Meta(Protocol):
    name: str
    namespace: str
    uid: str


class _HasMeta(Protocol):
    @property
    def metadata(self) -> _Meta: ...


T = TypeVar("T", bound=_HasMeta)


class Index(Generic[T]):
    """An informer handler that keeps objects by namespace/name and calls `on_change`
    after every add, update or delete (e.g. to move unschedulable pods)."""

    def __init__(self, on_change: Callable[[], object] | None = None) -> None:
        self._objects: dict[str, T] = {}
        self._on_change = on_change

    @staticmethod
    def key(obj: _HasMeta) -> str:
        meta = obj.metadata
        return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name

    def on_add(self, obj: T) -> None:
        self._objects[self.key(obj)] = obj
        if self._on_change is not None:
            self._on_change()

    def on_update(self, old: T, new: T) -> None:
        self._objects[self.key(new)] = new
        if self._on_change is not None:
            self._on_change()

    def on_delete(self, obj: T) -> None:
        self._objects.pop(self.key(obj), None)
        if self._on_change is not None:
            self._on_change()

    def get(self, key: str) -> T | None:
        return self._objects.get(key)

    def values(self) -> list[T]:
        return list(self._objects.values())

    def in_namespace(self, namespace: str) -> list[T]:
        return [o for o in self._objects.values() if o.metadata.namespace == namespace]


class Listers:
    """Indexes of the secondary resources, each fed by its own informer."""

    def __init__(self) -> None:
        self.namespaces: Index[api.Namespace] = Index()
        self.pdbs: Index[api.PodDisruptionBudget] = Index()
        self.services: Index[api.Service] = Index()
        self.replication_controllers: Index[api.ReplicationController] = Index()
        self.replica_sets: Index[api.ReplicaSet] = Index()
        self.stateful_sets: Index[api.StatefulSet] = Index()

    def reflectors(self, api_client: client.ApiClient) -> list[Reflector[Any]]:
        specs: list[tuple[str, type[Any], type[Any], Index[Any], str]] = [
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
        ]
        return [Reflector(api_client, path, kind, list_kind, index, resource=resource)
                for path, kind, list_kind, index, resource in specs]
