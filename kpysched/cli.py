"""Command line entry point: `kpysched version|run`."""

from __future__ import annotations

import argparse
import sys

from kpysched import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kpysched", description="Kubernetes scheduler in Python")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("version", help="print the kpysched version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"kpysched {__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
