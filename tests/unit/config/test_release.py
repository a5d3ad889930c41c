"""Which release kpysched behaves as: the flag's forms, the API server's /version and
the skew policy (config.release), and each release's gate table (config.features)."""

from __future__ import annotations

import pytest

from kpysched.config.features import (
    HIDDEN_GATES,
    LISTED_GATES,
    NEWEST_RELEASE,
    RELEASES,
    SCHEDULER_GATES,
    Features,
    gate_default,
    release_gate_defaults,
)
from kpysched.config.release import (
    SOURCE_CLUSTER,
    SOURCE_DEFAULT,
    ReleaseError,
    for_server,
    parse_minor,
    server_minor,
    undetected,
)


@pytest.mark.parametrize(("info", "minor"), [
    pytest.param({"major": "1", "minor": "37", "gitVersion": "v1.37.2"}, 37, id="plain"),
    pytest.param({"major": "1", "minor": "37+", "gitVersion": "v1.37.2-eks-4a5b"}, 37,
                 id="distribution-suffix"),
    pytest.param({"major": "1", "minor": "36+"}, 36, id="minor-plus-without-git-version"),
    pytest.param({"major": "1", "minor": "36", "gitVersion": "garbage"}, 36,
                 id="unparsable-git-version-falls-back-to-minor"),
    pytest.param({"gitVersion": "v1.38.0-alpha.1"}, 38, id="prerelease"),
])
def test_server_minor(info: dict[str, str], minor: int) -> None:
    assert server_minor(info) == minor


def test_server_minor_refuses_an_answer_without_a_version() -> None:
    with pytest.raises(ReleaseError, match=r"names no Kubernetes 1\.x minor"):
        server_minor({"major": "", "minor": ""})


@pytest.mark.parametrize("minor", [36, 37])
def test_a_supported_control_plane_gives_its_own_release(minor: int) -> None:
    choice = for_server({"major": "1", "minor": str(minor), "gitVersion": f"v1.{minor}.1"})
    assert (choice.release, choice.source, choice.warning) == (minor, SOURCE_CLUSTER, None)
    assert choice.server_version == f"v1.{minor}.1"


def test_a_newer_control_plane_runs_the_newest_release_with_a_warning() -> None:
    choice = for_server({"major": "1", "minor": "39", "gitVersion": "v1.39.0"})
    assert choice.release == NEWEST_RELEASE
    assert choice.warning is not None and "v1.39.0, newer than" in choice.warning


def test_an_older_control_plane_stops_start_up_saying_what_to_do() -> None:
    with pytest.raises(ReleaseError) as raised:
        for_server({"major": "1", "minor": "35", "gitVersion": "v1.35.6"})
    message = str(raised.value)
    assert "v1.35.6" in message
    assert "1.36 (v1.36.4), 1.37 (v1.37.2)" in message
    assert "--emulated-version=1.36" in message


def test_no_api_server_gives_the_newest_release() -> None:
    choice = undetected("connection refused")
    assert (choice.release, choice.source) == (NEWEST_RELEASE, SOURCE_DEFAULT)
    assert choice.warning is not None and "connection refused" in choice.warning


@pytest.mark.parametrize(("text", "minor"), [
    ("1.36", 36), ("v1.37", 37), ("kube=1.36", 36), ("kube=v1.37", 37), ("kube=1.36.0", 36),
])
def test_version_flag_forms(text: str, minor: int) -> None:
    assert parse_minor(text) == minor


@pytest.mark.parametrize("text", ["kube=1.36.4", "KUBE=1.36", "1", "2.36", "kube="])
def test_version_flag_forms_refused(text: str) -> None:
    with pytest.raises(ReleaseError):
        parse_minor(text)


def test_features_default_to_the_newest_release_and_refuse_others() -> None:
    assert Features().release == NEWEST_RELEASE == 37
    with pytest.raises(ValueError, match=r"1\.35 is not one kpysched implements"):
        Features(release=35)


@pytest.mark.parametrize(("release", "gate", "default"), [
    # From `kube-scheduler --help` and pkg/features/kube_features.go of each release.
    (36, "StorageCapacityScoring", False), (37, "StorageCapacityScoring", True),
    (36, "VolumeLimitScaling", False), (37, "VolumeLimitScaling", True),
    (36, "NodeDeclaredFeatures", True), (37, "NodeDeclaredFeatures", True),  # GA, locked
    (37, "DRADeviceTaints", True),  # GA in v1.37, not locked yet
    (36, "DynamicResourceAllocation", True),  # GA, locked, not listed
    (36, "InPlacePodVerticalScalingSchedulerPreemption", False),  # unknown to v1.36
    (37, "InPlacePodVerticalScalingSchedulerPreemption", False),
    (36, "OpportunisticBatching", True), (37, "OpportunisticBatching", True),
    (36, "GangScheduling", False), (37, "GenericWorkload", False),
])
def test_gate_defaults_per_release(release: int, gate: str, default: bool) -> None:
    assert gate_default(release, gate) is default
    assert Features(release=release).enabled(gate) is default


def test_gate_tables_agree_with_what_each_release_is() -> None:
    assert set(LISTED_GATES) == set(HIDDEN_GATES) == set(RELEASES)
    assert "GangScheduling" in LISTED_GATES[36]
    assert "GangScheduling" not in LISTED_GATES[37] and "GangScheduling" not in HIDDEN_GATES[37]
    assert HIDDEN_GATES[37]["NodeDeclaredFeatures"] == (True, True)
    assert HIDDEN_GATES[37]["DRADeviceTaints"] == (True, False)
    for release in RELEASES:
        assert not set(LISTED_GATES[release]) & set(HIDDEN_GATES[release])
        known = set(LISTED_GATES[release]) | set(HIDDEN_GATES[release])
        assert set(SCHEDULER_GATES[release]) <= known, release
        assert set(release_gate_defaults(release)) == set(SCHEDULER_GATES[release])


def test_v1_37_folds_gang_scheduling_into_generic_workload() -> None:
    on = Features.from_gates({"GenericWorkload": True}, release=37)
    assert on.gang_scheduling and on.enabled("GangScheduling")
    assert on.gates() == {"GenericWorkload": True}
    v136 = Features.from_gates({"GenericWorkload": True}, release=36)
    assert not v136.gang_scheduling
    both = Features.from_gates({"GenericWorkload": True, "GangScheduling": True}, release=36)
    assert both.gates() == {"GenericWorkload": True, "GangScheduling": True}
