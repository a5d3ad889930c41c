from __future__ import annotations

from typing import Any

import pytest

from kpysched.config import (
    ConfigError,
    SchedulerConfiguration,
    parse_config,
    parse_go_duration,
)
from tests.unit.config.fakes import document


def _get(config: SchedulerConfiguration, dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


@pytest.mark.parametrize(("attribute", "expected"), [
    pytest.param("parallelism", 16, id="parallelism"),
    pytest.param("percentage_of_nodes_to_score", 0, id="percentage-adaptive"),
    pytest.param("pod_initial_backoff_seconds", 1, id="initial-backoff"),
    pytest.param("pod_max_backoff_seconds", 10, id="max-backoff"),
    pytest.param("client_connection.qps", 50.0, id="qps"),
    pytest.param("client_connection.burst", 100, id="burst"),
    pytest.param("client_connection.content_type", "application/vnd.kubernetes.protobuf",
                 id="content-type"),
    pytest.param("client_connection.kubeconfig", "", id="kubeconfig"),
    pytest.param("leader_election.leader_elect", True, id="leader-elect"),
    pytest.param("leader_election.lease_duration", 15.0, id="lease-duration"),
    pytest.param("leader_election.renew_deadline", 10.0, id="renew-deadline"),
    pytest.param("leader_election.retry_period", 2.0, id="retry-period"),
    pytest.param("leader_election.resource_lock", "leases", id="resource-lock"),
    pytest.param("leader_election.resource_name", "kpysched", id="lease-not-kube-scheduler"),
    pytest.param("leader_election.resource_namespace", "kube-system", id="lease-namespace"),
    pytest.param("enable_profiling", True, id="profiling"),
    pytest.param("enable_contention_profiling", True, id="contention-profiling"),
    pytest.param("delay_cache_until_active", False, id="delay-cache"),
    pytest.param("extenders", [], id="extenders"),
    pytest.param("profiles.0.scheduler_name", "kpysched", id="default-profile-name"),
    pytest.param("profiles.0.percentage_of_nodes_to_score", None, id="profile-percentage"),
])
def test_defaults(attribute: str, expected: object) -> None:
    assert _get(parse_config(document()), attribute) == expected
    assert _get(SchedulerConfiguration(), attribute) == expected


@pytest.mark.parametrize(("fields", "attribute", "expected"), [
    pytest.param({"leaderElection": {"leaseDuration": "1m30s"}}, "leader_election.lease_duration",
                 90.0, id="duration-minutes"),
    pytest.param({"leaderElection": {"retryPeriod": "500ms"}}, "leader_election.retry_period",
                 0.5, id="duration-millis"),
    pytest.param({"leaderElection": {"leaseDuration": "0s"}}, "leader_election.lease_duration",
                 15.0, id="zero-duration-is-unset"),
    pytest.param({"leaderElection": {"resourceName": ""}}, "leader_election.resource_name",
                 "kpysched", id="empty-lease-name-is-unset"),
    pytest.param({"leaderElection": {"resourceName": "kpysched-a"}},
                 "leader_election.resource_name", "kpysched-a", id="lease-name"),
    pytest.param({"leaderElection": {"leaderElect": False, "leaseDuration": "1s",
                                     "renewDeadline": "5s"}},
                 "leader_election.leader_elect", False, id="no-election-no-checks"),
    pytest.param({"clientConnection": {"qps": 0, "burst": 0}}, "client_connection.qps", 50.0,
                 id="zero-qps-is-unset"),
    pytest.param({"clientConnection": {"qps": 0, "burst": 0}}, "client_connection.burst", 100,
                 id="zero-burst-is-unset"),
    pytest.param({"clientConnection": {"qps": 5}}, "client_connection.qps", 5.0,
                 id="integer-qps"),
    pytest.param({"enableProfiling": False}, "enable_contention_profiling", False,
                 id="contention-follows-profiling"),
    pytest.param({"enableProfiling": False, "enableContentionProfiling": True},
                 "enable_contention_profiling", True, id="contention-explicit"),
    pytest.param({"parallelism": None}, "parallelism", 16, id="null-is-unset"),
    pytest.param({"percentageOfNodesToScore": 100}, "percentage_of_nodes_to_score", 100,
                 id="percentage-max"),
    pytest.param({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 5},
                 "pod_max_backoff_seconds", 5, id="max-backoff-equal-initial"),
    pytest.param({"profiles": []}, "profiles.0.scheduler_name", "kpysched",
                 id="empty-profiles"),
    pytest.param({"profiles": [{"percentageOfNodesToScore": 30}]},
                 "profiles.0.scheduler_name", "kpysched", id="single-profile-named"),
    pytest.param({"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]},
                 "profiles.1.scheduler_name", "b", id="two-profiles"),
    pytest.param({"extenders": []}, "extenders", [], id="no-extenders"),
    pytest.param({"delayCacheUntilActive": True}, "delay_cache_until_active", True,
                 id="delay-cache"),
])
def test_values(fields: dict[str, Any], attribute: str, expected: object) -> None:
    assert _get(parse_config(document(**fields)), attribute) == expected


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("15s", 15.0, id="seconds"),
    pytest.param("1h2m3s", 3723.0, id="compound"),
    pytest.param("1.5m", 90.0, id="fraction"),
    pytest.param("250ms", 0.25, id="millis"),
    pytest.param("10us", 1e-5, id="micros"),
    pytest.param("0", 0.0, id="bare-zero"),
    pytest.param("-2s", -2.0, id="negative"),
    pytest.param("2562047h47m16.854775807s", 9223372036.854775807, id="longest-go-duration"),
])
def test_go_duration(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


# Past int64 nanoseconds Go's time.ParseDuration fails (found by tests/unit/fuzz: a
# leaseDuration of "99999999999999999999h" was accepted and overflowed later).
@pytest.mark.parametrize("text", ["", "15", "s", "1d", "1.5.5s", "1s ", "--1s",
                                  "2562048h", "99999999999999999999h", "-2562048h",
                                  "1" + "0" * 400 + "s"])
def test_go_duration_invalid(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


def _problems(data: object, release: int = 36) -> tuple[str, ...]:
    """As kube-scheduler v1.36.4 reports them (v1.37.2's differences tested below)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(data, release)
    return caught.value.problems


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param({"kind": "KubeSchedulerConfiguration"},
                 ['apiVersion: required field is missing '
                  '(expected "kubescheduler.config.k8s.io/v1")'], id="no-api-version"),
    pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1"},
                 ['kind: required field is missing (expected "KubeSchedulerConfiguration")'],
                 id="no-kind"),
    pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1beta3",
                  "kind": "KubeSchedulerConfiguration"},
                 ['apiVersion: unsupported version "kubescheduler.config.k8s.io/v1beta3": '
                  'kpysched reads "kubescheduler.config.k8s.io/v1", as kube-scheduler v1.36 does'],
                 id="old-api-version"),
    pytest.param(document(kind="KubeProxyConfiguration"),
                 ["kind: Input should be 'KubeSchedulerConfiguration' "
                  '(got "KubeProxyConfiguration")'], id="wrong-kind"),
    pytest.param(None, ["expected a KubeSchedulerConfiguration mapping, got an empty document"],
                 id="empty"),
    pytest.param([1], ["expected a KubeSchedulerConfiguration mapping, got a list"],
                 id="not-a-mapping"),
    pytest.param(document(parallelizm=4), ['unknown field "parallelizm"'],
                 id="unknown-top-level-field"),
    pytest.param(document(healthzBindAddress="0.0.0.0:10251"),
                 ['unknown field "healthzBindAddress" (removed in kubescheduler.config.k8s.io/'
                  'v1beta3; kube-scheduler v1.36 rejects it too)'], id="removed-field"),
    pytest.param(document(leaderElection={"leaseDurationn": "15s"}),
                 ['leaderElection: unknown field "leaseDurationn"'], id="unknown-nested-field"),
    pytest.param(document(leaderElection={"lease_duration": "15s"}),
                 ['leaderElection: unknown field "lease_duration"'], id="snake-case-field"),
    pytest.param(document(profiles=[{"plugins": {"score": {"enabled": [{"name": "A"}],
                                                           "enable": []}}}]),
                 ['profiles[0].plugins.score: unknown field "enable"'],
                 id="unknown-field-in-profile"),
    pytest.param(document(profiles=[{"plugins": {"score": {"enabled": [{"weight": 2}]}}}]),
                 ["profiles[0].plugins.score.enabled[0].name: required field is missing"],
                 id="plugin-without-name"),
    pytest.param(document(profiles=[{"plugins": {"score": {"enabled": [
                     {"name": "A", "weight": "2"}]}}}]),
                 ['profiles[0].plugins.score.enabled[0].weight: Input should be a valid integer '
                  '(got "2")'], id="weight-not-integer"),
    pytest.param(document(parallelism=0),
                 ["parallelism: Input should be greater than 0 (got 0)"], id="parallelism-zero"),
    pytest.param(document(parallelism="16"),
                 ['parallelism: Input should be a valid integer (got "16")'],
                 id="parallelism-string"),
    pytest.param(document(parallelism=2**31),
                 ["parallelism: Input should be less than or equal to 2147483647 "
                  "(got 2147483648)"], id="parallelism-int32"),
    pytest.param(document(percentageOfNodesToScore=101),
                 ["percentageOfNodesToScore: Input should be less than or equal to 100 (got 101)"],
                 id="percentage-over-100"),
    pytest.param(document(profiles=[{"percentageOfNodesToScore": -1}]),
                 ["profiles[0].percentageOfNodesToScore: Input should be greater than or equal "
                  "to 0 (got -1)"], id="profile-percentage-negative"),
    pytest.param(document(podInitialBackoffSeconds=0),
                 ["podInitialBackoffSeconds: Input should be greater than 0 (got 0)"],
                 id="initial-backoff-zero"),
    pytest.param(document(podInitialBackoffSeconds=20),
                 ["podMaxBackoffSeconds: must be greater than or equal to "
                  "podInitialBackoffSeconds (20)"], id="max-backoff-below-initial"),
    pytest.param(document(clientConnection={"burst": -1}),
                 ["clientConnection.burst: Input should be greater than or equal to 0 (got -1)"],
                 id="negative-burst"),
    # Found by tests/unit/fuzz: a YAML .nan or .inf was accepted; upstream reads the file
    # as JSON, which has neither.
    pytest.param(document(clientConnection={"qps": float("nan")}),
                 ["clientConnection.qps: Input should be a finite number (got NaN)"],
                 id="nan-qps"),
    pytest.param(document(clientConnection={"qps": float("inf")}),
                 ["clientConnection.qps: Input should be a finite number (got Infinity)"],
                 id="infinite-qps"),
    pytest.param(document(enableProfiling="yes"),
                 ['enableProfiling: Input should be a valid boolean (got "yes")'],
                 id="bool-string"),
    pytest.param(document(extenders=[{"filterVerb": "filter"}]),
                 ["extenders[0].urlPrefix: required field is missing"], id="extender-without-url"),
    pytest.param(document(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
                 ['profiles[1].schedulerName: duplicate schedulerName "a" '
                  "(already used by profiles[0])"], id="duplicate-scheduler-name"),
    pytest.param(document(profiles=[{"schedulerName": "a"}, {}]),
                 ["profiles[1].schedulerName: required field is missing (every profile needs a "
                  "schedulerName when there are several)"], id="unnamed-second-profile"),
    pytest.param(document(profiles=[{"schedulerName": ""}]),
                 ["profiles[0].schedulerName: must not be empty"], id="empty-scheduler-name"),
    pytest.param(document(profiles=[
        {"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
        {"schedulerName": "b"},
    ]), ["profiles[1].plugins.queueSort: must be the same for all profiles (as in profiles[0])"],
        id="queue-sort-written-differently"),
    pytest.param(document(parallelism=0, podInitialBackoffSeconds=0, extenders=[{}]),
                 ["parallelism: Input should be greater than 0 (got 0)",
                  "podInitialBackoffSeconds: Input should be greater than 0 (got 0)",
                  "extenders[0].urlPrefix: required field is missing"],
                 id="several-problems"),
])
def test_invalid(data: object, expected: list[str]) -> None:
    assert list(_problems(data)) == expected


@pytest.mark.parametrize(("election", "expected"), [
    pytest.param({"leaseDuration": "10s", "renewDeadline": "10s"},
                 ["leaderElection.leaseDuration: must be greater than renewDeadline "
                  "(10s <= 10s)"], id="lease-not-above-renew"),
    pytest.param({"renewDeadline": "2s", "retryPeriod": "2s"},
                 ["leaderElection.renewDeadline: must be greater than retryPeriod * 1.2 "
                  "(2s <= 2.4s)"], id="renew-not-above-jittered-retry"),
    pytest.param({"retryPeriod": "-1s"},
                 ["leaderElection.retryPeriod: must be greater than zero (got -1s)"],
                 id="negative-retry"),
    pytest.param({"leaseDuration": "-15s"},
                 ["leaderElection.leaseDuration: must be greater than zero (got -15s)"],
                 id="negative-lease"),
    pytest.param({"resourceLock": "endpointsleases"},
                 ['leaderElection.resourceLock: must be "leases" (got "endpointsleases")'],
                 id="resource-lock"),
    pytest.param({"leaseDuration": "15"},
                 ['leaderElection.leaseDuration: must be a duration such as "15s" or "1m30s" '
                  '(got "15")'], id="duration-no-unit"),
    pytest.param({"leaseDuration": 15},
                 ['leaderElection.leaseDuration: must be a duration such as "15s" or "1m30s" '
                  "(got 15)"], id="duration-number"),
    pytest.param({"leaderElect": "true"},
                 ['leaderElection.leaderElect: Input should be a valid boolean (got "true")'],
                 id="leader-elect-string"),
])
def test_leader_election_invalid(election: dict[str, Any], expected: list[str]) -> None:
    assert list(_problems(document(leaderElection=election))) == expected


def test_messages_name_the_release() -> None:
    data = {"apiVersion": "kubescheduler.config.k8s.io/v1beta3",
            "kind": "KubeSchedulerConfiguration"}
    assert "kube-scheduler v1.37 does" in _problems(data, 37)[0]
    assert "kube-scheduler v1.36 does" in _problems(data, 36)[0]
