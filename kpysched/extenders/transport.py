"""POSTing JSON to one extender over kept-alive connections, as upstream's HTTPExtender
sends: `<urlPrefix without trailing slashes>/<verb>`, Content-Type application/json,
a 200 or an error naming the verb, the URL and the code, and httpTimeout for the
whole exchange.

A call runs on the caller's event loop, over connections kept for that loop (a
connection belongs to the loop that opened it): a scheduling cycle (it pauses until
the answer comes, see kpysched/framework/runtime/cooperative.py) and a binding task
use the scheduler's own loop, so a slow extender holds neither the informers, the
bindings nor the events; a caller that must wait synchronously (a pod group's trial,
a simulation) runs its calls on the extenders' loop thread (registry.py), over that
loop's connections. Measured (issue 38), handing every call to the thread and its
answer back cost about 0.4 ms of CPU per pod (filter and prioritize) in
benchmarks/extender_micro.py, a third of the calls' CPU.

Failures read as Go's net/http client words them, because kube-scheduler puts the
error's text in the pod's FailedScheduling event.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from typing import Final
from urllib.parse import urlsplit

from kpysched.api.http11 import ConnectionPool, ProtocolError
from kpysched.config.extenders import Extender
from kpysched.extenders.errors import ExtenderError

_OK: Final = 200


class Transport:
    """One extender's endpoint: where it is, how to reach it, how long to wait."""

    def __init__(self, config: Extender) -> None:
        self.url_prefix = config.url_prefix.rstrip("/")
        self._timeout = config.http_timeout
        parts = urlsplit(self.url_prefix)
        # Upstream accepts any urlPrefix and fails each call: so does kpysched, in the
        # words of Go's client.
        self._unusable = ""
        # One pool per event loop that calls (a connection belongs to the loop that
        # opened it): the scheduler's own loop, and the thread's for blocking callers.
        self._pools: dict[asyncio.AbstractEventLoop, ConnectionPool] = {}
        self._pool_args: tuple[str, int, ssl.SSLContext | None, str] | None = None
        if parts.scheme not in ("http", "https"):
            self._unusable = f'unsupported protocol scheme "{parts.scheme}"'
        elif not parts.hostname:
            self._unusable = "http: no Host in request URL"
        if self._unusable or parts.hostname is None:
            return
        secure = parts.scheme == "https"
        try:
            port = parts.port or (443 if secure else 80)
        except ValueError:
            self._unusable = f'invalid port in "{self.url_prefix}"'
            return
        self._address = f"{parts.hostname}:{port}"
        self._base_path = parts.path
        tls = _tls_context(config) if secure else None
        server_name = (config.tls_config.server_name if config.tls_config else "") or None
        self._pool_args = (parts.hostname, port, tls, server_name or parts.hostname)
        self._netloc = parts.netloc

    def url(self, verb: str) -> str:
        return f"{self.url_prefix}/{verb}"

    async def post(self, verb: str, body: bytes) -> bytes:
        """The body of a 200 answer to `body` POSTed to `verb`, on the caller's loop;
        ExtenderError otherwise."""
        url = self.url(verb)
        if self._pool_args is None:
            raise ExtenderError(f'Post "{url}": {self._unusable}')
        pool = self._pool_for(asyncio.get_running_loop())
        head = (f"POST {self._base_path}/{verb} HTTP/1.1\r\nHost: {pool.host_header}\r\n"
                "User-Agent: kpysched\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
        try:
            async with asyncio.timeout(self._timeout):
                reply = await pool.request(head, body)
        except TimeoutError:
            raise ExtenderError(f'Post "{url}": context deadline exceeded '
                                "(Client.Timeout exceeded while awaiting headers)") from None
        except ConnectionRefusedError:
            raise ExtenderError(f'Post "{url}": dial tcp {self._address}: connect: '
                                "connection refused") from None
        except (OSError, ProtocolError) as error:
            raise ExtenderError(f'Post "{url}": {_reason(error)}') from None
        if reply.status != _OK:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {reply.status}")
        return reply.body

    def _pool_for(self, loop: asyncio.AbstractEventLoop) -> ConnectionPool:
        pool = self._pools.get(loop)
        if pool is None:
            # (list(): another thread's loop may add its pool meanwhile.)
            for ended in [other for other in list(self._pools) if other.is_closed()]:
                dropped = self._pools.pop(ended, None)
                if dropped is not None:
                    dropped.close()
            assert self._pool_args is not None
            pool = self._pools[loop] = ConnectionPool(*self._pool_args, 0, self._netloc)
        return pool

    def close(self) -> None:
        """Close each pool's idle connections on the loop they belong to."""
        pools, self._pools = self._pools, {}
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for loop, pool in pools.items():
            if loop is running or loop.is_closed():
                pool.close()  # a closed loop's connections went with it (close says so)
            else:
                with contextlib.suppress(RuntimeError):  # closed meanwhile
                    loop.call_soon_threadsafe(pool.close)


# OpenSSL's verify results that Go's crypto/x509 reports as an unknown authority:
# self-signed, self-signed in the chain, issuer not found, leaf not verifiable.
_UNKNOWN_AUTHORITY: Final = frozenset({18, 19, 20, 21})


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        detail = ("x509: certificate signed by unknown authority"
                  if error.verify_code in _UNKNOWN_AUTHORITY else error.verify_message)
        return f"tls: failed to verify certificate: {detail}"
    if isinstance(error, ConnectionResetError):
        return "EOF"
    return str(error) or type(error).__name__


def _tls_context(config: Extender) -> ssl.SSLContext:
    """TLS as upstream's makeTransport sets it up: the CA from caFile or caData (none:
    the system's roots; enableHTTPS without a CA: no verification), a client
    certificate from files or data, insecure, serverName."""
    tls = config.tls_config
    ca_file = tls.ca_file if tls else ""
    ca_data = base64.b64decode(tls.ca_data).decode() if tls and tls.ca_data else None
    context = ssl.create_default_context(cafile=ca_file or None, cadata=ca_data)
    if tls is not None and (tls.cert_file or tls.cert_data):
        with _key_pair_files(tls.cert_file, tls.cert_data, tls.key_file,
                             tls.key_data) as (cert, key):
            context.load_cert_chain(cert, key or None)
    insecure = (tls is not None and tls.insecure) or (
        config.enable_https and not ca_file and not ca_data)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


@contextlib.contextmanager
def _key_pair_files(cert_file: str, cert_data: str, key_file: str,
                    key_data: str) -> Iterator[tuple[str, str]]:
    """ssl reads a certificate and key only from files: data is written to private
    temporary files for the moment it takes."""
    with tempfile.TemporaryDirectory(prefix="kpysched-extender-") as directory:
        paths = []
        for name, given, data in (("cert", cert_file, cert_data), ("key", key_file, key_data)):
            if not data:
                paths.append(given)
                continue
            written = os.path.join(directory, name)
            descriptor = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(base64.b64decode(data))
            paths.append(written)
        yield paths[0], paths[1]
