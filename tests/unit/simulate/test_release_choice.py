"""simulate and explain's suggestions take the release as `kpysched run` does: the flag,
else the version `kpysched snapshot` recorded, else the newest."""

from __future__ import annotations

import pytest

from kpysched.config.features import NEWEST_RELEASE
from kpysched.config.release import SOURCE_CLUSTER, SOURCE_DEFAULT, SOURCE_FLAG, ReleaseError
from kpysched.simulate.release import VERSION_KEY, choose

V1_36 = {"metadata": {VERSION_KEY: {"major": "1", "minor": "36", "gitVersion": "v1.36.4"}}}


def test_the_flag_wins_over_the_snapshot() -> None:
    choice = choose("kube=1.37", V1_36)
    assert (choice.release, choice.source) == (37, SOURCE_FLAG)


def test_the_snapshot_s_server_version() -> None:
    choice = choose(None, V1_36)
    assert (choice.release, choice.source, choice.warning) == (36, SOURCE_CLUSTER, None)


def test_a_snapshot_without_a_version_runs_the_newest_release_and_says_so() -> None:
    choice = choose(None, {"metadata": {"server": "https://x"}})
    assert (choice.release, choice.source) == (NEWEST_RELEASE, SOURCE_DEFAULT)
    assert choice.warning is not None


def test_a_snapshot_of_a_too_old_cluster_is_refused() -> None:
    old = {"metadata": {VERSION_KEY: {"major": "1", "minor": "34", "gitVersion": "v1.34.2"}}}
    with pytest.raises(ReleaseError, match=r"--emulated-version=1\.36"):
        choose(None, old)
