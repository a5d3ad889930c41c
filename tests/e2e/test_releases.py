"""kpysched started with no version flag behaves as the release of the control plane
it finds, on each release the harness runs (tests/cluster/releases.py).

For v1.36 and v1.37 in turn: what kpysched writes with `--write-config-to` (the
cluster's kubeconfig, no --emulated-version) against kube-scheduler's own, of the
same release; the release it says it chose (log and metric); and a differential
scenario whose right answer differs between the releases, so that following the
wrong one fails: VolumeBinding's capacity scoring (StorageCapacityScoring, beta and
on by default from v1.37, off in v1.36), and one per other changed behaviour
(tests/e2e/differential/release_scenarios.py: InterPodAffinity's namespaceSelector,
ImageLocality's image volumes, NodeVolumeLimits' VolumeLimitScaling, DynamicResources'
PostFilter and CEL error texts), each on the same twin clusters and schedulers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from kpysched.config import load_config
from kpysched.config.features import Features
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.cluster import build, kube, releases
from tests.cluster.cluster import ClusterState
from tests.cluster.kpysched_process import KpyschedProcess
from tests.cluster.provisioner import ProvisionerProcess
from tests.cluster.upstream import UpstreamScheduler
from tests.conftest import Clusters
from tests.e2e.differential.compare import TwinApis, Twins, same_decision
from tests.e2e.differential.model import (
    CapacitySpec,
    CSIDriverSpec,
    NodeSpec,
    PodSpec,
    PvcSpec,
    Scenario,
    StorageClassSpec,
)
from tests.e2e.differential.release_bind_once import BindOnce, bind_once_webhook
from tests.e2e.differential.release_run import ReleaseCase, follows_release
from tests.e2e.differential.release_scenarios import CASES
from tests.e2e.test_configz import VALUES, _comparable, _differences, _matches

pytestmark = pytest.mark.e2e

KPYSCHED = [sys.executable, "-m", "kpysched.cli"]
ZONE = "topology.kubernetes.io/zone"

# Where kpysched's --write-config-to differs from kube-scheduler's by design, whatever
# the release ((JSON path, kind) -> why; see also test_configz.py). Everything else,
# the release's default plugins in their order and their args included, is equal.
WRITTEN_DIFFERENCES: dict[tuple[str, str], str] = {
    (".leaderElection.resourceName", VALUES):
        "kpysched's default Lease is kube-system/kpysched, never kube-scheduler's",
    (".profiles[0].schedulerName", VALUES):
        "kpysched's default profile is named kpysched, so pods opt in",
}


@pytest.fixture(scope="module", params=tuple(releases.RELEASES))
def release(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _minor(release: str) -> int:
    return releases.get(release).minor


def _events(stderr: str) -> list[dict[str, Any]]:
    events = []
    for line in stderr.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def _selected(events: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = [e for e in events if e.get("event") == "release.selected"]
    assert len(chosen) == 1, f"one release.selected event expected, got {chosen}"
    return chosen[0]


def _check_release_logged(event: dict[str, Any], state: ClusterState) -> None:
    assert event["release"] == state.release, event
    assert event["kube_scheduler"] == state.kubernetes_version, event
    assert event["api_server"] == state.kubernetes_version, event
    assert event["source"] == "cluster", event


def test_write_config_to_is_kube_schedulers_of_the_cluster_release(
    clusters: Clusters, release: str, tmp_path: Path,
) -> None:
    state = clusters.get(release)
    theirs, ours = tmp_path / "kube-scheduler.yaml", tmp_path / "kpysched.yaml"
    upstream = subprocess.run(
        [str(build.binary_path("kube-scheduler", release)), f"--write-config-to={theirs}",
         f"--kubeconfig={state.kubeconfig}"], capture_output=True, text=True, timeout=60)
    assert upstream.returncode == 0, upstream.stderr[-2000:]
    written = subprocess.run(
        [*KPYSCHED, f"--kubeconfig={state.kubeconfig}", f"--write-config-to={ours}"],
        capture_output=True, text=True, timeout=60)
    assert written.returncode == 0, written.stderr[-2000:]
    _check_release_logged(_selected(_events(written.stderr)), state)

    # What the file says, field by field: kube-scheduler's but for the two names.
    unexplained = [
        (path, kind, detail) for path, kind, detail in _differences(
            _comparable(yaml.safe_load(ours.read_text())),
            _comparable(yaml.safe_load(theirs.read_text())))
        if not any(kind == known and _matches(path, pattern)
                   for pattern, known in WRITTEN_DIFFERENCES)]
    assert not unexplained, "\n".join(f"{p}: {k}: {d}" for p, k, d in unexplained)

    # What it means: both files resolve, as the release kpysched chose, to the same
    # plugins, order, weights and args, with no default plugin dropped.
    registry = full_registry(IN_TREE)
    features = Features(release=_minor(release))
    _, [upstream_profile] = load_config(theirs, registry, features=features)
    _, [kpysched_profile] = load_config(ours, registry, features=features)
    assert upstream_profile.unavailable_defaults == kpysched_profile.unavailable_defaults == ()
    assert kpysched_profile.plugins == upstream_profile.plugins
    assert kpysched_profile.score_weights == upstream_profile.score_weights
    assert kpysched_profile.args == upstream_profile.args

    # The release's own marks, so the comparison above cannot pass on the wrong one:
    # v1.37 runs NodeName before NodeUnschedulable and scores storage capacity.
    filters = list(upstream_profile.plugins["filter"])
    name_first = filters.index("NodeName") < filters.index("NodeUnschedulable")
    assert name_first == (release != "1.36"), filters
    plugin_config = yaml.safe_load(theirs.read_text())["profiles"][0]["pluginConfig"]
    volume_binding = next(c["args"] for c in plugin_config if c["name"] == "VolumeBinding")
    assert ("shape" in volume_binding) == (release != "1.36"), volume_binding


# Capacity scoring picks a different node in each release. The claim's class has room
# in both zones; n1's zone has far more (10Gi of 1000Gi used: VolumeBinding scores it
# 99, n0's 10Gi of 11Gi 10) while a busy pod makes n1 the worse node by resources
# (NodeResourcesFit and BalancedAllocation put n0 ~49 ahead). v1.36 leaves storage
# unscored and picks n0; v1.37 scores it and picks n1 by ~40.
_CAPACITY_SCORING = Scenario(
    "vb-capacity-scoring-by-release",
    (NodeSpec("n0", labels={ZONE: "a"}), NodeSpec("n1", labels={ZONE: "b"})),
    PodSpec("incoming", spec={"volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}),
    existing=(PodSpec("busy-n1", node="n1", cpu="2", memory="8Gi"),),
    storage_classes=(StorageClassSpec("fast", provisioner="disk"),),
    csi_drivers=(CSIDriverSpec("disk", storage_capacity=True),),
    capacities=(CapacitySpec("cap-a", "fast", {ZONE: "a"}, capacity="11Gi"),
                CapacitySpec("cap-b", "fast", {ZONE: "b"}, capacity="1000Gi")),
    pvcs=(PvcSpec("data", "fast", request="10Gi"),),
)
_CHOICE = {"1.36": "n0", "1.37": "n1"}


async def _remove_nodes(state: ClusterState) -> None:
    """A node left by an earlier module on this cluster would be counted (and scored)
    by one scheduler only."""
    async with kube.api_client(state) as api:
        core = client.CoreV1Api(api)
        await kube.delete_nodes(api, [n.metadata.name for n in (await core.list_node()).items])

        async def gone() -> bool:
            return not (await core.list_node()).items

        await kube.wait_for(gone, kube.SETTLE_TIMEOUT_SECONDS, "leftover nodes deleted")


@pytest.fixture(scope="module")
def release_twins(clusters: Clusters, release: str) -> Twins:
    return Twins(upstream=clusters.get(release), kpysched=clusters.get(release, role="twin"))


@dataclasses.dataclass(frozen=True)
class _Schedulers:
    kpysched: KpyschedProcess
    upstream: UpstreamScheduler


@pytest.fixture(scope="module")
def schedulers(release_twins: Twins) -> Iterator[_Schedulers]:
    """kube-scheduler of the release on one cluster, kpysched (no version flag) on its
    twin, and the test provisioner on both."""
    for state in (release_twins.upstream, release_twins.kpysched):
        asyncio.run(_remove_nodes(state))
    running = _Schedulers(KpyschedProcess(release_twins.kpysched, log_level="info"),
                          UpstreamScheduler(release_twins.upstream))
    with (ProvisionerProcess(release_twins.upstream), ProvisionerProcess(release_twins.kpysched),
          running.upstream, running.kpysched):
        yield running


@pytest.fixture
async def release_apis(release_twins: Twins) -> AsyncIterator[TwinApis]:
    async with (kube.api_client(release_twins.upstream) as upstream,
                kube.api_client(release_twins.kpysched) as ours):
        yield TwinApis(upstream=upstream, kpysched=ours)


async def test_kpysched_follows_kube_scheduler_of_the_cluster_release(
    release: str, schedulers: _Schedulers, release_apis: TwinApis,
) -> None:
    scenario = dataclasses.replace(_CAPACITY_SCORING, expect_node=_CHOICE[release],
                                   expect_claims={"data": f"provisioned@{_CHOICE[release]}"})
    await same_decision(release_apis, scenario)


@pytest.fixture(scope="module")
def bind_once() -> Iterator[BindOnce]:
    with bind_once_webhook() as webhook:
        yield webhook


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_kpysched_follows_each_changed_behaviour_of_the_release(
    release: str, schedulers: _Schedulers, release_apis: TwinApis, case: ReleaseCase,
    bind_once: BindOnce,
) -> None:
    await follows_release(release_apis, case, release, bind_once)


def _version_info(metrics: str) -> tuple[str, dict[str, str]]:
    """version_info's HELP text and its one series' labels."""
    help_text = next(line for line in metrics.splitlines()
                     if line.startswith("# HELP version_info "))
    series = [line for line in metrics.splitlines() if line.startswith("version_info{")]
    assert len(series) == 1, series
    labels = dict(re.findall(r'(\w+)="([^"]*)"', series[0].split("}")[0]))
    return help_text, labels


def test_running_kpysched_names_the_release_as_kube_scheduler_does(
    release: str, release_twins: Twins, schedulers: _Schedulers,
) -> None:
    _check_release_logged(_selected(schedulers.kpysched.log_events()), release_twins.kpysched)
    status, body = schedulers.kpysched.get("/metrics")
    assert status == 200
    ours_help, ours = _version_info(body)
    theirs_help, theirs = _version_info(schedulers.upstream.metrics())
    # component-base's compatibility version: the release emulated and the oldest it
    # stays compatible with. "binary" is each program's own: kpysched implements both
    # releases in one, as kube-scheduler v1.37.2 emulating 1.36 would.
    assert ours_help == theirs_help
    assert ours["emulation"] == theirs["emulation"] == release, (ours, theirs)
    assert ours["min_compat"] == theirs["min_compat"], (ours, theirs)
    assert ours["component"] == theirs["component"] == "kube"
    assert theirs["binary"] == releases.get(release).kubernetes_version.lstrip("v")
