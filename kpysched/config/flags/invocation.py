"""What a `kpysched run` command line asks for: Settings overrides, a patch onto the
KubeSchedulerConfiguration, flags ignored (with the reason, logged at start) and the
one-shot actions (--help, --version, --write-config-to).

Precedence: flags > KPYSCHED_* environment variables > the config file. As
kube-scheduler: with --config, the deprecated flags that mirror config fields
(--kubeconfig, --kube-api-*, --profiling, --contention-profiling) are ignored, while
--leader-elect* still override the file. A flag kpysched cannot honour raises
FlagError; nothing is dropped silently.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kpysched.config.features import NEWEST_RELEASE, RELEASES, SWITCHABLE
from kpysched.config.flags.feature_gates import check_gates, form_problems, gate_values
from kpysched.config.flags.parser import FlagError, Parsed, Value, parse
from kpysched.config.flags.table import FLAGS
from kpysched.config.release import ReleaseError, check_min_compatibility, emulated_release
from kpysched.config.tls import TLS_VERSIONS
from kpysched.objects.durations import go_duration

# klog verbosity at and above which kpysched logs debug events.
DEBUG_VERBOSITY: Final = 4
_LOGGING_FORMATS: Final = {"text": "console", "json": "json"}
_CONTENT_TYPES: Final = ("application/json", "application/vnd.kubernetes.protobuf")

# Flags whose value is a Settings field of the same name (dashes to underscores).
_SETTINGS: Final = (
    "config", "master", "bind-address", "secure-port", "cert-dir", "tls-cert-file",
    "tls-private-key-file", "tls-min-version", "permit-address-sharing",
    "permit-port-sharing", "authentication-kubeconfig", "authorization-kubeconfig",
    "authentication-token-webhook-cache-ttl", "authorization-webhook-cache-authorized-ttl",
    "authorization-webhook-cache-unauthorized-ttl", "authorization-always-allow-paths",
    "client-ca-file", "authentication-skip-lookup", "authentication-tolerate-lookup-failure",
    "disabled-metrics", "pod-max-in-unschedulable-pods-duration", "log-level", "log-format",
    "event-loop", "insecure-serving", "decision-records", "enable-decision-endpoint",
    "enable-cache-endpoint", "requestheader-client-ca-file", "requestheader-allowed-names",
    "requestheader-username-headers", "requestheader-uid-headers",
    "requestheader-group-headers", "requestheader-extra-headers-prefix",
)
# Deprecated flags mirroring a config field (ignored with --config).
_DEPRECATED: Final = {
    "kubeconfig": ("clientConnection", "kubeconfig"),
    "kube-api-qps": ("clientConnection", "qps"),
    "kube-api-burst": ("clientConnection", "burst"),
    "kube-api-content-type": ("clientConnection", "contentType"),
    "profiling": ("enableProfiling",),
    "contention-profiling": ("enableContentionProfiling",),
}
_ELECTION: Final = {
    "leader-elect": "leaderElect",
    "leader-elect-lease-duration": "leaseDuration",
    "leader-elect-renew-deadline": "renewDeadline",
    "leader-elect-retry-period": "retryPeriod",
    "leader-elect-resource-lock": "resourceLock",
    "leader-elect-resource-name": "resourceName",
    "leader-elect-resource-namespace": "resourceNamespace",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """`flag` with a value for which `refused(value, parsed)` holds stops start-up."""

    flag: str
    refused: Callable[[Value, Parsed], bool]
    reason: str


def _set(value: Value, _: Parsed) -> bool:
    return bool(value)


def _not_ip(value: Value, _: Parsed) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return True
    return False


REFUSALS: Final[tuple[Refusal, ...]] = (
    Refusal("bind-address", _not_ip, "must be an IP address"),
    Refusal("profiling", lambda v, p: v is True and "config" not in p.values,
            "kpysched serves no /debug/pprof endpoints; pass --profiling=false"),
    Refusal("contention-profiling",
            lambda v, p: v is True and "config" not in p.values
            and p.values.get("profiling") is not False,
            "kpysched serves no /debug/pprof endpoints; pass --profiling=false"),
    Refusal("kube-api-content-type", lambda v, _: v not in _CONTENT_TYPES,
            f"must be one of {', '.join(_CONTENT_TYPES)}"),
    Refusal("leader-elect-resource-lock", lambda v, _: v != "leases",
            'only "leases" exists in kube-scheduler'),
    Refusal("tls-min-version", lambda v, _: v not in TLS_VERSIONS,
            f"kpysched supports {' and '.join(TLS_VERSIONS)} (Python's ssl refuses older)"),
    Refusal("tls-cipher-suites", _set, "not implemented: Python's ssl default suites apply"),
    Refusal("tls-curve-preferences", _set, "not implemented: Python's ssl defaults apply"),
    Refusal("tls-sni-cert-key", _set, "not implemented: one serving certificate only"),
    Refusal("http2-max-streams-per-connection", lambda v, _: v != 0,
            "kpysched serves HTTP/1.1 only"),
    Refusal("allow-metric-labels", _set, "not implemented"),
    Refusal("allow-metric-labels-manifest", _set, "not implemented"),
    Refusal("show-hidden-metrics-for-version", _set, "kpysched hides no metrics"),
    Refusal("log-json-info-buffer-size", lambda v, _: v not in ("", "0"),
            "not implemented (alpha upstream)"),
    Refusal("log-text-info-buffer-size", lambda v, _: v not in ("", "0"),
            "not implemented (alpha upstream)"),
    Refusal("log-json-split-stream", _set, "not implemented (alpha upstream)"),
    Refusal("log-text-split-stream", _set, "not implemented (alpha upstream)"),
    Refusal("logging-format", lambda v, _: v not in _LOGGING_FORMATS, "must be text or json"),
    Refusal("vmodule", _set, "not implemented: per-file verbosity is klog's"),
    Refusal("v", lambda v, _: not isinstance(v, int) or v < 0, "must be 0 or more"),
    Refusal("decision-records", lambda v, _: not isinstance(v, int) or v < 0,
            "must be 0 or more"),
    Refusal("version", lambda v, _: v not in ("true", "false", "raw"),
            "kpysched reports its own version only (true, false or raw)"),
)


@dataclass(slots=True)
class Invocation:
    settings: dict[str, Any] = field(default_factory=dict)  # Settings keyword overrides
    config: dict[str, Any] = field(default_factory=dict)  # patch onto the config document
    # Flags given but without effect: (flag, why), each logged as flag.ignored at start.
    ignored: list[tuple[str, str]] = field(default_factory=list)
    write_config_to: Path | None = None
    show_help: bool = False
    show_version: str | None = None  # "true" or "raw"
    # The release --emulated-version names (None: the cluster's, read at start).
    release: int | None = None
    # --feature-gates as written, to be checked (check_gates) once the release is known
    # when --emulated-version does not say it.
    feature_gates: dict[str, str] = field(default_factory=dict)


def interpret(argv: Sequence[str]) -> Invocation:
    """The Invocation `argv` (flags only, no command word) asks for; FlagError if any
    flag is unknown, malformed or one kpysched cannot honour."""
    parsed = parse(argv, FLAGS)
    values = parsed.values
    problems = [f"--{r.flag}={_show(values[r.flag])}: {r.reason}"
                for r in REFUSALS if r.flag in values and r.refused(values[r.flag], parsed)]
    release, version_problems = _release(values)
    problems += version_problems
    gates = values.get("feature-gates")
    gates = dict(gates) if isinstance(gates, dict) else {}
    problems += [f"--feature-gates: {problem}" for problem in _gate_problems(gates, release)]
    for flag, other in (("v", "log-level"), ("logging-format", "log-format")):
        if flag in values and other in values:
            problems.append(f"--{flag} and --{other} both set the log "
                            f"{'level' if flag == 'v' else 'format'}: give one")
    if problems:
        raise FlagError("; ".join(problems))

    invocation = Invocation(show_help=values.get("help") is True, release=release,
                            feature_gates=gates)
    if release is not None:
        invocation.settings["emulated_version"] = f"1.{release}"
    version = values.get("version")
    if version in ("true", "raw"):
        invocation.show_version = str(version)
    for flag in _SETTINGS:
        if flag in values:
            invocation.settings[flag.replace("-", "_")] = _setting(values[flag])
    switched = {name: on for name, on in gate_values(gates).items() if name in SWITCHABLE}
    if switched:
        invocation.settings["feature_gates"] = switched
    if "v" in values:
        verbosity = values["v"]
        assert isinstance(verbosity, int)
        invocation.settings["log_level"] = "debug" if verbosity >= DEBUG_VERBOSITY else "info"
    if "logging-format" in values:
        invocation.settings["log_format"] = _LOGGING_FORMATS[str(values["logging-format"])]
    if "write-config-to" in values:
        invocation.write_config_to = Path(str(values["write-config-to"]))
    with_config = "config" in values
    for flag, path in _DEPRECATED.items():
        if flag not in values:
            continue
        if with_config:
            invocation.ignored.append((flag, "ignored because --config is given (as "
                                       f"kube-scheduler does): set {'.'.join(path)} in "
                                       "the file instead"))
            continue
        _put(invocation.config, path, values[flag])
        if flag == "kube-api-content-type":
            invocation.ignored.append((flag, "recorded in clientConnection.contentType, but "
                                       "kpysched speaks JSON to the API server whatever "
                                       "the content type"))
        if flag == "kubeconfig":  # a flag outranks KPYSCHED_KUBECONFIG
            invocation.settings["kubeconfig"] = Path(str(values[flag]))
    for flag, name in _ELECTION.items():
        if flag in values:
            value = values[flag]
            _put(invocation.config, ("leaderElection", name),
                 go_duration(value) if isinstance(value, float) else value)
    return invocation


def _release(values: dict[str, Value]) -> tuple[int | None, list[str]]:
    """The release --emulated-version names (None when not given) and the problems of
    both version flags."""
    release, problems = None, []
    for flag in ("emulated-version", "min-compatibility-version"):
        items = values.get(flag)
        if not isinstance(items, tuple) or not items:
            continue
        try:
            if flag == "emulated-version":
                release = emulated_release(items)
            else:
                check_min_compatibility(items, NEWEST_RELEASE if release is None else release)
        except ReleaseError as error:
            problems.append(f"--{flag}={_show(items)}: {error}")
    return release, problems


def _gate_problems(gates: dict[str, str], release: int | None) -> list[str]:
    """Problems now: for the release named, or, when the cluster will name it, those
    every release would find (reported as the newest's). The rest wait for the
    release (cli checks them once it is known)."""
    if not gates:
        return []
    if release is not None:
        return check_gates(gates, release)
    form = form_problems(gates)
    if form:
        return form
    per_release = {minor: check_gates(gates, minor) for minor in RELEASES}
    if all(per_release.values()):
        return per_release[NEWEST_RELEASE]
    return []


def _setting(value: Value) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _put(document: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        document = document.setdefault(key, {})
    document[path[-1]] = value


def _show(value: Value) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
