"""A validating admission webhook that fails the first binding of each pod and allows
every later one: how DefaultBinder's v1.37 retry (util.BindPod: an InternalError or
ServiceUnavailable answer is tried again within ~0.3 s) shows against v1.36 (one
try; the pod fails its binding cycle, FailedScheduling, backoff, a second cycle).

The webhook is served on loopback by this process (kube-apiserver calls a webhook's
`url` directly; only a Service's endpoints must not be loopback). It answers the first
call for a pod with HTTP 500, which kube-apiserver, failing closed
(failurePolicy Fail), turns into an InternalError for the scheduler. It acts only in
namespaces labelled BIND_ONCE_LABEL, so no other test's pods meet it.
"""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kpysched.serving.certs import self_signed_pair

BIND_ONCE_LABEL = "kpysched.test/first-binding-fails"
WEBHOOK_NAME = "first-binding-fails.kpysched.test"
REFUSAL = "kpysched test webhook: the first binding of each pod fails"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        pod = (request.get("namespace", ""), request.get("name", ""))
        with self.server.lock:
            first = pod not in self.server.seen
            self.server.seen.add(pod)
        if first:
            body = REFUSAL.encode()
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
        else:
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "response": {"uid": request["uid"], "allowed": True}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class BindOnce:
    """The running webhook: what a ValidatingWebhookConfiguration needs to reach it."""

    url: str
    ca_bundle: bytes

    def configuration(self) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_NAME},
            "webhooks": [{
                "name": WEBHOOK_NAME,
                "clientConfig": {"url": self.url,
                                 "caBundle": base64.b64encode(self.ca_bundle).decode()},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods/binding"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": {BIND_ONCE_LABEL: "true"}},
                "failurePolicy": "Fail", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "timeoutSeconds": 5}]}


@contextmanager
def bind_once_webhook() -> Iterator[BindOnce]:
    """The webhook, served until the block ends."""
    certificate, key = self_signed_pair("127.0.0.1")
    server = _Server()
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert_file.write_bytes(certificate)
        key_file.write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="bind-once-webhook",
                              daemon=True)
    thread.start()
    try:
        yield BindOnce(f"https://127.0.0.1:{server.server_address[1]}/validate", certificate)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
