"""simulate calls the configuration's extenders (filter, prioritize, preempt; never
bind), shows what they said with --explain, and leaves them alone with --no-extenders."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kpysched.simulate import cli
from tests.unit.extenders.server import FakeExtender, names_of, serving
from tests.unit.simulate.test_runner import _keep_logging, _node, _pod, _snapshot_file, _world

__all__ = ["_keep_logging"]  # the autouse fixture, applied here too


@pytest.fixture
def extender() -> Iterator[FakeExtender]:
    with serving(FakeExtender()) as running:
        running.answers["filter"] = lambda body: (200, {
            "NodeNames": [name for name in names_of(body) if name != "n1"],
            "FailedNodes": {"n1": "reserved for GPUs"}})
        running.answers["bind"] = lambda body: (200, {"Error": ""})
        yield running


def _files(tmp_path: Path, extender: FakeExtender) -> list[str]:
    snapshot_path = _snapshot_file(tmp_path, _world([_node("n1", "4"), _node("n2", "4")]))
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps([_pod("a", "1")]))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "extenders": [{"urlPrefix": extender.url, "filterVerb": "filter", "bindVerb": "bind",
                       "nodeCacheCapable": True}]}))
    return ["simulate", "--snapshot", str(snapshot_path), "--pods", str(pods),
            "--config", str(config)]


async def _run(args: list[str]) -> int:
    return await asyncio.to_thread(cli.main, args)


async def test_the_extenders_are_asked_but_never_bind(
        tmp_path: Path, extender: FakeExtender, capsys: pytest.CaptureFixture[str]) -> None:
    assert await _run([*_files(tmp_path, extender), "--explain"]) == 0
    captured = capsys.readouterr()
    assert "default/a" in captured.out and "n2" in captured.out
    assert f"Extender {extender.url} filter: rejected 1 node(s):" in captured.out
    assert [verb for verb, _ in extender.requests] == ["filter"]
    assert "calling the configured extenders" in captured.err


async def test_no_extenders_leaves_them_alone(
        tmp_path: Path, extender: FakeExtender, capsys: pytest.CaptureFixture[str]) -> None:
    assert await _run([*_files(tmp_path, extender), "-o", "json", "--no-extenders",
                       "--seed", "1"]) == 0
    captured = capsys.readouterr()
    placed: list[dict[str, Any]] = json.loads(captured.out)["pods"]
    assert [pod["outcome"] for pod in placed] == ["placed"]
    assert extender.requests == []
    assert f"--no-extenders: not calling the configured extenders ({extender.url})" \
        in captured.err
