"""In-process measurement of kpysched's start-up after the imports (issue 38): the
informers' first LIST pages of SchedulingInTreePVs (benchmarks/workloads.py's
in-tree-pvs shapes: nodes, initial pods bound with their claims, measured pods pending,
one PVC and one PV per pod, storage classes) decoded from JSON bytes by the real
decoder (informers/decode.py) and delivered through the real stores and informer
handlers into the cache, the queue and the listers, on a scheduler built as the
application builds it over a recording API (tests/unit/scheduler_harness.py).

    python -m benchmarks.startup_micro [--nodes 500] [--init-pods 500] [--pods 1000]
        [--repeat 1] [--rounds 1]

Prints, per repeat, CPU ms of decoding and of delivering each resource's pages and
of gc_policy.freeze_synced_cache (the collection the application makes once synced),
and where the pending pods ended up (must not change with a cut). `--rounds` runs the
same start that many times per repeat (a fresh scheduler each) for a profiler to see.
The bodies carry the fields an API server adds (uid, resourceVersion,
creationTimestamp, managedFields, spec defaults, status), so the decoder skips what
it skips in a real run. kube-scheduler does not run here: kpysched's own before/after.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Iterator
from typing import Any

import msgspec

from benchmarks.workloads import INIT_NAMESPACE, MEASURED_NAMESPACE, WORKLOADS, volume_bodies
from kpysched import gc_policy
from kpysched.app import NAMESPACE_CHANGE
from kpysched.config.features import Features
from kpysched.informers.decode import Decoder
from kpysched.informers.listers import Index, Listers
from kpysched.informers.store import EventHandler, Store
from kpysched.objects import api, storage
from tests.unit.scheduler_harness import build_harness

SCHEDULER = "kpysched"
PAGE_SIZE = 500  # the reflector's DEFAULT_PAGE_SIZE
CREATED = "2026-11-28T09:40:01Z"


def _served(body: dict[str, Any], index: int, kind: str) -> dict[str, Any]:
    """`body` as the API server answers it in a LIST: identity, version, managed fields."""
    metadata = body["metadata"]
    metadata.update(uid=f"{kind}-{index:08d}-0000-4000-8000-000000000000",
                    resourceVersion=str(1000 + index), creationTimestamp=CREATED,
                    managedFields=[{"manager": "benchmarks", "operation": "Update",
                                    "apiVersion": body.get("apiVersion", "v1"), "time": CREATED,
                                    "fieldsType": "FieldsV1",
                                    "fieldsV1": {"f:metadata": {"f:labels": {}},
                                                 "f:spec": {"f:containers": {}}}}])
    return body


def _pod(index: int, name: str, namespace: str, node_name: str | None) -> dict[str, Any]:
    workload = WORKLOADS["in-tree-pvs"]
    body = workload.measured_pod.body(name, SCHEDULER, node_name)
    body["metadata"]["namespace"] = namespace
    spec = body["spec"]
    spec.update(restartPolicy="Always", terminationGracePeriodSeconds=30,
                dnsPolicy="ClusterFirst", serviceAccountName="default",
                serviceAccount="default", securityContext={}, priority=0,
                enableServiceLinks=True, preemptionPolicy="PreemptLowerPriority",
                tolerations=[{"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                              "effect": "NoExecute", "tolerationSeconds": 300}
                             for taint in ("not-ready", "unreachable")])
    container = spec["containers"][0]
    container.update(terminationMessagePath="/dev/termination-log",
                     terminationMessagePolicy="File", imagePullPolicy="IfNotPresent")
    container["ports"][0]["protocol"] = "TCP"
    body["status"] = ({"phase": "Pending", "qosClass": "Guaranteed"} if node_name is None
                      else {"phase": "Running", "qosClass": "Guaranteed",
                            "conditions": [{"type": "PodScheduled", "status": "True",
                                            "lastTransitionTime": CREATED}]})
    return _served(body, index, "pod")


def bodies(nodes: int, init_pods: int, pods: int) -> dict[str, list[dict[str, Any]]]:
    """Each resource's objects, in the order its LIST returns them."""
    workload = WORKLOADS["in-tree-pvs"]
    node_bodies = [_served(workload.node(index), index, "node") for index in range(nodes)]
    pod_bodies: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    named = [(INIT_NAMESPACE, f"init-pod-{i}", f"node-{workload.place_init(i, nodes)}")
             for i in range(init_pods)]
    named += [(MEASURED_NAMESPACE, f"pod-{i}", None) for i in range(pods)]
    for index, (namespace, name, node_name) in enumerate(named):
        pod_bodies.append(_pod(index, name, namespace, node_name))
        claim, volume = volume_bodies(namespace, name)
        claim["status"] = {"phase": "Bound", "accessModes": ["ReadOnlyMany"],
                           "capacity": {"storage": "1Gi"}}
        volume["status"] = {"phase": "Bound"}
        claims.append(_served(claim, index, "pvc"))
        volumes.append(_served(volume, index, "pv"))
    classes = [_served({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                        "metadata": {"name": name}, "provisioner": provisioner,
                        "reclaimPolicy": "Delete", "volumeBindingMode": mode}, index, "sc")
               for index, (name, provisioner, mode) in enumerate((
                   ("standard", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
                   ("ebs", "kubernetes.io/aws-ebs", "Immediate")))]
    namespaces = [_served({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name}, "status": {"phase": "Active"}},
                          index, "ns")
                  for index, name in enumerate(("default", INIT_NAMESPACE,
                                                MEASURED_NAMESPACE))]
    return {"nodes": node_bodies, "pods": pod_bodies, "persistentvolumeclaims": claims,
            "persistentvolumes": volumes, "storageclasses": classes,
            "namespaces": namespaces}


