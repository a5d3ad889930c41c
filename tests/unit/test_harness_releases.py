"""The test harness's Kubernetes releases: how one is named and selected, which
binaries each builds for itself, and that KWOK's nodes report the cluster's release."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster import build, kwok, releases
from tests.cluster.gates import GANG, gang


def test_a_release_is_named_by_its_minor_with_or_without_v_and_patch() -> None:
    assert releases.get("1.37").name == "1.37"
    assert releases.get("v1.37.2").name == "1.37"
    assert releases.get("1.36").kubernetes_version == build.KUBERNETES_VERSION
    assert releases.get("1.37").kubernetes_version == "v1.37.2"
    assert releases.get("1.37").minor == 37


def test_an_unknown_release_names_the_ones_built() -> None:
    with pytest.raises(ValueError, match=r"'1\.35'.*1\.36, 1\.37"):
        releases.get("1.35")


def test_selection_is_the_argument_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(releases.ENV_VAR, raising=False)
    assert releases.selected().name == releases.DEFAULT == "1.37"
    monkeypatch.setenv(releases.ENV_VAR, "1.36")
    assert releases.selected().name == "1.36"
    assert releases.selected("1.37").name == "1.37"
    monkeypatch.setenv(releases.ENV_VAR, "2.0")
    with pytest.raises(ValueError, match=releases.ENV_VAR):
        releases.selected()


def test_each_release_has_its_own_control_plane_and_shares_the_rest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("KPYSCHED_CACHE", str(tmp_path))
    monkeypatch.delenv(releases.ENV_VAR, raising=False)
    for name in build.PER_RELEASE:
        assert build._binary(name, "1.37").path == tmp_path / "k8s-v1.37.2" / "bin" / name
        assert build._binary(name, "1.37").module_dir == releases.get("1.37").module_dir
        default_version = releases.RELEASES[releases.DEFAULT].kubernetes_version
        default_dir = tmp_path / f"k8s-{default_version}" / "bin"
        assert build._binary(name).path == default_dir / name
    assert build._binary("etcd", "1.37") == build._binary("etcd", "1.36")
    monkeypatch.setenv(releases.ENV_VAR, "1.37")
    assert build._binary("kube-scheduler").release == "1.37"
    # Nothing is built in the empty cache: what is missing for one release's cluster.
    missing = build.missing_binaries(build.CORE, ["1.37"])
    assert {(b.name, b.release) for b in missing} == {
        ("etcd", None), ("kwok", None),
        ("kube-apiserver", "1.37"), ("kube-controller-manager", "1.37"),
        ("kube-scheduler", "1.37")}
    everything = build.missing_binaries()
    assert {b.release for b in everything if b.name == "kube-scheduler"} == {"1.36", "1.37"}


def test_kwok_nodes_report_the_clusters_release() -> None:
    ready = next(s for s in kwok.stages("v1.37.2") if s["metadata"]["name"] ==
                 "kpysched-node-ready")
    template = ready["spec"]["steps"][0]["patch"]["template"]
    assert "  kubeletVersion: v1.37.2\n" in template
    assert "  kubeProxyVersion: v1.37.2\n" in template


def test_gang_gates_follow_the_release() -> None:
    assert gang("1.36") == GANG
    assert dict(gang("1.37").feature_gates) == {"GenericWorkload": True}
    assert gang("1.37").runtime_config == ("scheduling.k8s.io/v1beta1=true",)


def test_the_background_build_begins_with_the_other_release_then_kubectl_and_helm() -> None:
    """What CI builds while the suite runs, in order (build.BINARIES): v1.36.4's control
    plane for the compatibility set handed out first, then kubectl and helm, which a
    dozen files use, then promtool (test_alert_rules) before Prometheus."""
    rest = [(b.name, b.release) for b in build.BINARIES
            if not (b.name in build.CORE and b.release in (None, releases.DEFAULT))]
    assert rest[:5] == [("kube-apiserver", "1.36"), ("kube-controller-manager", "1.36"),
                        ("kube-scheduler", "1.36"), ("kubectl", None), ("helm", None)]
    assert rest.index(("promtool", None)) < rest.index(("prometheus", None))
