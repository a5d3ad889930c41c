"""An assume cache over an informer index (upstream's passiveAssumeCache).

Reserve records the PV and claim changes it decided on before they reach the API
server, so the next scheduling cycle does not hand the same PV to another claim.
An assumed object holds only while the informer still has the version it was made
from: once the informer's object changes (a newer resourceVersion, or deletion),
the informer's view wins again. Upstream drops stale entries from informer event
handlers; kpysched's indexes have no callbacks to spare, so the resourceVersion is
compared whenever an object is read, which gives the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from kpysched.framework.interfaces import Lister


class _Meta(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def resource_version(self) -> str: ...


class _Object(Protocol):
    @property
    def metadata(self) -> _Meta: ...


T = TypeVar("T", bound=_Object)


class NotFoundError(LookupError):
    """The informer does not hold the object; the text is the API's NotFound message."""


class OutOfSyncError(ValueError):
    """An object was assumed from a version the informer no longer holds."""


def object_key(obj: _Object) -> str:
    """namespace/name, or name for cluster-scoped objects (the informers' key)."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class AssumeCache(Generic[T]):
    """The informer's objects with in-memory versions laid over them."""

    def __init__(self, informer: Lister[T], resource: str) -> None:
        self._informer = informer
        self._resource = resource  # e.g. "persistentvolumes", for NotFound messages
        self._assumed: dict[str, T] = {}

    def get_api_obj(self, key: str) -> T:
        """The informer's version; NotFoundError when it has none."""
        found = self._informer.get(key)
        if found is None:
            raise NotFoundError(f'{self._resource} "{key}" not found')
        return found

    def get(self, key: str) -> T:
        """The assumed version while it is current, else the informer's."""
        return self._overlay(self.get_api_obj(key))

    def overlay(self, objects: Iterable[T]) -> list[T]:
        """Informer objects (e.g. a filtered listing) with current assumed versions in
        their place."""
        return [self._overlay(obj) for obj in objects]

    def _overlay(self, stored: T) -> T:
        key = object_key(stored)
        assumed = self._assumed.get(key)
        if assumed is None:
            return stored
        if assumed.metadata.resource_version != stored.metadata.resource_version:
            del self._assumed[key]  # the informer has moved on: the assumption is spent
            return stored
        return assumed

    def assume(self, obj: T) -> None:
        """Lay `obj` over the informer's object of the same version. NotFoundError when
        the informer lacks it, OutOfSyncError when its version differs."""
        key = object_key(obj)
        stored = self.get_api_obj(key)
        stored_version = stored.metadata.resource_version
        wanted_version = obj.metadata.resource_version
        if stored_version != wanted_version:
            raise OutOfSyncError(
                f'"{key}" is out of sync (stored: {stored_version}, assume: {wanted_version})')
        self._forget_spent()
        self._assumed[key] = obj

    def restore(self, obj: T) -> None:
        """Drop the assumed version of `obj` if it is still the one assumed."""
        key = object_key(obj)
        assumed = self._assumed.get(key)
        if (assumed is not None
                and assumed.metadata.resource_version == obj.metadata.resource_version):
            del self._assumed[key]

    def _forget_spent(self) -> None:
        # Entries nobody reads again (a PV bound and never listed since, an object
        # deleted) would otherwise stay forever; the assumed set is small.
        for key, assumed in list(self._assumed.items()):
            stored = self._informer.get(key)
            if (stored is None
                    or stored.metadata.resource_version != assumed.metadata.resource_version):
                del self._assumed[key]
