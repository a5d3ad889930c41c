"""Shared fixtures: real test clusters, one per Kubernetes release a run uses, and a
fresh namespace per test.

Every module runs on the selected release (KPYSCHED_TEST_RELEASE, else the harness's
default: tests/cluster/releases.py) unless it asks for another with
`pytestmark = pytest.mark.release("1.37")`; its `cluster` (and everything built on it:
`api`, `namespace`, the differential twins) is then that release's. Clusters are
started on first use and kept for the session (`clusters`), so modules of one
release share one. A test that needs several releases at once asks `clusters` itself.

If a cluster cannot be built or started, every test that needs it errors with the
reason (the harness's message carries the log tail); nothing is skipped.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.cluster import cluster as harness
from tests.cluster import kube, releases

# The tests' Nodes are hand-made API objects: no kubelet, no Lease, never a heartbeat.
# Node lifecycle would mark them Unknown and taint them `unreachable` 50s after it
# first sees them (upstream's grace period), in the middle of a test; a day is
# longer than any run. KWOK nodes and the default `up` keep upstream's 50s
# (tests/e2e/test_cluster_kwok.py checks that their Leases keep them healthy).
HAND_MADE_NODES = dataclasses.replace(harness.FULL, node_monitor_grace_period="24h")
RELEASE_MARKER = "release"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{RELEASE_MARKER}(name): run the module's tests on a cluster of this "
                   "Kubernetes release ('1.36', '1.37'; tests/cluster/releases.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules pinned to a release other than the selected one go after every other
    e2e module, just before the unit tests. `--dist loadfile` hands files out in this
    order, and CI's background build makes the other release's control plane while the
    suite runs: first in line, the worker given such a module waited 471 s for it in a
    cold run; last in line, it is built by then. The unit files still fill both workers'
    ends."""
    selected = releases.selected().name

    def pinned_elsewhere(item: pytest.Item) -> bool:
        marker = item.get_closest_marker(RELEASE_MARKER)
        return marker is not None and releases.selected(marker.args[0]).name != selected

    def is_unit(item: pytest.Item) -> bool:
        return "unit" in item.path.relative_to(config.rootpath).parts[:2]

    moved = [item for item in items if pinned_elsewhere(item)]
    if not moved:
        return
    rest = [item for item in items if not pinned_elsewhere(item)]
    first_unit = next((i for i, item in enumerate(rest) if is_unit(item)), len(rest))
    items[:] = rest[:first_unit] + moved + rest[first_unit:]


class Clusters:
    """The session's clusters, one per (release, role), each started on first use as
    the session's cluster always is (HAND_MADE_NODES) and stopped when the run ends.
    Roles keep clusters of one release apart: "main" is every module's `cluster`,
    "twin" the differential suite's second one."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._running: dict[tuple[str, str], harness.ClusterState] = {}
        # A cluster that failed to start is not tried again by every later module: they
        # all fail with its first reason, as a session fixture's error would.
        self._failed: dict[tuple[str, str], Exception] = {}

    def get(self, release: str | None = None, role: str = "main") -> harness.ClusterState:
        chosen = releases.selected(release).name
        key = (chosen, role)
        if key in self._failed:
            raise harness.ClusterError(f"the {role} cluster of release {chosen} did not "
                                       f"start earlier: {self._failed[key]}")
        if key not in self._running:
            try:
                self._running[key] = harness.up(self._directory(chosen, role),
                                                HAND_MADE_NODES, release=chosen)
            except Exception as error:
                self._failed[key] = error
                raise
        return self._running[key]

    def _directory(self, release: str, role: str) -> Path:
        # KPYSCHED_TEST_CLUSTER_DIR places the selected release's main cluster (to look
        # at its logs after a run).
        override = os.environ.get("KPYSCHED_TEST_CLUSTER_DIR")
        if override and role == "main" and release == releases.selected().name:
            return Path(override)
        return self._base / f"{role}-{release}" / "state"

    def stop_all(self) -> None:
        """Stop every cluster, even when one of them fails to stop cleanly."""
        problems = []
        for state in reversed(list(self._running.values())):
            try:
                harness.down(Path(state.dir))
            except harness.ClusterError as error:
                problems.append(f"{state.dir}: {error}")
        self._running.clear()
        if problems:
            raise harness.ClusterError("; ".join(problems))


@pytest.fixture(scope="session")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    started = Clusters(tmp_path_factory.mktemp("clusters"))
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="module")
def cluster_release(request: pytest.FixtureRequest) -> str:
    """The release this module runs on: its `release` marker's, else the selected one."""
    marker = request.node.get_closest_marker(RELEASE_MARKER)
    return releases.selected(marker.args[0] if marker is not None else None).name


@pytest.fixture(scope="module")
def cluster(clusters: Clusters, cluster_release: str) -> harness.ClusterState:
    return clusters.get(cluster_release)


@pytest.fixture
async def api(cluster: harness.ClusterState) -> AsyncIterator[client.ApiClient]:
    async with kube.api_client(cluster) as api_client:
        yield api_client


@pytest.fixture
async def namespace(api: client.ApiClient) -> AsyncIterator[str]:
    name = await kube.create_namespace(api)
    try:
        yield name
    finally:
        await kube.delete_namespace(api, name)


@pytest.fixture
async def nodes_to_clean(api: client.ApiClient) -> AsyncIterator[list[str]]:
    """Append node names here; they are deleted when the test ends."""
    names: list[str] = []
    try:
        yield names
    finally:
        await kube.delete_nodes(api, names)