def pages(kind: str, items: list[dict[str, Any]]) -> list[bytes]:
    """The LIST answer in pages of PAGE_SIZE, as JSON bytes."""
    out = []
    for start in range(0, max(len(items), 1), PAGE_SIZE):
        more = start + PAGE_SIZE < len(items)
        out.append(msgspec.json.encode({
            "apiVersion": "v1", "kind": f"{kind}List",
            "metadata": {"resourceVersion": "99999", **({"continue": "next"} if more else {})},
            "items": items[start:start + PAGE_SIZE]}))
    return out


def _deliveries(listers: Listers, harness: Any) -> Iterator[tuple[str, type[Any], type[Any],
                                                                  EventHandler[Any]]]:
    yield "nodes", api.Node, api.NodeList, harness.nodes
    yield "pods", api.Pod, api.PodList, harness.pods
    yield "namespaces", api.Namespace, api.NamespaceList, listers.namespaces
    yield ("persistentvolumeclaims", storage.PersistentVolumeClaim,
           storage.PersistentVolumeClaimList, listers.storage.persistent_volume_claims)
    yield ("persistentvolumes", storage.PersistentVolume, storage.PersistentVolumeList,
           listers.storage.persistent_volumes)
    yield ("storageclasses", storage.StorageClass, storage.StorageClassList,
           listers.storage.storage_classes)


def run(listed: dict[str, list[bytes]]) -> dict[str, Any]:
    """One start: a fresh scheduler, every LIST decoded and delivered; CPU ms by step."""
    # What is alive now stands for the imports, which the application freezes
    # (gc_policy.importing) before it builds anything.
    gc.collect()
    gc.freeze()
    gc_policy.tune()
    listers = Listers()
    harness = build_harness({"schedulerName": SCHEDULER}, Features(), listers)
    move_on_event = harness.scheduler.queue.move_on_event
    # As the application wires them (app._connect_informers).
    listers.namespaces = Index(lambda _, old, new: move_on_event(NAMESPACE_CHANGE, old, new))
    listers.storage.requeue_with(move_on_event)
    spent: dict[str, float] = {}
    for resource, kind, list_kind, handler in _deliveries(listers, harness):
        decoder: Decoder[Any] = Decoder(resource, kind, list_kind)
        store: Store[Any] = Store(handler)
        started = time.process_time()
        items: list[Any] = []
        for page in listed[resource]:
            items.extend(decoder.decode_list(page)[0])
        decoded = time.process_time()
        assert not decoder.failures, f"{resource}: a body the decoder does not take"
        store.replace(items)
        delivered = time.process_time()
        spent[f"decode {resource}"] = (decoded - started) * 1e3
        spent[f"deliver {resource}"] = (delivered - decoded) * 1e3
    started = time.process_time()
    gc_policy.freeze_synced_cache()
    spent["freeze"] = (time.process_time() - started) * 1e3
    return {"spent": spent, "queues": harness.scheduler.queue.pending_counts(),
            "cached pods": harness.scheduler.cache.pod_count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--init-pods", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    objects = bodies(args.nodes, args.init_pods, args.pods)
    kinds = {"nodes": "Node", "pods": "Pod", "persistentvolumeclaims":
             "PersistentVolumeClaim", "persistentvolumes": "PersistentVolume",
             "storageclasses": "StorageClass", "namespaces": "Namespace"}
    listed = {resource: pages(kinds[resource], items) for resource, items in objects.items()}
    del objects
    for _ in range(args.repeat):
        totals: dict[str, float] = {}
        found: dict[str, Any] = {}
        for _ in range(args.rounds):
            found = run(listed)
            for step, ms in found["spent"].items():
                totals[step] = totals.get(step, 0.0) + ms / args.rounds
        decode = sum(ms for step, ms in totals.items() if step.startswith("decode"))
        deliver = sum(ms for step, ms in totals.items() if step.startswith("deliver"))
        steps = ", ".join(f"{step} {ms:.1f}" for step, ms in totals.items() if ms >= 0.5)
        print(f"{args.nodes} nodes, {args.init_pods} bound + {args.pods} pending pods: "
              f"all {decode + deliver + totals['freeze']:.1f} ms CPU (decode {decode:.1f}, "
              f"deliver {deliver:.1f}, freeze {totals['freeze']:.1f}); {steps}; "
              f"queues {found['queues']}, cached pods {found['cached pods']}", flush=True)


if __name__ == "__main__":
    main()
