"""DynamicResources' vector Filter (device_counts.py) agrees with its per-node Filter,
node for node, and Reserve allocates the same devices after either.

Hypothesis draws ResourceSlices on each node and now and then one for all nodes or an
incomplete pool; devices with a model attribute or none (a selector on it then fails
at run time), NoSchedule taints, binding conditions, shared or counter-consuming
devices; classes with and without selectors; the pod's claims of one or two plain
requests, now and then a different second request, a constraint or a toleration; and
devices other claims hold. Where the vector form answers it must equal the per-node
verdict on every node (and no node may answer an Error); over the draws it must
answer often, and on SchedulingWithResourceClaimTemplate's shape always.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kpysched.cache.snapshot import Snapshot
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from tests.unit.api_double import RecordingApi
from tests.unit.builders import FakeHandle, make_node, make_snapshot

_SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=150,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DRIVER = "gpu.example.com"
MODEL = f'device.attributes["{DRIVER}"].model == "a"'
SEEN: Counter[str] = Counter()


def _device(draw: st.DrawFn, name: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name}
    model = draw(st.sampled_from(("a",) * 8 + ("b",) * 7 + (None,)))
    if model is not None:
        device["attributes"] = {"model": {"string": model}}
    odd = draw(st.integers(0, 47))
    if odd == 0:
        device["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    elif odd == 1:
        device["bindingConditions"] = ["ready"]
        device["bindingFailureConditions"] = ["failed"]
    elif odd == 2:
        device["allowMultipleAllocations"] = True
    elif odd == 3:
        device["consumesCounters"] = [{"counterSet": "missing",
                                       "counters": {"c": {"value": "1"}}}]
    return device


@st.composite
def slices(draw: st.DrawFn, nodes: list[str]) -> list[resource.ResourceSlice]:
    found = []
    for node in nodes:
        for index in range(draw(st.integers(0, 2))):
            devices = [_device(draw, f"d{index}-{i}") for i in range(draw(st.integers(0, 4)))]
            found.append({"metadata": {"name": f"{node}-{index}"},
                          "spec": {"driver": DRIVER, "nodeName": node, "devices": devices,
                                   "pool": {"name": f"{node}-{index}", "generation": 1,
                                            "resourceSliceCount": 1}}})
    odd = draw(st.integers(0, 5))
    if odd == 0:
        found.append({"metadata": {"name": "network"},
                      "spec": {"driver": DRIVER, "allNodes": True,
                               "devices": [_device(draw, f"net-{i}") for i in range(2)],
                               "pool": {"name": "network", "generation": 1,
                                        "resourceSliceCount": 1}}})
    elif odd == 1:
        found.append({"metadata": {"name": "half"},
                      "spec": {"driver": DRIVER, "nodeName": nodes[0],
                               "devices": [{"name": "half-0"}],
                               "pool": {"name": "half", "generation": 1,
                                        "resourceSliceCount": 2}}})
    return [msgspec.convert(s, resource.ResourceSlice) for s in found]


def _request(draw: st.DrawFn, name: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        exactly["selectors"] = [{"cel": {"expression": MODEL}}]
    if draw(st.integers(0, 5)) == 0:
        exactly["tolerations"] = [{"key": "k", "operator": "Exists"}]
    return {"name": name, "exactly": exactly}


@st.composite
def claims(draw: st.DrawFn) -> list[resource.ResourceClaim]:
    first = _request(draw, "r0")
    made = []
    for index in range(draw(st.integers(1, 2))):
        requests = [first]
        odd = draw(st.integers(0, 7))
        if odd == 0:
            requests.append(_request(draw, "r1"))
        elif odd == 1:
            requests.append({"name": "r1", "exactly": {**first["exactly"], "count": 1}})
        devices: dict[str, Any] = {"requests": requests}
        if draw(st.integers(0, 9)) == 0:
            devices["constraints"] = [{"matchAttribute": f"{DRIVER}/model"}]
        made.append(msgspec.convert(
            {"metadata": {"name": f"c{index}", "namespace": "d", "uid": f"uid-c{index}",
                          "resourceVersion": "5"},
             "spec": {"devices": devices}}, resource.ResourceClaim))
    return made


def _held(devices: list[tuple[str, str]], index: int) -> resource.ResourceClaim:
    """Another pod's claim holding these (pool, device)s."""
    return msgspec.convert(
        {"metadata": {"name": f"held-{index}", "namespace": "d", "uid": f"uid-held-{index}",
                      "resourceVersion": "5"},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
         "status": {"allocation": {"devices": {"results": [
             {"request": "r", "driver": DRIVER, "pool": pool, "device": device}
             for pool, device in devices]}}}}, resource.ResourceClaim)


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 5)))]
    found_slices = draw(slices(nodes))
    selector = draw(st.sampled_from((None, f'device.driver == "{DRIVER}"', MODEL)))
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    device_class = msgspec.convert({"metadata": {"name": "gpu"}, "spec": spec},
                                   resource.DeviceClass)
    everything = [(s.spec.pool.name, d.name) for s in found_slices for d in s.spec.devices]
    held = draw(st.lists(st.sampled_from(everything), unique=True)) if everything else []
    return {"nodes": nodes, "slices": found_slices, "class": device_class,
            "claims": draw(claims()), "held": [_held([h], i) for i, h in enumerate(held)],
            "release": draw(st.sampled_from((36, 37)))}


