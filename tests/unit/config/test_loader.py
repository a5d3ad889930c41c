from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest
from structlog.testing import capture_logs

from kpysched.config import ConfigError, load_config
from tests.unit.config.fakes import REGISTRY

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(dedent(text))
    return path


def test_no_file_means_upstream_defaults_and_one_kpysched_profile() -> None:
    config, profiles = load_config(None, REGISTRY)
    assert config.parallelism == 16
    assert [profile.scheduler_name for profile in profiles] == ["kpysched"]


def test_file_is_read_and_resolved(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + dedent("""\
        percentageOfNodesToScore: 40
        leaderElection:
          leaderElect: false
        profiles:
        - schedulerName: batch
          percentageOfNodesToScore: 10
          plugins:
            score:
              disabled:
              - name: ImageLocality
        - schedulerName: web
    """))
    config, profiles = load_config(path, REGISTRY)
    assert config.percentage_of_nodes_to_score == 40
    assert config.leader_election.leader_elect is False
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in profiles] == [
        ("batch", 10), ("web", None)]
    assert "ImageLocality" not in profiles[0].plugins["score"]
    assert "ImageLocality" in profiles[1].plugins["score"]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(HEADER + "parallelism: 4\n  profiles: []\n",
                 "invalid YAML at line 4, column 11: mapping values are not allowed here",
                 id="bad-indent"),
    pytest.param(HEADER + "profiles:\n- schedulerName: [a\n",
                 "invalid YAML at line 5, column 1: expected ',' or ']', but got '<stream end>'",
                 id="unclosed-flow"),
    pytest.param(HEADER + "parallelism: 4\nparallelism: 8\n",
                 'invalid YAML at line 4, column 1: duplicate key "parallelism"',
                 id="duplicate-key"),
    pytest.param(HEADER + "---\n" + HEADER,
                 "invalid YAML at line 3, column 1: but found another document",
                 id="two-documents"),
    pytest.param("", "expected a KubeSchedulerConfiguration mapping, got an empty document",
                 id="empty-file"),
    pytest.param(HEADER + "profiles:\n- schedulerName: a\n  plugins:\n    score:\n"
                 "      enabled:\n      - name: NodeResourcesFitt\n",
                 'profiles[0].plugins.score.enabled[0].name: unknown plugin "NodeResourcesFitt" '
                 '(did you mean "NodeResourcesFit"?)', id="profile-problem"),
    pytest.param(HEADER + "true: 1\n", 'unknown field "true"', id="odd-key"),
    # Found by tests/unit/fuzz/test_config.py: both escaped as a RecursionError traceback.
    pytest.param("[" * 5000, "invalid YAML: nested too deeply", id="nested-too-deeply"),
    pytest.param(HEADER + "profiles: &p [*p]\n",
                 "invalid YAML at line 3, column 15: anchor 'p' value contains itself",
                 id="alias-inside-its-anchor"),
])
def test_errors_name_the_file_and_the_place(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, REGISTRY)
    assert caught.value.problems == (expected,)
    assert caught.value.source == str(path)
    assert str(caught.value) == f"{path}: {expected}"


def test_aliases_outside_their_anchor_still_work(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + dedent("""\
        profiles:
        - {schedulerName: a, percentageOfNodesToScore: &share 20}
        - {schedulerName: b, percentageOfNodesToScore: *share}
    """))
    _, profiles = load_config(path, REGISTRY)
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in profiles] == [
        ("a", 20), ("b", 20)]


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(path, REGISTRY)
    assert str(caught.value) == f"{path}: cannot read the file: No such file or directory"


