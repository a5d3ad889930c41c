"""Which DeviceClass provides an extended resource (DRAExtendedResource).

A DeviceClass maps two extended resource names to itself: the one its
`spec.extendedResourceName` names, if any, and the implicit
`deviceclass.resource.kubernetes.io/<class name>`. NodeResourcesFit and
DynamicResources both ask this index, kept current from the DeviceClass informer,
which class (if any) backs a resource a pod requests.

Mirrors upstream's ExtendedResourceCache (dynamic-resource-allocation
deviceclass/extendedresourcecache) event by event, quirks included, so that the two
schedulers agree on which class a name resolves to:

- When two classes name the same extended resource, the newer (creationTimestamp)
  wins, the lower name on a tie. A class that loses gets no mapping at all from that
  event, not even its implicit one, and its earlier mappings stay.
- An update that keeps a class's explicit name compares the class with its own
  previous version, which never wins: the index keeps the previous object.
- Deleting a class drops its implicit name and its explicit name, whichever class the
  explicit name resolved to; nothing falls back to a class that lost earlier.
"""

from __future__ import annotations

from datetime import datetime

from kpysched.objects.dra import IMPLICIT_EXTENDED_RESOURCE_PREFIX, DeviceClass

# time.Time{}.UnixNano() as Go computes it (the overflow wraps): an object without a
# creationTimestamp counts as older than any that has one.
_ZERO_TIME_UNIX_NANO = -6795364578871345152


def _unix_nano(class_: DeviceClass) -> int:
    stamp = class_.metadata.creation_timestamp
    if not stamp:
        return _ZERO_TIME_UNIX_NANO
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def implicit_extended_resource_name(class_name: str) -> str:
    """deviceclass.resource.kubernetes.io/<class name>."""
    return IMPLICIT_EXTENDED_RESOURCE_PREFIX + class_name


class ExtendedResourceClasses:
    """Extended resource name -> DeviceClass, and DeviceClass name -> its explicit name.

    Register `observe` as an observer of the DeviceClass index; its (action, old, new)
    arguments are read as add (None, new), update (old, new) and delete (old, None).
    """

    def __init__(self) -> None:
        self._by_resource: dict[str, DeviceClass] = {}
        self._by_class: dict[str, str] = {}

    def device_class(self, resource_name: str) -> DeviceClass | None:
        """The class that backs `resource_name` (GetDeviceClass); None when none does."""
        return self._by_resource.get(resource_name)

    def extended_resource(self, class_name: str) -> str:
        """The explicit extended resource name of a class (GetExtendedResource); ""."""
        return self._by_class.get(class_name, "")

    def observe(self, action: object, old: object, new: object) -> None:
        if isinstance(new, DeviceClass):
            self.on_add_or_update(new, old if isinstance(old, DeviceClass) else None)
        elif isinstance(old, DeviceClass):
            self.on_delete(old)

    def on_add_or_update(self, new: DeviceClass, old: DeviceClass | None = None) -> None:
        self._update_resource_names(new, old)
        explicit = new.spec.extended_resource_name
        if explicit is None:
            self._by_class.pop(new.metadata.name, None)
        else:
            self._by_class[new.metadata.name] = explicit

    def on_delete(self, class_: DeviceClass) -> None:
        self._by_resource.pop(implicit_extended_resource_name(class_.metadata.name), None)
        if class_.spec.extended_resource_name is not None:
            self._by_resource.pop(class_.spec.extended_resource_name, None)
        self._by_class.pop(class_.metadata.name, None)

    def _update_resource_names(self, new: DeviceClass, old: DeviceClass | None) -> None:
        explicit = new.spec.extended_resource_name
        holder = self._by_resource.get(explicit) if explicit is not None else None
        if holder is not None:
            mine, theirs = _unix_nano(new), _unix_nano(holder)
            if mine < theirs:
                return  # the current holder is newer
            if mine == theirs and new.metadata.name >= holder.metadata.name:
                return  # same age: the lower name keeps it
        if old is not None:
            self._by_resource.pop(implicit_extended_resource_name(old.metadata.name), None)
            if old.spec.extended_resource_name is not None:
                self._by_resource.pop(old.spec.extended_resource_name, None)
        if explicit is not None:
            self._by_resource[explicit] = new
        self._by_resource[implicit_extended_resource_name(new.metadata.name)] = new
