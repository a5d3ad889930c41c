"""Front-proxy (request header) authentication, as k8s.io/apiserver's requestheader
authenticator: how kube-apiserver's aggregator tells an extension API server who the
user is.

The aggregator authenticates the user, then proxies the request with its own client
certificate (--proxy-client-cert-file) and the identity in headers (X-Remote-User,
X-Remote-Group, X-Remote-Extra-*, X-Remote-Uid). Those headers are believed only when
the connection's client certificate was issued by the request header CA and, when
allowed names are configured, its CommonName is one of them; anyone else could write
them. Without a username header the request is not authenticated by this route (the
aggregator's own availability probe always sends one).

Configuration as kube-scheduler's delegated authentication: the --requestheader-* flags
when --requestheader-client-ca-file is given, else (unless --authentication-skip-lookup)
every requestheader-* key of configmap kube-system/extension-apiserver-authentication,
which kube-apiserver publishes from its own flags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

import structlog

from kpysched.serving.authn import AUTHENTICATED_GROUP, UserInfo
from kpysched.serving.errors import ServingError

if TYPE_CHECKING:
    from cryptography import x509

log = structlog.get_logger(__name__)

# k8s.io/apiserver's delegating defaults (NewDelegatingAuthenticationOptions).
DEFAULT_USERNAME_HEADERS: Final = ("x-remote-user",)
DEFAULT_UID_HEADERS: Final = ("x-remote-uid",)
DEFAULT_GROUP_HEADERS: Final = ("x-remote-group",)
DEFAULT_EXTRA_HEADERS_PREFIX: Final = ("x-remote-extra-",)

# Keys of configmap kube-system/extension-apiserver-authentication (lists are JSON).
_CA_KEY: Final = "requestheader-client-ca-file"
_LIST_KEYS: Final = {
    "allowed_names": "requestheader-allowed-names",
    "username_headers": "requestheader-username-headers",
    "uid_headers": "requestheader-uid-headers",
    "group_headers": "requestheader-group-headers",
    "extra_headers_prefix": "requestheader-extra-headers-prefix",
}


@dataclass(frozen=True, slots=True)
class RequestHeaderOptions:
    """kube-scheduler's --requestheader-* flags; `client_ca_file` None means "look the
    whole configuration up in the cluster" (the other fields are then not used)."""

    client_ca_file: Path | None = None
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    uid_headers: tuple[str, ...] = DEFAULT_UID_HEADERS
    group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    extra_headers_prefix: tuple[str, ...] = DEFAULT_EXTRA_HEADERS_PREFIX


@dataclass(frozen=True, slots=True)
class RequestHeaderConfig:
    """The resolved configuration: whose certificates may assert identities, and where."""

    ca_pem: bytes
    allowed_names: tuple[str, ...]
    username_headers: tuple[str, ...]
    uid_headers: tuple[str, ...]
    group_headers: tuple[str, ...]
    extra_headers_prefix: tuple[str, ...]

    @classmethod
    def from_configmap(cls, data: Mapping[str, Any]) -> RequestHeaderConfig | None:
        """From extension-apiserver-authentication's data; None when it names no CA
        (kube-apiserver started without --requestheader-client-ca-file)."""
        ca = data.get(_CA_KEY)
        if not isinstance(ca, str) or not ca.strip():
            return None
        lists = {field: _json_list(data.get(key), key) for field, key in _LIST_KEYS.items()}
        return cls(ca.encode(), **lists)


def _json_list(text: object, key: str) -> tuple[str, ...]:
    if text is None or text == "":
        return ()
    try:
        values = json.loads(str(text))
    except ValueError:
        raise ServingError(f"configmap extension-apiserver-authentication: {key} is not "
                           f"a JSON list: {text!r}") from None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ServingError(f"configmap extension-apiserver-authentication: {key} is not "
                           f"a list of strings: {text!r}")
    return tuple(values)


def _trimmed(headers: tuple[str, ...], flag: str) -> tuple[str, ...]:
    # As upstream's trimHeaders: an empty header name is a configuration error.
    out = tuple(h.strip() for h in headers)
    if any(not h for h in out):
        raise ServingError(f"--requestheader-{flag}: empty header name in {list(headers)}")
    return out


ConfigMapLookup = Callable[[], Awaitable[Mapping[str, Any] | None]]


