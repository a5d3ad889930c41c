"""Process settings: where the kubeconfig and the scheduler configuration live, and
how to log. Environment variables `KPYSCHED_<FIELD>`; the CLI passes its flags as
keyword arguments, which take precedence over the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kpysched.config.scheduler_config import SchedulerConfiguration


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KPYSCHED_", extra="forbid")

    kubeconfig: Path | None = None
    config: Path | None = None  # a KubeSchedulerConfiguration file; None = upstream defaults
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "console"] = "auto"  # auto: console on a terminal
    # Health and metrics endpoint (kube-scheduler's --bind-address / --secure-port; plain
    # HTTP unless a certificate and key are given).
    bind_address: str = "0.0.0.0"
    secure_port: int = Field(default=10259, ge=0, le=65535)
    tls_cert_file: Path | None = None
    tls_private_key_file: Path | None = None
    event_loop: Literal["uvloop", "asyncio"] = "uvloop"
    # /livez fails when pods wait but the scheduling loop decided nothing for this long.
    liveness_stall_seconds: float = Field(default=60.0, gt=0)
    # A watch silent this long (no event, no bookmark) is a dead connection: relist.
    # The API server sends bookmarks about every 60 s, so keep this above that.
    watch_progress_deadline_seconds: float = Field(default=90.0, gt=0)

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
