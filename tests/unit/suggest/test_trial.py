"""kpysched.suggest: candidate fixes checked by simulating the snapshot."""

from __future__ import annotations

import json
from typing import Any

from kpysched.framework.registry import full_registry
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.simulate.world import World, admit
from kpysched.suggest.trial import Suggestions, Trial, trial_config
from tests.unit.builders import make_node


def _pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                        "uid": f"u-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                     **spec}}


async def _suggest(nodes: list[api.Node], pending: dict[str, Any],
                   placed: list[dict[str, Any]] = ()) -> Suggestions:  # type: ignore[assignment]
    registry = full_registry(IN_TREE)
    config, profiles = trial_config(None, registry)
    world = World({"nodes": list(nodes)})
    names = [p.scheduler_name for p in profiles]
    bound = admit([dict(d) for d in placed], world, names)
    for pod, document in zip(bound, placed, strict=True):
        pod.spec.node_name = document["nodeName"]
    pod = admit([pending], world, names)[0]
    world.objects["pods"] = [*bound, pod]
    return await Trial(config, profiles, registry, world).suggest(pod)


def _changes(found: Suggestions) -> dict[str, int]:
    return {fix.change: fix.nodes for fix in found.fixes}


async def test_each_rejection_suggests_its_fix_checked_and_ranked() -> None:
    nodes = [make_node("t1").capacity(cpu="4", pods="110").taint("gpu", "yes", "NoSchedule").obj(),
             make_node("t2").capacity(cpu="4", pods="110").taint("gpu", "yes", "NoSchedule").obj(),
             make_node("small").capacity(cpu="1", pods="110").obj()]
    found = await _suggest(nodes, _pod("p", "2"))
    changes = _changes(found)
    assert changes["tolerate taint gpu=yes:NoSchedule"] == 2
    assert changes["lower the cpu request to at most 1 (now 2)"] == 1
    assert any(c.startswith("add a node like small") for c in changes)
    assert found.fixes[0].change == "tolerate taint gpu=yes:NoSchedule"  # most nodes first
    toleration = next(f for f in found.fixes if f.kind == "toleration")
    assert toleration.node in ("t1", "t2")
    # The patch: the tolerations list (replaced whole: it has no merge key), nothing
    # else; the ones the pod had (admission's defaults here) kept, the new one added.
    patch = json.loads(toleration.how)
    assert patch == toleration.pod_patch and list(patch["spec"]) == ["tolerations"]
    *kept, added = patch["spec"]["tolerations"]
    assert [t["key"] for t in kept] == ["node.kubernetes.io/not-ready",
                                        "node.kubernetes.io/unreachable"]
    assert added == {"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}
    request = next(f for f in found.fixes if f.kind == "request")
    # Only the changed request of the container, identified by its name.
    assert request.pod_patch == {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1000m"}}}]}}


async def test_a_pod_that_fits_needs_no_fix() -> None:
    found = await _suggest([make_node("n").capacity(cpu="4", pods="110").obj()], _pod("p", "1"))
    assert found.placed_as_is == "n" and found.fixes == []


async def test_a_node_selector_nobody_matches_is_dropped_and_priority_preempts() -> None:
    nodes = [make_node("n1").capacity(cpu="2", pods="110").obj()]
    placed = [{**_pod("low", "2"), "nodeName": "n1"}]
    found = await _suggest(nodes, _pod("p", "2", nodeSelector={"disk": "ssd"}), placed)
    changes = _changes(found)
    # Dropping the selector alone does not help (n1 is full); a higher priority does
    # not either while the selector holds: no single change places it.
    assert not any(c.startswith("drop nodeSelector") for c in changes)
    found = await _suggest(nodes, _pod("p", "2"), placed)
    priority = next(f for f in found.fixes if f.kind == "priority")
    assert priority.change.startswith("run it at priority 1 ")
    assert priority.victims == ["default/low"] and priority.node == "n1"


async def test_fixes_carry_what_to_apply() -> None:
    nodes = [make_node("t1").capacity(cpu="4", pods="110").taint("gpu", "yes").obj(),
             make_node("c1").capacity(cpu="4", pods="110").unschedulable().obj()]
    found = await _suggest(nodes, _pod("p", "1"))
    by_kind = {fix.kind: fix for fix in found.fixes}
    toleration = by_kind["toleration"].pod_patch["spec"]["tolerations"]
    assert {"key": "gpu", "operator": "Equal", "value": "yes",
            "effect": "NoSchedule"} in toleration
    (uncordoned,) = by_kind["uncordon"].node_objects
    assert uncordoned["metadata"]["name"] == "c1"
    assert not uncordoned["spec"].get("unschedulable")
    assert by_kind["uncordon"].how == "kubectl uncordon c1"


async def test_a_gated_pod_is_told_to_lose_its_gates_and_an_uncordon_lifts_the_taint() -> None:
    nodes = [make_node("n1").capacity(cpu="4", pods="110").obj()]
    found = await _suggest(nodes, _pod("p", "1", schedulingGates=[{"name": "kueue"}]))
    (fix,) = found.fixes
    assert fix.kind == "gates" and fix.node == "n1"
    assert fix.pod_patch == {"spec": {"schedulingGates": None}}
    cordoned = make_node("c1").capacity(cpu="4", pods="110").unschedulable() \
        .taint("node.kubernetes.io/unschedulable", "", "NoSchedule").obj()
    found = await _suggest([cordoned], _pod("p", "1"))
    assert [(f.kind, f.node) for f in found.fixes] == [("uncordon", "c1")]
