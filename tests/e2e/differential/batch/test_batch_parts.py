"""The batch's parts that need no cluster: the pin, image names and sizes, the tie
reader and the refusal of scenarios a batch cannot keep apart."""

from __future__ import annotations

import pytest

from tests.e2e.differential.batch.layout import check_batchable
from tests.e2e.differential.batch.pinning import (
    image_of_scenario,
    pin_to_nodes,
    scaled_image_size,
)
from tests.e2e.differential.batch.ties import score_ties
from tests.e2e.differential.model import NodeSpec, PodSpec, PvcSpec, Scenario


def _name_values(term: dict) -> list[list[str]]:
    return [r["values"] for r in term["matchFields"] if r["key"] == "metadata.name"]


def test_pin_makes_one_term_per_node_and_keeps_the_pods_terms() -> None:
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    disk = {"key": "disk", "operator": "In", "values": ["ssd"]}
    spec: dict = {"nodeSelector": {"x": "y"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [zone]}, {"matchExpressions": [disk]}]}}}}
    pin_to_nodes(spec, ["n1-b0u", "n0-b0u"])
    terms = spec["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [(t["matchExpressions"], _name_values(t)) for t in terms] == [
        ([zone], [["n0-b0u"]]), ([zone], [["n1-b0u"]]),
        ([disk], [["n0-b0u"]]), ([disk], [["n1-b0u"]])]
    assert spec["nodeSelector"] == {"x": "y"}


def test_pin_on_a_pod_without_affinity_keeps_its_preferences() -> None:
    preferred = [{"weight": 5, "preference": {"matchExpressions": []}}]
    spec: dict = {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}}
    pin_to_nodes(spec, ["n0-b3k"])
    node_affinity = spec["affinity"]["nodeAffinity"]
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    terms = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [_name_values(t) for t in terms] == [[["n0-b3k"]]]


def test_images_are_renamed_per_scenario_and_scaled_to_the_batch() -> None:
    assert image_of_scenario("registry.example/big:1", 7) == "registry.example/big:1-batch-7"
    assert image_of_scenario("localhost:5000/big", 2) == "localhost:5000/big:batch-2"
    # Alone 1 of 3 nodes held it; in a batch of 300 nodes, 2 of them do.
    assert scaled_image_size(900, 3, 300) * 2 // 300 == 900 * 1 // 3


LOG = "\n".join([
    'I1127 10:00:00.1 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-a/incoming" node="n0-b1u" score=300',
    'I1127 10:00:00.1 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-a/incoming" node="n1-b1u" score=300',
    'I1127 10:00:00.2 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-b/incoming" node="n0-b2u" score=10',
    'I1127 10:00:00.2 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-b/incoming" node="n1-b2u" score=20',
    # ns-b's second attempt: the same node again starts a new attempt.
    'I1127 10:00:01.0 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-b/incoming" node="n0-b2u" score=20',
    'I1127 10:00:01.0 1 schedule_one.go:1050] "Calculated node\'s final score for pod" '
    'pod="ns-b/incoming" node="n1-b2u" score=20',
])


def test_ties_are_read_per_attempt() -> None:
    ties = score_ties(LOG)
    assert [(t.namespace, t.scores) for t in ties] == [
        ("ns-a", {"n0-b1u": 300, "n1-b1u": 300}),
        ("ns-b", {"n0-b2u": 20, "n1-b2u": 20})]
    assert "['n0-b1u', 'n1-b1u'] tie at 300" in ties[0].describe()


def test_a_log_without_scores_is_refused() -> None:
    with pytest.raises(AssertionError, match="no final scores"):
        score_ties("I1127 10:00:00 1 schedule_one.go:100] \"Attempting to schedule pod\"")


def test_scenarios_a_batch_cannot_keep_apart_are_refused() -> None:
    nodes = (NodeSpec("n0"),)
    reaching = PodSpec(spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {}, "namespaceSelector": {}, "topologyKey": "zone"}]}}},
        role="incoming")
    with pytest.raises(ValueError) as refused:
        check_batchable([Scenario("storage", nodes, PodSpec("incoming"),
                                  pvcs=(PvcSpec("c"),)),
                         Scenario("reach", nodes, reaching),
                         Scenario("reach", nodes, PodSpec("incoming"))])
    assert "duplicate names ['reach']" in str(refused.value)
    assert "storage: pvcs" in str(refused.value)
    assert "incoming uses namespaceSelector" in str(refused.value)
