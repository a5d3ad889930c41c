"""Upstream's helper.DefaultSelector over plain inputs, for the Handle to wire to informers.

The selector a pod's default spread constraints use: the selectors of every
Service in the pod's namespace that selects it, plus the selector of its
controlling ReplicationController, ReplicaSet or StatefulSet (found by the
owner reference's apiVersion, kind and name in the pod's namespace). They all
select the pod, so merging them cannot conflict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from kpysched.objects import api
from kpysched.plugins.pod_topology_spread.common import (
    Op,
    Requirement,
    SelectorError,
    requirements_of,
)

_CORE_V1 = ("", "v1")
_APPS_V1 = ("apps", "v1")
_OPERATOR_NAMES = {Op.IN: "In", Op.NOT_IN: "NotIn", Op.EXISTS: "Exists",
                   Op.DOES_NOT_EXIST: "DoesNotExist"}


class MapSelectorOwner(Protocol):
    """A ReplicationController: its spec.selector is a plain label map."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def selector(self) -> Mapping[str, str] | None: ...


class LabelSelectorOwner(Protocol):
    """A ReplicaSet or StatefulSet: its spec.selector is a metav1.LabelSelector."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def selector(self) -> api.LabelSelector | None: ...


_Owner = TypeVar("_Owner", MapSelectorOwner, LabelSelectorOwner)


def _group_version(api_version: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion; None where it fails (more than one '/')."""
    if api_version in ("", "/"):
        return "", ""
    if "/" not in api_version:
        return "", api_version
    group, _, version = api_version.partition("/")
    return None if "/" in version else (group, version)


def _controller(pod: api.Pod) -> api.OwnerReference | None:
    for owner in pod.metadata.owner_references:
        if owner.controller:
            return owner
    return None


def _find(owners: Iterable[_Owner], namespace: str, name: str) -> _Owner | None:
    for owner in owners:
        if owner.namespace == namespace and owner.name == name:
            return owner
    return None


def _owner_requirements(owner: LabelSelectorOwner | None) -> tuple[Requirement, ...]:
    # A nil selector (labels.Nothing) adds nothing; an unconvertible one is skipped.
    if owner is None or owner.selector is None:
        return ()
    try:
        return requirements_of(owner.selector)
    except SelectorError:
        return ()


def default_selector(
    pod: api.Pod,
    services: Iterable[tuple[str, Mapping[str, str] | None]],
    replication_controllers: Iterable[MapSelectorOwner],
    replica_sets: Iterable[LabelSelectorOwner],
    stateful_sets: Iterable[LabelSelectorOwner],
) -> api.LabelSelector | None:
    """The merged selector; None when it is empty (the pod gets no default constraints).

    `services` are (namespace, spec.selector) pairs; a None selector selects
    nothing, not everything.
    """
    namespace = pod.metadata.namespace
    pod_labels = pod.metadata.labels
    label_set: dict[str, str] = {}
    for service_namespace, selector in services:
        if service_namespace != namespace or selector is None:
            continue
        if all(pod_labels.get(key) == value for key, value in selector.items()):
            label_set.update(selector)

    extra: tuple[Requirement, ...] = ()
    owner = _controller(pod)
    group_version = None if owner is None else _group_version(owner.api_version)
    if owner is not None and group_version is not None:
        kind = (*group_version, owner.kind)
        if kind == (*_CORE_V1, "ReplicationController"):
            rc = _find(replication_controllers, namespace, owner.name)
            if rc is not None and rc.selector is not None:
                label_set.update(rc.selector)
        elif kind == (*_APPS_V1, "ReplicaSet"):
            extra = _owner_requirements(_find(replica_sets, namespace, owner.name))
        elif kind == (*_APPS_V1, "StatefulSet"):
            extra = _owner_requirements(_find(stateful_sets, namespace, owner.name))

    if not label_set and not extra:
        return None
    return api.LabelSelector(
        match_labels=label_set,
        match_expressions=[
            api.LabelSelectorRequirement(key=key, operator=_OPERATOR_NAMES[op],
                                         values=sorted(values))
            for key, op, values in extra
        ],
    )
