"""In-process micro-benchmark of a scheduling cycle's extender calls (issue 38): the
`basic-extender` workload's shape (filter and prioritize, nodeCacheCapable, node names)
against a real HTTP extender in a process of its own, so the CPU measured here is
kpysched's alone: building the ExtenderArgs, the hand-off to the extenders' loop thread
and back, the HTTP exchange, and reading the answers.

    python -m benchmarks.extender_micro [--nodes 1000] [--pods 500] [--delay-ms 0]
        [--repeat 3] [--profile FILE] [--full-nodes] [--no-records]

The feasible nodes come as the vector Filter path hands them over (snapshot rows, the
start rotating from pod to pod), and the cycle keeps a decision record (the default),
unless `--no-records`. The extender answers as tests/extender does (every node passes,
scores from 0 to 10 by node), with Python's json spacing. Prints the CPU ms per pod
(process time, both threads) and a digest of what the cycles got back (the nodes kept,
each node's total score and what the record says), so a speed-up that changes any
outcome shows as a different digest. `--full-nodes` sends whole nodes instead of names
(an extender not nodeCacheCapable). `--nodes 420` is basic-extender at 1000 nodes: the
Filter stops at upstream's adaptive 42 %.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import NodeRows
from kpysched.config.extenders import Extender as ExtenderConfig
from kpysched.decisions.record import ExtenderAnswer
from kpysched.extenders import steps
from kpysched.extenders.registry import Extenders
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.runtime.cooperative import run_cooperatively
from kpysched.framework.status import Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo

ROUTE = "micro"


# --- the extender (a process of its own) ---------------------------------------------


def _names(args: dict[str, Any]) -> list[str]:
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [item["metadata"]["name"] for item in (args.get("Nodes") or {}).get("items") or ()]


def _answer(verb: str, args: dict[str, Any]) -> Any:
    names = _names(args)
    if verb == "filter":
        result: dict[str, Any] = {"FailedNodes": {}, "FailedAndUnresolvableNodes": {},
                                  "Error": ""}
        if args.get("NodeNames") is not None:
            result["NodeNames"] = names
        else:
            result["Nodes"] = args["Nodes"]
        return result
    return [{"Host": name, "Score": int(name.rsplit("-", 1)[-1]) % 11} for name in names]


async def _serve(delay: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            lines = head.decode("latin-1").split("\r\n")
            verb = lines[0].split(" ")[1].rsplit("/", 1)[-1]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            args = json.loads(await reader.readexactly(length))
            if delay:
                await asyncio.sleep(delay)
            body = json.dumps(_answer(verb, args)).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def _start_extender(delay_ms: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.extender_micro", "--serve",
         "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


# --- the scheduler's side ----------------------------------------------------------------


def _node(index: int) -> api.Node:
    body = {"metadata": {"name": f"node-{index}", "uid": f"uid-node-{index}",
                         "resourceVersion": "1",
                         "labels": {"kubernetes.io/hostname": f"node-{index}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}}
    node: api.Node = msgspec.json.decode(msgspec.json.encode(body), type=api.Node)
    return node


def _pod(index: int) -> api.Pod:
    body = {"metadata": {"name": f"pod-{index}", "namespace": "default",
                         "uid": f"uid-pod-{index}", "resourceVersion": "1"},
            "spec": {"schedulerName": "kpysched", "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10",
                 "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}
    pod: api.Pod = msgspec.json.decode(msgspec.json.encode(body), type=api.Pod)
    return pod


@dataclass
class Result:
    pods: int
    cpu_seconds: float
    wall_seconds: float
    digest: str


async def _run(url: str, nodes: int, pods: int, full_nodes: bool, records: bool,
               profile: cProfile.Profile | None) -> Result:
    config = ExtenderConfig.model_validate(
        {"urlPrefix": f"{url}/{ROUTE}", "filterVerb": "filter",
         "prioritizeVerb": "prioritize", "weight": 1, "nodeCacheCapable": not full_nodes})
    extenders = Extenders([config])
    infos = []
    for index in range(nodes):
        info = NodeInfo(f"node-{index}")
        info.set_node(_node(index))
        infos.append(info)
    digest = hashlib.sha256()

    names = tuple(info.name for info in infos)
    # The feasible nodes as the vector Filter path gives them: the snapshot's rows
    # (rotating start, as upstream's nextStartNodeIndex moves).
    rows = np.arange(len(infos), dtype=np.int64)

    def cycle(pod: PodInfo, start: int) -> None:
        diagnosis = Diagnosis(num_all_nodes=len(infos))
        feasible = NodeRows(infos, names, np.roll(rows, -start))
        said: list[ExtenderAnswer] | None = [] if records else None
        kept = steps.filter_nodes(extenders, pod, feasible, diagnosis, said)
        assert not isinstance(kept, Status), kept
        totals = steps.prioritize(extenders, pod, kept, said)
        digest.update(",".join(node.name for node in kept).encode())
        digest.update(totals.tobytes())
        for answer in said or ():  # not its extender's name: the port changes
            digest.update(msgspec.json.encode(
                (answer.verb, answer.failed, answer.scores, answer.error, answer.skipped)))

    try:
        # One cycle first: the connection opened and the node bodies made.
        await run_cooperatively(lambda: cycle(PodInfo.of(_pod(-1)), 0))
        measured = [PodInfo.of(_pod(index)) for index in range(pods)]
        started_cpu, started = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        for index, pod in enumerate(measured):
            await run_cooperatively(
                lambda pod=pod, start=index * 7 % nodes: cycle(pod, start))  # type: ignore[misc]
        if profile is not None:
            profile.disable()
        return Result(pods, time.process_time() - started_cpu,
                      time.perf_counter() - started, digest.hexdigest()[:16])
    finally:
        await extenders.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.extender_micro")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="")
    parser.add_argument("--full-nodes", action="store_true")
    parser.add_argument("--no-records", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.delay_ms / 1000))
        return
    process, url = _start_extender(args.delay_ms)
    try:
        per_pod: list[float] = []
        for _ in range(args.repeat):
            profile = cProfile.Profile() if args.profile else None
            result = asyncio.run(_run(url, args.nodes, args.pods, args.full_nodes,
                                      not args.no_records, profile))
            if profile is not None:
                profile.dump_stats(args.profile)
            per_pod.append(result.cpu_seconds * 1000 / result.pods)
            print(f"{result.pods} pods, {args.nodes} nodes: CPU "
                  f"{per_pod[-1]:.3f} ms/pod, wall "
                  f"{result.wall_seconds * 1000 / result.pods:.3f} ms/pod, "
                  f"digest {result.digest}", flush=True)
        if args.repeat > 1:
            print(f"min {min(per_pod):.3f} ms/pod, median {statistics.median(per_pod):.3f}",
                  flush=True)
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
