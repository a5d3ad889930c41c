"""Command line entry point: `kpysched run [flags]` (also `kpysched [flags]`, so a
kube-scheduler manifest works with only the binary name changed) and `kpysched version`;
`kpysched explain`, `snapshot` and `simulate` go to explain/ and simulate/, and
`kubectl_plugin` is the `kubectl-kpysched` command.

Exit codes: 0 done, 1 the scheduler failed while running, 2 the command line or the
configuration is wrong (the message names the flag or field).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kpysched import __version__, gc_policy

if TYPE_CHECKING:
    from kpysched.config import Settings
    from kpysched.config.features import Features

EXIT_CONFIG_ERROR = 2

USAGE = """\
usage: kpysched run [flags]              run the scheduler (the word "run" may be left out)
       kpysched explain NAMESPACE/POD    why the scheduler placed a pod where it did, or
                                         why it is pending (--help for more)
       kpysched snapshot                 write the cluster's scheduling state as JSON
       kpysched simulate                 where pods would go, without writing anything
       kpysched version                  print the version
"""


def flags_version(release: int | None = None) -> str:
    """The kube-scheduler release whose flags and configuration kpysched reads as
    (the newest when no release is named)."""
    from kpysched.config.features import NEWEST_RELEASE, RELEASES

    return RELEASES[NEWEST_RELEASE if release is None else release]


def _help(release: int | None = None) -> str:
    from kpysched.config.features import RELEASES
    from kpysched.config.flags.table import FLAGS

    releases = " or ".join(RELEASES.values())
    lines = [USAGE, f"kpysched accepts kube-scheduler's flags ({flags_version(release)}) "
             "with their meaning; one it cannot honour stops start-up with exit code 2.",
             f"It behaves as kube-scheduler {releases}: the one --emulated-version names, "
             "else the API server's minor (GET /version at start), else the newest.",
             "Precedence: flags > KPYSCHED_<FLAG> environment variables > --config file.",
             "Serving is HTTPS with delegated authentication and authorization, as "
             "kube-scheduler's; --insecure-serving (KPYSCHED_INSECURE_SERVING=true) serves "
             "plain HTTP without authentication on loopback only, for local runs.", ""]
    section = ""
    for flag in FLAGS:
        if flag.section != section:
            section = flag.section
            lines.append(f"\n{section} flags:\n")
        short = f"-{flag.shorthand}, " if flag.shorthand else "    "
        default = f" (default {flag.default})" if flag.default else ""
        lines.append(f"  {short}--{flag.name} {flag.kind.value}\n        {flag.help}{default}")
    return "\n".join(lines) + "\n"


def _version(raw: bool, release: int | None = None) -> str:
    text = f"kpysched {__version__}"
    if raw:
        text += f" (kube-scheduler {flags_version(release)} flags and configuration)"
    return text


def _run(argv: Sequence[str]) -> int:
    # Imported here so `kpysched version` stays instant; frozen for good (gc_policy).
    with gc_policy.importing():
        import structlog
        from pydantic import ValidationError

        from kpysched import app, logs
        from kpysched.config import ConfigError, Settings, kubeconfig_path, load_config
        from kpysched.config.flags import FlagError, interpret
        from kpysched.config.release import ReleaseError
        from kpysched.config.written import write_config
        from kpysched.framework.registry import RegistryError, full_registry
        from kpysched.plugins import IN_TREE
        from kpysched.serving import ServingError
        from kpysched.serving.limits import raise_open_files_limit

    try:
        invocation = interpret(argv)
    except FlagError as error:
        print(f"error: {error}", file=sys.stderr)
        print("Run 'kpysched run --help' for the flags.", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    if invocation.show_help:
        print(_help(invocation.release), end="")
        return 0
    if invocation.show_version is not None:
        print(_version(invocation.show_version == "raw", invocation.release))
        return 0
    try:
        settings = Settings(**invocation.settings)
    except ValidationError as error:
        # One line per problem, in the words of the check (no pydantic boilerplate).
        for item in error.errors(include_url=False):
            field = ".".join(str(part) for part in item["loc"])
            reason = item["msg"].removeprefix("Value error, ")
            print(f"error: invalid settings: {f'{field}: ' if field else ''}{reason}",
                  file=sys.stderr)
        return EXIT_CONFIG_ERROR
    logs.configure(settings.log_level, settings.log_format)
    log = structlog.get_logger("kpysched.cli")
    # As Go's runtime does for kube-scheduler at start: API connections and the secure
    # port's share this limit, and the default soft one (often 1024) is soon reached.
    raise_open_files_limit()
    for flag, reason in invocation.ignored:
        log.warning("flag.ignored", flag=f"--{flag}", reason=reason)
    try:
        registry = full_registry(IN_TREE)
        features = _features(settings, invocation.feature_gates, invocation.config,
                             write_only=invocation.write_config_to is not None)
        config, profiles = load_config(settings.config, registry, invocation.config,
                                       features)
    except (ConfigError, RegistryError, ReleaseError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except KeyboardInterrupt:  # Ctrl-C while it waited for the API server's /version
        log.info("scheduler.stopped", reason="interrupted before start")
        return 0
    if invocation.write_config_to is not None:
        try:
            write_config(invocation.write_config_to, config, kubeconfig_path(settings, config),
                         features.release, profiles=profiles, features=features)
        except OSError as error:
            print(f"error: --write-config-to {invocation.write_config_to}: {error.strerror}",
                  file=sys.stderr)
            return EXIT_CONFIG_ERROR
        log.info("config.written", file=str(invocation.write_config_to))
        return 0
    main_coroutine = app.run(settings, config, profiles, registry, features)
    try:
        if settings.event_loop == "uvloop":
            import uvloop

            return uvloop.run(main_coroutine)
        return asyncio.run(main_coroutine)
    except (ServingError, ConfigError) as error:  # ConfigError: an extender's certificates
        print(f"error: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    except KeyboardInterrupt:
        return 0


def _features(settings: Settings, gates: Mapping[str, str],
              overrides: Mapping[str, Any], *, write_only: bool = False) -> Features:
    """The release to behave as (--emulated-version, else the API server's /version,
    logged as release.selected) and its gates: ReleaseError for a control plane kpysched
    cannot serve or gates that release does not take."""
    from kpysched import app
    from kpysched.config import kubeconfig_path
    from kpysched.config.flags.feature_gates import check_gates
    from kpysched.config.loader import read_config
    from kpysched.config.release import SOURCE_FLAG, Choice, ReleaseError

    if settings.release is not None:
        choice = Choice(settings.release, SOURCE_FLAG)
    else:
        # The API server is found as the scheduler will find it: the file's
        # clientConnection.kubeconfig unless a flag says otherwise.
        config = read_config(settings.config, overrides)
        choice = asyncio.run(app.detect_release(
            kubeconfig_path(settings, config), settings.master,
            deadline=0.0 if write_only else app.RUN_VERSION_DEADLINE_SECONDS))
    app.log_release(choice)
    problems = [f"--feature-gates: {problem}"
                for problem in check_gates(gates, choice.release)] if gates else []
    if not gates:  # gates from KPYSCHED_FEATURE_GATES (flags are checked above)
        problems += settings.gate_problems(choice.release)
    if problems:
        raise ReleaseError(f"as kube-scheduler {flags_version(choice.release)}: "
                           + "; ".join(problems))
    return settings.features_for(choice.release)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["version"]:
        print(_version(raw=False))
        return 0
    if args[:1] == ["run"]:
        return _run(args[1:])
    if args[:1] == ["explain"]:
        from kpysched.explain.cli import main as explain

        return explain(args[1:])
    if args[:1] in (["snapshot"], ["simulate"]):
        from kpysched.simulate.cli import main as simulate

        return simulate(args)
    if not args or args[0].startswith("-"):
        # kube-scheduler takes flags only: `kpysched --leader-elect=true ...` runs.
        return _run(args)
    print(f'error: unknown command "{args[0]}"\n{USAGE}', file=sys.stderr, end="")
    return EXIT_CONFIG_ERROR


KUBECTL_USAGE = """\
usage: kubectl kpysched explain [NAMESPACE/]POD [flags]   (--help for more)
       kubectl kpysched version
"""


def kubectl_plugin(argv: Sequence[str] | None = None) -> int:
    """`kubectl-kpysched`: kubectl runs it with everything after `kubectl kpysched`.
    It lives here, beside `main`, so that explain/ never imports this module back."""
    from kpysched.explain import cli as explain

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["explain"]:
        return explain.main(args[1:], prog="kubectl kpysched explain")
    if args[:1] in (["version"], ["simulate"], ["snapshot"]):
        return main(args)
    sys.stderr.write(KUBECTL_USAGE)
    return 0 if args[:1] in (["-h"], ["--help"], ["help"]) else explain.EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
