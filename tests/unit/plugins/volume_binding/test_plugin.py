"""The VolumeBinding plugin's extension points: upstream's volume_binding_test.go
(TestVolumeBinding, Test_PreBindPreFlight), scorer_test.go (TestScore) and
validation_pluginargs_test.go (TestValidateVolumeBindingArgs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pydantic
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.config.features import Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource, with_hints
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api, storage
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from kpysched.plugins._shared.shape_score import ShapePoint
from kpysched.plugins.volume_binding import (
    NAME,
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    STATE_KEY,
    UtilizationShapePoint,
    VolumeBinding,
    VolumeBindingArgs,
    hints,
    new,
)
from kpysched.plugins.volume_binding.args import FEATURES_CONTEXT_KEY, shape_errors
from kpysched.plugins.volume_binding.binder import PodVolumes
from kpysched.plugins.volume_binding.plugin import _State
from kpysched.plugins.volume_binding.scorer import StorageResource, build_scorer
from tests.unit.builders import FakeHandle, make_node
from tests.unit.plugins.volume_binding.builders import (
    HOSTNAME,
    NODE_LABEL_KEY,
    add,
    make_capacity,
    make_csi_driver,
    node_affinity,
    storage_class,
)

WAIT = storage.BINDING_WAIT_FOR_FIRST_CONSUMER
IMMEDIATE_SC = storage_class("immediate-sc", storage.BINDING_IMMEDIATE)
WAIT_SC = storage_class("wait-sc", WAIT)
WAIT_HDD_SC = storage_class("wait-hdd-sc", WAIT)
WAIT_SC_WITH_CAPACITY = storage_class("wait-sc-with-storage-capacity", WAIT,
                                      "driver-with-storage-capacity")
DRIVER_WITH_CAPACITY = make_csi_driver("driver-with-storage-capacity", True)
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def make_pvc(name: str, class_name: str, *, bound_pv: str = "", request: str = "",
             phase: str = "") -> storage.PersistentVolumeClaim:
    """upstream's test_utils makePVC (namespace default)."""
    claim = storage.PersistentVolumeClaim(
        metadata=api.ObjectMeta(name=name, namespace="default"),
        spec=storage.PersistentVolumeClaimSpec(storage_class_name=class_name),
        status=storage.PersistentVolumeClaimStatus(phase=phase))
    if bound_pv:
        claim.spec.volume_name = bound_pv
        claim.metadata.annotations = {storage.ANNOTATION_BIND_COMPLETED: "true"}
    if request:
        claim.spec.resources = storage.VolumeResourceRequirements(requests={"storage": request})
    return claim


def make_pv(name: str, class_name: str, *, capacity: str = "",
            affinity: dict[str, list[str]] | None = None) -> storage.PersistentVolume:
    return storage.PersistentVolume(
        metadata=api.ObjectMeta(name=name),
        spec=storage.PersistentVolumeSpec(
            storage_class_name=class_name,
            capacity={"storage": capacity} if capacity else {},
            node_affinity=node_affinity(affinity) if affinity else None),
        status=storage.PersistentVolumeStatus(phase="Available"))


def make_pod(name: str, *claims: str) -> PodInfo:
    return PodInfo.of(api.Pod(
        metadata=api.ObjectMeta(name=name, namespace="default"),
        spec=api.PodSpec(volumes=[api.Volume(persistent_volume_claim=(
            api.PersistentVolumeClaimVolumeSource(claim_name=claim))) for claim in claims])))


def node(name: str, labels: dict[str, str] | None = None) -> NodeInfo:
    """upstream's makeNode: labelled with its hostname."""
    return make_node(name).labels({HOSTNAME: name, **(labels or {})}).info()


def zonal(name: str, zone: str) -> NodeInfo:
    return make_node(name).labels({HOSTNAME: name, ZONE: zone,
                                   REGION: zone.replace("zone", "region")}).info()


