"""A scheduler extender for unit tests: a real HTTP server on loopback, on a thread of
its own (the code under test may wait for it synchronously), that records every
request body and answers from a script per verb."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# verb -> what to answer: (status code, JSON value) from the decoded request.
Answer = Callable[[dict[str, Any]], tuple[int, Any]]


@dataclass
class FakeExtender:
    answers: dict[str, Answer] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    # When set, each request waits (up to 5 s) for this before it is answered; one
    # that waited in vain is counted and answered 503.
    gate: threading.Event | None = None
    gate_missed: int = 0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    connections: set[int] = field(default_factory=set)  # client ports seen
    url: str = ""


@contextmanager
def serving(extender: FakeExtender, tls: tuple[str, str] | None = None,
            client_ca: str | None = None) -> Iterator[FakeExtender]:
    """Serve `extender` on loopback; over TLS with `tls` (certificate file, key file),
    requiring a client certificate `client_ca` signed when given."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            verb = self.path.rsplit("/", 1)[-1]
            extender.requests.append((verb, body))
            extender.connections.add(self.client_address[1])
            if extender.delay:
                time.sleep(extender.delay)
            answer = extender.answers.get(verb)
            code, value = answer(body) if answer else (404, None)
            if extender.gate is not None and not extender.gate.wait(5):
                extender.gate_missed += 1
                code, value = 503, None
            payload = json.dumps(value).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        if client_ca is not None:
            context.load_verify_locations(client_ca)
            context.verify_mode = ssl.CERT_REQUIRED
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    extender.url = f"{scheme}://127.0.0.1:{server.server_address[1]}/scheduler"
    try:
        yield extender
    finally:
        server.shutdown()
        server.server_close()


def names_of(body: dict[str, Any]) -> list[str]:
    """The node names an ExtenderArgs carries, whichever way it carries them."""
    if body["NodeNames"] is not None:
        return list(body["NodeNames"])
    return [item["metadata"]["name"] for item in body["Nodes"]["items"]]
