"""Process settings: where the kubeconfig and the scheduler configuration live, how
to serve and how to log. Environment variables `KPYSCHED_<FIELD>`; the CLI passes its
flags as keyword arguments, which take precedence over the environment. Durations
may be written as Go durations ("10s") or seconds; lists as comma-separated text."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from kpysched.config.features import (
    NEWEST_RELEASE,
    RELEASE_DEPENDS_ON,
    RELEASE_SWITCHABLE,
    RELEASES,
    SWITCHABLE,
    Features,
)
from kpysched.config.release import ReleaseError, emulated_release
from kpysched.config.scheduler_config import SchedulerConfiguration
from kpysched.objects.durations import parse_go_duration


def _seconds(value: object) -> object:
    return parse_go_duration(value) if isinstance(value, str) else value


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]
CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KPYSCHED_", extra="forbid")

    kubeconfig: Path | None = None
    config: Path | None = None  # a KubeSchedulerConfiguration file; None = upstream defaults
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "console"] = "auto"  # auto: console on a terminal
    master: str | None = None  # overrides the kubeconfig's server, as --master does
    # Health and metrics endpoint, as kube-scheduler's secure port: HTTPS (a self-signed
    # certificate unless one is given) with delegated authentication and authorization.
    # secure_port 0 serves nothing at all, as upstream.
    bind_address: str = "0.0.0.0"
    secure_port: int = Field(default=10259, ge=0, le=65535)
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    cert_dir: Path | None = None
    tls_min_version: Literal["VersionTLS12", "VersionTLS13"] | None = None
    permit_address_sharing: bool = False
    permit_port_sharing: bool = False
    # Plain HTTP, no authentication: for local runs only, so bound to loopback (the
    # bind address defaults to 127.0.0.1 with it; any other address is refused).
    insecure_serving: bool = False
    authentication_kubeconfig: Path | None = None
    authorization_kubeconfig: Path | None = None
    authentication_token_webhook_cache_ttl: Seconds = 10.0
    authorization_webhook_cache_authorized_ttl: Seconds = 10.0
    authorization_webhook_cache_unauthorized_ttl: Seconds = 10.0
    authorization_always_allow_paths: CommaList = ("/healthz", "/readyz", "/livez")
    client_ca_file: Path | None = None
    authentication_skip_lookup: bool = False
    authentication_tolerate_lookup_failure: bool = True
    # Front-proxy authentication (kpysched.serving.requestheader): without the CA file
    # the whole configuration is read from the cluster (extension-apiserver-authentication).
    requestheader_client_ca_file: Path | None = None
    requestheader_allowed_names: CommaList = ()
    requestheader_username_headers: CommaList = ("x-remote-user",)
    requestheader_uid_headers: CommaList = ("x-remote-uid",)
    requestheader_group_headers: CommaList = ("x-remote-group",)
    requestheader_extra_headers_prefix: CommaList = ("x-remote-extra-",)
    # Metric families left out of /metrics (names as exposed, e.g. "..._total").
    disabled_metrics: CommaList = ()
    # Pods unschedulable this long are retried anyway (upstream's deprecated flag).
    pod_max_in_unschedulable_pods_duration: Seconds = 300.0
    event_loop: Literal["uvloop", "asyncio"] = "uvloop"
    # --feature-gates kpysched may turn on (kpysched.config.features.SWITCHABLE), name -> on.
    feature_gates: dict[str, bool] = {}
    # The kube-scheduler release to behave as, as --emulated-version writes it ("1.36",
    # "kube=1.37"); None: the API server's minor, read at start (config.release).
    emulated_version: str | None = None
    # /livez fails when pods wait but the scheduling loop decided nothing for this long.
    liveness_stall_seconds: float = Field(default=60.0, gt=0)
    # A scheduling cycle longer than this is logged (scheduling_cycle.slow, with the
    # plugin that took the most of it) and counted in kpysched_slow_cycles_total.
    slow_cycle_seconds: float = Field(default=1.0, gt=0)
    # A watch silent this long (no event, no bookmark) is a dead connection: relist.
    # The API server sends bookmarks about every 60 s, so keep this above that.
    watch_progress_deadline_seconds: float = Field(default=90.0, gt=0)
    # Decision records for `kpysched explain`: how many scheduling attempts the leader
    # keeps (0 records nothing), and whether /debug/decisions serves them (sensitive:
    # they name pods and nodes; protected like /metrics).
    decision_records: int = Field(default=1000, ge=0)
    # Seeds the choice among equally scored nodes (random, as upstream). Only for
    # reproducing a run, e.g. against `kpysched simulate --seed`: unset in production.
    tie_break_seed: int | None = None
    enable_decision_endpoint: bool = False
    # /debug/cache: the leader's cache (nodes, pods by uid) and queue sizes, for
    # checking it against the API server (kpysched.cache.dump). Off, as upstream's
    # debugging handlers are: it names every pod.
    enable_cache_endpoint: bool = False
    # The pod this replica runs in (the chart sets both from the downward API). The
    # leader labels it so the decisions API's Service reaches only the leader
    # (kpysched.writes.leader_label); unset outside a pod.
    pod_name: str | None = None
    pod_namespace: str | None = None

    @model_validator(mode="after")
    def _tls_pair(self) -> Self:
        if (self.tls_cert_file is None) != (self.tls_private_key_file is None):
            raise ValueError("tls_cert_file and tls_private_key_file go together "
                             "(--tls-cert-file, --tls-private-key-file): got only one")
        return self

    @model_validator(mode="after")
    def _insecure_on_loopback_only(self) -> Self:
        # Plain HTTP without authentication serves /metrics and the debug endpoints to
        # whoever reaches the port: only this machine may.
        if not self.insecure_serving or _is_loopback(self.bind_address):
            return self
        if "bind_address" in self.model_fields_set:
            raise ValueError(
                f"--insecure-serving serves plain HTTP without authentication, so it binds "
                f"to loopback only (127.0.0.1 or ::1); refusing --bind-address "
                f"{self.bind_address}. Drop --insecure-serving to serve HTTPS with "
                f"delegated authentication on that address")
        self.bind_address = "127.0.0.1"
        return self

    @field_validator("feature_gates")
    @classmethod
    def _switchable(cls, gates: dict[str, bool]) -> dict[str, bool]:
        unknown = sorted(set(gates) - SWITCHABLE)
        if unknown:
            raise ValueError(f"only {sorted(SWITCHABLE)} can be set, not {unknown}")
        return gates

    @field_validator("emulated_version")
    @classmethod
    def _known_release(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return f"1.{emulated_release(value.split(','))}"
        except ReleaseError as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _gates_of_the_release(self) -> Self:
        if self.release is not None:
            self.gate_problems(self.release, raise_first=True)
        return self

    @property
    def release(self) -> int | None:
        """The release --emulated-version (or KPYSCHED_EMULATED_VERSION) names."""
        return None if self.emulated_version is None else int(
            self.emulated_version.split(".")[1])

    def gate_problems(self, release: int, *, raise_first: bool = False) -> list[str]:
        """What keeps `feature_gates` from being `release`'s switchable gates."""
        problems = [f"{name}: kube-scheduler {RELEASES[release]} has no such gate to set"
                    for name in self.feature_gates if name not in RELEASE_SWITCHABLE[release]]
        for name, needed in RELEASE_DEPENDS_ON[release].items():
            if self.feature_gates.get(name) and not all(
                    self.feature_gates.get(need) for need in needed):
                problems.append(f"{name} is enabled, but depends on {list(needed)}")
        if problems and raise_first:
            raise ValueError(problems[0])
        return problems

    def features_for(self, release: int) -> Features:
        """The gates for `release` (check gate_problems first)."""
        return Features.from_gates(self.feature_gates, release)

    @property
    def features(self) -> Features:
        """The features of the release named, else the newest's."""
        return self.features_for(self.release or NEWEST_RELEASE)

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


def kubeconfig_path(settings: Settings, config: SchedulerConfiguration) -> Path | None:
    """The kubeconfig to use: the flag or KPYSCHED_KUBECONFIG, else the file's
    clientConnection.kubeconfig; None means in-cluster (or $KUBECONFIG)."""
    if settings.kubeconfig is not None:
        return settings.kubeconfig
    written = config.client_connection.kubeconfig
    return Path(written) if written else None
