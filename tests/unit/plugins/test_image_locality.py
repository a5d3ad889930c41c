"""ImageLocality, with upstream's image_locality_test.go table."""

from __future__ import annotations

import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.config.features import Features
from kpysched.framework.status import Code, Status
from kpysched.objects import api
from kpysched.plugins import image_locality as il
from tests.unit.builders import FakeHandle, PodBuilder, make_node, make_pod, make_snapshot
from tests.unit.plugins.runner import run_scores

MB = 1024 * 1024

NODE_40_300_2000 = [(40, ["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"]),
                    (300, ["gcr.io/300:latest", "gcr.io/300:v1"]), (2000, ["gcr.io/2000:latest"])]
NODE_250_10 = [(250, ["gcr.io/250:latest"]), (10, ["gcr.io/10:latest", "gcr.io/10:v1"])]
NODE_600_40_900 = [(600, ["gcr.io/600:latest"]), (40, ["gcr.io/40:latest"]),
                   (900, ["gcr.io/900:latest"])]
NODE_300_600_900 = [(300, ["gcr.io/300:latest"]), (600, ["gcr.io/600:latest"]),
                    (900, ["gcr.io/900:latest"])]
NODE_4000_30 = [(4000, ["gcr.io/4000:latest"]), (30, ["gcr.io/30:latest"])]
NODE_20_30_40 = [(20, ["gcr.io/20:latest"]), (30, ["gcr.io/30:latest"]),
                 (40, ["gcr.io/40:latest"])]
NO_IMAGES: list[tuple[int, list[str]]] = []


def images_pod(*images: str, init: tuple[str, ...] = ()) -> PodBuilder:
    pod = make_pod()
    for image in images:
        pod.container(image)
    for image in init:
        pod.init_req(image=image)
    return pod


def image_nodes(*layouts: list[tuple[int, list[str]]]) -> list[NodeInfo]:
    nodes = []
    for index, layout in enumerate(layouts):
        builder = make_node(f"node{index + 1}")
        for size, names in layout:
            builder.image(size * MB, *names)
        nodes.append(builder.info())
    return nodes


CASES = [
    pytest.param(images_pod("gcr.io/40", "gcr.io/250"), [NODE_40_300_2000, NODE_250_10], [0, 5],
                 id="two images spread on two nodes, prefer the larger image one"),
    pytest.param(images_pod("gcr.io/40", "gcr.io/300"), [NODE_40_300_2000, NODE_250_10], [7, 0],
                 id="two images on one node, prefer this node"),
    pytest.param(images_pod("gcr.io/10", "gcr.io/4000"), [NODE_4000_30, NODE_250_10], [100, 0],
                 id="if exceed limit, use limit"),
    pytest.param(images_pod("gcr.io/10", "gcr.io/4000"),
                 [NODE_4000_30, NODE_250_10, NO_IMAGES], [66, 0, 0],
                 id="if exceed limit, use limit (with node which has no images present)"),
    pytest.param(images_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
                 [NODE_600_40_900, NODE_300_600_900, NO_IMAGES], [32, 36, 0],
                 id="pod with multiple large images, node2 is preferred"),
    pytest.param(images_pod("gcr.io/30", "gcr.io/40"), [NODE_20_30_40, NODE_4000_30], [1, 0],
                 id="pod with multiple small images"),
    pytest.param(images_pod("gcr.io/30", init=("gcr.io/300",)), [NODE_40_300_2000, NODE_20_30_40],
                 [6, 0], id="include InitContainers"),
    pytest.param(images_pod("gcr.io/40:v1"), [NODE_40_300_2000, NODE_600_40_900], [0, 0],
                 id="tagged image only on one node, below the minimum"),
    # 300M * 1/2 for each container: 100 * (300M - 23M) / (2000M - 23M) = 14.
    pytest.param(images_pod("gcr.io/300", "gcr.io/300"), [NODE_40_300_2000, NO_IMAGES],
                 [14, 0], id="the same image in two containers counts twice"),
]


