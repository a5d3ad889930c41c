"""NodeDeclaredFeatures' registry per release: v1.37.2 registers four more features
(component-helpers v0.37.2, features/registry.go), of which only VolumeBindMountOptions
can be needed to schedule a pod (upstream's volumebindmountoptions feature has no test
table; these cases follow its InferForScheduling)."""

from __future__ import annotations

import msgspec
import pytest

from kpysched.config.features import Features
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.plugins.node_declared_features import features as ft
from kpysched.plugins.node_declared_features import plugin as ndf
from tests.unit.builders import FakeHandle, make_node, make_pod
from tests.unit.plugins.runner import run_filter

V1_37 = ft.Version.parse("1.37.2")


def mounting(*options: str, init: bool = False) -> api.PodSpec:
    container = api.Container(name="c", image="image", volume_mounts=[
        api.VolumeMount(), api.VolumeMount(bind_mount_options=list(options))])
    plain = api.Container(name="p", image="image")
    if init:
        return api.PodSpec(init_containers=[container], containers=[plain])
    return api.PodSpec(containers=[container])


def test_v1_37_registry_is_upstreams() -> None:
    assert [f.name for f in ft.REGISTRY_V1_37] == [
        "RestartAllContainersOnContainerExits", "InPlacePodLevelResourcesVerticalScaling",
        "ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers",
        "InPlacePodVerticalScalingMemoryBackedVolumes", "UserNamespacesHostNetworkSupport",
        "DRANodeAllocatableResources", "VolumeBindMountOptions", "DRAOptionalNodeOperations"]
    assert all(f.max_version is None for f in ft.REGISTRY_V1_37)
    assert ft.REGISTRIES[36] == (ft.REGISTRY, ft.Version.parse("1.36.4"))
    assert ft.REGISTRIES[37] == (ft.REGISTRY_V1_37, V1_37)


@pytest.mark.parametrize(("spec", "needed"), [
    pytest.param(mounting("recursive-ro"), True, id="container mount with bind mount options"),
    pytest.param(mounting("recursive-ro", init=True), True,
                 id="init container mount with bind mount options"),
    pytest.param(mounting(), False, id="mounts without bind mount options"),
    pytest.param(api.PodSpec(containers=[api.Container(name="c")]), False, id="no mounts"),
])
def test_volume_bind_mount_options(spec: api.PodSpec, needed: bool) -> None:
    wanted = {ft.VOLUME_BIND_MOUNT_OPTIONS} if needed else set()
    assert ft.required_for_scheduling(spec, V1_37, ft.REGISTRY_V1_37) == wanted
    # v1.36 does not know the feature.
    assert ft.required_for_scheduling(spec, ft.Version.parse("1.36.4")) == set()


@pytest.mark.parametrize(("release", "declared", "code"), [
    pytest.param(36, (), Code.SUCCESS, id="v1.36: not a feature it knows"),
    pytest.param(37, (), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, id="v1.37: node lacks it"),
    pytest.param(37, ("VolumeBindMountOptions",), Code.SUCCESS, id="v1.37: node declares it"),
])
def test_the_plugin_follows_the_release(release: int, declared: tuple[str, ...],
                                        code: Code) -> None:
    plugin = ndf.new(None, FakeHandle(features_value=Features(release=release)))
    pod = make_pod("p")
    pod.obj().spec = mounting("recursive-ro")
    node = make_node("node-1")
    node.obj().status.declared_features = list(declared)
    status = run_filter(plugin, pod.info(), node.info())
    assert status.code == code
    if code != Code.SUCCESS:
        assert status.reasons == [ndf.REASON_UNSATISFIED_REQUIREMENTS]


def test_bind_mount_options_decode() -> None:
    raw = (b'{"name":"c","volumeMounts":[{"name":"v","mountPath":"/v",'
           b'"bindMountOptions":["recursive-ro"]}]}')
    container = msgspec.json.decode(raw, type=api.Container)
    assert container.volume_mounts == [api.VolumeMount(bind_mount_options=["recursive-ro"])]
