"""What a kube-scheduler command line means to kpysched: settings, config overrides,
flags ignored with --config, and flags refused with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kpysched.config.flags import FlagError, interpret

KUBEADM = ["--bind-address=127.0.0.1", "--leader-elect=true",
           "--kubeconfig=/etc/kubernetes/scheduler.conf",
           "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
           "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf"]


def test_kubeadm_s_flags() -> None:
    invocation = interpret(KUBEADM)
    conf = Path("/etc/kubernetes/scheduler.conf")
    assert invocation.settings == {
        "bind_address": "127.0.0.1", "kubeconfig": conf,
        "authentication_kubeconfig": "/etc/kubernetes/scheduler.conf",
        "authorization_kubeconfig": "/etc/kubernetes/scheduler.conf"}
    assert invocation.config == {
        "leaderElection": {"leaderElect": True},
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"}}
    assert invocation.ignored == []


@pytest.mark.parametrize(("argv", "settings", "config"), [
    pytest.param(["-v=4"], {"log_level": "debug"}, {}, id="v4-debug"),
    pytest.param(["-v", "2"], {"log_level": "info"}, {}, id="v2-info"),
    pytest.param(["--logging-format=json"], {"log_format": "json"}, {}, id="logging-json"),
    pytest.param(["--logging-format=text"], {"log_format": "console"}, {}, id="logging-text"),
    pytest.param(["--leader-elect-lease-duration=30s", "--leader-elect-resource-name=x"],
                 {}, {"leaderElection": {"leaseDuration": "30s", "resourceName": "x"}},
                 id="leader-election"),
    pytest.param(["--kube-api-qps=20", "--kube-api-burst=40", "--profiling=false"], {},
                 {"clientConnection": {"qps": 20.0, "burst": 40}, "enableProfiling": False},
                 id="deprecated-without-config"),
    pytest.param(["--profiling=false", "--contention-profiling=true"], {},
                 {"enableProfiling": False, "enableContentionProfiling": True},
                 id="contention-without-profiling"),
    pytest.param(["--pod-max-in-unschedulable-pods-duration=1m", "--disabled-metrics=a,b"],
                 {"pod_max_in_unschedulable_pods_duration": 60.0,
                  "disabled_metrics": ["a", "b"]}, {}, id="settings"),
    pytest.param(["--feature-gates=SchedulerAsyncPreemption=true,kube:AllAlpha=false",
                  "--emulated-version=kube=1.36", "--min-compatibility-version=1.35",
                  "--log-flush-frequency=5s", "--disable-http2-serving"],
                 {"emulated_version": "1.36"}, {}, id="defaults-accepted"),
    pytest.param(["--feature-gates=GenericWorkload=true,kube:GangScheduling=true"],
                 {"feature_gates": {"GenericWorkload": True, "GangScheduling": True}}, {},
                 id="gang-gates"),
    pytest.param(["--permit-port-sharing", "--tls-min-version=VersionTLS13"],
                 {"permit_port_sharing": True, "tls_min_version": "VersionTLS13"}, {},
                 id="serving"),
])
def test_flags(argv: list[str], settings: dict[str, Any], config: dict[str, Any]) -> None:
    invocation = interpret(argv)
    assert invocation.settings == settings
    assert invocation.config == config


def test_with_config_deprecated_flags_are_ignored_by_name_but_leader_election_applies() -> None:
    invocation = interpret(["--config=/c.yaml", "--kubeconfig=/k", "--kube-api-qps=5",
                            "--profiling=true", "--leader-elect=false"])
    assert [flag for flag, _ in invocation.ignored] == ["kubeconfig", "kube-api-qps",
                                                        "profiling"]
    assert all("--config" in reason for _, reason in invocation.ignored)
    assert invocation.config == {"leaderElection": {"leaderElect": False}}
    assert "kubeconfig" not in invocation.settings


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--profiling"], "--profiling=true: kpysched serves no /debug/pprof",
                 id="profiling"),
    pytest.param(["--contention-profiling"], "--contention-profiling=true", id="contention"),
    pytest.param(["--tls-cipher-suites=A,B"], "--tls-cipher-suites=A,B: not implemented",
                 id="cipher-suites"),
    pytest.param(["--tls-sni-cert-key=a.crt,a.key"], "--tls-sni-cert-key", id="sni"),
    pytest.param(["--tls-min-version=VersionTLS10"], "--tls-min-version=VersionTLS10",
                 id="tls10"),
    pytest.param(["--vmodule=foo=4"], "--vmodule", id="vmodule"),
    pytest.param(["--leader-elect-resource-lock=endpoints"], "--leader-elect-resource-lock",
                 id="resource-lock"),
    pytest.param(["--emulated-version=1.36", "--feature-gates=SchedulerAsyncAPICalls=true"],
                 "SchedulerAsyncAPICalls=true: kpysched implements the v1.36 default",
                 id="gate-changed"),
    pytest.param(["--feature-gates=SchedulerAsyncAPICalls=true"],
                 "SchedulerAsyncAPICalls=true: kpysched implements the v1.37 default",
                 id="gate-changed-any-release"),
    pytest.param(["--emulated-version=1.36", "--feature-gates=GangScheduling=true"],
                 "GangScheduling is enabled, but depends on features that are disabled: "
                 "[GenericWorkload]", id="gang-without-workload"),
    pytest.param(["--emulated-version=1.37",
                  "--feature-gates=GenericWorkload=true,GangScheduling=true"],
                 'unknown feature gate "GangScheduling" (kube-scheduler v1.37.2 does not '
                 "know it)", id="gang-gate-folded-in-v1.37"),
    pytest.param(["--emulated-version=1.36",
                  "--feature-gates=TopologyAwareWorkloadScheduling=true"],
                 "TopologyAwareWorkloadScheduling=true: kpysched implements the v1.36 "
                 "default", id="topology-aware-not-implemented"),
    pytest.param(["--emulated-version=1.37", "--feature-gates=NodeDeclaredFeatures=false"],
                 "cannot set feature gate NodeDeclaredFeatures to false, feature is locked "
                 "to true", id="locked-ga-gate"),
    pytest.param(["--emulated-version=1.36", "--feature-gates=DynamicResourceAllocation=false"],
                 "cannot set feature gate DynamicResourceAllocation to false, feature is "
                 "locked to true", id="locked-ga-gate-v1.36"),
    pytest.param(["--emulated-version=1.37", "--feature-gates=DRADeviceTaints=false"],
                 "DRADeviceTaints=false: kpysched implements the v1.37 default "
                 "(DRADeviceTaints=true) only", id="unlocked-ga-gate-changed"),
    pytest.param(["--emulated-version=kube=1.36.4"], "patch version not allowed",
                 id="emulated-patch"),
    pytest.param(["--emulated-version=wardle=1.36"], "component not registered",
                 id="emulated-component"),
    pytest.param(["--emulated-version=kube=1.36,kube=1.37"], "duplicate version flag",
                 id="emulated-twice"),
    pytest.param(["--emulated-version=1.38"],
                 "kpysched implements kube-scheduler 1.36 (v1.36.4), 1.37 (v1.37.2), not 1.38",
                 id="emulated-newer"),
    pytest.param(["--min-compatibility-version=1.37"],
                 "--min-compatibility-version=1.37: kpysched as kube-scheduler 1.37 accepts "
                 "1.35 or 1.36, not 1.37", id="min-compat-1.37"),
    pytest.param(["--feature-gates=Bogus=true"], 'unknown feature gate "Bogus"',
                 id="gate-unknown"),
    pytest.param(["--feature-gates=wardle:A=true"], 'unknown component "wardle"',
                 id="gate-component"),
    pytest.param(["--emulated-version=1.35"], "--emulated-version=1.35", id="emulated"),
    pytest.param(["--min-compatibility-version=1.33"], "--min-compatibility-version",
                 id="min-compat"),
    pytest.param(["--show-hidden-metrics-for-version=1.35"],
                 "--show-hidden-metrics-for-version", id="hidden-metrics"),
    pytest.param(["--allow-metric-labels=m,l=v"], "--allow-metric-labels", id="metric-labels"),
    pytest.param(["--http2-max-streams-per-connection=100"],
                 "--http2-max-streams-per-connection", id="http2-streams"),
    pytest.param(["--log-json-split-stream"], "--log-json-split-stream", id="split-stream"),
    pytest.param(["--logging-format=xml"], "--logging-format=xml", id="logging-format"),
    pytest.param(["--bind-address=localhost"], "--bind-address=localhost: must be an IP",
                 id="bind-address"),
    pytest.param(["-v=2", "--log-level=debug"], "--v and --log-level", id="v-and-log-level"),
    pytest.param(["--version=v1.2.3"], "--version=v1.2.3", id="version-set"),
    pytest.param(["--kube-api-content-type=text/yaml"], "--kube-api-content-type",
                 id="content-type"),
])
def test_refused(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as raised:
        interpret(argv)
    assert message in str(raised.value)


def test_one_shot_actions() -> None:
    assert interpret(["--help"]).show_help
    assert interpret(["--version"]).show_version == "true"
    assert interpret(["--version=false"]).show_version is None
    assert interpret(["--write-config-to=/tmp/x"]).write_config_to == Path("/tmp/x")


def test_the_content_type_flag_says_it_changes_nothing_on_the_wire() -> None:
    invocation = interpret(["--kube-api-content-type=application/json"])
    assert invocation.config == {"clientConnection": {"contentType": "application/json"}}
    assert [flag for flag, _ in invocation.ignored] == ["kube-api-content-type"]


def test_decision_record_flags_set_their_settings() -> None:
    invocation = interpret(["--decision-records=50", "--enable-decision-endpoint"])
    assert invocation.settings == {"decision_records": 50, "enable_decision_endpoint": True}
    with pytest.raises(FlagError, match="--decision-records=-1: must be 0 or more"):
        interpret(["--decision-records=-1"])


def test_requestheader_flags_set_their_settings() -> None:
    # As kube-scheduler's: the front-proxy flags an aggregated API server takes.
    invocation = interpret([
        "--requestheader-client-ca-file=/pki/front-proxy-ca.crt",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group,X-Other-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-uid-headers=X-Remote-Uid"])
    assert invocation.settings == {
        "requestheader_client_ca_file": "/pki/front-proxy-ca.crt",
        "requestheader_allowed_names": ["front-proxy-client"],
        "requestheader_username_headers": ["X-Remote-User"],
        "requestheader_group_headers": ["X-Remote-Group", "X-Other-Group"],
        "requestheader_extra_headers_prefix": ["X-Remote-Extra-"],
        "requestheader_uid_headers": ["X-Remote-Uid"]}


@pytest.mark.parametrize("form", ["1.36", "v1.36", "kube=1.36", "kube=v1.36", "kube=1.36.0"])
def test_emulated_version_forms_kube_scheduler_accepts(form: str) -> None:
    invocation = interpret([f"--emulated-version={form}"])
    assert invocation.release == 36
    assert invocation.settings == {"emulated_version": "1.36"}


def test_without_a_release_gates_one_release_takes_wait_for_the_cluster() -> None:
    """v1.36 takes GangScheduling, v1.37 does not: the check waits for /version."""
    invocation = interpret(["--feature-gates=GenericWorkload=true,GangScheduling=true"])
    assert invocation.release is None
    assert invocation.feature_gates == {"GenericWorkload": "true", "GangScheduling": "true"}
    assert invocation.settings == {
        "feature_gates": {"GenericWorkload": True, "GangScheduling": True}}


@pytest.mark.parametrize(("release", "gates"), [
    pytest.param(37, "GenericWorkload=true", id="v1.37-workload"),
    pytest.param(37, "NodeDeclaredFeatures=true,DynamicResourceAllocation=true",
                 id="v1.37-ga-gates-at-their-default"),
    pytest.param(37, "StorageCapacityScoring=true,VolumeLimitScaling=true",
                 id="v1.37-beta-defaults"),
    pytest.param(36, "StorageCapacityScoring=false,GangScheduling=false",
                 id="v1.36-defaults"),
])
def test_gates_a_release_accepts(release: int, gates: str) -> None:
    interpret([f"--emulated-version=1.{release}", f"--feature-gates={gates}"])