def keyed(name: str) -> NodeInfo:
    return make_node(name).labels({HOSTNAME: name, NODE_LABEL_KEY: name}).info()


def host(name: str) -> dict[str, list[str]]:
    return {HOSTNAME: [name]}


def zone_affinity(zone: str) -> dict[str, list[str]]:
    return {REGION: [zone.replace("zone", "region")], ZONE: [zone]}


UNBOUND = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON_BIND_CONFLICT])
DEFAULT_TEST_SHAPE = [UtilizationShapePoint(utilization=0, score=0),
                      UtilizationShapePoint(utilization=100, score=10)]


@dataclass
class Case:
    pod: PodInfo
    nodes: list[NodeInfo]
    pvcs: list[storage.PersistentVolumeClaim] = field(default_factory=list)
    pvs: list[storage.PersistentVolume] = field(default_factory=list)
    capacities: list[storage.CSIStorageCapacity] = field(default_factory=list)
    capacity_scoring: bool = False
    shape: list[UtilizationShapePoint] | None = None
    pre_filter: Status = field(default_factory=Status)
    # (bound, unbound delayed, {class: [pv names]}) after PreFilter.
    claims: tuple[list[str], list[str], dict[str, list[str]]] | None = None
    filters: list[Status] | None = None  # None: every node passes
    pre_score: Status = field(default_factory=Status)
    scores: list[int] = field(default_factory=list)


def _capacity(name: str, size: str) -> storage.CSIStorageCapacity:
    return make_capacity(name, WAIT_SC_WITH_CAPACITY.metadata.name, name, size)


_LOCAL_PVS = [
    make_pv("pv-a-0", "wait-sc", capacity="200Gi", affinity=host("node-a")),
    make_pv("pv-a-1", "wait-sc", capacity="200Gi", affinity=host("node-a")),
    make_pv("pv-b-0", "wait-sc", capacity="100Gi", affinity=host("node-b")),
    make_pv("pv-b-1", "wait-sc", capacity="100Gi", affinity=host("node-b")),
]
_HDD_PVS = [
    make_pv("pv-a-2", "wait-hdd-sc", capacity="200Gi", affinity=host("node-a")),
    make_pv("pv-a-3", "wait-hdd-sc", capacity="200Gi", affinity=host("node-a")),
    make_pv("pv-b-2", "wait-hdd-sc", capacity="100Gi", affinity=host("node-b")),
    make_pv("pv-b-3", "wait-hdd-sc", capacity="100Gi", affinity=host("node-b")),
]
_ZONAL_PVS = [
    make_pv("pv-a-0", "wait-sc", capacity="200Gi", affinity=zone_affinity("zone-a")),
    make_pv("pv-a-1", "wait-sc", capacity="200Gi", affinity=zone_affinity("zone-a")),
    make_pv("pv-b-0", "wait-sc", capacity="100Gi", affinity=zone_affinity("zone-b")),
    make_pv("pv-b-1", "wait-sc", capacity="100Gi", affinity=zone_affinity("zone-b")),
]
_ZONAL_NODES = [zonal(f"zone-{z}-node-{n}", f"zone-{z}") for z in "abc" for n in "ab"]
_STATIC_PVS = [make_pv(f"pv-static-{n}", "wait-sc", capacity="100Gi", affinity=host(f"node-{n}"))
               for n in "abc"]
_THREE_CAPACITIES = [_capacity("node-a", "100Gi"), _capacity("node-b", "20Gi"),
                     _capacity("node-c", "10Gi")]

