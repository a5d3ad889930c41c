"""Micro-benchmark of DynamicResources' PreFilter + Filter in process, shaped like the
dra-claim-templates workload: `nodes` nodes with one ResourceSlice of 10 devices each
(benchmarks.workloads.DraSetup), 5 x nodes claims allocated up front (device
instance-(i // nodes) of node i % nodes), then 5 x nodes pods each with its own
unallocated claim of one `test-class` device. Every pod goes through PreFilter and Filter
from a rotating start node until the scheduler's number of feasible nodes is found
(percentageOfNodesToScore's adaptive default), then Reserve on the feasible node with
the fewest devices taken, and its claim turns allocated as PreBind's write would.

    python -m benchmarks.dra_filter_micro [--nodes 200] [--pods N] [--digest] [--vector]

Prints the Filter CPU time per pod; --digest also prints a hash of every verdict and
allocation, to check that a change to the allocator decides the same, and a hash of the
decisions alone (feasible nodes, choice, allocation), which --vector (the vector Filter
over a snapshot, feasible rows taken in the same rotating order) must reproduce.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any, cast

import msgspec

from benchmarks.workloads import DRA_DEVICE_CLASS, DRA_DRIVER, DRA_REQUEST, DraSetup
from kpysched.cache.node_info import NodeInfo
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.interfaces import Handle
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.objects.pod import PodInfo
from kpysched.plugins.dynamic_resources import plugin as dynamic_resources
from kpysched.plugins.dynamic_resources.args import DynamicResourcesArgs
from tests.unit.builders import FakeHandle, make_node, make_snapshot

DEVICES_PER_NODE = 10


def _claim(setup: DraSetup, name: str, uid: str, allocation: Any = None) -> resource.ResourceClaim:
    body = setup.allocated_claim("dra", name)
    body["metadata"].update(uid=uid, resourceVersion="1")
    if allocation is not None:
        body["status"] = {"allocation": allocation}
    return msgspec.convert(body, resource.ResourceClaim)


def _pod(name: str, claim: str) -> PodInfo:
    return PodInfo.of(msgspec.convert(
        {"metadata": {"name": name, "namespace": "dra", "uid": f"uid-{name}"},
         "spec": {"containers": [{"name": "c"}],
                  "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}},
        api.Pod))


def _feasible_to_find(nodes: int) -> int:
    if nodes < 100:
        return nodes
    percentage = max(50 - nodes // 125, 5)
    return max(nodes * percentage // 100, 100)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=0, help="default: 5 x nodes")
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--vector", action="store_true",
                        help="Filter through filter_vector over a snapshot")
    args = parser.parse_args()
    nodes = args.nodes
    pods = args.pods or 5 * nodes
    setup = DraSetup(DEVICES_PER_NODE)
    handle = FakeHandle()
    listers = handle.resource_listers
    listers.device_classes.on_add(msgspec.convert(setup.device_class(), resource.DeviceClass))
    names = [f"node-{i}" for i in range(nodes)]
    for name in names:
        listers.resource_slices.on_add(msgspec.convert(setup.resource_slice(name),
                                                       resource.ResourceSlice))
    taken = dict.fromkeys(names, 0)
    for i in range(5 * nodes):
        node = names[i % nodes]
        allocation = setup.allocation_status(node, i // nodes, "x", "x")["status"]["allocation"]
        listers.resource_claims.on_add(_claim(setup, f"init-{i}", f"init-{i}", allocation))
        taken[node] += 1
    # The unit tests' handle: in-memory listers, enough for PreFilter, Filter, Reserve.
    plugin = dynamic_resources.DynamicResources(cast(Handle, handle), DynamicResourcesArgs())
    infos: list[NodeInfo] = [make_node(name).info() for name in names]
    snapshot = make_snapshot(*infos)
    infos = snapshot.node_infos  # the snapshot's row order (the rotation goes by it)
    decisions = hashlib.sha256()
    to_find = _feasible_to_find(nodes)
    digest = hashlib.sha256()
    start_index = 0
    filter_seconds = 0.0
    filter_calls = 0
    for p in range(pods):
        claim = _claim(setup, f"claim-{p}", f"claim-{p}")
        listers.resource_claims.on_add(claim)
        pod = _pod(f"pod-{p}", claim.metadata.name)
        state = CycleState()
        began = time.process_time()
        _, status = plugin.pre_filter(state, pod, infos)
        assert status.ok, status.message()
        feasible: list[str] = []
        visited = 0
        mask = plugin.filter_vector(state, pod, snapshot) if args.vector else None
        if args.vector and mask is None:
            raise SystemExit(f"pod {p}: the vector Filter did not answer")
        for offset in range(nodes):
            info = infos[(start_index + offset) % nodes]
            visited += 1
            if mask is not None:
                if mask[(start_index + offset) % nodes]:
                    feasible.append(info.name)
                    if len(feasible) >= to_find:
                        break
                continue
            verdict = plugin.filter(state, pod, info)
            if args.digest:
                digest.update(f"{p} {info.name} {verdict.code} {verdict.message()}\n".encode())
            if verdict.ok:
                feasible.append(info.name)
                if len(feasible) >= to_find:
                    break
        filter_seconds += time.process_time() - began
        filter_calls += visited
        start_index = (start_index + visited) % nodes
        if not feasible:
            raise SystemExit(f"pod {p}: no feasible node")
        chosen = min(feasible, key=lambda n: (taken[n], n))
        assert plugin.reserve(state, pod, chosen).ok
        allocation = plugin._tracker.pending_allocation(claim.metadata.uid)
        assert allocation is not None
        if args.digest:
            digest.update(msgspec.json.encode(allocation) + b"\n")
            decisions.update(f"{p} {' '.join(feasible)} {chosen} ".encode()
                             + msgspec.json.encode(allocation) + b"\n")
        allocated = msgspec.structs.replace(
            claim, metadata=msgspec.structs.replace(claim.metadata, resource_version="2"),
            status=msgspec.structs.replace(claim.status, allocation=allocation))
        listers.resource_claims.on_update(claim, allocated)
        plugin._tracker.maybe_remove_pending_allocation(claim.metadata.uid)
        taken[chosen] += 1
    assert DRA_DRIVER and DRA_DEVICE_CLASS and DRA_REQUEST
    print(f"{pods} pods, {nodes} nodes: PreFilter+Filter {filter_seconds * 1000 / pods:.2f} "
          f"ms/pod, {filter_calls / pods:.1f} Filter calls/pod, "
          f"{filter_seconds * 1e6 / filter_calls:.1f} us/call")
    if args.digest:
        if not args.vector:
            print(f"digest {digest.hexdigest()}")
        print(f"decisions {decisions.hexdigest()}")


if __name__ == "__main__":
    main()
