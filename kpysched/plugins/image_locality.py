"""ImageLocality: favour nodes that already hold the pod's container images.

Each container image present on a node adds its size scaled by how widely it
has spread (nodes having it / all nodes), which keeps pods from piling onto the
few nodes that pulled an image first. The sum is clamped between 23 MiB and
1000 MiB per container and mapped linearly onto 0..100.

Spread: upstream keeps a per-image node count in its cache; kpysched's NodeInfo
keeps only sizes, so PreScore counts, over the whole snapshot, the nodes holding
each of the pod's images (nodes x distinct pod images dictionary lookups), and
Score reads the counts from the cycle state. PreScore skips the plugin when no
node has any of the images, where every score would be 0.

Image volumes (spec.volumes[].image) add their image like a container does. v1.36
leaves them out of the image count that sets the upper threshold (so a pod with
image volumes could reach 100 sooner); v1.37 counts them (handle.features.release).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from kpysched.cache.node_info import NodeInfo, normalized_image_name
from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cluster_events import ClusterEvent
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import MAX_NODE_SCORE, Handle, PreScorePlugin, ScorePlugin
from kpysched.framework.registry import PluginSpec
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins._shared.go_math import go_div

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_PRE_SCORE_KEY = "PreScore" + NAME


# From this release on image volumes count towards the upper threshold too.
IMAGE_VOLUMES_COUNTED_FROM = 37


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    # One entry per container (init and regular) and image volume, duplicates kept as
    # upstream sums them.
    images: tuple[str, ...]
    # Fraction of all nodes holding each image that some node has.
    spread: dict[str, float]
    # How many images set the upper threshold (see image_count).
    num_images: int


def pod_images(pod: api.Pod) -> tuple[str, ...]:
    containers = (*pod.spec.init_containers, *pod.spec.containers)
    volumes = (volume.image.reference for volume in pod.spec.volumes if volume.image is not None)
    return (*(normalized_image_name(container.image) for container in containers),
            *(normalized_image_name(reference) for reference in volumes))


def image_count(pod: api.Pod, release: int) -> int:
    """The images the upper threshold is scaled by: containers, and from v1.37 on image
    volumes as well."""
    count = len(pod.spec.init_containers) + len(pod.spec.containers)
    if release >= IMAGE_VOLUMES_COUNTED_FROM:
        count += sum(1 for volume in pod.spec.volumes if volume.image is not None)
    return count


def image_spread(images: Sequence[str], snapshot: Snapshot) -> dict[str, float]:
    """For each image some node holds: the fraction of all nodes holding it (the
    snapshot keeps the per-image node counts up to date)."""
    total = len(snapshot.node_infos)
    held = snapshot.image_nodes
    return {image: held[image] / total for image in set(images) if held.get(image)}


def sum_image_scores(node: NodeInfo, images: Sequence[str], spread: dict[str, float]) -> int:
    total = 0
    held = node.images
    for image in images:
        size = held.get(image)
        if size is not None:
            total += int(float(size) * spread.get(image, 0.0))
    return total


def calculate_priority(sum_scores: int, num_images: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_images
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(PreScorePlugin, ScorePlugin):
    NAME: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._release = handle.features.release

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return ()

    def _state(self, pod: PodInfo) -> _PreScoreState:
        images = pod_images(pod.pod)
        spread = image_spread(images, self._handle.snapshot)
        return _PreScoreState(images, spread, image_count(pod.pod, self._release))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        computed = self._state(pod)
        state.write(_PRE_SCORE_KEY, computed)
        return SUCCESS if computed.spread else Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        cached: _PreScoreState | None = state.get(_PRE_SCORE_KEY)
        if cached is None:
            # Counting spread walks the whole snapshot: do it once per cycle, not per node.
            cached = self._state(pod)
            state.write(_PRE_SCORE_KEY, cached)
        total = sum_image_scores(node, cached.images, cached.spread)
        return calculate_priority(total, cached.num_images), SUCCESS


def new(args: None, handle: Handle) -> ImageLocality:
    return ImageLocality(handle)


SPEC = PluginSpec(NAME, ImageLocality, new, None)