def _plugin(world: dict[str, Any]) -> tuple[dynamic_resources.DynamicResources, FakeHandle]:
    handle = FakeHandle(api_client=RecordingApi())
    handle.features_value = handle.features_value.__class__(release=world["release"])
    listers = handle.resource_listers
    for claim in (*world["claims"], *world["held"]):
        listers.resource_claims.on_add(claim)
    for resource_slice in world["slices"]:
        listers.resource_slices.on_add(resource_slice)
    listers.device_classes.on_add(world["class"])
    return dynamic_resources.DynamicResources(handle, DynamicResourcesArgs()), handle


def _pod(world: dict[str, Any]) -> PodInfo:
    return PodInfo.of(msgspec.convert(
        {"metadata": {"name": "p", "namespace": "d", "uid": "uid-p"},
         "spec": {"containers": [{"name": "c"}], "resourceClaims": [
             {"name": claim.metadata.name, "resourceClaimName": claim.metadata.name}
             for claim in world["claims"]]}}, api.Pod))


def _snapshot(world: dict[str, Any]) -> Snapshot:
    return make_snapshot(*(make_node(name).label("zone", "z").info() for name in world["nodes"]))


def _second_pod(world: dict[str, Any]) -> tuple[list[resource.ResourceClaim], PodInfo]:
    """Claims like the first pod's (renamed) and a pod using them."""
    copies = [msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
        claim.metadata, name=f"q-{claim.metadata.name}", uid=f"uid-q-{claim.metadata.name}"))
        for claim in world["claims"]]
    pod = PodInfo.of(msgspec.convert(
        {"metadata": {"name": "q", "namespace": "d", "uid": "uid-q"},
         "spec": {"containers": [{"name": "c"}], "resourceClaims": [
             {"name": claim.metadata.name, "resourceClaimName": claim.metadata.name}
             for claim in copies]}}, api.Pod))
    return copies, pod


