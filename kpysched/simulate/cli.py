"""`kpysched snapshot` and `kpysched simulate`: the command lines."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from kpysched.api.client import RawApi
from kpysched.api.kubeconfig_file import KubeconfigError, client_configuration
from kpysched.api.response import ApiResponse

EXIT_OK = 0
EXIT_PENDING = 1  # simulate --fail-on-pending: some pod stayed pending (or failed)
EXIT_USAGE = 2  # the command line, a file or the configuration is wrong
EXIT_CLUSTER = 3  # the cluster could not be read

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK}  done
  {EXIT_PENDING}  (simulate --fail-on-pending) some pod would stay pending or fail
  {EXIT_USAGE}  usage error, unreadable pods/snapshot/config file
  {EXIT_CLUSTER}  the cluster could not be read (unreachable, not allowed to list)
"""

SNAPSHOT_DESCRIPTION = """\
Write the cluster's scheduling state as one JSON document to stdout: nodes, pods
(all namespaces, not finished ones), namespaces, PodDisruptionBudgets, Services,
ReplicationControllers, ReplicaSets, StatefulSets, the storage objects (PVs, PVCs,
StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), the
resource.k8s.io objects (ResourceClaims and templates, ResourceSlices, DeviceClasses)
and PriorityClasses. Each resource is listed once, read-only, through the paths and
decoders kpysched's informers use, and kept as the fields scheduling reads. Feed it to
`kpysched simulate --snapshot FILE`.
"""

SIMULATE_DESCRIPTION = """\
Where would these pods go? Places the pods of --pods, in file order, on a cluster read
from a kubeconfig (list only, nothing is written) or from a `kpysched snapshot` file,
with the scheduling framework, plugins and algorithm of `kpysched run` and the same
KubeSchedulerConfiguration (--config; the default profile otherwise), in-process.

Each pod gets one scheduling cycle as it is added; the pods it displaces or that what
happened moved back to the queue are retried as the live scheduler would (a
preemptor whose victims are gone lands on its nominated node). Placements are assumed
and bound in the simulated cluster, so later pods see them; preemption victims are
removed from it. The pods file is YAML (several documents) or JSON: Pods, and
Deployments, ReplicaSets, StatefulSets and Jobs, expanded to the pods their
controllers would create (replicas, parallelism) and named as they would name them.
A pod without schedulerName gets the first profile's; priorities come from the
cluster's PriorityClasses, as admission would set them.

Output: one line per pod (its node, or `pending` with the FailedScheduling text), the
decision's tie set when several nodes scored the same top total (the live scheduler
picks among them at random), then a summary (placed, pending by reason,
preemptions). --explain prints `kpysched explain`'s tables for every pod instead.
"""

EPILOG = f"""\
examples:
  kpysched snapshot --context prod > prod.json
  kpysched simulate --snapshot prod.json --pods web.yaml
  kpysched simulate --kubeconfig ~/.kube/config --pods batch.yaml --config sched.yaml \\
      --fail-on-pending -o json

{EXIT_CODES}"""


class ReadOnlyApi:
    """RawApi limited to GET: a snapshot must never write to the cluster."""

    def __init__(self, raw: RawApi) -> None:
        self._raw = raw
        self.methods: list[str] = []

    async def request(self, method: str, path: str, body: Any = None, *,
                      query: dict[str, str] | None = None,
                      timeout: float | None = 30.0) -> ApiResponse:
        self.methods.append(method)
        if method != "GET":
            raise PermissionError(f"read-only: refusing {method} {path}")
        return await self._raw.request(method, path, body, query=query, timeout=timeout)


def _add_cluster_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", type=Path,
                        help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")


def _snapshot_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kpysched snapshot", description=SNAPSHOT_DESCRIPTION,
        epilog=f"example:\n  kpysched snapshot --context prod > prod.json\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_cluster_flags(parser)
    return parser