def test_several_problems_are_listed_one_per_line(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER + "parallelism: 0\npodInitialBackoffSeconds: 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, REGISTRY)
    assert str(caught.value) == (
        f"{path}: 2 problems:\n"
        "  parallelism: Input should be greater than 0 (got 0)\n"
        "  podInitialBackoffSeconds: Input should be greater than 0 (got 0)"
    )


@pytest.mark.parametrize(("election", "warned"), [
    pytest.param("leaderElection:\n  resourceName: kube-scheduler\n", True, id="shared-lease"),
    pytest.param("leaderElection:\n  resourceName: kube-scheduler\n  leaderElect: false\n",
                 False, id="no-election"),
    pytest.param("leaderElection:\n  resourceName: kube-scheduler\n  resourceNamespace: x\n",
                 False, id="other-namespace"),
    pytest.param("", False, id="default-lease"),
])
def test_warns_when_sharing_the_default_schedulers_lease(
    tmp_path: Path, election: str, warned: bool
) -> None:
    with capture_logs() as logs:
        load_config(_write(tmp_path, HEADER + election), REGISTRY)
    events = [log["event"] for log in logs if log["log_level"] == "warning"]
    assert ("config.lease_shared_with_kube_scheduler" in events) is warned


@pytest.mark.parametrize(("fields", "ignored"), [
    ({"parallelism": 8}, ["parallelism"]),
    ({"parallelism": 16}, []),
    ({"enableProfiling": True}, ["enableProfiling"]),
    ({"enableProfiling": False}, []),
    ({"delayCacheUntilActive": True}, ["delayCacheUntilActive"]),
    ({}, []),
], ids=["parallelism", "default-parallelism", "profiling", "no-profiling", "delay-cache",
        "nothing-written"])
def test_fields_kpysched_does_not_act_on_are_named_at_start(
        tmp_path: Path, fields: dict[str, object], ignored: list[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                "kind": "KubeSchedulerConfiguration", **fields}))
    with capture_logs() as logs:
        load_config(path, REGISTRY)
    assert [e["field"] for e in logs if e["event"] == "config.field_ignored"] == ignored


def _alias_bomb(levels: int) -> str:
    """The issue's 575-byte file: each level lists the one below ten times."""
    lols = ",".join(['"lol"'] * 10)
    lines = [f"extraBomb:\n  x0: &l0 [{lols}]\n"]
    lines += [f"  x{n}: &l{n} [{','.join([f'*l{n - 1}'] * 10)}]\n" for n in range(1, levels)]
    return HEADER + "".join(lines)


@pytest.mark.parametrize(("text", "expected"), [
    # Issue 31: 10^9 strings from 575 bytes grew to 1.8 GB; go-yaml stops it at its ratio.
    pytest.param(_alias_bomb(9), "invalid YAML at line 4, column 12: "
                 "document contains excessive aliasing", id="billion-laughs"),
    pytest.param(_alias_bomb(4), "invalid YAML at line 4, column 12: "
                 "document contains excessive aliasing", id="ten-thousand-laughs"),
    # Issue 31: a 5,000-digit integer ended in a traceback (Python's int(str) limit).
    pytest.param(HEADER + "parallelism: " + "1" * 5000 + "\n",
                 "parallelism: the number 1111111111...1111111111 (5000 characters) "
                 "does not fit in a 64-bit integer or float", id="5000-digit-int"),
    pytest.param(HEADER + "profiles:\n- schedulerName: a\n  percentageOfNodesToScore: "
                 + "9" * 400 + "\n",
                 "profiles[0].percentageOfNodesToScore: the number 9999999999...9999999999 "
                 "(400 characters) does not fit in a 64-bit integer or float",
                 id="past-float64-int"),
    pytest.param(HEADER + "clientConnection:\n  qps: 1.0e+400\n",
                 "clientConnection.qps: the number 1.0e+400 does not fit in a 64-bit integer "
                 "or float", id="past-float64-float"),
    # go-yaml reads an integer past 64 bits as a float, which an integer field refuses.
    pytest.param(HEADER + "parallelism: 100000000000000000000000000000\n",
                 "parallelism: Input should be a valid integer (got 1e+29)",
                 id="past-int64"),
    pytest.param(HEADER + "clientConnection:\n  qps: .inf\n",
                 "clientConnection.qps: Input should be a finite number (got Infinity)",
                 id="infinity"),
])
def test_numbers_and_aliases_past_go_yamls_bounds(
        tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, text), REGISTRY)
    assert caught.value.problems == (expected,)


def test_aliasing_within_go_yamls_bound_is_read(tmp_path: Path) -> None:
    # 3 levels: ~1,100 nodes, 91% reached through aliases (go-yaml allows 99%). The
    # document then fails only for its unknown field, after being read whole.
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, _alias_bomb(3)), REGISTRY)
    assert caught.value.problems == ('unknown field "extraBomb"',)


def test_numbers_within_64_bits_are_read_as_written(tmp_path: Path) -> None:
    config, _ = load_config(_write(tmp_path, HEADER + dedent("""\
        podMaxBackoffSeconds: 9223372036854775807
        clientConnection:
          qps: 1.5e+300
    """)), REGISTRY)
    assert config.pod_max_backoff_seconds == 2**63 - 1
    assert config.client_connection.qps == 1.5e300
