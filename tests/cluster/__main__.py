"""`python -m tests.cluster build|up|down|restart-apiserver|nodes|addon [--dir DIR]`.

`build` and `up` take `--release 1.36|1.37` (tests/cluster/releases.py): the Kubernetes
release of the control plane (default: KPYSCHED_TEST_RELEASE, else 1.37).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sys
import time
from pathlib import Path

from kubernetes_asyncio.client.rest import ApiException

from tests.cluster import build, cluster, gates, kube, nodes, releases
from tests.cluster.realnode import node as real_node


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser(
        "build", help="build the pinned upstream binaries and KWOK")
    build_parser.add_argument("--core", action="store_true",
                              help="only what a cluster needs to start and most tests use")
    build_parser.add_argument(
        "--release", action="append", choices=tuple(releases.RELEASES),
        help="this release's control plane (repeatable; default: every release's, with "
             f"--core the selected one: ${releases.ENV_VAR}, else {releases.DEFAULT})")

    def with_dir(sub: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sub.add_argument("--dir", type=Path, default=cluster.DEFAULT_DIR,
                         help="cluster state directory (default: .cluster/)")
        return sub

    up = with_dir(commands.add_parser(
        "up", help="start etcd, kube-apiserver, kube-controller-manager and KWOK on loopback"))
    up.add_argument("--release", choices=tuple(releases.RELEASES),
                    help="the control plane's Kubernetes release (default: "
                         f"${releases.ENV_VAR}, else {releases.DEFAULT})")
    up.add_argument("--bare", action="store_true",
                    help="only etcd and kube-apiserver (as benchmarks run them)")
    up.add_argument("--node-monitor-grace-period", metavar="DURATION",
                    help="kube-controller-manager's grace before it marks a silent node "
                         "Unknown (default: upstream's 50s)")
    up.add_argument("--feature-gates", metavar="A=true,B=false", default="",
                    help="upstream feature gates for kube-apiserver and "
                         "kube-controller-manager (kept in state.json for kube-scheduler)")
    up.add_argument("--runtime-config", metavar="GROUP/VERSION=true,...", default="",
                    help="kube-apiserver's --runtime-config, e.g. "
                         "scheduling.k8s.io/v1alpha2=true")
    up.add_argument("--with-node", action="store_true",
                    help="also start one real node: kubelet, containerd, runc and bridge CNI "
                         "(needs root; see tests/cluster/realnode)")
    with_dir(commands.add_parser("down", help="stop the cluster and remove its directory"))
    with_dir(commands.add_parser(
        "restart-apiserver", help="restart kube-apiserver, keeping etcd, its data and the rest"))

    node_commands = commands.add_parser("nodes", help="KWOK-simulated nodes").add_subparsers(
        dest="nodes_command", required=True)
    add = with_dir(node_commands.add_parser(
        "add", help="create KWOK nodes and wait until they are Ready"))
    add.add_argument("--count", type=int, default=1)
    add.add_argument("--cpu", default="4")
    add.add_argument("--memory", default="32Gi")
    add.add_argument("--pods", type=int, default=110)
    add.add_argument("--zones", type=int, default=3,
                     help="spread over this many topology.kubernetes.io/zone values "
                          "(zone-0, zone-1, ...; 0 for no zone label)")
    add.add_argument("--labels", default="", help="k=v,k2=v2")
    add.add_argument("--taints", default="", help="k=v:NoSchedule,k2:NoExecute")
    add.add_argument("--name-prefix", default="kwok-node")
    addon = with_dir(commands.add_parser(
        "addon", help="run Kueue or Karpenter (KWOK provider) beside the cluster in the "
                      "foreground until Ctrl-C (docs/integrations.md)"))
    addon.add_argument("name", choices=("kueue", "karpenter"))
    delete = with_dir(node_commands.add_parser("delete", help="delete KWOK nodes"))
    delete.add_argument("--name-prefix", help="only the nodes this prefix named (default: all)")
    return parser


async def _nodes(args: argparse.Namespace) -> str:
    state = cluster.ClusterState.load(args.dir.resolve())
    if state.component("kwok") is None:
        raise cluster.ClusterError(
            f"the cluster in {args.dir} runs no KWOK (started with --bare?): nobody would "
            "keep these nodes Ready")
    async with kube.api_client(state) as api:
        if args.nodes_command == "delete":
            removed = await nodes.delete(api, name_prefix=args.name_prefix)
            return f"deleted {len(removed)} KWOK node(s)"
        shape = nodes.NodeShape(cpu=args.cpu, memory=args.memory, pods=args.pods,
                                zones=args.zones, labels=nodes.parse_labels(args.labels),
                                taints=nodes.parse_taints(args.taints))
        started = time.monotonic()
        names = await nodes.add(api, args.count, shape, name_prefix=args.name_prefix,
                                show_progress=True)
        span = f"{names[0]} .. {names[-1]}" if names else "none"
        return (f"{len(names)} KWOK node(s) Ready in {time.monotonic() - started:.1f}s: "
                f"{span}")


def _addon(args: argparse.Namespace) -> None:
    # Imported here: they build on the cluster module and are needed by this command only.
    from tests.cluster import karpenter, kueue

    state = cluster.ClusterState.load(args.dir.resolve())
    running = kueue.running(state) if args.name == "kueue" else karpenter.running(state)
    # SIGTERM as Ctrl-C: either way the block's cleanup runs (the process stops, the
    # webhook configurations and the bridge address go).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with running as component:
        print(f"{args.name} ready (pid {component.pid}, log {component.log}); Ctrl-C stops it",
              flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print(f"stopping {args.name}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            chosen = args.release or ([releases.selected().name] if args.core else None)
            print(build.ensure_built(build.CORE if args.core else None, chosen))
        elif args.command == "up":
            addons = cluster.BARE if args.bare else dataclasses.replace(
                cluster.FULL, node_monitor_grace_period=args.node_monitor_grace_period)
            chosen = gates.Gates(feature_gates=gates.parse_feature_gates(args.feature_gates),
                                 runtime_config=gates.parse_runtime_config(args.runtime_config))
            state = cluster.up(args.dir, addons, chosen, release=args.release)
            running = ", ".join(["etcd", "kube-apiserver", *(c.name for c in state.components)])
            print(f"kube-apiserver {state.kubernetes_version} (release {state.release}) ready at "
                  f"{state.server} "
                  f"({running})")
            for flag in [*gates.feature_gates_args(state.feature_gates),
                         *gates.runtime_config_args(state.runtime_config)]:
                print(f"  {flag}")
            if args.with_node:
                node = real_node.start(state)
                print(f"real node {node.node_name} Ready (kubelet, containerd; {node.root})")
            print(f"kubeconfig: {state.kubeconfig}")
            print(f"  export KUBECONFIG={state.kubeconfig}")
        elif args.command == "down":
            cluster.down(args.dir)
            print(f"cluster in {args.dir} stopped and removed")
        elif args.command == "restart-apiserver":
            state = cluster.restart_apiserver(args.dir)
            print(f"kube-apiserver restarted at {state.server}")
        elif args.command == "nodes":
            print(asyncio.run(_nodes(args)))
        elif args.command == "addon":
            _addon(args)
    except (cluster.ClusterError, RuntimeError, ValueError, AssertionError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except ApiException as error:
        print(f"error: the API server answered {error.status} {error.reason}: {error.body}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
