"""NodeOnlyFilterPlugin: Filters whose verdict depends on the Node object alone, which
preemption's dry run does not ask again after giving a victim back."""

from __future__ import annotations

import pytest

from kpysched.framework import interfaces as fw
from kpysched.framework.cycle_state import CycleState
from kpysched.plugins import IN_TREE
from tests.unit.builders import make_node, make_pod
from tests.unit.framework.fake_plugins import build

NODE_ONLY = {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
             "NodeDeclaredFeatures"}
FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
           "NodeDeclaredFeatures", "NodePorts", "NodeResourcesFit", "InterPodAffinity",
           "PodTopologySpread"]


def test_the_in_tree_node_only_filters() -> None:
    marked = {name for name, spec in IN_TREE.items()
              if fw.NodeOnlyFilterPlugin in spec.plugin_class.__mro__}
    assert marked == NODE_ONLY


@pytest.mark.parametrize("name", sorted(NODE_ONLY))
def test_a_node_only_verdict_does_not_change_with_the_pods_on_the_node(name: str) -> None:
    framework = build({"preFilter": ["NodeAffinity", "NodeDeclaredFeatures"],
                       "filter": FILTERS})
    plugin = next(p for p in framework.filter_plugins if name == p.NAME)
    pod = make_pod("p").req(cpu="1").host_port(80).node_selector({"zone": "a"}) \
        .toleration("dedicated", "gpu").info()
    for node in (make_node("n").label("zone", "a"), make_node("n").label("zone", "b"),
                 make_node("n").label("zone", "a").taint("dedicated", "db"),
                 make_node("n").label("zone", "a").unschedulable()):
        state = CycleState()
        framework.run_pre_filter(state, pod, [node.info()])
        alone = plugin.filter(state, pod, node.info())
        crowded = plugin.filter(state, pod, node.info(
            make_pod("web").req(cpu="8").host_port(80).label("app", "web")))
        assert (alone.code, alone.reasons) == (crowded.code, crowded.reasons)


def test_a_node_that_passed_is_asked_only_by_the_pod_dependent_filters() -> None:
    framework = build({"preFilter": ["NodePorts", "NodeResourcesFit"],
                       "filter": ["TaintToleration", "NodePorts", "NodeResourcesFit"]})
    assert framework.node_only_filter_names == {"TaintToleration"}
    pod = make_pod("p").req(cpu="1").info()
    tainted = make_node("n").capacity(cpu="2", memory="1Gi", pods="10") \
        .taint("dedicated", "gpu").info()
    state = CycleState()
    framework.run_pre_filter(state, pod, [tainted])
    assert framework.handle.run_filter_with_nominated(state, pod, tainted).plugin == \
        "TaintToleration"
    # With the flag, the taint is taken as already judged; only resources are asked.
    assert framework.handle.run_filter_with_nominated(state, pod, tainted,
                                                      node_only_passed=True).ok
    full = make_node("n").capacity(cpu="2", memory="1Gi", pods="10") \
        .taint("dedicated", "gpu").info(make_pod("big").req(cpu="2"))
    assert framework.handle.run_filter_with_nominated(
        state, pod, full, node_only_passed=True).plugin == "NodeResourcesFit"
