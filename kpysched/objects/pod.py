"""PodInfo: a decoded Pod plus what scheduling derives from it, computed once."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import msgspec

from kpysched.objects import api
from kpysched.objects.pod_affinity import AffinityTerms, affinity_terms
from kpysched.objects.resource_vectors import Resource, pod_requests_and_non_zero

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


def _host_ports(spec: api.PodSpec) -> tuple[HostPort, ...]:
    containers = [*spec.containers,
                  *(c for c in spec.init_containers if c.restart_policy == "Always")]
    return tuple(
        HostPort(port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)
        for container in containers for port in container.ports if port.host_port > 0
    )


@dataclass(slots=True, eq=False)
class PodInfo:
    pod: api.Pod
    requests: Resource
    non_zero_requests: Resource
    host_ports: tuple[HostPort, ...]
    key: str = field(init=False)
    # Parsed inter-pod (anti-)affinity terms; derived from the pod wherever it is built.
    pod_affinity: AffinityTerms = field(init=False)
    # spec.priority, 0 when unset: read in every comparison of preemption and the queue.
    priority: int = field(init=False)

    def __post_init__(self) -> None:
        self.key = f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"
        self.pod_affinity = affinity_terms(self.pod)
        self.priority = self.pod.spec.priority or 0

    @classmethod
    def of(cls, pod: api.Pod) -> PodInfo:
        return cls(pod, *pod_requests_and_non_zero(pod.spec), _host_ports(pod.spec))

    def bound_to(self, node: str) -> PodInfo:
        """This pod as it will be once bound to `node`. What is derived from the pod
        (requests, ports, parsed affinity terms) does not depend on the node and is
        kept: parsing a tenant's thousands of affinity terms again would cost as much
        as the whole cycle."""
        bound = copy.copy(self)
        bound.pod = msgspec.structs.replace(
            self.pod, spec=msgspec.structs.replace(self.pod.spec, node_name=node))
        return bound

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    @property
    def terminating(self) -> bool:
        return self.pod.metadata.deletion_timestamp is not None

    @property
    def finished(self) -> bool:
        return self.pod.status.phase in ("Succeeded", "Failed")


_pod_decoder = msgspec.json.Decoder(api.Pod)


def decode_pod(raw: bytes) -> api.Pod:
    return _pod_decoder.decode(raw)
