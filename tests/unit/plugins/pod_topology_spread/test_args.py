"""PodTopologySpread args (upstream's ValidatePodTopologySpreadArgs cases), the
DefaultSelector helper (helper/spread_test.go) and the plugin's registration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pydantic
import pytest

from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.objects import api
from kpysched.plugins import DEFAULT_WEIGHTS, IN_TREE
from kpysched.plugins import pod_topology_spread as pts
from kpysched.plugins.pod_topology_spread.common import parse_selector
from tests.unit.builders import FakeHandle, PodBuilder, label_selector, make_pod
from tests.unit.plugins.hints import registered

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _constraint(key: str = "node", action: str = "DoNotSchedule", skew: int = 1,
                **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action, **extra}


@pytest.mark.parametrize("raw", [
    pytest.param({"defaultConstraints": [
        _constraint("node", "DoNotSchedule", 1),
        _constraint("zone", "ScheduleAnyway", 2)], "defaultingType": "List"},
        id="valid constraints"),
    pytest.param({"defaultingType": "List"}, id="list with no constraints"),
    pytest.param({}, id="system by default"),
    pytest.param({"defaultingType": "", "defaultConstraints": None}, id="empty values default"),
    pytest.param({"defaultingType": "List", "defaultConstraints": [
        _constraint(minDomains=3, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor",
                    matchLabelKeys=["app"])]}, id="other fields are not checked"),
])
def test_valid_args(raw: dict[str, Any]) -> None:
    pts.PodTopologySpreadArgs.model_validate(raw)


@pytest.mark.parametrize(("raw", "messages"), [
    pytest.param({"defaultConstraints": [_constraint(skew=-1)], "defaultingType": "List"},
                 ["defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)"],
                 id="negative maxSkew"),
    pytest.param({"defaultConstraints": [_constraint(skew=0)], "defaultingType": "List"},
                 ["defaultConstraints[0].maxSkew: Invalid value: 0"], id="zero maxSkew"),
    pytest.param({"defaultConstraints": [_constraint(key="")], "defaultingType": "List"},
                 ["defaultConstraints[0].topologyKey: Required value: can not be empty"],
                 id="empty topology key"),
    pytest.param({"defaultConstraints": [_constraint(key="a b")], "defaultingType": "List"},
                 ["defaultConstraints[0].topologyKey: Invalid value: 'a b'"],
                 id="invalid topology key"),
    pytest.param({"defaultConstraints": [_constraint(action="")], "defaultingType": "List"},
                 ["defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"],
                 id="WhenUnsatisfiable is empty"),
    pytest.param({"defaultConstraints": [_constraint(action="Sometimes")],
                  "defaultingType": "List"},
                 ["defaultConstraints[0].whenUnsatisfiable: Unsupported value: 'Sometimes': "
                  "supported values: 'DoNotSchedule', 'ScheduleAnyway'"],
                 id="WhenUnsatisfiable contains unsupported action"),
    pytest.param({"defaultConstraints": [_constraint("node", "DoNotSchedule", 1),
                                         _constraint("node", "DoNotSchedule", 2)],
                  "defaultingType": "List"},
                 ["defaultConstraints[1]: Duplicate value: '{node, DoNotSchedule}'"],
                 id="duplicated constraints"),
    pytest.param({"defaultConstraints": [_constraint(labelSelector={"matchLabels": {"a": "b"}})],
                  "defaultingType": "List"},
                 ["defaultConstraints[0].labelSelector: Forbidden: constraint must not define a "
                  "selector, as they deduced for each pod"], id="label selector present"),
    pytest.param({"defaultConstraints": [_constraint()], "defaultingType": "System"},
                 ["defaultingType: Invalid value: 'System': when .defaultConstraints are not "
                  "empty"], id="system defaulting with constraints"),
    pytest.param({"defaultConstraints": [_constraint()]},
                 ["defaultingType: Invalid value: 'System'"],
                 id="constraints need an explicit List"),
    pytest.param({"defaultingType": "Custom"},
                 ["defaultingType: Unsupported value: 'Custom': supported values: 'System', "
                  "'List'"], id="unknown defaulting type"),
    pytest.param({"defaultConstraints": [_constraint(skew=0, key="", action="")],
                  "defaultingType": "List"},
                 ["maxSkew", "topologyKey: Required", "whenUnsatisfiable: Required"],
                 id="every problem is reported"),
    pytest.param({"defaultingType": "List", "defaultConstraint": []},
                 ["defaultConstraint"], id="unknown field"),
    pytest.param({"defaultingType": "List", "defaultConstraints": [_constraint(maxSkw=1)]},
                 ["maxSkw"], id="unknown constraint field"),
])
def test_invalid_args(raw: dict[str, Any], messages: list[str]) -> None:
    with pytest.raises(pydantic.ValidationError) as raised:
        pts.PodTopologySpreadArgs.model_validate(raw)
    for message in messages:
        assert message in str(raised.value)


def test_effective_defaults() -> None:
    assert pts.PodTopologySpreadArgs().effective_defaults() == (
        api.TopologySpreadConstraint(max_skew=3, topology_key=HOST,
                                     when_unsatisfiable="ScheduleAnyway"),
        api.TopologySpreadConstraint(max_skew=5, topology_key=ZONE,
                                     when_unsatisfiable="ScheduleAnyway"),
    )
    listed = pts.PodTopologySpreadArgs.model_validate({
        "defaultingType": "List",
        "defaultConstraints": [_constraint("rack", skew=2, minDomains=2)]})
    assert listed.effective_defaults() == (api.TopologySpreadConstraint(
        max_skew=2, topology_key="rack", when_unsatisfiable="DoNotSchedule", min_domains=2),)
    assert pts.PodTopologySpreadArgs.model_validate(
        {"defaultingType": "List"}).effective_defaults() == ()


# --- DefaultSelector (helper/spread_test.go) -----------------------------------------

@dataclass(frozen=True)
class RC:
    namespace: str
    name: str
    uid: str
    selector: Mapping[str, str] | None


@dataclass(frozen=True)
class Owner:
    namespace: str
    name: str
    uid: str
    selector: api.LabelSelector | None


NS = "test"
SERVICE = (NS, {"podLabelKey": "podLabelVal"})
RS = Owner(NS, "test-replicaset", "uid-rs",
           label_selector({"replicaSetLabelKey": "replicaSetLabelVal"}))
RCS = [RC(NS, "test-replicationcontroller", "uid-rc",
          {"replicationLabelKey": "replicationLabelVal"})]
SS = Owner(NS, "test-statefulset", "uid-ss",
           label_selector({"statefulSetLabelKey": "statefulSetLabelVal"}))


def _pod() -> PodBuilder:
    return make_pod("test-pod", NS).label("podLabelKey", "podLabelVal")


def _select(pod: PodBuilder, services: list[tuple[str, Mapping[str, str] | None]],
            rcs: list[RC] | None = None, rss: list[Owner] | None = None,
            sss: list[Owner] | None = None) -> api.LabelSelector | None:
    return pts.default_selector(pod.obj(), services, rcs or [], rss or [], sss or [])


@pytest.mark.parametrize(("pod", "services", "expected"), [
    pytest.param(_pod(), [], None, id="DefaultSelector for default case"),
    pytest.param(_pod(), [SERVICE], {"podLabelKey": "podLabelVal"},
                 id="DefaultSelector for no OwnerReference pod case"),
    pytest.param(_pod().owner("ReplicaSet", "test-replicaset"), [SERVICE],
                 {"podLabelKey": "podLabelVal", "replicaSetLabelKey": "replicaSetLabelVal"},
                 id="DefaultSelector for ReplicaSet OwnerReference pod case"),
    pytest.param(_pod().owner("ReplicationController", "test-replicationcontroller", "v1"),
                 [SERVICE],
                 {"podLabelKey": "podLabelVal", "replicationLabelKey": "replicationLabelVal"},
                 id="DefaultSelector for ReplicationController OwnerReference pod case"),
    pytest.param(_pod().owner("StatefulSet", "test-statefulset"), [SERVICE],
                 {"podLabelKey": "podLabelVal", "statefulSetLabelKey": "statefulSetLabelVal"},
                 id="DefaultSelector for StatefulSet OwnerReference pod case"),
    pytest.param(_pod().owner("ReplicaSet", "test-replicaset"), [],
                 {"replicaSetLabelKey": "replicaSetLabelVal"}, id="owner without a service"),
    pytest.param(_pod(), [("other", {"podLabelKey": "podLabelVal"})], None,
                 id="services of other namespaces do not count"),
    pytest.param(_pod(), [(NS, {"podLabelKey": "other"})], None,
                 id="services that don't select the pod do not count"),
    pytest.param(_pod(), [(NS, None)], None, id="a nil service selector selects nothing"),
    pytest.param(_pod().label("tier", "web"),
                 [SERVICE, (NS, {"tier": "web"}), (NS, {"tier": "db"})],
                 {"podLabelKey": "podLabelVal", "tier": "web"}, id="matching services merge"),
    pytest.param(_pod().owner("ReplicaSet", "test-replicaset", "extensions/v1beta1"), [SERVICE],
                 {"podLabelKey": "podLabelVal"}, id="owner kind needs the exact apiVersion"),
    pytest.param(_pod().owner("ReplicaSet", "test-replicaset", controller=False), [SERVICE],
                 {"podLabelKey": "podLabelVal"}, id="only the controller owner counts"),
    pytest.param(_pod().owner("ReplicaSet", "missing"), [SERVICE],
                 {"podLabelKey": "podLabelVal"}, id="missing owner"),
    pytest.param(_pod().owner("Deployment", "test-replicaset"), [SERVICE],
                 {"podLabelKey": "podLabelVal"}, id="unsupported owner kind"),
    pytest.param(_pod().owner("ReplicaSet", "test-replicaset", "apps/v1/x"), [SERVICE],
                 {"podLabelKey": "podLabelVal"}, id="unparsable apiVersion"),
])
def test_default_selector(pod: PodBuilder, services: list[tuple[str, Mapping[str, str] | None]],
                          expected: dict[str, str] | None) -> None:
    got = _select(pod, services, RCS, [RS], [SS])
    if expected is None:
        assert got is None
        return
    assert got is not None
    selector = parse_selector(got)
    assert selector.matches(expected)
    for key in expected:
        assert not selector.matches({k: v for k, v in expected.items() if k != key})
        assert not selector.matches({**expected, key: "changed"})


def test_default_selector_keeps_replica_set_expressions() -> None:
    rs = Owner(NS, "web", "uid", api.LabelSelector(
        match_labels={"app": "web"},
        match_expressions=[api.LabelSelectorRequirement(key="tier", operator="NotIn",
                                                        values=["db", "cache"])]))
    got = _select(make_pod("p", NS).label("app", "web").owner("ReplicaSet", "web"), [], rss=[rs])
    assert got == api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="app", operator="In", values=["web"]),
        api.LabelSelectorRequirement(key="tier", operator="NotIn", values=["cache", "db"])])


@pytest.mark.parametrize("selector", [
    pytest.param(None, id="nil selector"),
    pytest.param(api.LabelSelector(), id="empty selector"),
    pytest.param(api.LabelSelector(match_expressions=[
        api.LabelSelectorRequirement(key="app", operator="Bogus")]), id="invalid selector"),
])
def test_default_selector_ignores_owner_selectors_that_add_nothing(
        selector: api.LabelSelector | None) -> None:
    rs = Owner(NS, "web", "uid", selector)
    pod = make_pod("p", NS).label("app", "web").owner("ReplicaSet", "web")
    assert _select(pod, [], rss=[rs]) is None
    assert _select(pod, [(NS, {"app": "web"})], rss=[rs]) == label_selector({"app": "web"})


# --- registration ---------------------------------------------------------------------

def test_spec_and_events() -> None:
    assert pts.SPEC is IN_TREE["PodTopologySpread"]
    assert pts.SPEC.extension_points() == ["preFilter", "filter", "preScore", "score"]
    assert DEFAULT_WEIGHTS["PodTopologySpread"] == 2
    plugin = pts.new(None, FakeHandle())
    assert registered(plugin) == [
        (ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                      | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.DELETE
                      | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT), True),
    ]


def test_parse_args_from_config() -> None:
    args = pts.SPEC.parse_args({"defaultingType": "List", "defaultConstraints": [
        _constraint(HOST, "ScheduleAnyway", 1)]})
    assert isinstance(args, pts.PodTopologySpreadArgs)
    assert args.default_constraints[0].topology_key == HOST
