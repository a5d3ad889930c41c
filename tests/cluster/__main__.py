"""`python -m tests.cluster build|up|down|restart-apiserver [--dir DIR]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.cluster import build, cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("build", help="build etcd, kube-apiserver, kube-scheduler and helm")
    for name, text in (
        ("up", "start etcd and kube-apiserver on loopback"),
        ("down", "stop the cluster and remove its directory"),
        ("restart-apiserver", "restart kube-apiserver, keeping etcd and its data"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("--dir", type=Path, default=cluster.DEFAULT_DIR,
                         help="cluster state directory (default: .cluster/)")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build.ensure_built())
        elif args.command == "up":
            state = cluster.up(args.dir)
            print(f"kube-apiserver {state.kubernetes_version} ready at {state.server}")
            print(f"kubeconfig: {state.kubeconfig}")
            print(f"  export KUBECONFIG={state.kubeconfig}")
        elif args.command == "down":
            cluster.down(args.dir)
            print(f"cluster in {args.dir} stopped and removed")
        elif args.command == "restart-apiserver":
            state = cluster.restart_apiserver(args.dir)
            print(f"kube-apiserver restarted at {state.server}")
    except (cluster.ClusterError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
