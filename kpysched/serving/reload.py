"""Reloads the secure port's certificate files when they change, as kube-scheduler's
dynamiccertificates controllers do: the serving pair ("serving-cert"), the client CA
("client-ca-bundle") and the request header CA ("request-header").

Upstream watches each file with fsnotify and re-reads it on every event, plus once a
minute in case a watch was lost. Here each file is read every few seconds instead: a
handful of small local reads costs nothing measurable, needs no inotify binding, and
sees a Secret volume's atomic symlink swap (which upstream has to re-add its watch
for), so a change is picked up within seconds, close to upstream's watch and well
inside its one-minute resync.

As upstream: content that does not parse (or a pair whose key does not match) keeps
the material in use and is logged, once per change here (upstream logs each retry);
identical content is no change. New TLS handshakes get a context built afresh
(ssl can add trusted CAs to a context but never drop one); open connections keep the
context they began with. A pair generated in memory is not watched: no file holds it.
The client CA and request header settings taken from the cluster's configmap are
followed as kpysched.serving.published says.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import structlog

from kpysched.serving.access import AccessControl, DelegationOptions, trusted_client_cas
from kpysched.serving.certs import PemPair, TlsOptions, serving_flags, serving_pair, tls_context
from kpysched.serving.errors import ServingError
from kpysched.serving.published import INTERVAL_SECONDS as PUBLISHED_INTERVAL_SECONDS
from kpysched.serving.published import Published
from kpysched.serving.requestheader import RequestHeaderAuthenticator

if TYPE_CHECKING:
    from cryptography import x509

log = structlog.get_logger(__name__)

CHECK_INTERVAL_SECONDS: Final = 5.0

# Upstream's purposes: its controllers are named "<purpose>::<file>[::<file>]".
SERVING: Final = "serving-cert"
CLIENT_CA: Final = "client-ca-bundle"
REQUEST_HEADER: Final = "request-header"

# A file's content, or why it could not be read: either one is compared with the last
# seen, so an error is logged once until the file changes again.
_Read = bytes | str


@dataclass(slots=True)
class _Watched:
    purpose: str
    paths: tuple[Path, ...]
    seen: tuple[_Read, ...]  # as last read, good or bad
    loaded: tuple[bytes, ...]  # what the material in use was built from

    @property
    def name(self) -> str:
        return "::".join((self.purpose, *map(str, self.paths)))

    def read(self) -> tuple[_Read, ...]:
        return tuple(_read(path) for path in self.paths)


def _read(path: Path) -> _Read:
    try:
        return path.read_bytes()
    except OSError as error:
        return f"{path}: {error.strerror or error}"


class TlsReloader:
    """The secure port's current SSL context, kept in step with its files.

    Runs on the serving loop (the server's thread): reads, checks and swaps happen
    between two of its callbacks, so a handshake or request sees the old material or
    the new, never a mix."""

    def __init__(self, options: TlsOptions, pair: PemPair, access: AccessControl | None,
                 watched: list[_Watched]) -> None:
        self._options = options
        self._pair = pair
        self._access = access
        self._watched = watched
        self.context = tls_context(options, pair,
                                   None if access is None else access.trusted_client_cas)
        self._tasks: list[asyncio.Task[None]] = []
        # The last bad configmap content and why, logged once until it changes.
        self._rejected: tuple[Published | None, str] | None = None

    @classmethod
    def open(cls, options: TlsOptions, bind_address: str, access: AccessControl | None,
             delegation: DelegationOptions | None) -> TlsReloader:
        """The context to serve at start; ServingError when its material does not load.
        `access` was built from `delegation`; the CA files it read are watched."""
        pair, files = serving_pair(options, bind_address)
        watched: list[_Watched] = []
        content: tuple[bytes, ...]
        if files is not None:
            content = (pair.certificate, pair.key)
            watched.append(_Watched(SERVING, files, content, content))
        if access is not None and delegation is not None:
            if delegation.client_ca_file is not None and access.client_ca is not None:
                content = (access.client_ca,)
                watched.append(_Watched(CLIENT_CA, (delegation.client_ca_file,),
                                        content, content))
            header_ca = delegation.request_header.client_ca_file
            if header_ca is not None and access.request_header is not None:
                content = (access.request_header.config.ca_pem,)
                watched.append(_Watched(REQUEST_HEADER, (header_ca,), content, content))
        try:
            return cls(options, pair, access, watched)
        except ssl.SSLError as error:
            raise ServingError(f"{serving_flags(options)}: cannot load the serving "
                               f"certificate: {error}") from None

    def start(self, apply: Callable[[ssl.SSLContext], None],
              interval: float = CHECK_INTERVAL_SECONDS,
              published_interval: float = PUBLISHED_INTERVAL_SECONDS) -> None:
        """Checks the files every `interval` seconds and the cluster's configmap every
        `published_interval`; `apply` gets each new context."""
        loop = asyncio.get_running_loop()
        if self._watched:
            self._tasks.append(loop.create_task(self._run(apply, interval),
                                                name="kpysched-tls-reload"))
        if self._access is not None and self._access.published is not None:
            self._tasks.append(loop.create_task(self._follow(apply, published_interval),
                                                name="kpysched-published-authentication"))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        self._tasks.clear()

    async def _run(self, apply: Callable[[ssl.SSLContext], None], interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if self.check():
                apply(self.context)

    async def _follow(self, apply: Callable[[ssl.SSLContext], None], interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if await self.check_published():
                apply(self.context)

    async def check_published(self) -> bool:
        """Reads the cluster's configmap once; True when the context was replaced."""
        access = self._access
        if access is None or access.published is None:
            return False
        header = access.request_header
        in_use = Published(access.client_ca, None if header is None else header.config)
        try:
            fresh = await access.published.current(in_use)
        except ServingError as error:  # a request header key of the wrong shape
            self._reject(None, str(error))
            return False
        if fresh is None or fresh == in_use:
            return False
        try:
            if fresh.client_ca is not None:
                _parse_cas(fresh.client_ca)
            if fresh.request_header is not None:
                _parse_cas(fresh.request_header.ca_pem)
            new_header = None if fresh.request_header is None \
                else RequestHeaderAuthenticator(fresh.request_header)
            context = tls_context(self._options, self._pair,
                                  trusted_client_cas(fresh.client_ca, new_header))
        except (ValueError, ssl.SSLError) as error:
            self._reject(fresh, f"not a PEM CA bundle: {error}")
            return False
        access.client_ca, access.request_header, self.context = \
            fresh.client_ca, new_header, context
        self._rejected = None
        log.info("serving.published_authentication_changed",
                 name=f"{REQUEST_HEADER}/{CLIENT_CA}::configmap extension-apiserver-"
                      "authentication",
                 client_ca=fresh.client_ca is not None,
                 request_header=fresh.request_header is not None,
                 allowed_names=[] if fresh.request_header is None
                 else list(fresh.request_header.allowed_names))
        return True

    def _reject(self, content: Published | None, reason: str) -> None:
        if (content, reason) == self._rejected:
            return
        self._rejected = (content, reason)
        log.error("serving.published_authentication_rejected", reason=reason,
                  consequence="the previous content stays in use")

    def check(self) -> bool:
        """Reads every watched file once; True when the context was replaced."""
        replaced = False
        for watched in self._watched:
            content = watched.read()
            if content == watched.seen:
                continue
            watched.seen = content
            in_use = watched.loaded
            reason = self._load(watched, content)
            if reason is not None:
                log.error("serving.certificate_reload_failed", name=watched.name,
                          reason=reason, consequence="the previous content stays in use")
            # (A file back to what is in use, after an error, replaces nothing.)
            replaced |= watched.loaded != in_use
        return replaced

    def _load(self, watched: _Watched, content: tuple[_Read, ...]) -> str | None:
        """Builds the material from `content` and puts it in use; else why not."""
        unread = [part for part in content if isinstance(part, str)]
        if unread:
            return unread[0]
        files = tuple(part for part in content if isinstance(part, bytes))
        if files == watched.loaded:
            return None
        if not all(files):
            return f"missing content for {watched.name}"  # upstream's words
        pair, access = self._pair, self._access
        client_ca = None if access is None else access.client_ca
        header = None if access is None else access.request_header
        try:
            if watched.purpose == SERVING:
                pair = PemPair(*files)
            else:
                _parse_cas(files[0])
                if watched.purpose == CLIENT_CA:
                    client_ca = files[0]
                elif header is not None:
                    header = RequestHeaderAuthenticator(
                        dataclasses.replace(header.config, ca_pem=files[0]))
            context = tls_context(self._options, pair, None if access is None
                                  else trusted_client_cas(client_ca, header))
        except ssl.SSLError as error:  # (OpenSSL's words alone, "PEM lib", say little)
            return f"not a PEM certificate and its matching key: {error}"
        except ValueError as error:
            return f"not a PEM CA bundle: {error}"
        except ServingError as error:
            return str(error)
        self._pair, self.context, watched.loaded = pair, context, files
        if access is not None:
            access.client_ca, access.request_header = client_ca, header
        log.info("serving.certificate_reloaded", name=watched.name, **_describe(files))
        return None


def _parse_cas(pem: bytes) -> tuple[x509.Certificate, ...]:
    """ValueError unless `pem` holds at least one certificate (as upstream's
    NewPoolFromBytes: a bundle of none is an error, not "trust nobody")."""
    from cryptography import x509  # when first used, as in certs.py

    return tuple(x509.load_pem_x509_certificates(pem))


def _describe(files: tuple[bytes, ...]) -> dict[str, object]:
    """What an operator checks after a rotation: the leaf's serial and expiry, or how
    many CAs the bundle holds."""
    from cryptography import x509  # when first used, as in certs.py

    try:
        certificates = x509.load_pem_x509_certificates(files[0])
    except ValueError:
        return {}  # ssl took it; only the description is lost
    if len(files) == 1:
        return {"certificates": len(certificates)}
    leaf = certificates[0]
    return {"serial": format(leaf.serial_number, "x"),
            "not_after": leaf.not_valid_after_utc.isoformat()}
