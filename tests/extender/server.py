"""The test extender's HTTP(S) server: one instance per scheduler, so each
scheduler's requests are recorded apart and compared body by body.

A scheduler config names several extenders on one instance by URL prefix: a request
to `<url>/<route>/<verb>` is answered by the route's settings (its score label and
faults per verb). Verbs are the names the tests configure: filter, prioritize,
preempt, bind.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.extender import rules
from tests.extender.kubeapi import KubeApi

VERBS = ("filter", "prioritize", "preempt", "bind")


@dataclass(frozen=True)
class Fault:
    """How a route answers one verb: after `delay` seconds (past the scheduler's
    httpTimeout this is a timeout), with HTTP `status`, or with `error` in the
    result's Error field (filter and bind results have one)."""

    delay: float = 0.0
    status: int = 200
    error: str = ""


@dataclass(frozen=True)
class Route:
    score_label: str = rules.SCORE
    faults: Mapping[str, Fault] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    route: str
    verb: str
    body: Any


@dataclass(frozen=True)
class Tls:
    """The serving certificate and key (tls.py makes them with a CA of their own)."""

    cert: str
    key: str


class ExtenderServer:
    """`with ExtenderServer(routes, kubeconfig) as ext:` serves on 127.0.0.1 until the
    block ends; `ext.url` is the base of every route's urlPrefix."""

    def __init__(self, routes: Mapping[str, Route], kubeconfig: str | None = None, *,
                 tls: Tls | None = None, port: int = 0, record: bool = True) -> None:
        """`record=False` keeps no request (a benchmark's thousands)."""
        self.routes = dict(routes)
        self._recording = record
        self.api = KubeApi(kubeconfig) if kubeconfig is not None else None
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.cert, tls.key)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name=f"test-extender {self.url}", daemon=True)

    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def pod_names(self) -> dict[str, str]:
        """UID -> name of the pods the extender looked up by UID."""
        return self.api.pod_names() if self.api is not None else {}

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def record(self, request: Request) -> None:
        if not self._recording:
            return
        with self._lock:
            self._requests.append(request)

    def answer(self, route: str, verb: str, body: Any) -> Any:
        settings = self.routes[route]
        if verb == "filter":
            return rules.filter_nodes(body, self._node_labels)
        if verb == "prioritize":
            return rules.prioritize(body, self._node_labels, settings.score_label)
        if verb == "preempt":
            return rules.preempt(body, self._node_labels, self._pod_labels)
        if self.api is None:
            raise RuntimeError("a binding extender needs a kubeconfig")
        return {"Error": self.api.bind(body["PodNamespace"], body["PodName"], body["PodUID"],
                                       body["Node"])}

    def _node_labels(self, name: str) -> rules.Labels:
        if self.api is None:
            raise RuntimeError("node names without a kubeconfig to look them up")
        return self.api.node_labels(name)

    def _pod_labels(self, uid: str) -> rules.Labels:
        if self.api is None:
            raise RuntimeError("pod UIDs without a kubeconfig to look them up")
        return self.api.pod_labels(uid)

    def start(self) -> ExtenderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> ExtenderServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


def _handler(extender: ExtenderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as the schedulers' pooled clients expect; headers and body go
        # out in two writes, which Nagle's algorithm would hold for the client's
        # delayed ACK (40 ms a request).
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            route, _, verb = self.path.strip("/").rpartition("/")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if route not in extender.routes or verb not in VERBS:
                self._send(404, {"error": f"no route {route!r} or verb {verb!r}"})
                return
            extender.record(Request(route, verb, body))
            fault = extender.routes[route].faults.get(verb, Fault())
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status != 200:
                self._send(fault.status, {"error": f"told to answer {fault.status}"})
            elif fault.error:
                self._send(200, {"Error": fault.error})
            else:
                self._send(200, extender.answer(route, verb, body))

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the scheduler gave up waiting (a timeout the test asked for)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the recorded requests are the log

    return Handler
