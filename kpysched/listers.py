"""Read-only indexes of the secondary resources plugins consult (Namespaces, PDBs,
Services, ReplicationControllers, ReplicaSets, StatefulSets), fed by informers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


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
