"""The few API calls `up --with-node` makes with the admin token (synchronous, bounded)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from tests.cluster.cluster import ClusterState

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def _request(state: ClusterState, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{state.server}{path}", data=data, method=method,
        headers={"Authorization": f"Bearer {state.token}", "Content-Type": content_type})
    context = ssl.create_default_context(cafile=state.ca_file)
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def get_node(state: ClusterState, name: str) -> dict[str, Any] | None:
    try:
        node: dict[str, Any] = _request(state, "GET", f"/api/v1/nodes/{name}")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    return node


def is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def lift_not_ready_taint(state: ClusterState, node: dict[str, Any]) -> None:
    """Drop the NoSchedule not-ready taint of a Ready node.

    TaintNodesByCondition admission puts it on every new Node, and only the node
    lifecycle controller of kube-controller-manager takes it off; the harness may
    run without one. Once the kubelet reports Ready, lifting it is what that
    controller would do.
    """
    taints = node.get("spec", {}).get("taints") or []
    kept = [t for t in taints if not (t["key"] == NOT_READY_TAINT and t["effect"] == "NoSchedule")]
    if kept == taints:
        return
    patch = [
        # The test makes the patch fail (422) if the taints changed meanwhile.
        {"op": "test", "path": "/spec/taints", "value": taints},
        {"op": "replace", "path": "/spec/taints", "value": kept},
    ]
    name = node["metadata"]["name"]
    try:
        _request(state, "PATCH", f"/api/v1/nodes/{name}", patch, "application/json-patch+json")
    except urllib.error.HTTPError as error:
        if error.code != 422:  # someone else (the lifecycle controller) changed them first
            raise