CASES = {
    "pod has not pvcs": Case(make_pod("pod-a"), [node("node-a")], pre_filter=Status.skip(),
                             pre_score=Status.skip()),
    "all bound": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")],
        pvcs=[make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")], pvs=[make_pv("pv-a", "wait-sc")],
        claims=(["pvc-a"], [], {}), pre_score=Status.skip()),
    "PVC does not exist": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")],
        pre_filter=Status.unresolvable('persistentvolumeclaim "pvc-a" not found')),
    "Part of PVCs do not exist": Case(
        make_pod("pod-a", "pvc-a", "pvc-b"), [node("node-a")],
        pvcs=[make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        pre_filter=Status.unresolvable('persistentvolumeclaim "pvc-b" not found')),
    "immediate claims not bound": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")], pvcs=[make_pvc("pvc-a", "immediate-sc")],
        pre_filter=Status.unresolvable(REASON_UNBOUND_IMMEDIATE)),
    "unbound claims no matches": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")], pvcs=[make_pvc("pvc-a", "wait-sc")],
        claims=([], ["pvc-a"], {"wait-sc": []}), filters=[UNBOUND], pre_score=Status.skip()),
    "bound and unbound unsatisfied": Case(
        make_pod("pod-a", "pvc-a", "pvc-b"), [node("node-a", {"foo": "barbar"})],
        pvcs=[make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"), make_pvc("pvc-b", "wait-sc")],
        pvs=[make_pv("pv-a", "wait-sc", affinity={"foo": ["bar"]})],
        claims=(["pvc-a"], ["pvc-b"], {"wait-sc": ["pv-a"]}),
        filters=[Status.unresolvable(REASON_NODE_CONFLICT, REASON_BIND_CONFLICT)],
        pre_score=Status.skip()),
    "pv not found": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")],
        pvcs=[make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")], claims=(["pvc-a"], [], {}),
        filters=[Status.unresolvable(REASON_PV_NOT_EXIST)], pre_score=Status.skip()),
    "pv not found claim lost": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a")],
        pvcs=[make_pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        pre_filter=Status.unresolvable(
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"')),
    "local volumes with close capacity are preferred": Case(
        make_pod("pod-a", "pvc-a"), [node("node-a"), node("node-b"), node("node-c")],
        pvcs=[make_pvc("pvc-a", "wait-sc", request="50Gi")], pvs=_LOCAL_PVS,
        capacity_scoring=True,
        claims=([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[Status(), Status(), UNBOUND], scores=[25, 50, 0]),
    "local volumes with close capacity are preferred (multiple pvcs)": Case(
        make_pod("pod-a", "pvc-0", "pvc-1"), [node("node-a"), node("node-b"), node("node-c")],
        pvcs=[make_pvc("pvc-0", "wait-sc", request="50Gi"),
              make_pvc("pvc-1", "wait-hdd-sc", request="100Gi")],
        pvs=_LOCAL_PVS + _HDD_PVS, capacity_scoring=True,
        claims=([], ["pvc-0", "pvc-1"], {
            "wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
            "wait-hdd-sc": ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"]}),
        filters=[Status(), Status(), UNBOUND], scores=[38, 75, 0]),
    "zonal volumes with close capacity are preferred": Case(
        make_pod("pod-a", "pvc-a"), _ZONAL_NODES,
        pvcs=[make_pvc("pvc-a", "wait-sc", request="50Gi")], pvs=_ZONAL_PVS,
        capacity_scoring=True,
        claims=([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[Status()] * 4 + [UNBOUND] * 2, scores=[25, 25, 50, 50, 0, 0]),
    "zonal volumes with close capacity are preferred (custom shape)": Case(
        make_pod("pod-a", "pvc-a"), _ZONAL_NODES,
        pvcs=[make_pvc("pvc-a", "wait-sc", request="50Gi")], pvs=_ZONAL_PVS,
        capacity_scoring=True,
        shape=[UtilizationShapePoint(utilization=0, score=0),
               UtilizationShapePoint(utilization=50, score=3),
               UtilizationShapePoint(utilization=100, score=5)],
        claims=([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        filters=[Status()] * 4 + [UNBOUND] * 2, scores=[15, 15, 30, 30, 0, 0]),
    "storage capacity score": Case(
        make_pod("pod-a", "pvc-dynamic"), [keyed("node-a"), keyed("node-b"), keyed("node-c")],
        pvcs=[make_pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi")],
        capacities=[_capacity("node-a", "100Gi"), _capacity("node-b", "50Gi"),
                    _capacity("node-c", "10Gi")],
        capacity_scoring=True,
        claims=([], ["pvc-dynamic"], {"wait-sc-with-storage-capacity": []}),
        scores=[10, 20, 100]),
    "storage capacity score with static binds": Case(
        make_pod("pod-a", "pvc-dynamic", "pvc-static"),
        [keyed("node-a"), keyed("node-b"), keyed("node-c")],
        pvcs=[make_pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"),
              make_pvc("pvc-static", "wait-sc", request="50Gi")],
        pvs=_STATIC_PVS,
        capacities=[_capacity("node-a", "100Gi"), _capacity("node-b", "50Gi"),
                    _capacity("node-c", "10Gi")],
        capacity_scoring=True,
        claims=([], ["pvc-dynamic", "pvc-static"], {
            "wait-sc": ["pv-static-a", "pv-static-b", "pv-static-c"],
            "wait-sc-with-storage-capacity": []}),
        scores=[50, 50, 50]),
    "dynamic provisioning with multiple PVCs of the same StorageClass": Case(
        make_pod("pod-a", "pvc-dynamic-0", "pvc-dynamic-1"), [keyed("node-a")],
        pvcs=[make_pvc("pvc-dynamic-0", "wait-sc-with-storage-capacity", request="50Gi"),
              make_pvc("pvc-dynamic-1", "wait-sc-with-storage-capacity", request="50Gi")],
        capacities=[_capacity("node-a", "100Gi")], capacity_scoring=True,
        claims=([], ["pvc-dynamic-0", "pvc-dynamic-1"], {"wait-sc-with-storage-capacity": []}),
        scores=[100]),
    "prefer node with least allocatable": Case(
        make_pod("pod-a", "pvc-dynamic"), [keyed("node-a"), keyed("node-b"), keyed("node-c")],
        pvcs=[make_pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi")],
        capacities=_THREE_CAPACITIES, capacity_scoring=True,
        claims=([], ["pvc-dynamic"], {"wait-sc-with-storage-capacity": []}),
        scores=[10, 50, 100]),
    "prefer node with maximum allocatable": Case(
        make_pod("pod-a", "pvc-dynamic"), [keyed("node-a"), keyed("node-b"), keyed("node-c")],
        pvcs=[make_pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi")],
        capacities=_THREE_CAPACITIES, capacity_scoring=True,
        shape=[UtilizationShapePoint(utilization=0, score=10),
               UtilizationShapePoint(utilization=100, score=0)],
        claims=([], ["pvc-dynamic"], {"wait-sc-with-storage-capacity": []}),
        scores=[90, 50, 0]),
}


def _plugin(case: Case) -> VolumeBinding:
    handle = FakeHandle()
    add(handle.storage_listers, IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, WAIT_SC_WITH_CAPACITY,
        DRIVER_WITH_CAPACITY, *case.pvcs, *case.pvs, *case.capacities)
    shape = case.shape
    if shape is None and case.capacity_scoring:
        shape = DEFAULT_TEST_SHAPE
    # model_construct: the gate is off in v1.36, so validation would refuse any shape.
    args = VolumeBindingArgs.model_construct(bind_timeout_seconds=300, shape=shape)
    return VolumeBinding(args, handle,  # type: ignore[arg-type]
                         storage_capacity_scoring=case.capacity_scoring)


def _names(objects: list[storage.PersistentVolumeClaim] | list[storage.PersistentVolume]
           ) -> list[str]:
    return [obj.metadata.name for obj in objects]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_volume_binding(case: Case) -> None:
    plugin = _plugin(case)
    state = CycleState()
    result, status = plugin.pre_filter(state, case.pod, case.nodes)
    assert result is None  # VolumeBinding never narrows the nodes in v1.36
    assert (status.code, status.reasons) == (case.pre_filter.code, case.pre_filter.reasons)
    if not status.ok:
        return
    data = state.read(STATE_KEY)
    assert case.claims is not None and data.claims is not None
    bound, delayed, by_class = case.claims
    assert _names(data.claims.bound) == bound
    assert sorted(_names(data.claims.unbound_delay_binding)) == delayed
    assert {name: sorted(_names(pvs))
            for name, pvs in data.claims.unbound_volumes_delay_binding.items()} == by_class
    assert data.pod_volumes_by_node == {}

    filters = case.filters or [Status()] * len(case.nodes)
    for info, want in zip(case.nodes, filters, strict=True):
        got = plugin.filter(state, case.pod, info)
        assert (got.code, got.reasons) == (want.code, want.reasons), info.name

    got = plugin.pre_score(state, case.pod, case.nodes)
    assert got.code == case.pre_score.code
    if not got.ok:
        return
    assert [plugin.score(state, case.pod, info) for info in case.nodes] == [
        (score, Status()) for score in case.scores]


V36, V37 = Features(release=36), Features(release=37)


def test_default_plugin_does_not_score_in_v1_36() -> None:
    """StorageCapacityScoring is off in v1.36: PreScore skips even with static bindings."""
    plugin = new(None, FakeHandle(features_value=V36))  # type: ignore[arg-type]
    state = CycleState()
    state.write(STATE_KEY, _State(has_static_bindings=True))
    pod = make_pod("pod-a")
    assert plugin.pre_score(state, pod, []).code == Code.SKIP
    assert plugin.score(state, pod, node("node-a")) == (0, Status())


@pytest.mark.parametrize("static", [True, False], ids=["static bindings", "dynamic only"])
def test_default_plugin_scores_in_v1_37(static: bool) -> None:
    """StorageCapacityScoring is on in v1.37: PreScore runs whether or not the pod has
    static bindings, with upstream's default shape (emptier nodes score higher)."""
    plugin = new(None, FakeHandle(features_value=V37))  # type: ignore[arg-type]
    state = CycleState()
    state.write(STATE_KEY, _State(has_static_bindings=static))
    assert plugin.pre_score(state, make_pod("pod-a"), []).code == Code.SUCCESS


def test_default_shape_prefers_the_least_used_node() -> None:
    """v1.37's default shape (0 -> 10, 100 -> 0) over a case upstream scores with its test
    shape: the same claims, now ranked the other way round."""
    case = CASES["storage capacity score with static binds"]
    plugin = new(None, FakeHandle(features_value=V37))  # type: ignore[arg-type]
    add(plugin._handle.storage_listers, IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC,
        WAIT_SC_WITH_CAPACITY, DRIVER_WITH_CAPACITY, *case.pvcs, *case.pvs, *case.capacities)
    state = CycleState()
    assert plugin.pre_filter(state, case.pod, case.nodes)[1].ok
    for info in case.nodes:
        assert plugin.filter(state, case.pod, info).ok
    assert plugin.pre_score(state, case.pod, case.nodes).ok
    scores = [plugin.score(state, case.pod, info)[0] for info in case.nodes]
    assert scores == [100 - score for score in case.scores]


PRE_BIND_PRE_FLIGHT = {
    "all bound": (_State(all_bound=True), Status.skip()),
    "volume to be bound": (_State(pod_volumes_by_node={"node-a": PodVolumes()}), Status()),
    "error: state is nil": (None, Status.error("not found")),
    "error: node is not found in podVolumesByNode": (
        _State(pod_volumes_by_node={"node-b": PodVolumes()}),
        Status.error('no pod volume found for node "node-a"')),
}


@pytest.mark.parametrize(("data", "want"), PRE_BIND_PRE_FLIGHT.values(),
                         ids=PRE_BIND_PRE_FLIGHT.keys())
def test_pre_bind_pre_flight(data: _State | None, want: Status) -> None:
    plugin = new(None, FakeHandle())  # type: ignore[arg-type]
    state = CycleState()
    if data is not None:
        state.write(STATE_KEY, data)
    got = plugin.pre_bind_pre_flight(state, make_pod("pod"), "node-a")
    assert (got.code, got.reasons) == (want.code, want.reasons)


def test_events_to_register() -> None:
    plugin = new(None, FakeHandle())  # type: ignore[arg-type]
    add_update = ActionType.ADD | ActionType.UPDATE
    assert [(r.event, r.hint) for r in with_hints(plugin.events_to_register())] == [
        (ClusterEvent(Resource.STORAGE_CLASS, add_update), hints.after_storage_class_change),
        (ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_update), hints.after_claim_change),
        (ClusterEvent(Resource.PERSISTENT_VOLUME, add_update), None),
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), None),
        (ClusterEvent(Resource.CSI_NODE, add_update), hints.after_csi_node_change),
        (ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE), hints.after_csi_driver_change),
        (ClusterEvent(Resource.CSI_STORAGE_CAPACITY, add_update), hints.after_capacity_change),
    ]


def test_registered_in_tree() -> None:
    spec = IN_TREE[NAME]
    assert spec.extension_points() == ["preFilter", "filter", "preScore", "score", "reserve",
                                       "preBind"]


# ---- args (validation_pluginargs_test.go) ------------------------------------------

def _points(*pairs: tuple[int, int]) -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(utilization=u, score=s) for u, s in pairs]


def test_args_defaults() -> None:
    args = VolumeBindingArgs.model_validate({})
    assert (args.bind_timeout_seconds, args.shape) == (600, None)
    assert VolumeBindingArgs.model_validate({"bindTimeoutSeconds": None}).bind_timeout_seconds \
        == 600
    assert [(p.utilization, p.score) for p in args.scoring_shape()] == [(0, 10), (100, 0)]


ARGS = {
    "zero is a valid config": ({"bindTimeoutSeconds": 0}, None),
    "positive value is valid config": ({"bindTimeoutSeconds": 10}, None),
    "negative value is invalid config": (
        {"bindTimeoutSeconds": -10},
        "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a "
        "negative value"),
    "[StorageCapacityScoring=off] shape should be nil when the feature is off": (
        {"bindTimeoutSeconds": 10, "shape": None}, None),
    "[StorageCapacityScoring=off] error if the shape is not nil when the feature is off": (
        {"bindTimeoutSeconds": 10, "shape": [{"utilization": 1, "score": 1},
                                             {"utilization": 3, "score": 3}]},
        'shape: Invalid value: [{"Utilization":1,"Score":1},{"Utilization":3,"Score":3}]: '
        "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"),
    "unknown field": ({"bindTimeout": 10}, "bindTimeout"),
}


@pytest.mark.parametrize(("raw", "error"), ARGS.values(), ids=ARGS.keys())
def test_validate_args(raw: dict[str, object], error: str | None) -> None:
    spec = IN_TREE[NAME]
    if error is None:
        spec.parse_args(raw)
        return
    with pytest.raises(pydantic.ValidationError, match=error.replace("[", r"\[")
                       .replace("{", r"\{").replace("(", r"\(")):
        spec.parse_args(raw)


SHAPE = [{"utilization": 1, "score": 1}, {"utilization": 3, "score": 3}]


def test_validation_follows_the_release_gate() -> None:
    """The gate comes from the validation context: v1.37 (on) takes a shape and
    defaults an unset one; v1.36 (off) refuses one, as does no context at all."""
    on, off = {FEATURES_CONTEXT_KEY: V37}, {FEATURES_CONTEXT_KEY: V36}
    args = VolumeBindingArgs.model_validate({"shape": SHAPE}, context=on)
    assert [(p.utilization, p.score) for p in args.scoring_shape()] == [(1, 1), (3, 3)]
    for unset in ({}, {"shape": None}, {"shape": []}):
        defaulted = VolumeBindingArgs.model_validate(unset, context=on)
        assert [(p.utilization, p.score) for p in defaulted.scoring_shape()] == [
            (0, 10), (100, 0)]
    with pytest.raises(pydantic.ValidationError, match="values must be sorted"):
        VolumeBindingArgs.model_validate({"shape": SHAPE[::-1]}, context=on)
    for context in (off, None):
        with pytest.raises(pydantic.ValidationError, match="turn on the feature gate"):
            VolumeBindingArgs.model_validate({"shape": SHAPE}, context=context)


def test_a_shape_without_the_gate_is_refused_at_construction() -> None:
    """Args validated on v1.37's terms must not make v1.36's plugin score."""
    args = VolumeBindingArgs.model_validate({"shape": SHAPE},
                                            context={FEATURES_CONTEXT_KEY: V37})
    with pytest.raises(ValueError, match="turn on the feature gate StorageCapacityScoring"):
        new(args, FakeHandle(features_value=V36))  # type: ignore[arg-type]
    assert new(args, FakeHandle(features_value=V37))._scorer is not None  # type: ignore[arg-type]


SHAPES_WITH_GATE_ON = {
    "shape should not be empty": (
        [], ["shape: Required value: at least one point must be specified"]),
    "shape points must be sorted in increasing order": (
        _points((3, 3), (1, 1)),
        ["shape[1].utilization: Invalid value: 1: values must be sorted in increasing order"]),
    "shape point: invalid utilization and score": (
        _points((-1, 1), (10, -1), (20, 11), (101, 1)),
        ["shape[0].utilization: Invalid value: -1: not in valid range [0, 100]",
         "shape[1].score: Invalid value: -1: not in valid range [0, 10]",
         "shape[2].score: Invalid value: 11: not in valid range [0, 10]",
         "shape[3].utilization: Invalid value: 101: not in valid range [0, 100]"]),
    "valid shape": (_points((0, 0), (100, 10)), []),
}


@pytest.mark.parametrize(("shape", "errors"), SHAPES_WITH_GATE_ON.values(),
                         ids=SHAPES_WITH_GATE_ON.keys())
def test_shape_validation_with_the_gate_on(shape: list[UtilizationShapePoint],
                                           errors: list[str]) -> None:
    assert shape_errors(shape, storage_capacity_scoring=True) == errors


# ---- scorer (scorer_test.go) -------------------------------------------------------

DEFAULT_SHAPE = [ShapePoint(0, 0), ShapePoint(100, 100)]
CUSTOM_SHAPE = [ShapePoint(50, 0), ShapePoint(80, 30), ShapePoint(100, 50)]


def _classes(*requested: int) -> dict[str, StorageResource]:
    return {name: StorageResource(amount, 100)
            for name, amount in zip(("hdd", "ssd"), requested, strict=False)}


SCORES = {
    "default shape, single class": (DEFAULT_SHAPE, [
        ((0,), 0), ((30,), 30), ((50,), 50), ((100,), 100)]),
    "default shape, multiple classes": (DEFAULT_SHAPE, [
        ((0, 0), 0), ((0, 30), 15), ((30, 30), 30), ((30, 60), 45), ((50, 50), 50),
        ((50, 100), 75), ((100, 100), 100)]),
    "custom shape, multiple classes": (CUSTOM_SHAPE, [
        ((0, 0), 0), ((0, 30), 0), ((30, 30), 0), ((30, 60), 5), ((50, 100), 25),
        ((90, 90), 40), ((100, 100), 50)]),
}


@pytest.mark.parametrize(("shape", "cases"), SCORES.values(), ids=SCORES.keys())
def test_score(shape: list[ShapePoint], cases: list[tuple[tuple[int, ...], int]]) -> None:
    score = build_scorer(shape)
    assert [score(_classes(*requested)) for requested, _ in cases] == [
        want for _, want in cases]
    assert score({}) == 0
