"""scheduler-plugins PodGroups' status and events: the phases scheduler-plugins'
controller writes, computed from the members kpysched sees, written only on change."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.informers.listers import CoschedulingListers
from kpysched.objects import api
from kpysched.objects import coscheduling as cs
from kpysched.scheduling.coscheduling_groups import (
    CoschedulingGroups,
    _Member,
    desired_status,
)
from kpysched.writes.coscheduling_status import GroupStatusWriter
from tests.unit.builders import make_pod


class RecordingWriter(GroupStatusWriter):
    def __init__(self) -> None:
        super().__init__(raw=None)  # type: ignore[arg-type]
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def write(self, group: cs.PodGroup, status: dict[str, Any]) -> None:
        self.patches.append((group.metadata.name, status))


def member(name: str, phase: str = "Pending", node: str = "", group: str = "g") -> api.Pod:
    pod = make_pod(name).label(cs.POD_GROUP_LABEL, group).obj()
    pod.status.phase = phase
    pod.spec.node_name = node
    pod.metadata.owner_references = [api.OwnerReference(kind="Job", name="trainer")]
    return pod


def groups_with(min_member: int) -> tuple[CoschedulingGroups, RecordingWriter, set[str]]:
    listers = CoschedulingListers()
    assumed: set[str] = set()
    writer = RecordingWriter()
    groups = CoschedulingGroups(listers, None, writer, assumed.__contains__)  # type: ignore[arg-type]
    listers.pod_groups.on_add(cs.PodGroup(
        metadata=api.ObjectMeta(name="g", namespace="default", uid="uid-g"),
        spec=cs.PodGroupSpec(min_member=min_member)))
    return groups, writer, assumed


@pytest.mark.parametrize(("phases", "assumed", "phase"), [
    ([], 0, cs.PENDING),
    (["Pending"], 0, cs.PENDING),
    (["Pending", "Pending"], 0, cs.SCHEDULING),
    (["Pending", "Pending"], 1, cs.SCHEDULING),
    (["Pending", "Pending"], 2, cs.SCHEDULED),
    (["Running", "Pending"], 1, cs.SCHEDULED),
    (["Running", "Running"], 0, cs.RUNNING),
    (["Succeeded", "Running"], 0, cs.RUNNING),
    (["Succeeded", "Succeeded"], 0, cs.FINISHED),
    (["Failed", "Running"], 0, cs.FAILED),
], ids=["no pods", "too few pods", "enough pods", "one placed", "min placed",
        "one running one assumed", "running", "running and succeeded", "finished", "failed"])
def test_phase_follows_scheduler_plugins_controller(phases: list[str], assumed: int,
                                                     phase: str) -> None:
    members = {f"uid-{i}": _member(p) for i, p in enumerate(phases)}
    placed = set(list(members)[len(members) - assumed:]) if assumed else set()  # the last
    status = desired_status(2, {"phase": ""}, members, placed.__contains__)
    assert status["phase"] == phase
    assert (status["running"], status["succeeded"], status["failed"]) == (
        phases.count("Running"), phases.count("Succeeded"), phases.count("Failed"))
    assert bool(status.get("scheduleStartTime")) is (phase != cs.PENDING)


def _member(phase: str) -> _Member:
    # A pod past Pending has been bound to a node.
    return _Member(phase, "" if phase == "Pending" else "n1", [])


def test_final_phases_are_kept() -> None:
    current = {"phase": cs.FINISHED, "succeeded": 2}
    assert desired_status(2, current, {}, lambda _: False) == current


def test_status_is_written_once_per_change_and_names_the_owner() -> None:
    groups, writer, assumed = groups_with(min_member=2)
    assert writer.patches == [("g", {"phase": cs.PENDING})]
    groups.on_add(member("a"))
    assert len(writer.patches) == 1  # still Pending: nothing to write
    groups.on_add(member("b"))
    _, change = writer.patches[-1]
    assert change["phase"] == cs.SCHEDULING and change["occupiedBy"] == "default/trainer"
    assert change["scheduleStartTime"]
    assumed.update({"uid-default-a", "uid-default-b"})
    groups.refresh("default", "g")
    assert writer.patches[-1][1] == {"phase": cs.SCHEDULED}
    groups.on_update(member("a"), member("a", "Running", "n1"))
    groups.on_update(member("b"), member("b", "Running", "n2"))
    assert writer.patches[-1][1] == {"phase": cs.RUNNING, "running": 2}
    count = len(writer.patches)
    groups.refresh("default", "g")
    assert len(writer.patches) == count  # no change, no write
    groups.on_update(member("a", "Running", "n1"), member("a", "Succeeded", "n1"))
    groups.on_update(member("b", "Running", "n2"), member("b", "Succeeded", "n2"))
    assert writer.patches[-1][1]["phase"] == cs.FINISHED