@pytest.mark.parametrize(("pod", "layouts", "expected"), CASES)
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_image_locality(pod: PodBuilder, layouts: list[list[tuple[int, list[str]]]],
                        expected: list[int], pre_score: bool) -> None:
    nodes = image_nodes(*layouts)
    plugin = il.new(None, FakeHandle(make_snapshot(*nodes)))
    assert run_scores(plugin, pod.info(), nodes, pre_score=pre_score) == expected


def image_volume_pod(*images: str, volumes: tuple[str, ...]) -> PodBuilder:
    pod = images_pod(*images)
    pod.obj().spec.volumes.extend(
        api.Volume(name=f"image-{index}", image=api.ImageVolumeSource(reference=reference))
        for index, reference in enumerate(volumes))
    return pod


# Upstream's "pod with ImageVolume" (v1.37's table) and its twin with both images as
# containers. v1.36 sums the image volume's image but scales the upper threshold by the
# containers alone: 100 * (300M * 1/2 - 23M) / (1000M - 23M) = 12; v1.37 counts the
# volume too: / (1000M * 2 - 23M) = 6, as for the same images as two containers.
@pytest.mark.parametrize(("release", "pod", "expected"), [
    pytest.param(36, image_volume_pod("gcr.io/30", volumes=("gcr.io/300",)), [12, 0],
                 id="v1.36 pod with ImageVolume"),
    pytest.param(37, image_volume_pod("gcr.io/30", volumes=("gcr.io/300",)), [6, 0],
                 id="v1.37 pod with ImageVolume"),
    pytest.param(36, images_pod("gcr.io/30", "gcr.io/300"), [6, 0],
                 id="v1.36 same images as ImageVolume pod but as regular container images"),
    pytest.param(37, images_pod("gcr.io/30", "gcr.io/300"), [6, 0],
                 id="v1.37 same images as ImageVolume pod but as regular container images"),
    # An image volume no node holds still raises v1.37's threshold.
    pytest.param(36, image_volume_pod("gcr.io/300", volumes=("gcr.io/nowhere",)), [12, 0],
                 id="v1.36 an image volume held nowhere"),
    pytest.param(37, image_volume_pod("gcr.io/300", volumes=("gcr.io/nowhere",)), [6, 0],
                 id="v1.37 an image volume held nowhere"),
])
@pytest.mark.parametrize("pre_score", [True, False], ids=["prescore", "no-prescore"])
def test_image_volumes(release: int, pod: PodBuilder, expected: list[int],
                       pre_score: bool) -> None:
    nodes = image_nodes(NODE_300_600_900, NODE_4000_30)
    handle = FakeHandle(make_snapshot(*nodes), features_value=Features(release=release))
    plugin = il.new(None, handle)
    assert run_scores(plugin, pod.info(), nodes, pre_score=pre_score) == expected


def test_pre_score_skips_when_no_node_has_an_image() -> None:
    nodes = image_nodes(NODE_250_10, NO_IMAGES)
    plugin = il.new(None, FakeHandle(make_snapshot(*nodes)))
    result = run_scores(plugin, images_pod("gcr.io/nowhere").info(), nodes)
    assert isinstance(result, Status)
    assert result.code == Code.SKIP


@pytest.mark.parametrize(("sum_scores", "containers", "expected"), [
    pytest.param(0, 1, 0, id="below the minimum"),
    pytest.param(23 * MB, 1, 0, id="at the minimum"),
    pytest.param(1000 * MB, 1, 100, id="at the maximum"),
    pytest.param(5000 * MB, 2, 100, id="above the maximum"),
    pytest.param(500 * MB, 1, 48, id="in between"),
    pytest.param(0, 0, 0, id="no containers"),
])
def test_calculate_priority(sum_scores: int, containers: int, expected: int) -> None:
    assert il.calculate_priority(sum_scores, containers) == expected


def test_spec() -> None:
    assert il.SPEC.extension_points() == ["preScore", "score"]
    assert il.new(None, FakeHandle()).events_to_register() == ()
