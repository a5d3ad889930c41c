from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kpysched.config import Settings, kubeconfig_path, parse_config
from tests.unit.config.fakes import document


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBECONFIG", "CONFIG", "LOG_LEVEL", "LOG_FORMAT"):
        monkeypatch.delenv(f"KPYSCHED_{name}", raising=False)


@pytest.mark.parametrize(("env", "flags", "expected"), [
    pytest.param({}, {}, {"kubeconfig": None, "config": None, "log_level": "info",
                          "log_format": "auto"}, id="defaults"),
    pytest.param({"KPYSCHED_CONFIG": "/etc/kpysched/config.yaml", "KPYSCHED_LOG_LEVEL": "DEBUG"},
                 {}, {"config": Path("/etc/kpysched/config.yaml"), "log_level": "debug"},
                 id="environment"),
    pytest.param({"KPYSCHED_LOG_FORMAT": "json", "KPYSCHED_KUBECONFIG": "/env/kubeconfig"},
                 {"log_format": "console", "kubeconfig": Path("/flag/kubeconfig")},
                 {"log_format": "console", "kubeconfig": Path("/flag/kubeconfig")},
                 id="flags-over-environment"),
])
def test_settings(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], flags: dict[str, Any],
    expected: dict[str, object],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = Settings(**flags)
    assert {name: getattr(settings, name) for name in expected} == expected


def test_other_kpysched_variables_are_not_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPYSCHED_TEST_CLUSTER_DIR", "/tmp/cluster")
    assert Settings().config is None


@pytest.mark.parametrize("flags", [
    pytest.param({"log_format": "xml"}, id="log-format"),
    pytest.param({"log_level": "verbose"}, id="log-level"),
    pytest.param({"kube_config": "/x"}, id="unknown"),
])
def test_invalid_settings(flags: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**flags)


@pytest.mark.parametrize(("flag", "written", "expected"), [
    pytest.param(None, "", None, id="in-cluster"),
    pytest.param(None, "/from/file", Path("/from/file"), id="client-connection"),
    pytest.param(Path("/from/flag"), "/from/file", Path("/from/flag"), id="flag-wins"),
])
def test_kubeconfig_path(flag: Path | None, written: str, expected: Path | None) -> None:
    config = parse_config(document(clientConnection={"kubeconfig": written}))
    assert kubeconfig_path(Settings(kubeconfig=flag), config) == expected


def test_serving_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPYSCHED_INSECURE_SERVING", "true")
    monkeypatch.setenv("KPYSCHED_AUTHORIZATION_ALWAYS_ALLOW_PATHS", "/healthz, /debug/*")
    monkeypatch.setenv("KPYSCHED_AUTHENTICATION_TOKEN_WEBHOOK_CACHE_TTL", "1m30s")
    monkeypatch.setenv("KPYSCHED_DISABLED_METRICS", "a_total,b")
    settings = Settings(authorization_webhook_cache_unauthorized_ttl=2.5)
    assert settings.insecure_serving
    assert settings.authorization_always_allow_paths == ("/healthz", "/debug/*")
    assert settings.authentication_token_webhook_cache_ttl == 90.0
    assert settings.authorization_webhook_cache_unauthorized_ttl == 2.5
    assert settings.disabled_metrics == ("a_total", "b")


def test_a_tls_certificate_needs_its_key() -> None:
    with pytest.raises(ValidationError, match="--tls-private-key-file"):
        Settings(tls_cert_file=Path("/tls.crt"))


@pytest.mark.parametrize(("given", "bound"), [
    pytest.param({}, "127.0.0.1", id="default-becomes-loopback"),
    pytest.param({"bind_address": "127.0.0.1"}, "127.0.0.1", id="ipv4-loopback"),
    pytest.param({"bind_address": "127.0.0.5"}, "127.0.0.5", id="loopback-net"),
    pytest.param({"bind_address": "::1"}, "::1", id="ipv6-loopback"),
])
def test_insecure_serving_binds_to_loopback(given: dict[str, Any], bound: str) -> None:
    assert Settings(insecure_serving=True, **given).bind_address == bound


def test_secure_serving_keeps_binding_all_addresses() -> None:
    assert Settings().bind_address == "0.0.0.0"


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "10.0.0.1"])
def test_insecure_serving_refuses_another_address(address: str) -> None:
    # Issue 31: plain HTTP, no authentication, served /metrics, /debug/decisions and
    # /debug/cache on 0.0.0.0.
    with pytest.raises(ValidationError, match=f"refusing --bind-address {address}"):
        Settings(insecure_serving=True, bind_address=address)


def test_insecure_serving_refuses_an_address_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPYSCHED_BIND_ADDRESS", "0.0.0.0")
    with pytest.raises(ValidationError, match="loopback only"):
        Settings(insecure_serving=True)


def test_the_cli_refuses_insecure_serving_off_loopback_with_exit_2() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kpysched.cli", "run", "--insecure-serving",
         "--bind-address=0.0.0.0", "--kubeconfig=/nonexistent"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "error: invalid settings: --insecure-serving serves plain HTTP without "
        "authentication, so it binds to loopback only (127.0.0.1 or ::1); refusing "
        "--bind-address 0.0.0.0.")
    assert "Traceback" not in result.stderr
