"""pflag syntax as kube-scheduler's command line reads it."""

from __future__ import annotations

import pytest

from kpysched.config.flags.parser import FlagError, Value, parse
from kpysched.config.flags.table import FLAGS


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param(["--leader-elect=false"], {"leader-elect": False}, id="bool-equals"),
    pytest.param(["--leader-elect"], {"leader-elect": True}, id="bool-bare"),
    pytest.param(["--leader-elect=t", "--profiling=0"], {"leader-elect": True,
                                                          "profiling": False},
                 id="bool-go-spellings"),
    pytest.param(["--leader-elect", "--secure-port", "1234"],
                 {"leader-elect": True, "secure-port": 1234}, id="bool-bare-then-flag"),
    pytest.param(["--secure-port=0"], {"secure-port": 0}, id="int-equals"),
    pytest.param(["--kubeconfig", "/etc/kubernetes/scheduler.conf"],
                 {"kubeconfig": "/etc/kubernetes/scheduler.conf"}, id="string-space"),
    pytest.param(["--kube-api-qps=12.5"], {"kube-api-qps": 12.5}, id="float"),
    pytest.param(["--leader-elect-lease-duration=1m30s"],
                 {"leader-elect-lease-duration": 90.0}, id="duration"),
    pytest.param(["-v=4"], {"v": 4}, id="shorthand-equals"),
    pytest.param(["-v", "2"], {"v": 2}, id="shorthand-space"),
    pytest.param(["-v5"], {"v": 5}, id="shorthand-attached"),
    pytest.param(["--v=3"], {"v": 3}, id="long-v"),
    pytest.param(["-h"], {"help": True}, id="help-shorthand"),
    pytest.param(["--authorization-always-allow-paths=/healthz,/metrics",
                  "--authorization-always-allow-paths", "/debug/*"],
                 {"authorization-always-allow-paths": ("/healthz", "/metrics", "/debug/*")},
                 id="list-accumulates"),
    pytest.param(["--feature-gates=A=true,kube:B=false", "--feature-gates", "A=false"],
                 {"feature-gates": {"A": "false", "kube:B": "false"}}, id="map-merges"),
    pytest.param(["--config=a", "--config=b"], {"config": "b"}, id="last-wins"),
    pytest.param(["--version"], {"version": "true"}, id="version-bare"),
    pytest.param(["--version=raw"], {"version": "raw"}, id="version-raw"),
    pytest.param(["--bind-address=", "--"], {"bind-address": ""}, id="empty-and-end"),
])
def test_parse(argv: list[str], expected: dict[str, Value]) -> None:
    assert parse(argv, FLAGS).values == expected


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--no-such-flag"], "unknown flag: --no-such-flag", id="unknown"),
    pytest.param(["--no-such-flag=1"], "unknown flag: --no-such-flag", id="unknown-value"),
    pytest.param(["-x"], "unknown shorthand flag: 'x'", id="unknown-shorthand"),
    pytest.param(["--secure-port"], "flag needs an argument: --secure-port", id="missing"),
    pytest.param(["--secure-port=ten"], 'invalid argument "ten" for "--secure-port"',
                 id="not-int"),
    pytest.param(["--leader-elect=yes"], 'invalid argument "yes" for "--leader-elect"',
                 id="not-bool"),
    pytest.param(["--leader-elect-retry-period=2"],
                 'invalid argument "2" for "--leader-elect-retry-period"', id="not-duration"),
    pytest.param(["--feature-gates=Oops"], '"Oops" is not key=value', id="bad-map"),
    pytest.param(["run"], 'unexpected argument "run"', id="positional"),
    pytest.param(["--", "extra"], 'unexpected argument "extra"', id="after-end"),
])
def test_parse_errors_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError, match=message.replace("(", r"\(").replace("*", r"\*")):
        parse(argv, FLAGS)


def test_every_kube_scheduler_flag_is_in_the_table() -> None:
    """The flag names of `kube-scheduler --help` (v1.36.4), all accepted or refused."""
    upstream = {
        "config", "master", "write-config-to", "bind-address", "cert-dir",
        "disable-http2-serving", "http2-max-streams-per-connection", "permit-address-sharing",
        "permit-port-sharing", "secure-port", "tls-cert-file", "tls-cipher-suites",
        "tls-curve-preferences", "tls-min-version", "tls-private-key-file", "tls-sni-cert-key",
        "authentication-kubeconfig", "authentication-skip-lookup",
        "authentication-token-webhook-cache-ttl", "authentication-tolerate-lookup-failure",
        "client-ca-file", "requestheader-allowed-names", "requestheader-client-ca-file",
        "requestheader-extra-headers-prefix", "requestheader-group-headers",
        "requestheader-uid-headers", "requestheader-username-headers",
        "authorization-always-allow-paths", "authorization-kubeconfig",
        "authorization-webhook-cache-authorized-ttl",
        "authorization-webhook-cache-unauthorized-ttl", "contention-profiling",
        "kube-api-burst", "kube-api-content-type", "kube-api-qps", "kubeconfig",
        "pod-max-in-unschedulable-pods-duration", "profiling", "leader-elect",
        "leader-elect-lease-duration", "leader-elect-renew-deadline",
        "leader-elect-resource-lock", "leader-elect-resource-name",
        "leader-elect-resource-namespace", "leader-elect-retry-period", "emulated-version",
        "feature-gates", "min-compatibility-version", "allow-metric-labels",
        "allow-metric-labels-manifest", "disabled-metrics", "show-hidden-metrics-for-version",
        "log-flush-frequency", "log-json-info-buffer-size", "log-json-split-stream",
        "log-text-info-buffer-size", "log-text-split-stream", "logging-format", "v",
        "vmodule", "help", "version",
    }
    assert upstream <= {flag.name for flag in FLAGS}
