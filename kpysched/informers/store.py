"""The informer's view of one resource, and the handler it tells about changes.

The store holds the last seen version of every object, keyed by uid, and turns
watch events and relists into `on_add` / `on_update` / `on_delete` calls, so a
handler sees each object appear once, change, and disappear once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

from kpysched.objects.api import ObjectMeta


class KubeObject(Protocol):
    """Anything decoded from the API with standard object metadata (Pod, Node, ...)."""

    @property
    def metadata(self) -> ObjectMeta: ...


T = TypeVar("T", bound=KubeObject)
T_contra = TypeVar("T_contra", bound=KubeObject, contravariant=True)


class EventHandler(Protocol[T_contra]):
    """Receives an informer's changes, in order, on the event loop; must not block."""

    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


class Identity(Protocol):
    @property
    def uid(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


def object_key(meta: Identity) -> str:
    """uid when the object has one (every stored object does), else namespace/name.

    Keying by uid makes a pod deleted and recreated under the same name a delete
    plus an add, never an update between two different objects.
    """
    if meta.uid:
        return meta.uid
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class Store(Generic[T]):
    def __init__(self, handler: EventHandler[T]) -> None:
        self._handler = handler
        self._objects: dict[str, T] = {}

    @property
    def objects(self) -> Mapping[str, T]:
        """Read-only view, keyed by `object_key`."""
        return MappingProxyType(self._objects)

    def upsert(self, obj: T) -> None:
        """An ADDED or MODIFIED watch event."""
        key = object_key(obj.metadata)
        old = self._objects.get(key)
        self._objects[key] = obj
        if old is None:
            self._handler.on_add(obj)
        else:
            self._handler.on_update(old, obj)

    def delete(self, obj: T) -> None:
        """A DELETED watch event; `obj` is the final state the server sent."""
        if self._objects.pop(object_key(obj.metadata), None) is not None:
            self._handler.on_delete(obj)
        # A delete for an object never seen (e.g. skipped as malformed) has nothing to undo.

    def replace(self, items: Iterable[T]) -> None:
        """Reconcile against a full list: new objects are added, objects whose
        resourceVersion changed are updated, objects missing from the list deleted."""
        fresh = {object_key(obj.metadata): obj for obj in items}
        previous = self._objects
        self._objects = fresh
        for key, obj in fresh.items():
            old = previous.get(key)
            if old is None:
                self._handler.on_add(obj)
            elif old.metadata.resource_version != obj.metadata.resource_version:
                self._handler.on_update(old, obj)
        # Like client-go's Replace, deletions come after the adds and updates.
        for key, old in previous.items():
            if key not in fresh:
                self._handler.on_delete(old)
