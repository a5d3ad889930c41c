"""A fix's pod change as a strategic merge patch: only the changed fields, list elements
named by their merge key, lists without one replaced whole."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kpysched.suggest.patch import compact, pod_patch

TERM = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}


def pod() -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {
        "containers": [
            {"name": "app", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
             "ports": [{"containerPort": 8080, "hostPort": 8080}, {"containerPort": 9090}],
             # As decoded: a mount with only what scheduling reads.
             "volumeMounts": [{"recursiveReadOnly": "Disabled"}]},
            {"name": "sidecar", "resources": {"requests": {"cpu": "100m"}}}],
        "nodeSelector": {"disk": "ssd", "tier": "gold"},
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["z9"]}]}]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                TERM, {**TERM, "topologyKey": "kubernetes.io/hostname"}]}},
        "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"}],
        "schedulingGates": [{"name": "a"}, {"name": "b"}],
    }}


def lower_cpu(spec: dict[str, Any]) -> None:
    spec["containers"][0]["resources"]["requests"]["cpu"] = "1500m"


def drop_host_port(spec: dict[str, Any]) -> None:
    del spec["containers"][0]["ports"][0]["hostPort"]


def drop_selector_key(spec: dict[str, Any]) -> None:
    del spec["nodeSelector"]["tier"]


def drop_required_node_affinity(spec: dict[str, Any]) -> None:
    del spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]


def drop_anti_affinity_term(spec: dict[str, Any]) -> None:
    spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].pop(0)


def tolerate(spec: dict[str, Any]) -> None:
    spec["tolerations"].append({"key": "b", "operator": "Equal", "value": "1",
                                "effect": "NoSchedule"})


def relax_spread(spec: dict[str, Any]) -> None:
    spec["topologySpreadConstraints"][1]["maxSkew"] = 3


def lift_gates(spec: dict[str, Any]) -> None:
    del spec["schedulingGates"]


def lift_one_gate(spec: dict[str, Any]) -> None:
    spec["schedulingGates"].pop(0)


def add_container(spec: dict[str, Any]) -> None:
    spec["containers"].append({"name": "extra", "image": "x"})


def set_priority(spec: dict[str, Any]) -> None:
    spec["priority"] = 7
    spec["preemptionPolicy"] = "PreemptLowerPriority"


@pytest.mark.parametrize(("change", "expected"), [
    pytest.param(lower_cpu, {"containers": [
        {"name": "app", "resources": {"requests": {"cpu": "1500m"}}}]}, id="request"),
    pytest.param(drop_host_port, {"containers": [
        {"name": "app", "ports": [{"containerPort": 8080, "hostPort": None}]}]},
        id="host-port"),
    pytest.param(drop_selector_key, {"nodeSelector": {"tier": None}}, id="selector-key"),
    pytest.param(drop_required_node_affinity, {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": None}}}, id="node-affinity"),
    pytest.param(drop_anti_affinity_term, {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {**TERM, "topologyKey": "kubernetes.io/hostname"}]}}},
        id="anti-affinity-term-list-whole"),
    pytest.param(tolerate, {"tolerations": [
        {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "b", "operator": "Equal", "value": "1", "effect": "NoSchedule"}]},
        id="tolerations-whole"),
    pytest.param(relax_spread, {"topologySpreadConstraints": [
        {"topologyKey": "rack", "maxSkew": 3}]}, id="spread"),
    pytest.param(lift_gates, {"schedulingGates": None}, id="gates"),
    pytest.param(lift_one_gate, {"schedulingGates": [{"name": "a", "$patch": "delete"}]},
                 id="one-gate"),
    pytest.param(add_container, {"containers": [{"name": "extra", "image": "x"}]},
                 id="new-element-whole"),
    pytest.param(set_priority, {"priority": 7, "preemptionPolicy": "PreemptLowerPriority"},
                 id="priority"),
])
def test_only_the_changed_fields_are_in_the_patch(
    change: Callable[[dict[str, Any]], None], expected: dict[str, Any],
) -> None:
    before = pod()
    after = copy.deepcopy(before)
    change(after["spec"])
    assert pod_patch(before, after) == {"spec": expected}
    assert before == pod()  # the pod itself untouched


def test_no_change_is_no_patch_and_the_patch_prints_on_one_line() -> None:
    assert pod_patch(pod(), pod()) == {}
    assert compact({"spec": {"schedulingGates": None}}) == '{"spec":{"schedulingGates":null}}'


def test_a_list_whose_elements_lack_the_merge_key_is_replaced_whole() -> None:
    before = {"spec": {"containers": [{"image": "x"}]}}
    after = {"spec": {"containers": [{"image": "y"}]}}
    assert pod_patch(before, after) == {"spec": {"containers": [{"image": "y"}]}}
