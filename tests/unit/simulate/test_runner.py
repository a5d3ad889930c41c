"""simulate on a small in-memory world: the live scheduler's code decides."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import structlog

from kpysched.config import load_config
from kpysched.framework.registry import full_registry
from kpysched.objects import api
from kpysched.plugins import IN_TREE
from kpysched.simulate import cli, snapshot
from kpysched.simulate.runner import PENDING, PLACED, Placement, Simulation
from kpysched.simulate.world import World, admit
from tests.unit.builders import make_node, make_pod


@pytest.fixture(autouse=True)
def _keep_logging(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """cli.main configures structlog for a terminal, caching loggers on first use; in
    process that would leave later tests logging to this test's closed stderr. Here it
    logs warnings to the real stderr, uncached, and the configuration is restored."""
    saved = structlog.get_config()

    def configure(*_: Any) -> None:
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
            logger_factory=structlog.PrintLoggerFactory(file=sys.__stderr__),
            cache_logger_on_first_use=False)

    monkeypatch.setattr("kpysched.logs.configure", configure)
    yield
    structlog.configure(**saved)


def _world(nodes: list[api.Node], pods: list[api.Pod] = (), **more: list[Any]) -> World:  # type: ignore[assignment]
    return World({"nodes": list(nodes), "pods": list(pods), **more})


def _pod(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                     **spec}}


async def _simulate(world: World, *documents: dict[str, Any]) -> list[Placement]:
    registry = full_registry(IN_TREE)
    config, profiles = load_config(None, registry)
    simulation = Simulation(config, profiles, registry, seed=0)
    simulation.load(world)
    pods = admit([json.loads(json.dumps(d)) for d in documents], world,
                 [p.scheduler_name for p in profiles])
    try:
        for pod in pods:
            await simulation.place(pod)
    finally:
        await simulation.close()
    assert {m for m, _ in simulation.api.requests} <= {"POST", "PATCH", "DELETE"}
    return list(simulation.placements.values())


def _node(name: str, cpu: str) -> api.Node:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110).obj()


async def test_pods_placed_by_resource_fit_and_later_pods_see_earlier_ones() -> None:
    world = _world([_node("small", "1"), _node("big", "4")])
    placements = await _simulate(world, _pod("a", "3500m"), _pod("b", "800m"),
                                 _pod("c", "800m"))
    assert [(p.pod, p.outcome, p.node) for p in placements] == [
        ("default/a", PLACED, "big"), ("default/b", PLACED, "small"),
        ("default/c", PENDING, None)]
    assert placements[2].message.startswith("0/2 nodes are available: 2 Insufficient cpu. ")
    assert placements[2].message.endswith(
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    assert placements[1].decisions[-1]["feasible"] == ["small"]


async def test_pending_pod_names_the_failed_filter() -> None:
    world = _world([_node("n1", "4"), make_node("n2").capacity(cpu="4", memory="8Gi", pods=110)
                    .taint("dedicated", "gpu").obj()])
    placements = await _simulate(world, _pod("p", "100m", nodeSelector={"disk": "ssd"}))
    assert placements[0].outcome == PENDING
    assert placements[0].message.startswith("0/2 nodes are available: ")
    assert "1 node(s) didn't match Pod's node affinity/selector" in placements[0].message
    assert "1 node(s) had untolerated taint(s)" in placements[0].message
    assert placements[0].decisions[-1]["rejected"]["n2"]["plugin"] == "TaintToleration"


async def test_preemption_removes_victims_and_places_the_preemptor() -> None:
    low = make_pod("low").req(cpu="3").node("n1").priority(0).obj()
    low.spec.scheduler_name = "kpysched"
    high_class = snapshot.PriorityClass(metadata=api.ObjectMeta(name="high"), value=1000)
    world = _world([_node("n1", "4")], [low], priorityclasses=[high_class])
    placements = await _simulate(world, _pod("vip", "2", priorityClassName="high"))
    vip = placements[0]
    assert vip.outcome == PLACED and vip.node == "n1"
    assert vip.victims == ["default/low"]
    assert vip.decisions[0]["preemption"]["chosen"] == "n1"
    assert vip.decisions[0]["outcome"] == "Unschedulable"


async def test_ties_are_reported() -> None:
    world = _world([_node("n1", "4"), _node("n2", "4")])
    placements = await _simulate(world, _pod("p", "100m"))
    assert sorted(placements[0].ties) == ["n1", "n2"]
    assert placements[0].tied and placements[0].node in ("n1", "n2")


def _snapshot_file(tmp_path: Path, world: World) -> Path:
    document = {"apiVersion": snapshot.API_VERSION, "kind": snapshot.KIND, "metadata": {},
                "resources": {r: {"items": msgspec.to_builtins(items)}
                              for r, items in world.objects.items()}}
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document))
    return path


async def test_command_line_json_and_fail_on_pending(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot_path = _snapshot_file(tmp_path, _world([_node("n1", "2")]))
    pods = tmp_path / "pods.yaml"
    pods.write_text(
        "kind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: c, resources: {requests: {cpu: 800m}}}]}\n")
    args = ["simulate", "--snapshot", str(snapshot_path), "--pods", str(pods), "-o", "json"]
    assert await _run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["outcome"] for p in out["pods"]] == ["placed", "placed", "pending"]
    assert out["summary"]["pending_by_reason"] == {"Insufficient cpu": 1}
    assert await _run([*args, "--fail-on-pending"]) == cli.EXIT_PENDING
    assert await _run(["simulate", "--snapshot", str(snapshot_path),
                       "--pods", str(tmp_path / "missing.yaml")]) == cli.EXIT_USAGE


async def test_text_and_explain_output(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    snapshot_path = _snapshot_file(tmp_path, _world([_node("n1", "2")]))
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps([_pod("a", "1"), _pod("b", "4")]))
    base = ["simulate", "--snapshot", str(snapshot_path), "--pods", str(pods)]
    assert await _run(base) == 0
    text = capsys.readouterr().out
    assert "default/a -> n1" in text
    assert "default/b pending: 0/1 nodes are available: 1 Insufficient cpu." in text
    assert "2 pods: 1 placed" in text
    assert await _run([*base, "--explain"]) == 0
    assert "=== default/b" in capsys.readouterr().out


async def _run(args: list[str]) -> int:
    """cli.main runs its own event loop: run it in a thread from this async test."""
    import asyncio

    return await asyncio.to_thread(cli.main, args)
