"""`python -m tests.cluster.realnode build`: build (or find cached) the real node's programs.

scripts/setup.sh runs it so the first `up --with-node` does not pay for the build.
"""

from __future__ import annotations

import argparse
import sys

from tests.cluster.realnode import build


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.realnode",
                                     description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="kubelet, containerd, runc, CNI plugins and the images")
    parser.parse_args(argv)
    try:
        print(build.ensure_built())
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
