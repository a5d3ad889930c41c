"""Plugin args kube-scheduler's strict decoder refuses, kpysched refuses too.

The fuzzing of the config loader found args kpysched took and kube-scheduler refuses
(a misspelt field under addedAffinity, a string for an integer). Both binaries read
the same file here; each must refuse it, naming the field. Config decoding comes
before any connection, so no cluster is needed. Both are of the module's release (the
selected one, KPYSCHED_TEST_RELEASE, or a release marker: tests/cluster/releases.py):
kube-scheduler is that release's binary and kpysched is told it with
--emulated-version, since with no API server to ask it would take the newest.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster import build, releases

pytestmark = pytest.mark.e2e

HEAD = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: /nonexistent}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
"""
CASES = {
    # name: (pluginConfig entry, what both errors must name)
    "misspelt-added-affinity-field": (
        "  - name: NodeAffinity\n    args:\n      addedAffinity:\n"
        "        requiredDuringSchedulingIgnoredDuringExecutio: {nodeSelectorTerms: []}\n",
        "requiredDuringSchedulingIgnoredDuringExecutio"),
    "string-for-an-integer": (
        "  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: \"15\"\n",
        "ardPodAffinityWeight"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_schedulers_refuse_the_same_args(case: str, cluster_release: str,
                                              tmp_path: Path) -> None:
    entry, field = CASES[case]
    config = tmp_path / "config.yaml"
    config.write_text(HEAD + entry)
    kube_scheduler = build.binary_path("kube-scheduler", cluster_release)
    version = subprocess.run([str(kube_scheduler), "--version"], capture_output=True,
                             text=True, timeout=60).stdout
    assert releases.get(cluster_release).kubernetes_version in version, version
    upstream = subprocess.run([str(kube_scheduler), f"--config={config}"],
                              capture_output=True, text=True, timeout=60)
    ours = subprocess.run([sys.executable, "-m", "kpysched.cli", "run", "--config", str(config),
                           f"--emulated-version={cluster_release}"],
                          capture_output=True, text=True, timeout=60)
    assert upstream.returncode != 0 and field in upstream.stderr, upstream.stderr[-2000:]
    # kpysched exits 2 (a bad invocation), naming the field's path; upstream exits 1.
    assert ours.returncode == 2 and field in ours.stderr, ours.stderr[-2000:]
    assert "Traceback" not in ours.stderr
