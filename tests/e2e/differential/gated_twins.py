"""A cluster of one release with some feature gates on, and both schedulers on it with
the same gates: kube-scheduler of the release and kpysched (release read from
/version). For differential modules about behaviour behind a gate (pod groups,
deferred resizes); the twin clusters of conftest.py run with the release's defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cluster import cluster as harness
from tests.cluster import gates
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler


@contextmanager
def gated_cluster_with_both(directory: Path, release_gates: gates.Gates,
                            release: str) -> Iterator[harness.ClusterState]:
    # No KWOK and a day's grace: the modules make their nodes themselves and no
    # heartbeat must taint them mid-scenario.
    addons = dataclasses.replace(harness.FULL, kwok=False, node_monitor_grace_period="24h")
    state = harness.up(directory, addons, release_gates, release=release)
    try:
        with (UpstreamScheduler(state, feature_gates=state.feature_gates),
              KpyschedProcess(state, log_level="info", extra_args=tuple(
                  gates.feature_gates_args(release_gates.feature_gates)))):
            yield state
    finally:
        harness.down(directory)
