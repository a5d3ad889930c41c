"""The configuration kube-scheduler of each release reports as its default
(--write-config-to) loads into the same effective profile as kpysched's own defaults
for that release, with no plugin dropped; and kpysched's --write-config-to for that
release (--emulated-version) loads to the same profile as kube-scheduler's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from kpysched.config import EffectiveProfile, load_config
from kpysched.config.features import Features
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from kpysched.plugins.volume_binding.args import VolumeBindingArgs
from tests.cluster import build
from tests.cluster.cluster import ClusterState

RELEASES = ("1.36", "1.37")
KPYSCHED = str(Path(sys.executable).parent / "kpysched")


def _args_as_run(profile: EffectiveProfile) -> dict[str, object]:
    """The args as the plugins use them: an unset VolumeBinding shape is the default
    one (upstream writes the defaulted shape out; kpysched keeps it unset)."""
    return {name: (value.bind_timeout_seconds, value.scoring_shape())
            if isinstance(value, VolumeBindingArgs) else value
            for name, value in profile.args.items()}


@pytest.mark.parametrize("release", RELEASES)
def test_kube_scheduler_default_config_gives_kpysched_default_profile(
    cluster: ClusterState, tmp_path: Path, release: str,
) -> None:
    written = tmp_path / "kube-scheduler-defaults.yaml"
    result = subprocess.run(
        [str(build.binary_path("kube-scheduler", release)), f"--write-config-to={written}",
         f"--kubeconfig={cluster.kubeconfig}"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    registry = full_registry(IN_TREE)
    features = Features(release=int(release.split(".")[1]))

    with capture_logs() as logs:
        _, [theirs] = load_config(written, registry, None, features)
    _, [ours] = load_config(None, registry, None, features)

    assert theirs.plugins == ours.plugins
    assert theirs.score_weights == ours.score_weights
    assert _args_as_run(theirs) == _args_as_run(ours)
    assert theirs.scheduler_name == "default-scheduler"
    assert theirs.unavailable_defaults == ()
    assert not [e for e in logs if e["event"] == "config.default_plugins_unavailable"]
    for plugin in ("VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits",
                   "NodeDeclaredFeatures"):
        assert plugin in theirs.plugins["filter"], plugin
    first = ("NodeName", "NodeUnschedulable") if release == "1.37" \
        else ("NodeUnschedulable", "NodeName")
    assert theirs.plugins["filter"][:2] == first

    # kpysched's own --write-config-to for that release reads back to the same profile.
    mine = tmp_path / "kpysched.yaml"
    result = subprocess.run(
        [KPYSCHED, f"--emulated-version={release}", f"--kubeconfig={cluster.kubeconfig}",
         f"--write-config-to={mine}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    selected = [json.loads(line) for line in result.stderr.splitlines()
                if '"release.selected"' in line]
    assert [(e["release"], e["source"]) for e in selected] == [(release, "flag")]
    _, [reloaded] = load_config(mine, registry, None, features)
    assert (reloaded.plugins, reloaded.score_weights) == (theirs.plugins, theirs.score_weights)
    assert _args_as_run(reloaded) == _args_as_run(theirs)
    # v1.36 knows no podGroupPostFilter: its kube-scheduler could not read it back.
    assert ("podGroupPostFilter" in mine.read_text()) is (release == "1.37")