async def resolve(options: RequestHeaderOptions, lookup: ConfigMapLookup | None,
                  ) -> RequestHeaderConfig | None:
    """The flags when --requestheader-client-ca-file is set; else what `lookup` (the
    configmap's data, None when it could not be read) publishes; None: no front-proxy
    authentication."""
    config: RequestHeaderConfig | None
    if options.client_ca_file is not None:
        try:
            ca = options.client_ca_file.read_bytes()
        except OSError as error:
            raise ServingError(f"--requestheader-client-ca-file {options.client_ca_file}: "
                               f"{error.strerror}") from None
        config = RequestHeaderConfig(
            ca, options.allowed_names,
            _trimmed(options.username_headers, "username-headers"),
            _trimmed(options.uid_headers, "uid-headers"),
            _trimmed(options.group_headers, "group-headers"),
            _trimmed(options.extra_headers_prefix, "extra-headers-prefix"))
    elif lookup is None:
        return None
    else:
        data = await lookup()
        config = None if data is None else RequestHeaderConfig.from_configmap(data)
    if config is None:
        return None
    _load_cas(config.ca_pem)  # fail at start, not on the first proxied request
    return config


def _load_cas(pem: bytes) -> tuple[x509.Certificate, ...]:
    # cryptography is imported where it is used, as in certs.py: with no request header
    # CA (an --insecure-serving start) it never is.
    from cryptography import x509

    try:
        cas = tuple(x509.load_pem_x509_certificates(pem))
    except ValueError as error:
        raise ServingError(f"request header client CA: {error}") from None
    return cas


@dataclass(frozen=True, slots=True)
class ProxyVerdict:
    """What the connection's certificate says about the request.

    `proxy` is true when the certificate is the front proxy's (issued by the request
    header CA): it then is no user identity of its own, whatever `user` is."""

    proxy: bool
    user: UserInfo | None = None


NOT_PROXIED: Final = ProxyVerdict(False)


class RequestHeaderAuthenticator:
    def __init__(self, config: RequestHeaderConfig) -> None:
        self.config = config
        self._cas = _load_cas(config.ca_pem)

    def issued_by_proxy_ca(self, certificate: x509.Certificate) -> bool:
        """Signed directly by one of the request header CAs. The TLS layer has already
        verified the chain against the union of the client CAs; this says which.
        Intermediates are not followed: Python 3.11's ssl hands over only the leaf."""
        from cryptography.exceptions import InvalidSignature  # loaded by _load_cas

        for ca in self._cas:
            try:
                certificate.verify_directly_issued_by(ca)
            except (ValueError, TypeError, InvalidSignature):
                continue
            return True
        return False

    def authenticate(self, peer_der: bytes | None,
                     headers: Mapping[str, str] | Any) -> ProxyVerdict:
        """`peer_der`: the verified client certificate (DER) or None; `headers`: a
        case-insensitive multi-dict (aiohttp's CIMultiDictProxy)."""
        if not peer_der:
            return NOT_PROXIED
        from cryptography import x509  # loaded by _load_cas

        certificate = x509.load_der_x509_certificate(peer_der)
        if not self.issued_by_proxy_ca(certificate):
            return NOT_PROXIED
        names = certificate.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        common_name = str(names[0].value) if names else ""
        if self.config.allowed_names and common_name not in self.config.allowed_names:
            log.debug("authn.request_header_refused", common_name=common_name,
                      reason="not in --requestheader-allowed-names")
            return ProxyVerdict(True)
        return ProxyVerdict(True, self._user(headers))

    def _user(self, headers: Any) -> UserInfo | None:
        config = self.config
        name = _first_value(headers, config.username_headers)
        if not name:
            return None
        groups = tuple(value for header in config.group_headers
                       for value in headers.getall(header, ()) if value)
        uid = _first_value(headers, config.uid_headers)
        extra: dict[str, list[str]] = {}
        for prefix in config.extra_headers_prefix:
            for header, value in headers.items():
                if len(header) >= len(prefix) and header[:len(prefix)].lower() == \
                        prefix.lower():
                    extra.setdefault(_extra_key(header[len(prefix):]), []).append(value)
        # As upstream's AuthenticatedGroupAdder: the aggregator's own identities
        # (system:kube-aggregator asking for discovery) come with no groups, and
        # discovery is granted to system:authenticated.
        if AUTHENTICATED_GROUP not in groups:
            groups = (*groups, AUTHENTICATED_GROUP)
        return UserInfo(name, groups, uid,
                        tuple(sorted((k, tuple(v)) for k, v in extra.items())))


def _first_value(headers: Any, names: tuple[str, ...]) -> str:
    for header in names:
        value = headers.get(header, "")
        if value:
            return str(value)
    return ""


def _extra_key(raw: str) -> str:
    """As upstream: lower-cased, then %-decoded; kept as is when malformed (Go's
    url.PathUnescape fails on a bad escape or invalid UTF-8)."""
    lowered = raw.lower()
    if re.search(r"%(?![0-9a-f]{2})", lowered):
        return lowered
    try:
        return unquote(lowered, errors="strict")
    except UnicodeDecodeError:
        return lowered