def _simulate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kpysched simulate", description=SIMULATE_DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_cluster_flags(parser)
    parser.add_argument("--snapshot", metavar="FILE",
                        help="read the cluster from this `kpysched snapshot` file "
                             "instead of from the API server ('-' for stdin)")
    parser.add_argument("--pods", metavar="FILE", required=True,
                        help="the pods (and workloads) to place, YAML or JSON ('-' for stdin)")
    parser.add_argument("--config", metavar="FILE",
                        help="KubeSchedulerConfiguration, as `kpysched run --config` reads it")
    parser.add_argument("--emulated-version", metavar="1.MINOR",
                        help="behave as this kube-scheduler release (1.36 or 1.37); default: "
                             "the cluster's (its /version, recorded in snapshots), else the "
                             "newest")
    parser.add_argument("-n", "--namespace", default="default",
                        help="namespace of documents that name none (default: default)")
    parser.add_argument("--explain", action="store_true",
                        help="print each pod's decision as `kpysched explain` does")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text (default) or json")
    parser.add_argument("--fail-on-pending", action="store_true",
                        help=f"exit {EXIT_PENDING} if any pod would stay pending or fail")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for tie-breaks between equally scored nodes and for "
                             "generated pod names (default 0): the same inputs give the "
                             "same output")
    parser.add_argument("--no-extenders", action="store_true",
                        help="do not call the configuration's scheduler extenders (they are "
                        "called by default, for filter, prioritize and preempt; never bind)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return parser


def _parse(parser: argparse.ArgumentParser, args: Sequence[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(list(args))
    except SystemExit as stop:  # --help (0) or a usage error (2)
        return int(stop.code or 0)


def main(args: Sequence[str]) -> int:
    """`args[0]` is "snapshot" or "simulate"."""
    from kpysched import logs

    logs.configure("warning", "auto")
    command, rest = args[0], args[1:]
    if command == "snapshot":
        options = _parse(_snapshot_parser(), rest)
        return options if isinstance(options, int) else asyncio.run(_snapshot(options))
    options = _parse(_simulate_parser(), rest)
    return options if isinstance(options, int) else asyncio.run(_simulate(options))


def _error(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


async def _api_client(kubeconfig: Path | None, context: str | None) -> client.ApiClient:
    """KubeconfigError when there is no kubeconfig to read, or it is unusable."""
    return client.ApiClient(await client_configuration(kubeconfig, context))


async def read_cluster(kubeconfig: Path | None, context: str | None) -> dict[str, Any]:
    """A snapshot document of the cluster (GET requests only)."""
    from kpysched.simulate import snapshot
    from kpysched.simulate.release import VERSION_KEY, server_version

    api_client = await _api_client(kubeconfig, context)
    async with api_client:
        reader = ReadOnlyApi(RawApi(api_client))
        document = await snapshot.take(reader, server=api_client.configuration.host or "")
        # The release a simulation of it behaves as (simulate.release).
        version = await server_version(reader)
        if version is not None:
            document["metadata"][VERSION_KEY] = version
        return document


async def _snapshot(options: argparse.Namespace) -> int:
    from kpysched.simulate.snapshot import SnapshotError

    try:
        document = await read_cluster(options.kubeconfig, options.context)
    except (KubeconfigError, OSError) as error:
        return _error(str(error), EXIT_USAGE)
    except SnapshotError as error:
        return _error(str(error), EXIT_CLUSTER)
    sys.stdout.write(json.dumps(document, separators=(",", ":")))
    sys.stdout.write("\n")
    return EXIT_OK


async def _simulate(options: argparse.Namespace) -> int:
    from kpysched.config import ConfigError, load_config
    from kpysched.config.release import ReleaseError
    from kpysched.framework.registry import RegistryError, full_registry
    from kpysched.plugins import IN_TREE
    from kpysched.simulate import output
    from kpysched.simulate.expand import ExpandError, expand
    from kpysched.simulate.release import choose, features_of
    from kpysched.simulate.runner import PLACED, Simulation
    from kpysched.simulate.snapshot import SnapshotError
    from kpysched.simulate.world import InputError, World, admit, read_documents

    rng = random.Random(options.seed)
    try:
        documents = read_documents(options.pods)
        if options.snapshot is not None:
            snapshot_documents = read_documents(options.snapshot)
            if len(snapshot_documents) != 1:
                raise InputError(f"{options.snapshot}: want one snapshot document")
            taken = snapshot_documents[0]
        else:
            try:
                taken = await read_cluster(options.kubeconfig, options.context)
            except (KubeconfigError, OSError) as error:
                return _error(str(error), EXIT_USAGE)
            except SnapshotError as error:
                return _error(str(error), EXIT_CLUSTER)
        world = World.from_snapshot(taken)
    except InputError as error:
        return _error(str(error), EXIT_USAGE)
    try:
        features = features_of(choose(options.emulated_version, taken), quiet=options.quiet)
        registry = full_registry(IN_TREE)
        config, profiles = load_config(options.config, registry, None, features)
    except (ConfigError, RegistryError, ReleaseError) as error:
        return _error(str(error), EXIT_USAGE)
    try:
        expanded = expand(documents, rng, options.namespace)
        world.add_owners(expanded)
        pods = admit(expanded.pods, world, [p.scheduler_name for p in profiles])
    except (InputError, ExpandError) as error:
        return _error(str(error), EXIT_USAGE)

    if config.extenders:
        names = ", ".join(extender.url_prefix for extender in config.extenders)
        if options.no_extenders:
            config = config.model_copy(update={"extenders": []})
            print(f"simulate: --no-extenders: not calling the configured extenders ({names})",
                  file=sys.stderr)
        elif not options.quiet:
            print(f"simulate: calling the configured extenders ({names}) for filter, "
                  "prioritize and preempt; binding is simulated", file=sys.stderr)
    try:
        simulation = Simulation(config, profiles, registry, seed=options.seed,
                                features=features)
    except ConfigError as error:  # an extender's certificates
        return _error(str(error), EXIT_USAGE)
    simulation.load(world)
    progress = not options.quiet and len(pods) >= 100
    text = options.output == "text"
    try:
        for index, pod in enumerate(pods, 1):
            changed = await simulation.place(pod)
            if text:
                for placement in changed:
                    if options.explain:
                        print(f"=== {placement.pod}\n{output.explanation(placement)}")
                    else:
                        print(output.pod_line(placement))
                sys.stdout.flush()
            if progress and index % 50 == 0:
                print(f"simulate: {index}/{len(pods)} pods", file=sys.stderr)
    finally:
        await simulation.close()
    placements = list(simulation.placements.values())
    stats = output.summary(placements)
    if text:
        print(output.summary_text(stats, len(simulation.skipped_pending)))
    else:
        print(json.dumps(output.as_json(placements, stats, explain=options.explain,
                                        skipped_pending=simulation.skipped_pending),
                         indent=2))
    if options.fail_on_pending and any(p.outcome != PLACED for p in placements):
        return EXIT_PENDING
    return EXIT_OK
