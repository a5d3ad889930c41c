"""PodInfo.bound_to: the pod as bound, keeping what is derived from it."""

from __future__ import annotations

from kpysched.objects import api, pod_affinity
from kpysched.objects.pod import PodInfo
from tests.unit.builders import make_pod


def _with_anti_affinity() -> api.Pod:
    built = make_pod("web").req(cpu="250m").obj()
    term = api.PodAffinityTerm(
        topology_key="kubernetes.io/hostname",
        label_selector=api.LabelSelector(match_labels={"app": "web"}))
    built.spec.affinity = api.Affinity(pod_anti_affinity=api.PodAffinity(
        required_during_scheduling_ignored_during_execution=[term]))
    return built


def test_bound_to_sets_the_node_and_keeps_the_parsed_terms() -> None:
    info = PodInfo.of(_with_anti_affinity())
    bound = info.bound_to("n7")
    assert bound.pod.spec.node_name == "n7" and bound.node_name == "n7"
    assert info.pod.spec.node_name == ""  # the original is untouched
    # The parsed terms are the same object: nothing was parsed again.
    assert bound.pod_affinity is info.pod_affinity
    assert bound.pod_affinity.required_anti == info.pod_affinity.required_anti
    assert (bound.key, bound.priority, bound.requests, bound.host_ports) == (
        info.key, info.priority, info.requests, info.host_ports)
    # And they are what parsing the bound pod would give.
    assert pod_affinity.affinity_terms(bound.pod) == info.pod_affinity
