"""Which declared node features a pod needs: upstream's component-helpers
nodedeclaredfeatures library, its scheduling half, with the registries of v1.36.4
(REGISTRY) and v1.37.2 (REGISTRY_V1_37, REGISTRIES by release).

A feature is named by the node in `status.declaredFeatures` (the kubelet discovers it
from its own gates and runtime); a pod needs it when its spec uses what the feature
provides. Of the five features v1.36.4 registers, only two can be needed to schedule
a pod; the others matter for pod updates or for the kubelet alone, and are listed so
the registry reads as upstream's does. v1.37.2 registers four more, of which only
VolumeBindMountOptions (a container's volume mount with bindMountOptions) can be
needed to schedule; ephemeral containers, which upstream also looks at, are not
decoded (a pod waiting to be scheduled has none to run).

Discovery (kubelet side) and update inference (admission side) are not scheduling
concerns and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import total_ordering

from kpysched.objects import api

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
POD_LEVEL_RESOURCES_RESIZE = "InPlacePodLevelResourcesVerticalScaling"
NON_SIDECAR_INIT_CONTAINER_RESIZE = "InPlacePodVerticalScalingInitContainers"
EXTEND_WEBSOCKETS_TO_KUBELET = "ExtendWebSocketsToKubelet"
# Registered from v1.37.
MEMORY_BACKED_VOLUMES_RESIZE = "InPlacePodVerticalScalingMemoryBackedVolumes"
DRA_NODE_ALLOCATABLE_RESOURCES = "DRANodeAllocatableResources"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"
DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"

_RESTART_ALL_CONTAINERS_ACTION = "RestartAllContainers"


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A semantic version as upstream's util/version compares them: numbers first, and a
    pre-release sorts before its release (1.36.0-alpha.1 < 1.36.0). Build metadata is
    ignored. Pre-release identifiers compare numerically when both are numbers."""

    numbers: tuple[int, int, int]
    pre_release: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _SEMVER.fullmatch(text.removeprefix("v"))
        if match is None:
            raise ValueError(f"not a semantic version: {text!r}")
        major, minor, patch, pre = match.groups()
        return cls((int(major), int(minor), int(patch)), tuple(pre.split(".")) if pre else ())

    def __lt__(self, other: Version) -> bool:
        if self.numbers != other.numbers:
            return self.numbers < other.numbers
        if not self.pre_release or not other.pre_release:
            # Exactly one side a pre-release: it is the smaller.
            return bool(self.pre_release) and not other.pre_release
        for mine, theirs in zip(self.pre_release, other.pre_release, strict=False):
            if mine != theirs:
                return _identifier_key(mine) < _identifier_key(theirs)
        return len(self.pre_release) < len(other.pre_release)


_SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")


def _identifier_key(identifier: str) -> tuple[int, int, str]:
    # Numeric identifiers sort before alphanumeric ones (semver rule 11).
    if identifier.isdigit():
        return (0, int(identifier), "")
    return (1, 0, identifier)


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    # Whether scheduling the pod (spec only: status is not known yet) needs the feature.
    needed_by: Callable[[api.PodSpec], bool]
    # Past this version every node in the supported skew has the feature, so no pod
    # needs to ask for it any more; None: no such version yet.
    max_version: Version | None = None


def _restart_all_containers(spec: api.PodSpec) -> bool:
    return any(rule.action == _RESTART_ALL_CONTAINERS_ACTION
               for container in (*spec.containers, *spec.init_containers)
               for rule in container.restart_policy_rules)


def _user_namespaces_host_network(spec: api.PodSpec) -> bool:
    # Only an explicit hostUsers: false asks for a user namespace.
    return spec.host_network and spec.host_users is False


def _volume_bind_mount_options(spec: api.PodSpec) -> bool:
    return any(mount.bind_mount_options
               for container in (*spec.containers, *spec.init_containers)
               for mount in container.volume_mounts)


def _not_for_scheduling(spec: api.PodSpec) -> bool:
    return False


# Upstream's features.AllFeatures of v1.36.4 (every max version still unset).
REGISTRY: tuple[Feature, ...] = (
    Feature(RESTART_ALL_CONTAINERS, _restart_all_containers),
    # Resizes only: what they need is inferred for pod updates, never to schedule.
    Feature(POD_LEVEL_RESOURCES_RESIZE, _not_for_scheduling),
    Feature(NON_SIDECAR_INIT_CONTAINER_RESIZE, _not_for_scheduling),
    # Serves kubelet streaming; no pod spec asks for it.
    Feature(EXTEND_WEBSOCKETS_TO_KUBELET, _not_for_scheduling),
    Feature(USER_NAMESPACES_HOST_NETWORK, _user_namespaces_host_network),
)

# Upstream's features.AllFeatures of v1.37.2, in its order (every max version unset).
REGISTRY_V1_37: tuple[Feature, ...] = (
    Feature(RESTART_ALL_CONTAINERS, _restart_all_containers),
    Feature(POD_LEVEL_RESOURCES_RESIZE, _not_for_scheduling),
    Feature(EXTEND_WEBSOCKETS_TO_KUBELET, _not_for_scheduling),
    Feature(NON_SIDECAR_INIT_CONTAINER_RESIZE, _not_for_scheduling),
    # Resizes of memory-backed emptyDirs: inferred for pod updates only.
    Feature(MEMORY_BACKED_VOLUMES_RESIZE, _not_for_scheduling),
    Feature(USER_NAMESPACES_HOST_NETWORK, _user_namespaces_host_network),
    # Node-side DRA features no pod spec asks for.
    Feature(DRA_NODE_ALLOCATABLE_RESOURCES, _not_for_scheduling),
    Feature(VOLUME_BIND_MOUNT_OPTIONS, _volume_bind_mount_options),
    Feature(DRA_OPTIONAL_NODE_OPERATIONS, _not_for_scheduling),
)

# Each release's registry and the version it infers for (its own).
REGISTRIES: dict[int, tuple[tuple[Feature, ...], Version]] = {
    36: (REGISTRY, Version((1, 36, 4))),
    37: (REGISTRY_V1_37, Version((1, 37, 2))),
}


def required_for_scheduling(spec: api.PodSpec, target: Version,
                            registry: Iterable[Feature] = REGISTRY) -> frozenset[str]:
    """The features a node must declare to run the pod, as a scheduler of version
    `target` sees them (upstream's InferForPodScheduling)."""
    return frozenset(
        feature.name for feature in registry
        if (feature.max_version is None or not target > feature.max_version)
        and feature.needed_by(spec))
