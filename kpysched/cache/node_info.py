"""NodeInfo: a node with the pods on it and what they use, kept incrementally."""

from __future__ import annotations

from dataclasses import dataclass, field

from kpysched.objects import api
from kpysched.objects.pod import HostPort, PodInfo
from kpysched.objects.resource_vectors import Resource


@dataclass(frozen=True, slots=True)
class ImageState:
    size: int
    # How many nodes have the image: ImageLocality scales by spread.
    num_nodes: int


def normalized_image_name(name: str) -> str:
    """Images without a tag mean :latest (upstream's normalizedImageName)."""
    if "@" in name:
        return name
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    node: api.Node | None = None
    allocatable: Resource = field(default_factory=Resource)
    pods: dict[str, PodInfo] = field(default_factory=dict)  # by uid
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    used_ports: dict[HostPort, int] = field(default_factory=dict)
    images: dict[str, int] = field(default_factory=dict)  # normalized name -> size
    generation: int = 0
    # Pods with pod (anti-)affinity, and those with required anti-affinity, by uid
    # (upstream's PodsWithAffinity / PodsWithRequiredAntiAffinity).
    pods_with_affinity: dict[str, PodInfo] = field(default_factory=dict)
    pods_with_required_anti_affinity: dict[str, PodInfo] = field(default_factory=dict)

    def set_node(self, node: api.Node) -> None:
        self.node = node
        self.allocatable = Resource.from_mapping(node.status.allocatable)
        self.images = {
            normalized_image_name(name): image.size_bytes
            for image in node.status.images for name in image.names
        }

    @property
    def labels(self) -> dict[str, str]:
        return self.node.metadata.labels if self.node is not None else {}

    def add_pod(self, pod: PodInfo) -> None:
        self.pods[pod.uid] = pod
        if pod.pod_affinity.has_affinity:
            self.pods_with_affinity[pod.uid] = pod
            if pod.pod_affinity.has_required_anti_affinity:
                self.pods_with_required_anti_affinity[pod.uid] = pod
        self.requested.add(pod.requests)
        self.non_zero_requested.milli_cpu += pod.non_zero_requests.milli_cpu
        self.non_zero_requested.memory += pod.non_zero_requests.memory
        for port in pod.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1

    def remove_pod(self, uid: str) -> PodInfo | None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return None
        if pod.pod_affinity.has_affinity:
            self.pods_with_affinity.pop(uid, None)
            self.pods_with_required_anti_affinity.pop(uid, None)
        self.requested.subtract(pod.requests)
        self.non_zero_requested.milli_cpu -= pod.non_zero_requests.milli_cpu
        self.non_zero_requested.memory -= pod.non_zero_requests.memory
        for port in pod.host_ports:
            left = self.used_ports.get(port, 0) - 1
            if left > 0:
                self.used_ports[port] = left
            else:
                self.used_ports.pop(port, None)
        return pod

    def port_conflicts(self, wanted: tuple[HostPort, ...]) -> bool:
        """Upstream's rule: the wildcard IP 0.0.0.0 conflicts with every IP on the port."""
        for port in wanted:
            for used in self.used_ports:
                if used.port != port.port or used.protocol != port.protocol:
                    continue
                if used.ip == port.ip or "0.0.0.0" in (used.ip, port.ip):
                    return True
        return False

    def clone(self) -> NodeInfo:
        return NodeInfo(
            name=self.name, node=self.node, allocatable=self.allocatable,
            pods=dict(self.pods), requested=self.requested.clone(),
            non_zero_requested=self.non_zero_requested.clone(),
            used_ports=dict(self.used_ports), images=self.images, generation=self.generation,
            pods_with_affinity=dict(self.pods_with_affinity),
            pods_with_required_anti_affinity=dict(self.pods_with_required_anti_affinity),
        )
