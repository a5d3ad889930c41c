"""NodePorts' queueing hint, with upstream's Test_isSchedulableAfterPodDeleted
(node_ports_test.go)."""

from __future__ import annotations

import pytest

from kpysched.framework.cluster_events import ASSIGNED_POD_DELETE
from kpysched.objects.pod import PodInfo
from kpysched.plugins import node_ports as np_
from tests.unit.builders import FakeHandle, make_pod
from tests.unit.plugins.hints import ERROR, QUEUE, SKIP, Expected, check, hint_for

HINT = hint_for(np_.new(None, FakeHandle()), ASSIGNED_POD_DELETE)
WANTS_8080 = make_pod("p").host_port(8080).info()


def deleted(node: str = "", port: int = 0, ip: str = "") -> PodInfo:
    builder = make_pod("q")
    if node:
        builder.node(node)
    if port:
        builder.host_port(port, ip=ip)
    return builder.info()


@pytest.mark.parametrize(("old", "expected"), [
    pytest.param("not-a-pod", ERROR, id="backoff-wrong-old-object"),
    pytest.param(deleted(), SKIP, id="skip-queue-on-unscheduled"),
    pytest.param(deleted("fake-node"), SKIP, id="skip-queue-on-non-hostport"),
    pytest.param(deleted("fake-node", 8081), SKIP, id="skip-queue-on-unrelated-hostport"),
    pytest.param(deleted("fake-node", 8080), QUEUE, id="queue-on-released-hostport"),
    # Beyond upstream's table: the wildcard IP conflicts with any IP on the port.
    pytest.param(deleted("fake-node", 8080, "10.0.0.1"), QUEUE,
                 id="queue-on-released-hostport-on-a-specific-ip"),
])
def test_schedulable_after_pod_deleted(old: object, expected: Expected) -> None:
    check(HINT, WANTS_8080, old, None, expected)
