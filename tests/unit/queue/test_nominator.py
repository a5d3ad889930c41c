"""Nominator.add_from_status against upstream's UpdateNominatedPod: a nomination the
pod's status drops goes (a failed binding cycle clears the nominatedNodeName it wrote,
issue 33 item 2); one held only in memory stays until the status shows it."""

from __future__ import annotations

import msgspec
import pytest

from kpysched.objects.pod import PodInfo
from kpysched.queue.nominator import Nominator
from tests.unit.builders import make_pod


def _with_status(nominated: str) -> PodInfo:
    pod = make_pod("p").obj()
    pod = msgspec.structs.replace(pod, status=msgspec.structs.replace(
        pod.status, nominated_node_name=nominated))
    return PodInfo.of(pod)


@pytest.mark.parametrize(("in_memory", "previously", "now", "expected"), [
    ("n1", "n1", "", ""),
    ("n1", "", "", "n1"),
    ("", "", "n2", "n2"),
    ("n1", "n1", "n2", "n2"),
    ("", "n1", "", ""),
], ids=["status-dropped-it", "only-in-memory-kept", "status-names-it", "status-moves-it",
        "nothing-to-drop"])
def test_add_from_status(in_memory: str, previously: str, now: str, expected: str) -> None:
    nominator = Nominator()
    pod = _with_status(now)
    if in_memory:
        nominator.add(pod, in_memory)
    nominator.add_from_status(pod, previously)
    assert nominator.node_of(pod.uid) == expected
    assert nominator.nodes() == ({expected} if expected else set())
