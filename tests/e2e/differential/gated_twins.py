"""A cluster of one release with some feature gates on, and both schedulers on it with
the same gates: kube-scheduler of the release and kpysched (release read from
/version). For differential modules about behaviour behind a gate (pod groups,
deferred resizes); the twin clusters of conftest.py run with the release's defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.cluster import cluster as harness
from tests.cluster import gates
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.upstream import UpstreamScheduler


@dataclass(frozen=True)
class GatedTwins:
    """The cluster and both schedulers on it (a module reading their /metrics)."""

    state: harness.ClusterState
    upstream: UpstreamScheduler
    kpysched: KpyschedProcess


@contextmanager
def gated_twins(directory: Path, release_gates: gates.Gates,
                release: str) -> Iterator[GatedTwins]:
    # No KWOK and a day's grace: the modules make their nodes themselves and no
    # heartbeat must taint them mid-scenario.
    addons = dataclasses.replace(harness.FULL, kwok=False, node_monitor_grace_period="24h")
    state = harness.up(directory, addons, release_gates, release=release)
    try:
        with (UpstreamScheduler(state, feature_gates=state.feature_gates) as upstream,
              KpyschedProcess(state, log_level="info", extra_args=tuple(
                  gates.feature_gates_args(release_gates.feature_gates))) as ours):
            yield GatedTwins(state, upstream, ours)
    finally:
        harness.down(directory)


@contextmanager
def gated_cluster_with_both(directory: Path, release_gates: gates.Gates,
                            release: str) -> Iterator[harness.ClusterState]:
    with gated_twins(directory, release_gates, release) as twins:
        yield twins.state
