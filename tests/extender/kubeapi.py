"""The little of the Kubernetes API the test extender needs (node and pod labels for
requests that carry names or UIDs only, and the Binding a binding extender posts),
read with a kubeconfig it is given: the harness's JSON kubeconfigs, with a bearer
token or a client certificate."""

from __future__ import annotations

import json
import ssl
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.extender.rules import Labels

TIMEOUT_SECONDS = 10.0


class KubeApi:
    def __init__(self, kubeconfig: str) -> None:
        config = json.loads(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        self.server = cluster["server"].rstrip("/")
        self.context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        if "client-certificate" in user:
            self.context.load_cert_chain(user["client-certificate"], user["client-key"])
        self.headers = {"Content-Type": "application/json"}
        if "token" in user:
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self._lock = threading.Lock()
        self._nodes: dict[str, Labels] = {}
        self._pods: dict[str, Labels] = {}
        self._pod_names: dict[str, str] = {}

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method,
                                         headers=self.headers)
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS,
                                    context=self.context) as response:
            return json.loads(response.read())

    def node_labels(self, name: str) -> Labels:
        """A node's labels; the node list is read again when a name is new to it
        (each test's nodes have fresh names)."""
        with self._lock:
            if name not in self._nodes:
                items = self._call("GET", "/api/v1/nodes")["items"]
                self._nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                               for n in items}
            return self._nodes.get(name, {})

    def pod_labels(self, uid: str) -> Labels:
        with self._lock:
            if uid not in self._pods:
                items = self._call("GET", "/api/v1/pods")["items"]
                self._pods = {p["metadata"]["uid"]: p["metadata"].get("labels") or {}
                              for p in items}
                self._pod_names.update({p["metadata"]["uid"]: p["metadata"]["name"]
                                        for p in items})
            return self._pods.get(uid, {})

    def pod_names(self) -> dict[str, str]:
        """UID -> name of every pod looked up so far (for the tests to read UIDs in
        the requests they recorded)."""
        with self._lock:
            return dict(self._pod_names)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> str:
        """POST the Binding; "" or the API server's refusal."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            self._call("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)
        except urllib.error.HTTPError as error:
            return f"binding {namespace}/{name} to {node}: {error.code} {error.read()!r}"
        return ""
