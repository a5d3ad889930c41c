"""The configuration upstream kube-scheduler reports as its default loads into the same
effective profile as kpysched's own defaults, and no plugin of it is dropped."""

from __future__ import annotations

import subprocess
from pathlib import Path

from structlog.testing import capture_logs

from kpysched.config import load_config
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from tests.cluster import build
from tests.cluster.cluster import ClusterState


def test_kube_scheduler_default_config_gives_kpysched_default_profile(
    cluster: ClusterState, tmp_path: Path
) -> None:
    written = tmp_path / "kube-scheduler-defaults.yaml"
    result = subprocess.run(
        [str(build.binary_path("kube-scheduler")), f"--write-config-to={written}",
         f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    registry = full_registry(IN_TREE)

    with capture_logs() as logs:
        _, [theirs] = load_config(written, registry)
    _, [ours] = load_config(None, registry)

    assert theirs.plugins == ours.plugins
    assert theirs.score_weights == ours.score_weights
    assert theirs.scheduler_name == "default-scheduler"
    assert theirs.unavailable_defaults == ()
    assert not [e for e in logs if e["event"] == "config.default_plugins_unavailable"]
    for plugin in ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits",
                   "NodeDeclaredFeatures"):
        assert plugin in theirs.plugins["filter"], plugin