def _round(per_node: dynamic_resources.DynamicResources,
           vector: dynamic_resources.DynamicResources, pod: PodInfo, snapshot: Snapshot,
           claims: list[resource.ResourceClaim]) -> bool:
    """One cycle of each; Reserve on the first node both pass. Whether it reserved."""
    state_a, state_b = CycleState(), CycleState()
    status = per_node.pre_filter(state_a, pod, snapshot.node_infos)[1]
    assert vector.pre_filter(state_b, pod, snapshot.node_infos)[1].code == status.code
    if not status.ok:
        SEEN["rejected in PreFilter"] += 1
        return False
    expected = [per_node.filter(state_a, pod, info) for info in snapshot.node_infos]
    mask = vector.filter_vector(state_b, pod, snapshot)
    if mask is None:
        SEEN["per node"] += 1
        return False
    SEEN["vector"] += 1
    assert not [s for s in expected if s.code == Code.ERROR]
    assert mask.tolist() == [s.ok for s in expected]
    for info, passed in zip(snapshot.node_infos, mask.tolist(), strict=True):
        if not passed:
            continue
        SEEN["reserved"] += 1
        assert per_node.reserve(state_a, pod, info.name).ok
        assert vector.reserve(state_b, pod, info.name).ok
        for claim in claims:
            assert (per_node._tracker.pending_allocation(claim.metadata.uid)
                    == vector._tracker.pending_allocation(claim.metadata.uid))
        return True
    return False


@_SETTINGS
@given(worlds(), st.booleans())
def test_vector_filter_matches_per_node_filter_and_reserve(world: dict[str, Any],
                                                           relabel: bool) -> None:
    """Two cycles with the same plugins: the second pod meets the first one's devices
    taken (in flight), and with `relabel` one node as a new Node object."""
    copies, second = _second_pod(world)
    world = {**world, "claims_q": copies}
    per_node, handle_a = _plugin(world)
    vector, handle = _plugin(world)
    for listers in (handle_a.resource_listers, handle.resource_listers):
        for claim in copies:
            listers.resource_claims.on_add(claim)
    snapshot = _snapshot(world)
    handle.snapshot_value = snapshot
    _round(per_node, vector, _pod(world), snapshot, world["claims"])
    if relabel:
        info = snapshot.node_infos[0].clone()
        assert info.node is not None
        info.node = msgspec.structs.replace(info.node, metadata=msgspec.structs.replace(
            info.node.metadata, labels={"zone": "y"}))
        snapshot.replace(info)
    _round(per_node, vector, second, snapshot, copies)


def test_the_vector_form_answers_for_most_draws() -> None:
    SEEN.clear()
    test_vector_filter_matches_per_node_filter_and_reserve()
    assert SEEN["vector"] > SEEN["per node"] / 2, SEEN
    assert SEEN["reserved"] > 20, SEEN


def test_claim_template_shape_is_judged_in_one_pass() -> None:
    """SchedulingWithResourceClaimTemplate: ten devices per node, five held, one asked."""
    nodes = [f"n{i}" for i in range(4)]
    found_slices = [msgspec.convert(
        {"metadata": {"name": node}, "spec": {
            "driver": DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(10)]}}, resource.ResourceSlice)
        for node in nodes]
    held = [(node, f"gpu-{i}") for node in nodes for i in range(5 if node != "n2" else 10)]
    world = {"nodes": nodes, "slices": found_slices,
             "class": msgspec.convert({"metadata": {"name": "gpu"}}, resource.DeviceClass),
             "claims": [msgspec.convert(
                 {"metadata": {"name": "c0", "namespace": "d", "uid": "uid-c0"},
                  "spec": {"devices": {"requests": [
                      {"name": "r0", "exactly": {"deviceClassName": "gpu"}}]}}},
                 resource.ResourceClaim)],
             "held": [_held([h], i) for i, h in enumerate(held)], "release": 37}
    plugin, handle = _plugin(world)
    snapshot = handle.snapshot_value = _snapshot(world)
    state = CycleState()
    pod = _pod(world)
    assert plugin.pre_filter(state, pod, snapshot.node_infos)[1].ok
    mask = plugin.filter_vector(state, pod, snapshot)
    assert mask is not None and mask.tolist() == [True, True, False, True]
    assert plugin.reserve(state, pod, "n3").ok
    allocation = plugin._tracker.pending_allocation("uid-c0")
    assert allocation is not None
    assert [(r.pool, r.device) for r in allocation.devices.results] == [("n3", "gpu-5")]
