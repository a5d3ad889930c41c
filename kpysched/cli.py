"""Command line entry point: `kpysched run|version`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from pydantic import ValidationError

from kpysched import __version__

EXIT_CONFIG_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kpysched", description="Kubernetes scheduler in Python")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("version", help="print the kpysched version")
    run = commands.add_parser("run", help="run the scheduler")
    run.add_argument("--kubeconfig", type=Path,
                     help="kubeconfig file (default: $KUBECONFIG, else in-cluster config)")
    run.add_argument("--config", type=Path,
                     help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) YAML")
    run.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    run.add_argument("--log-format", choices=["auto", "json", "console"])
    run.add_argument("--bind-address", help="address of /healthz /livez /readyz /metrics")
    run.add_argument("--secure-port", type=int,
                     help="port of the health and metrics endpoint (default 10259; 0 = any)")
    run.add_argument("--tls-cert-file", type=Path, help="serve HTTPS with this certificate")
    run.add_argument("--tls-private-key-file", type=Path, help="key for --tls-cert-file")
    run.add_argument("--event-loop", choices=["uvloop", "asyncio"],
                     help="event loop implementation (default uvloop)")
    return parser


def _run(args: argparse.Namespace) -> int:
    # Imported here so `kpysched version` stays instant.
    from kpysched import app, logs
    from kpysched.config import ConfigError, Settings, load_config
    from kpysched.framework.registry import RegistryError, full_registry
    from kpysched.plugins import IN_TREE

    overrides = {key: value for key, value in (
        ("kubeconfig", args.kubeconfig), ("config", args.config),
        ("log_level", args.log_level), ("log_format", args.log_format),
        ("bind_address", args.bind_address), ("secure_port", args.secure_port),
        ("tls_cert_file", args.tls_cert_file),
        ("tls_private_key_file", args.tls_private_key_file),
        ("event_loop", args.event_loop)) if value is not None}
    try:
        settings = Settings(**overrides)
    except ValidationError as error:
        print(f"error: invalid settings: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    logs.configure(settings.log_level, settings.log_format)
    try:
        registry = full_registry(IN_TREE)
        config, profiles = load_config(settings.config, registry)
    except (ConfigError, RegistryError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    main_coroutine = app.run(settings, config, profiles, registry)
    try:
        if settings.event_loop == "uvloop":
            import uvloop

            return uvloop.run(main_coroutine)
        return asyncio.run(main_coroutine)
    except KeyboardInterrupt:
        return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "version":
        print(f"kpysched {__version__}")
        return 0
    if args.command == "run":
        return _run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
