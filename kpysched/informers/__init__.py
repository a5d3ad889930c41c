"""Informers: list+watch API resources into stores and tell handlers what changed.

- reflector.py (list, watch, relist), decode.py (API status errors), store.py (the
  store and its handlers), listers.py (the read-only indexes plugins consult through
  the Handle: namespaces, PDBs, workloads, storage, DRA, pod groups).

May import: objects/, framework/ (the contract: cluster events, lister protocols)
and the API transport (one of the few places that may). Never the runtime, a plugin,
queue/ or scheduling/."""

from __future__ import annotations

from kubernetes_asyncio.client import ApiClient

from kpysched.informers.decode import ApiStatusError, RawKeeper, ResourceExpiredError
from kpysched.informers.reflector import Reflector
from kpysched.informers.store import EventHandler, KubeObject, object_key
from kpysched.objects.api import Node, NodeList, Pod, PodList

# kube-scheduler's pod informer never sees terminal pods: they hold no resources
# and need no scheduling (pkg/scheduler/scheduler.go, newPodInformer).
NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def pod_reflector(
    api_client: ApiClient,
    handler: EventHandler[Pod],
    *,
    namespace: str | None = None,
    field_selector: str | None = NON_TERMINAL_PODS,
    label_selector: str | None = None,
    keep_raw: RawKeeper[Pod] | None = None,
) -> Reflector[Pod]:
    """Pods in all namespaces (or one), non-terminal only unless told otherwise."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    return Reflector(api_client, path, Pod, PodList, handler, resource="pods",
                     field_selector=field_selector, label_selector=label_selector,
                     keep_raw=keep_raw)


def node_reflector(
    api_client: ApiClient,
    handler: EventHandler[Node],
    *,
    label_selector: str | None = None,
    keep_raw: RawKeeper[Node] | None = None,
) -> Reflector[Node]:
    return Reflector(api_client, "/api/v1/nodes", Node, NodeList, handler, resource="nodes",
                     label_selector=label_selector, keep_raw=keep_raw)


__all__ = [
    "NON_TERMINAL_PODS",
    "ApiStatusError",
    "EventHandler",
    "KubeObject",
    "Reflector",
    "ResourceExpiredError",
    "node_reflector",
    "object_key",
    "pod_reflector",
]
