"""InterPodAffinity PreFilter/Filter, with cases from upstream's filtering_test.go
(v1.36.4) plus the plugin's args, events and the cache's affinity bookkeeping.

Scoring cases live in test_inter_pod_affinity_scoring.py and reuse the helpers here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pydantic
import pytest

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.snapshot import Snapshot
from kpysched.config.features import NEWEST_RELEASE, Features
from kpysched.framework.cluster_events import ActionType, ClusterEvent, Resource
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.status import Code, Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo
from kpysched.plugins.inter_pod_affinity import plugin as ipa
from kpysched.plugins.inter_pod_affinity.filtering import PreFilterState, compute_state
from kpysched.plugins.inter_pod_affinity.plugin import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from tests.unit.builders import FakeHandle, make_node, make_snapshot
from tests.unit.plugins.hints import registered

# Namespaces known to the fake namespace informer (upstream's test fixtures).
NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
DEFAULT_NS = ""  # upstream's tests leave pods in the empty namespace

_uids = itertools.count()


# --- builders --------------------------------------------------------------------

def req(key: str, operator: str, *values: str) -> api.LabelSelectorRequirement:
    return api.LabelSelectorRequirement(key=key, operator=operator, values=list(values))


def selector(*requirements: api.LabelSelectorRequirement,
             **match_labels: str) -> api.LabelSelector:
    return api.LabelSelector(match_labels=dict(match_labels),
                             match_expressions=list(requirements))


def term(*requirements: api.LabelSelectorRequirement, topology: str = "",
         namespaces: Sequence[str] = (), ns_selector: api.LabelSelector | None = None,
         match_label_keys: Sequence[str] = (),
         mismatch_label_keys: Sequence[str] = ()) -> api.PodAffinityTerm:
    return api.PodAffinityTerm(
        topology_key=topology, label_selector=selector(*requirements),
        namespaces=list(namespaces), namespace_selector=ns_selector,
        match_label_keys=list(match_label_keys), mismatch_label_keys=list(mismatch_label_keys))


def t_in(key: str, topology: str, *values: str) -> api.PodAffinityTerm:
    return term(req(key, "In", *values), topology=topology)


def t_not_in(key: str, topology: str, *values: str) -> api.PodAffinityTerm:
    return term(req(key, "NotIn", *values), topology=topology)


def t_exists(key: str, topology: str) -> api.PodAffinityTerm:
    return term(req(key, "Exists"), topology=topology)


def weighted(weight: int, affinity_term: api.PodAffinityTerm) -> api.WeightedPodAffinityTerm:
    return api.WeightedPodAffinityTerm(weight=weight, pod_affinity_term=affinity_term)


def affinity(required: Sequence[api.PodAffinityTerm] = (),
             required_anti: Sequence[api.PodAffinityTerm] = (),
             preferred: Sequence[api.WeightedPodAffinityTerm] = (),
             preferred_anti: Sequence[api.WeightedPodAffinityTerm] = ()) -> api.Affinity:
    result = api.Affinity()
    if required or preferred:
        result.pod_affinity = api.PodAffinity(
            required_during_scheduling_ignored_during_execution=list(required),
            preferred_during_scheduling_ignored_during_execution=list(preferred))
    if required_anti or preferred_anti:
        result.pod_anti_affinity = api.PodAffinity(
            required_during_scheduling_ignored_during_execution=list(required_anti),
            preferred_during_scheduling_ignored_during_execution=list(preferred_anti))
    return result


def pod(name: str = "", *, ns: str = DEFAULT_NS, labels: Mapping[str, str] | None = None,
        node: str = "", required: Sequence[api.PodAffinityTerm] = (),
        required_anti: Sequence[api.PodAffinityTerm] = (),
        spec_affinity: api.Affinity | None = None) -> api.Pod:
    uid = f"uid-{next(_uids)}"
    built = api.Pod(metadata=api.ObjectMeta(name=name or uid, namespace=ns, uid=uid,
                                            labels=dict(labels or {})))
    built.spec.node_name = node
    if spec_affinity is not None:
        built.spec.affinity = spec_affinity
    elif required or required_anti:
        built.spec.affinity = affinity(required, required_anti)
    return built


def cluster(nodes: Mapping[str, Mapping[str, str]], pods: Sequence[api.Pod] = ()) -> Snapshot:
    infos = [make_node(name).labels(labels).info(
        *(PodInfo.of(p) for p in pods if p.spec.node_name == name))
        for name, labels in nodes.items()]
    return make_snapshot(*infos)


def plugin(snapshot: Snapshot, *, release: int = NEWEST_RELEASE,
           **args: object) -> InterPodAffinity:
    handle = FakeHandle(snapshot_value=snapshot, namespaces=NAMESPACES,
                        features_value=Features(release=release))
    return ipa.new(InterPodAffinityArgs.model_validate(args), handle)


Outcome = tuple[Code, str] | None


def outcome(status: Status) -> Outcome:
    return None if status.ok else (status.code, status.message())


SKIP = (Code.SKIP, "")


def run_filters(incoming: api.Pod, snapshot: Snapshot, nodes: Sequence[str], *,
                release: int = NEWEST_RELEASE) -> tuple[Outcome, list[Outcome]]:
    """PreFilter's outcome, then Filter's per node (none when PreFilter did not succeed)."""
    instance = plugin(snapshot, release=release)
    state = CycleState()
    info = PodInfo.of(incoming)
    _, status = instance.pre_filter(state, info, snapshot.node_infos)
    if not status.ok:
        return outcome(status), []
    return None, [outcome(instance.filter(state, info, snapshot.by_name[name]))
                  for name in nodes]


AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI = (Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY)
EXISTING = (Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)


def test_reason_strings_are_upstreams() -> None:
    assert REASON_AFFINITY == "node(s) didn't match pod affinity rules"
    assert REASON_ANTI_AFFINITY == "node(s) didn't match pod anti-affinity rules"
    assert REASON_EXISTING_ANTI_AFFINITY == (
        "node(s) didn't satisfy existing pods anti-affinity rules")


# --- TestRequiredAffinitySingleNode ------------------------------------------------

SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = {"node1": {"region": "r1", "zone": "z11"}}
BAD_VALUE_MESSAGE = (
    'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": '
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
TEAM1 = selector(req("team", "In", "team1"))


def _existing() -> api.Pod:
    return pod(labels=SECURITYSCAN, node="node1")


SINGLE_NODE_CASES = [
    pytest.param(pod(), [], SKIP, None,
                 id="no required pod affinity: can schedule onto a node with no existing pods"),
    pytest.param(pod(labels=S1, required=[t_in("service", "region", "securityscan", "value2")]),
                 [_existing()], None, None, id="affinity In matches the existing pod"),
    pytest.param(pod(labels=S1,
                     required=[t_not_in("service", "region", "securityscan3", "value3")]),
                 [_existing()], None, None, id="affinity NotIn matches the existing pod"),
    pytest.param(pod(labels=S1, required=[term(req("service", "In", "securityscan", "value2"),
                                               namespaces=["DiffNameSpace"])]),
                 [pod(ns="ns", labels=SECURITYSCAN, node="node1")], None, AFF,
                 id="affinity does not match a pod of another namespace"),
    pytest.param(pod(labels=SECURITYSCAN,
                     required=[t_in("service", "", "antivirusscan", "value2")]),
                 [_existing()], None, AFF, id="affinity selector does not match the existing pod"),
    pytest.param(pod(labels=S1, required=[
        term(req("service", "Exists"), req("wrongkey", "DoesNotExist"), topology="region"),
        term(req("service", "In", "securityscan"), req("service", "NotIn", "WrongValue"),
             topology="region")]),
        [_existing()], None, None, id="different operators in several required terms"),
    pytest.param(pod(labels=S1, required=[
        term(req("service", "Exists"), req("wrongkey", "DoesNotExist"), topology="region"),
        term(req("service", "In", "securityscan2"), req("service", "NotIn", "WrongValue"),
             topology="region")]),
        [_existing()], None, AFF, id="requirements are ANDed: one does not match"),
    pytest.param(pod(labels=S1,
                     required=[t_in("service", "region", "securityscan", "value2")],
                     required_anti=[t_in("service", "node", "antivirusscan", "value2")]),
                 [_existing()], None, None, id="satisfies affinity and anti-affinity"),
    pytest.param(pod(labels=S1,
                     required=[t_in("service", "region", "securityscan", "value2")],
                     required_anti=[t_in("service", "node", "antivirusscan", "value2")]),
                 [pod(labels=SECURITYSCAN, node="node1",
                      required_anti=[t_in("service", "node", "antivirusscan", "value2")])],
                 None, None, id="satisfies affinity, anti-affinity and anti-affinity symmetry"),
    pytest.param(pod(labels=S1,
                     required=[t_in("service", "region", "securityscan", "value2")],
                     required_anti=[t_in("service", "zone", "securityscan", "value2")]),
                 [_existing()], None, ANTI,
                 id="satisfies affinity but not anti-affinity"),
    pytest.param(pod(labels=SECURITYSCAN,
                     required=[t_in("service", "region", "securityscan", "value2")],
                     required_anti=[t_in("service", "node", "antivirusscan", "value2")]),
                 [pod(labels=SECURITYSCAN, node="node1",
                      required_anti=[t_in("service", "zone", "securityscan", "value2")])],
                 None, EXISTING, id="satisfies affinity and anti-affinity but not symmetry"),
    pytest.param(pod(labels=SECURITYSCAN,
                     required=[t_not_in("service", "region", "securityscan", "value2")]),
                 [pod(labels=SECURITYSCAN, node="node2")], None, AFF,
                 id="pod does not match its own affinity and no pod matches it"),
    pytest.param(pod(labels=SECURITYSCAN),
                 [pod(labels=SECURITYSCAN, node="node1",
                      required_anti=[t_in("service", "zone", "securityscan", "value2")])],
                 None, EXISTING, id="existing pod's anti-affinity applies to a pod without any"),
    pytest.param(pod(labels=SECURITYSCAN),
                 [pod(labels=SECURITYSCAN, node="node1",
                      required_anti=[t_not_in("service", "zone", "securityscan", "value2")])],
                 SKIP, None, id="existing pod's anti-affinity does not select the pod: skip"),
    pytest.param(pod(labels=SECURITYSCAN, required_anti=[t_exists("service", "region"),
                                                         t_exists("security", "region")]),
                 [pod(labels=S1, node="node1", required_anti=[t_exists("security", "zone")])],
                 None, ANTI, id="satisfies existing anti-affinity but not its own"),
    pytest.param(pod(labels=SECURITYSCAN, required_anti=[t_exists("service", "zone"),
                                                         t_exists("security", "zone")]),
                 [pod(labels=S1, node="node1", required_anti=[t_exists("security", "zone")])],
                 None, ANTI, id="symmetry a1: partial match on terms"),
    pytest.param(pod(labels=S1, required_anti=[t_exists("security", "zone")]),
                 [pod(labels=SECURITYSCAN, node="node1",
                      required_anti=[t_exists("service", "zone"),
                                     t_exists("security", "zone")])],
                 None, EXISTING, id="symmetry a2: partial match on terms"),
    pytest.param(pod(labels={"abc": "", "xyz": ""}, required_anti=[t_exists("abc", "zone"),
                                                                  t_exists("def", "zone")]),
                 [pod(labels={"def": "", "xyz": ""}, node="node1",
                      required_anti=[t_exists("abc", "zone"), t_exists("def", "zone")])],
                 None, ANTI, id="symmetry b1: partial match on terms"),
    pytest.param(pod(labels={"def": "", "xyz": ""}, required_anti=[t_exists("abc", "zone"),
                                                                  t_exists("def", "zone")]),
                 [pod(labels={"abc": "", "xyz": ""}, node="node1",
                      required_anti=[t_exists("abc", "zone"), t_exists("def", "zone")])],
                 None, ANTI, id="symmetry b2: partial match on terms"),
    pytest.param(pod(labels=SECURITYSCAN,
                     required=[t_in("service", "region", "{{.bad-value.}}"),
                               t_in("service", "node", "antivirusscan", "value2")]),
                 [], (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE_MESSAGE), None,
                 id="invalid affinity label value fails PreFilter"),
    pytest.param(pod(labels=SECURITYSCAN,
                     required=[t_in("service", "region", "foo"),
                               t_in("service", "node", "{{.bad-value.}}")]),
                 [], (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, BAD_VALUE_MESSAGE), None,
                 id="invalid label value in a later term fails PreFilter"),
    pytest.param(pod(labels=S1, required=[term(req("service", "In", "securityscan", "value2"),
                                               ns_selector=TEAM1, topology="region")]),
                 [pod(ns="subteam1.team1", labels=SECURITYSCAN, node="node1")], None, None,
                 id="affinity with namespaceSelector"),
    pytest.param(pod(labels=S1, required=[term(req("service", "In", "securityscan", "value2"),
                                               ns_selector=TEAM1, topology="region")]),
                 [pod(ns="subteam1.team2", labels=SECURITYSCAN, node="node1")], None, AFF,
                 id="affinity with non-matching namespaceSelector"),
    pytest.param(pod(ns="subteam1.team1", labels=S1,
                     required_anti=[term(req("service", "In", "securityscan", "value2"),
                                         ns_selector=TEAM1, topology="zone")]),
                 [pod(ns="subteam2.team1", labels=SECURITYSCAN, node="node1")], None, ANTI,
                 id="anti-affinity with matching namespaceSelector"),
    pytest.param(pod(ns="subteam1.team1", labels=S1,
                     required_anti=[term(req("service", "In", "securityscan", "value2"),
                                         ns_selector=selector(), topology="zone")]),
                 [pod(ns="subteam2.team1", labels=SECURITYSCAN, node="node1")], None, ANTI,
                 id="anti-affinity with an empty namespaceSelector selects all namespaces"),
    pytest.param(pod(ns="subteam1.team1", labels=S1,
                     required_anti=[term(req("service", "In", "securityscan", "value2"),
                                         ns_selector=TEAM1, topology="zone")]),
                 [pod(ns="subteam1.team2", labels=SECURITYSCAN, node="node1")], None, None,
                 id="anti-affinity with non-matching namespaceSelector"),
]


@pytest.mark.parametrize(("incoming", "pods", "pre_filter", "filter_"), SINGLE_NODE_CASES)
def test_required_affinity_single_node(incoming: api.Pod, pods: list[api.Pod],
                                       pre_filter: Outcome, filter_: Outcome) -> None:
    got_pre_filter, got_filter = run_filters(incoming, cluster(NODE1, pods), ["node1"])
    assert got_pre_filter == pre_filter
    if pre_filter is None:
        assert got_filter == [filter_]


# --- TestRequiredAffinityMultipleNodes ---------------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
HOSTS_AB = {"nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
            "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"}}
HOSTS_AB_SAME_ZONE = {"nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
                      "nodeB": {"region": "r1", "zone": "z1", "hostname": "nodeB"}}
CHINA_INDIA = {"nodeA": CHINA, "nodeB": CHINA_AZ1, "nodeC": INDIA}

MULTI_NODE_CASES = [
    pytest.param(pod(required=[t_in("foo", "region", "bar")]),
                 [pod(labels={"foo": "bar"}, node="node1")],
                 {"node1": CHINA, "node2": CHINA_AZ1, "node3": INDIA}, None, [None, None, AFF],
                 id="all nodes sharing the matching pod's topology value fit"),
    pytest.param(pod(labels={"foo": "bar", "service": "securityscan"},
                     required=[t_in("foo", "zone", "bar"),
                               t_in("service", "zone", "securityscan")]),
                 [pod(labels={"foo": "bar"}, node="nodeA")],
                 {"nodeA": {"zone": "az1", "hostname": "h1"},
                  "nodeB": {"zone": "az2", "hostname": "h2"}}, None, [None, None],
                 id="first pod of a group matching itself is not blocked"),
    pytest.param(pod(labels={"foo": "bar", "service": "securityscan"},
                     required=[t_in("foo", "zone", "bar"),
                               t_in("service", "zone", "securityscan")]),
                 [pod(labels={"foo": "bar"}, node="nodeA")],
                 {"nodeA": {"zoneLabel": "az1", "hostname": "h1"},
                  "nodeB": {"zoneLabel": "az2", "hostname": "h2"}}, None, [AFF, AFF],
                 id="first pod of a group needs nodes with the topology keys"),
    pytest.param(pod(required_anti=[t_in("foo", "region", "abc")]),
                 [pod(labels={"foo": "abc"}, node="nodeA")],
                 {"nodeA": {"region": "r1", "hostname": "nodeA"},
                  "nodeB": {"region": "r1", "hostname": "nodeB"}}, None, [ANTI, ANTI],
                 id="anti-affinity rejects every node of the matching pod's region"),
    pytest.param(pod(required_anti=[t_in("foo", "region", "abc"),
                                    t_in("service", "zone", "securityscan")]),
                 [pod(labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
                 {"nodeA": {"region": "r1", "zone": "z1", "hostname": "nodeA"},
                  "nodeB": {"region": "r1", "zone": "z2", "hostname": "nodeB"}},
                 None, [ANTI, ANTI], id="anti-affinity applies when any term matches"),
    pytest.param(pod(required_anti=[t_in("foo", "region", "abc")]),
                 [pod(labels={"foo": "abc"}, node="nodeA")], CHINA_INDIA, None,
                 [ANTI, ANTI, None], id="anti-affinity leaves the other region"),
    pytest.param(pod(ns="NS1", labels={"foo": "123"}, required_anti=[t_in("foo", "region", "bar")]),
                 [pod(ns="NS1", labels={"foo": "bar"}, node="nodeA"),
                  pod(ns="NS2", node="nodeC", required_anti=[t_in("foo", "region", "123")])],
                 CHINA_INDIA, None, [ANTI, ANTI, None],
                 id="existing anti-affinity in another namespace does not apply"),
    pytest.param(pod(labels={"foo": ""}),
                 [pod(node="nodeA", required_anti=[t_exists("foo", "invalid-node-label")])],
                 HOSTS_AB_SAME_ZONE, SKIP, [],
                 id="existing anti-affinity term with a topology key no node has: skip"),
    pytest.param(pod(node="nodeA", required_anti=[t_exists("foo", "invalid-node-label")]),
                 [pod(labels={"foo": ""}, node="nodeA")], HOSTS_AB_SAME_ZONE, None,
                 [None, None], id="own anti-affinity still needs the topology key"),
    pytest.param(pod(labels={"foo": "", "bar": ""}),
                 [pod(node="nodeA", required_anti=[t_exists("foo", "zone")]),
                  pod(node="nodeA", required_anti=[t_exists("bar", "region")])],
                 HOSTS_AB, None, [EXISTING, EXISTING],
                 id="violates each existing pod's terms on all nodes"),
    pytest.param(pod(required_anti=[t_exists("foo", "zone"), t_exists("bar", "region")]),
                 [pod(labels={"foo": ""}, node="nodeA"), pod(labels={"bar": ""}, node="nodeB")],
                 HOSTS_AB, None, [ANTI, ANTI], id="violates at least one own anti-affinity term"),
    pytest.param(pod(labels={"foo": "", "bar": ""}),
                 [pod(node="nodeA", required_anti=[t_exists("foo", "invalid-node-label"),
                                                   t_exists("bar", "zone")])],
                 HOSTS_AB, None, [EXISTING, None],
                 id="existing terms count only when selector and topology key match"),
    pytest.param(pod(required_anti=[t_exists("foo", "invalid-node-label"),
                                    t_exists("bar", "zone")]),
                 [pod(labels={"foo": "", "bar": ""}, node="nodeA")], HOSTS_AB, None,
                 [ANTI, None], id="own terms count only when selector and topology key match"),
    pytest.param(pod(labels={"foo": "", "bar": ""}),
                 [pod(node="nodeA", required_anti=[t_exists("foo", "region"),
                                                   t_exists("bar", "zone")])],
                 HOSTS_AB, None, [EXISTING, EXISTING],
                 id="existing terms with valid topology keys"),
    pytest.param(pod(required_anti=[t_exists("foo", "region"), t_exists("bar", "zone")]),
                 [pod(labels={"foo": "", "bar": ""}, node="nodeA")], HOSTS_AB, None,
                 [ANTI, ANTI], id="own terms with valid topology keys"),
    pytest.param(pod(labels={"foo": "", "bar": ""}),
                 [pod(node="nodeA", required_anti=[t_exists("foo", "zone"),
                                                   t_exists("labelA", "zone")]),
                  pod(node="nodeB", required_anti=[t_exists("bar", "zone"),
                                                   t_exists("labelB", "zone")])],
                 {**HOSTS_AB, "nodeC": {"region": "r1", "zone": "z3", "hostname": "nodeC"}},
                 None, [EXISTING, EXISTING, None],
                 id="existing anti-affinity on two nodes leaves only the third"),
    pytest.param(pod(required=[t_exists("foo", "region"), t_exists("bar", "zone")]),
                 [pod(labels={"foo": "", "bar": ""}, node="nodeA")], HOSTS_AB_SAME_ZONE, None,
                 [None, None], id="all affinity terms match one pod, then topology keys"),
    pytest.param(pod(required=[t_exists("foo", "region"), t_exists("bar", "zone")]),
                 [pod(labels={"foo": ""}, node="nodeA"), pod(labels={"bar": ""}, node="nodeB")],
                 HOSTS_AB, None, [AFF, AFF],
                 id="affinity terms must all be matched by the same pod"),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "pre_filter", "filters"),
                         MULTI_NODE_CASES)
def test_required_affinity_multiple_nodes(
    incoming: api.Pod, pods: list[api.Pod], nodes: dict[str, dict[str, str]],
    pre_filter: Outcome, filters: list[Outcome],
) -> None:
    assert run_filters(incoming, cluster(nodes, pods), list(nodes)) == (pre_filter, filters)


def test_filter_without_pre_filter_is_an_error() -> None:
    """TestPreFilterDisabled."""
    instance = plugin(Snapshot())
    status = instance.filter(CycleState(), PodInfo.of(pod()), NodeInfo("n"))
    assert (status.code, status.message()) == (
        Code.ERROR, 'error reading "PreFilterInterPodAffinity" from cycleState: not found')


# --- matchLabelKeys / mismatchLabelKeys ----------------------------------------------
# The kube-apiserver merges the keys into labelSelector at creation (v1.36, GA); the
# scheduler reads the merged selector. Cases from test/integration/scheduler/filters.

INCOMING_LABELS = {"foo": "", "bar": "a"}
ZONE_NODES = {"testnode-0": {"zone": "z1", "node": "testnode-0"},
              "anothernode-0": {"zone": "z2", "node": "anothernode-0"}}

LABEL_KEY_CASES = [
    pytest.param(pod(labels=INCOMING_LABELS, required_anti=[
        term(req("foo", "Exists"), req("bar", "In", "a"), topology="zone",
             match_label_keys=["bar"])]),
        [pod(labels={"foo": "", "bar": "fuga"}, node="testnode-0"),
         pod(labels={"foo": "", "bar": "hoge"}, node="testnode-0")],
        [None, None], id="anti-affinity: matchLabelKeys merged as In"),
    pytest.param(pod(labels=INCOMING_LABELS, required_anti=[
        term(req("foo", "Exists"), req("bar", "NotIn", "a"), topology="zone",
             mismatch_label_keys=["bar"])]),
        [pod(labels={"foo": "", "bar": "a"}, node="testnode-0"),
         pod(labels={"foo": "", "bar": "a"}, node="testnode-0")],
        [None, None], id="anti-affinity: mismatchLabelKeys merged as NotIn"),
    pytest.param(pod(labels=INCOMING_LABELS, required=[
        term(req("foo", "Exists"), req("bar", "In", "a"), topology="node",
             match_label_keys=["bar"])]),
        [pod(labels={"foo": "", "bar": "a"}, node="anothernode-0"),
         pod(labels={"foo": "", "bar": "hoge"}, node="testnode-0"),
         pod(labels={"foo": "", "bar": "fuga"}, node="testnode-0")],
        [AFF, None], id="affinity: matchLabelKeys merged as In"),
    pytest.param(pod(labels=INCOMING_LABELS, required=[
        term(req("foo", "Exists"), req("bar", "NotIn", "a"), topology="node",
             mismatch_label_keys=["bar"])]),
        [pod(labels={"foo": "", "bar": "fuga"}, node="anothernode-0"),
         pod(labels={"foo": "", "bar": "a"}, node="testnode-0"),
         pod(labels={"foo": "", "bar": "a"}, node="testnode-0")],
        [AFF, None], id="affinity: mismatchLabelKeys merged as NotIn"),
    pytest.param(pod(labels=INCOMING_LABELS, required_anti=[
        term(req("foo", "Exists"), topology="zone", match_label_keys=["bar"])]),
        [pod(labels={"foo": "", "bar": "fuga"}, node="testnode-0")],
        [ANTI, None], id="the scheduler itself does not apply matchLabelKeys"),
]


@pytest.mark.parametrize(("incoming", "pods", "filters"), LABEL_KEY_CASES)
def test_match_label_keys(incoming: api.Pod, pods: list[api.Pod],
                          filters: list[Outcome]) -> None:
    assert run_filters(incoming, cluster(ZONE_NODES, pods), list(ZONE_NODES)) == (None, filters)


# --- namespaces the informer does not know -------------------------------------------

def test_unknown_namespace_is_never_selected_by_the_incoming_pods_selector() -> None:
    incoming = pod(ns="subteam1.team1", required_anti=[
        term(req("app", "Exists"), ns_selector=selector(req("team", "DoesNotExist")),
             topology="zone")])
    existing = pod(ns="ghost", labels={"app": "x"}, node="node1")
    assert run_filters(incoming, cluster(NODE1, [existing]), ["node1"]) == (None, [None])


def test_unknown_namespace_of_the_incoming_pod_has_no_labels() -> None:
    """An existing pod's namespaceSelector sees an empty label set (upstream's nil set)."""
    existing = pod(ns="subteam1.team1", node="node1", required_anti=[
        term(req("app", "Exists"), ns_selector=selector(req("team", "DoesNotExist")),
             topology="zone")])
    incoming = pod(ns="ghost", labels={"app": "x"})
    assert run_filters(incoming, cluster(NODE1, [existing]), ["node1"]) == (None, [EXISTING])


# --- TestPreFilterStateAddRemovePod ----------------------------------------------------

ANTI_FOO_BAR = [t_in("foo", "region", "bar")]
COMPLEX = [t_in("foo", "region", "bar", "buzz"),
           t_not_in("service", "zone", "bar", "security", "test")]
ADD_REMOVE_NODES = {"nodeA": {"region": "r1", "zone": "z11"},
                    "nodeB": {"region": "r1", "zone": "z12"},
                    "nodeC": {"region": "r2", "zone": "z21"}}
FOO_BAR = {"foo": "bar"}

ADD_REMOVE_CASES = [
    pytest.param(pod("pending", labels=FOO_BAR, required_anti=ANTI_FOO_BAR),
                 [pod("p1", labels=FOO_BAR, node="nodeA"),
                  pod("p2", node="nodeC", required_anti=ANTI_FOO_BAR)],
                 pod("addedPod", labels=FOO_BAR, node="nodeB", required_anti=ANTI_FOO_BAR),
                 {("region", "r1"): 2}, {}, id="anti-affinity counts follow an added pod"),
    pytest.param(pod("pending", labels=FOO_BAR, required_anti=COMPLEX),
                 [pod("p1", labels=FOO_BAR, node="nodeA"),
                  pod("p2", node="nodeC", required_anti=ANTI_FOO_BAR)],
                 pod("addedPod", labels=FOO_BAR, node="nodeA", required_anti=COMPLEX),
                 {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {},
                 id="complex anti-affinity counts follow an added pod"),
    pytest.param(pod("pending", labels=FOO_BAR, required=COMPLEX),
                 [pod("p1", labels=FOO_BAR, node="nodeA"),
                  pod("p2", node="nodeC", spec_affinity=affinity(COMPLEX, ANTI_FOO_BAR))],
                 pod("addedPod", labels=FOO_BAR, node="nodeA", required_anti=COMPLEX),
                 {}, {("region", "r1"): 2, ("zone", "z11"): 2},
                 id="affinity and anti-affinity counts follow an added pod"),
]


def _pre_filter_state(incoming: api.Pod, pods: Sequence[api.Pod]
                      ) -> tuple[InterPodAffinity, CycleState, Snapshot]:
    snapshot = cluster(ADD_REMOVE_NODES, pods)
    instance = plugin(snapshot)
    state = CycleState()
    _, status = instance.pre_filter(state, PodInfo.of(incoming), snapshot.node_infos)
    assert status.ok, status
    return instance, state, snapshot


def _counts(state: CycleState) -> tuple[dict[tuple[str, str], int], ...]:
    data: PreFilterState = state.read("PreFilterInterPodAffinity")
    return (data.existing_anti_affinity_counts.pairs(), data.affinity_counts.pairs(),
            data.anti_affinity_counts.pairs())


@pytest.mark.parametrize(("pending", "existing", "added", "anti", "affinity_counts"),
                         ADD_REMOVE_CASES)
def test_pre_filter_state_add_remove_pod(
    pending: api.Pod, existing: list[api.Pod], added: api.Pod,
    anti: dict[tuple[str, str], int], affinity_counts: dict[tuple[str, str], int],
) -> None:
    _, all_pods_state, _ = _pre_filter_state(pending, [*existing, added])
    instance, state, snapshot = _pre_filter_state(pending, existing)
    original = _counts(state)
    clone = state.clone()
    pending_info, added_info = PodInfo.of(pending), PodInfo.of(added)
    node = snapshot.by_name[added.spec.node_name]

    assert instance.add_pod(state, pending_info, added_info, node).ok
    _, got_affinity, got_anti = _counts(state)
    assert (got_anti, got_affinity) == (anti, affinity_counts)
    assert _counts(state) == _counts(all_pods_state)
    assert _counts(clone) == original  # a cloned CycleState never sees the change

    assert instance.remove_pod(state, pending_info, added_info, node).ok
    assert _counts(state) == original


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    instance = plugin(Snapshot())
    info = PodInfo.of(pod())
    status = instance.add_pod(CycleState(), info, info, NodeInfo("n"))
    assert status.code == Code.ERROR


def test_irrelevant_pod_leaves_the_state_object_alone() -> None:
    instance, state, snapshot = _pre_filter_state(
        pod("pending", labels=FOO_BAR, required_anti=ANTI_FOO_BAR), [])
    before = state.read("PreFilterInterPodAffinity")
    assert instance.add_pod(state, PodInfo.of(pod()), PodInfo.of(pod(labels={"x": "y"})),
                            snapshot.by_name["nodeA"]).ok
    assert state.read("PreFilterInterPodAffinity") is before


def test_added_pod_makes_a_rejected_node_fit_for_the_first_pod_rule() -> None:
    """A nominated pod matching the affinity turns the first-pod exception off."""
    incoming = pod(labels=FOO_BAR, required=[t_in("foo", "region", "bar")])
    instance, state, snapshot = _pre_filter_state(incoming, [])
    info = PodInfo.of(incoming)
    assert instance.filter(state, info, snapshot.by_name["nodeC"]).ok
    nominated = PodInfo.of(pod(labels=FOO_BAR, node="nodeA"))
    assert instance.add_pod(state, info, nominated, snapshot.by_name["nodeA"]).ok
    assert outcome(instance.filter(state, info, snapshot.by_name["nodeC"])) == AFF
    assert instance.filter(state, info, snapshot.by_name["nodeB"]).ok


# --- TestGetTPMapMatchingIncomingAffinityAntiAffinity ----------------------------------

def _normal(*labels: str) -> api.Pod:
    return pod("normal", labels=dict.fromkeys(labels, ""), node="nodeA")


HOST_A = {"nodeA": {"hostname": "nodeA"}}
A1 = {("hostname", "nodeA"): 1}

INCOMING_COUNT_CASES = [
    pytest.param([], pod("aaa-normal"), {}, {}, id="nil test"),
    pytest.param([_normal("aaa")], pod("aaa-normal"), {}, {},
                 id="incoming pod without affinity/anti-affinity causes a no-op"),
    pytest.param([_normal("bbb")], pod("aaa-anti", required=[t_exists("aaa", "hostname")],
                                       required_anti=[t_exists("aaa", "hostname")]), {}, {},
                 id="no pod has a label that violates the incoming pod's terms"),
    pytest.param([_normal("aaa")], pod("affi-antiaffi", required=[t_exists("aaa", "hostname")],
                                       required_anti=[t_exists("aaa", "hostname")]), A1, A1,
                 id="existing pod matches affinity and anti-affinity - single term"),
    pytest.param([_normal("aaa", "bbb")],
                 pod("affi-antiaffi", required=[t_exists("aaa", "hostname"),
                                                t_exists("bbb", "hostname")],
                     required_anti=[t_exists("aaa", "hostname")]),
                 {("hostname", "nodeA"): 2}, A1,
                 id="existing pod matches affinity and anti-affinity - multiple terms"),
    pytest.param([_normal("aaa")],
                 pod("affi-antiaffi", required=[t_exists("aaa", "hostname"),
                                                t_exists("bbb", "hostname")],
                     required_anti=[t_exists("aaa", "hostname"), t_exists("bbb", "hostname")]),
                 {}, A1, id="existing pod matches anti-affinity but not all affinity terms"),
    pytest.param([_normal("aaa", "bbb")],
                 pod("anaffi-antiaffiti", required=[t_exists("aaa", "hostname"),
                                                    t_exists("ccc", "hostname")],
                     required_anti=[t_exists("aaa", "hostname"), t_exists("ccc", "hostname")]),
                 {}, A1, id="anti-affinity with several terms violated partially - case 1"),
    pytest.param([_normal("bbb")],
                 pod("affi-antiaffi", required=[t_exists("aaa", "hostname"),
                                                t_exists("bbb", "hostname")],
                     required_anti=[t_exists("aaa", "hostname"), t_exists("bbb", "hostname")]),
                 {}, A1, id="anti-affinity with several terms violated partially - case 2"),
]


@pytest.mark.parametrize(("existing", "incoming", "affinity_counts", "anti"),
                         INCOMING_COUNT_CASES)
def test_incoming_affinity_anti_affinity_counts(
    existing: list[api.Pod], incoming: api.Pod,
    affinity_counts: dict[tuple[str, str], int], anti: dict[tuple[str, str], int],
) -> None:
    snapshot = cluster(HOST_A, existing)
    state = compute_state(PodInfo.of(incoming), snapshot.node_infos, snapshot,
                          NAMESPACES.get)
    assert (state.affinity_counts.pairs(), state.anti_affinity_counts.pairs()) == (
        affinity_counts, anti)


# --- parsing ------------------------------------------------------------------------

PARSE_CASES = [
    pytest.param(affinity([term(req("a", "Gt", "1"), topology="zone")]),
                 'requiredAffinityTerms: "Gt" is not a valid label selector operator',
                 id="operator not valid in a label selector"),
    pytest.param(affinity(required_anti=[term(req("bad key!", "Exists"), topology="zone")]),
                 'requiredAntiAffinityTerms: key: Invalid value: "bad key!": name part must '
                 "consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                 "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                 "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                 id="invalid key"),
    pytest.param(affinity(preferred=[weighted(1, term(req("a", "In"), topology="zone"))],
                          preferred_anti=[weighted(1, term(req("a", "Exists", "x"),
                                                           topology="zone"))]),
                 "[preferredAffinityTerms: values: Invalid value: null: for 'in', 'notin' "
                 "operators, values set can't be empty, preferredAntiAffinityTerms: values: "
                 'Invalid value: ["x"]: values set must be empty for exists and does not exist]',
                 id="errors of several groups are aggregated"),
]


@pytest.mark.parametrize(("spec_affinity", "message"), PARSE_CASES)
def test_parse_errors(spec_affinity: api.Affinity, message: str) -> None:
    info = PodInfo.of(pod(spec_affinity=spec_affinity))
    assert info.pod_affinity.parse_error == message
    _, status = plugin(cluster(NODE1)).pre_filter(CycleState(), info, [])
    assert outcome(status) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {message}")


# --- args and events -----------------------------------------------------------------

def test_default_args() -> None:
    args = InterPodAffinityArgs()
    assert (args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods) == (
        1, False)
    assert InterPodAffinityArgs.model_validate(
        {"hardPodAffinityWeight": None}).hard_pod_affinity_weight == 1


@pytest.mark.parametrize("raw", [
    pytest.param({"hardPodAffinityWeight": 0}, id="zero"),
    pytest.param({"hardPodAffinityWeight": 100}, id="hundred"),
    pytest.param({"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True},
                 id="both fields"),
])
def test_valid_args(raw: dict[str, object]) -> None:
    InterPodAffinityArgs.model_validate(raw)


@pytest.mark.parametrize(("raw", "message"), [
    pytest.param({"hardPodAffinityWeight": -1},
                 "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
                 id="negative weight"),
    pytest.param({"hardPodAffinityWeight": 101},
                 "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
                 id="weight above 100"),
    pytest.param({"hardPodAffinityWeight": "5"}, "valid integer", id="weight as a string"),
    pytest.param({"ignorePreferredTermsOfExistingPods": "yes"}, "valid boolean",
                 id="flag as a string"),
    pytest.param({"hardPodAffinityWeights": 1}, "Extra inputs", id="unknown field"),
])
def test_invalid_args(raw: dict[str, object], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message.replace("[", r"\[")):
        InterPodAffinityArgs.model_validate(raw)


def test_events_to_register() -> None:
    assert registered(plugin(Snapshot())) == [
        (ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                      | ActionType.DELETE), True),
        (ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), True),
    ]


def test_registered_in_tree_with_weight_two() -> None:
    from kpysched.plugins import DEFAULT_WEIGHTS, IN_TREE

    assert IN_TREE["InterPodAffinity"] is ipa.SPEC
    assert DEFAULT_WEIGHTS["InterPodAffinity"] == 2
    assert ipa.SPEC.extension_points() == ["preFilter", "filter", "preScore", "score"]


# --- cache bookkeeping ----------------------------------------------------------------

def test_node_info_tracks_pods_with_affinity() -> None:
    with_anti = PodInfo.of(pod(required_anti=[t_exists("a", "zone")]))
    with_affinity = PodInfo.of(pod(required=[t_exists("a", "zone")]))
    plain = PodInfo.of(pod())
    info = make_node("n").info(with_anti, with_affinity, plain)
    assert set(info.pods_with_affinity) == {with_anti.uid, with_affinity.uid}
    assert set(info.pods_with_required_anti_affinity) == {with_anti.uid}

    copy = info.clone()
    info.remove_pod(with_anti.uid)
    assert set(info.pods_with_affinity) == {with_affinity.uid}
    assert not info.pods_with_required_anti_affinity
    assert set(copy.pods_with_required_anti_affinity) == {with_anti.uid}


def test_snapshot_lists_nodes_hosting_pods_with_affinity() -> None:
    anti = PodInfo.of(pod(required_anti=[t_exists("a", "zone")]))
    preferred = PodInfo.of(pod(spec_affinity=affinity(
        preferred=[weighted(1, t_exists("a", "zone"))])))
    snapshot = make_snapshot(make_node("a").info(anti), make_node("b").info(preferred),
                             make_node("c").info(PodInfo.of(pod())))
    assert set(snapshot.have_pods_with_affinity) == {"a", "b"}
    assert set(snapshot.have_pods_with_required_anti_affinity) == {"a"}

    moved = snapshot.by_name["a"].clone()
    moved.remove_pod(anti.uid)
    snapshot.replace(moved)
    assert set(snapshot.have_pods_with_affinity) == {"b"}
    assert not snapshot.have_pods_with_required_anti_affinity
    gained = snapshot.by_name["c"].clone()
    gained.add_pod(anti)
    snapshot.replace(gained)
    assert snapshot.have_pods_with_required_anti_affinity == {"c": gained}
