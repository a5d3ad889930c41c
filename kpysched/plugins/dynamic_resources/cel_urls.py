"""Kubernetes' URL CEL library (apiserver/pkg/cel/library/urls.go) for DRA selectors:
`url(s)`, `isURL(s)`, `getScheme`, `getHost`, `getHostname`, `getPort`,
`getEscapedPath`, `getQuery`.

`url` accepts what Go's url.ParseRequestURI accepts (an absolute URI or an absolute
path) and then holds what url.Parse makes of the text, as upstream does; both parsers
are net/url's rules carried over (Go 1.26: strict colons in http(s) hosts), with its
error texts, since a selector's runtime error is the pod's FailedScheduling text. A URL
travels as the message kubernetes.URL holding Go's URL.String(), so message equality is
upstream's `==` (it compares String()); the accessors read the URL parsed back from that
text. Go strings are bytes: the parsers work on the UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from kpysched.plugins.dynamic_resources.cel_library import (
    URL_TYPE,
    kp_function,
    message_class,
    parses,
)
from kpysched.plugins.dynamic_resources.cel_network import parse_addr

# net/url's encoding modes.
_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(7)
_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_RESERVED = frozenset(b"$&+,/:;=?@")
_HOST_ALLOWED = frozenset(b"!$&'()*+,;=:[]<>\"")
_SUB_DELIMS = frozenset(b"!$&'()*+,;=:@[]%")  # validEncoded's, with '[', ']' and '%'
_USERINFO = frozenset(b"-._:~!$&'()*+,;=%@") | _ALNUM


def _should_escape(c: int, mode: int) -> bool:
    if c in _ALNUM:
        return False
    if mode in (_HOST, _ZONE) and c in _HOST_ALLOWED:
        return False
    if c in b"-_.~":
        return False
    if c in _RESERVED:
        if mode == _PATH:
            return c == ord("?")
        if mode == _PATH_SEGMENT:
            return c in b"/;,?"
        if mode == _USER_PASSWORD:
            return c in b"@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and c in b"!()*")


_GO_ESCAPES = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v",
               ord('"'): '\\"', ord("\\"): "\\\\"}


def go_quote(text: str) -> str:
    """strconv.Quote for what reaches the messages: ASCII control bytes escaped."""
    out = []
    for char in text:
        code = ord(char)
        if code in _GO_ESCAPES:
            out.append(_GO_ESCAPES[code])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _unescape(s: bytes, mode: int) -> bytes:
    """net/url's unescape: ValueError with its EscapeError / InvalidHostError text."""
    count, plus = 0, False
    i = 0
    while i < len(s):
        c = s[i]
        if c == ord("%"):
            count += 1
            if i + 2 >= len(s) or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise ValueError(f"invalid URL escape {go_quote(_text(s[i:i + 3]))}")
            value = int(s[i + 1:i + 3], 16)
            if mode == _HOST and value < 0x80 and s[i:i + 3] != b"%25":
                raise ValueError(f"invalid URL escape {go_quote(_text(s[i:i + 3]))}")
            if (mode == _ZONE and s[i:i + 3] != b"%25" and value != ord(" ")
                    and _should_escape(value, _HOST)):
                raise ValueError(f"invalid URL escape {go_quote(_text(s[i:i + 3]))}")
            i += 3
            continue
        if c == ord("+"):
            plus = mode == _QUERY_COMPONENT
        elif mode in (_HOST, _ZONE) and c < 0x80 and _should_escape(c, mode):
            raise ValueError(f"invalid character {go_quote(chr(c))} in host name")
        i += 1
    if count == 0 and not plus:
        return s
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == ord("%"):
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(ord(" ") if c == ord("+") and mode == _QUERY_COMPONENT else c)
        i += 1
    return bytes(out)


def _escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if c == ord(" ") and mode == _QUERY_COMPONENT:
            out.append(ord("+"))
        elif _should_escape(c, mode):
            out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def _valid_encoded(s: bytes, mode: int) -> bool:
    return all(c in _SUB_DELIMS or not _should_escape(c, mode) for c in s)


def _valid_optional_port(port: bytes) -> bool:
    return not port or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


def _raw_holds(raw: bytes, decoded: bytes, mode: int) -> bool:
    """Whether the raw (as written) form is a valid encoding of the decoded one, so that
    EscapedPath / EscapedFragment give it back as written."""
    if not raw or not _valid_encoded(raw, mode):
        return False
    try:
        return _unescape(raw, mode) == decoded
    except ValueError:
        return False


@dataclass(slots=True)
class URL:
    """A net/url URL: the fields its String() and the library's accessors read."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: tuple[bytes, bytes | None] | None = None
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    raw_query: bytes = b""
    force_query: bool = False
    omit_host: bool = False
    fragment: bytes = b""
    raw_fragment: bytes = b""

    def escaped_path(self) -> bytes:
        if _raw_holds(self.raw_path, self.path, _PATH):
            return self.raw_path
        if self.path == b"*":
            return b"*"
        return _escape(self.path, _PATH)

    def escaped_fragment(self) -> bytes:
        if _raw_holds(self.raw_fragment, self.fragment, _FRAGMENT):
            return self.raw_fragment
        return _escape(self.fragment, _FRAGMENT)

    def string(self) -> str:
        out = bytearray()
        if self.scheme:
            out += self.scheme + b":"
        if self.opaque:
            out += self.opaque
        else:
            if (self.scheme or self.host or self.user is not None) and not (
                    self.omit_host and not self.host and self.user is None):
                if self.host or self.path or self.user is not None:
                    out += b"//"
                if self.user is not None:
                    name, password = self.user
                    out += _escape(name, _USER_PASSWORD)
                    if password is not None:
                        out += b":" + _escape(password, _USER_PASSWORD)
                    out += b"@"
                if self.host:
                    out += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                out += b"/"
            if not out and b":" in path.split(b"/", 1)[0]:
                out += b"./"
            out += path
        if self.force_query or self.raw_query:
            out += b"?" + self.raw_query
        if self.fragment:
            out += b"#" + self.escaped_fragment()
        return _text(bytes(out))

    def split_host_port(self) -> tuple[bytes, bytes]:
        host, port = self.host, b""
        colon = host.rfind(b":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host, port = host[:colon], host[colon + 1:]
        if host.startswith(b"[") and host.endswith(b"]"):
            host = host[1:-1]
        return host, port

    def query(self) -> dict[str, list[str]]:
        """URL.Query(): ParseQuery with the malformed pairs left out."""
        values: dict[str, list[str]] = {}
        rest = self.raw_query
        if rest.count(b"&") + 1 > 10_000:  # urlmaxqueryparams
            return values
        while rest:
            pair, _, rest = rest.partition(b"&")
            if b";" in pair or not pair:
                continue
            key, _, value = pair.partition(b"=")
            try:
                name = _text(_unescape(key, _QUERY_COMPONENT))
                text = _text(_unescape(value, _QUERY_COMPONENT))
            except ValueError:
                continue
            values.setdefault(name, []).append(text)
        return values


def _scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == ord(":"):
            if i == 0:
                raise ValueError("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    bracket = host.rfind(b"[")
    if bracket > 0:
        raise ValueError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise ValueError("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise ValueError(f"invalid port {go_quote(_text(colon_port))} after host")
        colon_port = _unescape(colon_port, _HOST)
        name = host[1:close]
        zone = name.find(b"%25")
        if zone >= 0:
            unescaped = _unescape(name[:zone], _HOST) + _unescape(name[zone:], _ZONE)
        else:
            unescaped = _unescape(name, _HOST)
        try:
            addr, _ = parse_addr(_text(unescaped))
        except ValueError as err:
            raise ValueError(f"invalid host: {err}") from None
        if addr.is4:
            raise ValueError("invalid IP-literal")
        return b"[" + unescaped + b"]" + colon_port
    first = host.find(b":")
    if first != -1:
        last = host.rfind(b":")
        at = first if scheme in (b"http", b"https") else last
        if not _valid_optional_port(host[at:]):
            raise ValueError(f"invalid port {go_quote(_text(host[at:]))} after host")
    return _unescape(host, _HOST)


def _parse_authority(scheme: bytes, authority: bytes
                     ) -> tuple[tuple[bytes, bytes | None] | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(scheme, authority[at + 1:] if at >= 0 else authority)
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not all(c in _USERINFO for c in userinfo):
        raise ValueError("net/url: invalid userinfo")
    if b":" not in userinfo:
        return (_unescape(userinfo, _USER_PASSWORD), None), host
    name, _, password = userinfo.partition(b":")
    return (_unescape(name, _USER_PASSWORD), _unescape(password, _USER_PASSWORD)), host


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise ValueError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise ValueError("empty url")
    url = URL()
    if raw == b"*":
        url.path = b"*"
        return url
    scheme, rest = _scheme(raw)
    url.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        url.force_query = True
        rest = rest[:-1]
    else:
        rest, _, url.raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if url.scheme:
            url.opaque = rest
            return url
        if via_request:
            raise ValueError("invalid URI for request")
        if b":" in rest.split(b"/", 1)[0]:
            raise ValueError("first path segment in URL cannot contain colon")
    if (url.scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, slash, tail = rest[2:].partition(b"/")
        rest = slash + tail
        url.user, url.host = _parse_authority(url.scheme, authority)
    elif url.scheme and rest.startswith(b"/"):
        url.omit_host = True
    url.path = _unescape(rest, _PATH)
    url.raw_path = b"" if _escape(url.path, _PATH) == rest else rest
    return url


def _wrapped(raw: bytes, via_request: bool) -> URL:
    try:
        return _parse(raw, via_request)
    except ValueError as err:
        raise ValueError(f"parse {go_quote(_text(raw))}: {err}") from None


def parse_request_uri(given: str) -> URL:
    """url.ParseRequestURI, its error as Go's *url.Error prints."""
    return _wrapped(given.encode(), True)


def parse(given: str) -> URL:
    """url.Parse: the fragment cut off first."""
    raw, hash_sign, fragment = given.encode().partition(b"#")
    url = _wrapped(raw, False)
    if hash_sign and fragment:
        try:
            url.fragment = _unescape(fragment, _FRAGMENT)
        except ValueError as err:
            raise ValueError(f"parse {go_quote(given)}: {err}") from None
        url.raw_fragment = (b"" if _escape(url.fragment, _FRAGMENT) == fragment
                            else fragment)
    return url


@lru_cache(maxsize=1024)
def library_url(given: str) -> str:
    """stringToUrl: the text of the URL it holds (URL.String())."""
    try:
        parse_request_uri(given)
        return parse(given).string()
    except ValueError as err:
        raise ValueError(f"URL parse error during conversion from string: {err}") from None


@lru_cache(maxsize=1024)
def _held(text: str) -> URL:
    return parse(text)


is_url = parses(parse_request_uri)


def parse_cost(given: str) -> int:
    """library.CostEstimator for url(): the string's runes times 0.1, rounded up."""
    return -(-len(given) // 10)


# --- the runtime functions -----------------------------------------------------------------

def url_functions(charge: Callable[[int], None]) -> list[cel.FunctionDecl]:
    """The `@kp.` functions cel_adapt renames the library's calls to. `url` charges what
    library.CostEstimator prices it at (and nothing for the call); the accessors and
    isURL cost the call's 1, which the metered copy charges."""
    url_class = message_class("kubernetes.URL")
    t = cel.Type

    def to_url(given: str) -> Any:
        charge(parse_cost(given))
        return url_class(text=library_url(given))

    def accessor(read: Callable[[URL], Any]) -> Callable[[Any], Any]:
        return lambda message: read(_held(message.text))

    # The URL's accessors: (name, result, what it reads of the parsed URL).
    accessors: tuple[tuple[str, cel.Type, Callable[[URL], Any]], ...] = (
        ("getScheme", t.STRING, lambda u: _text(u.scheme)),
        ("getHost", t.STRING, lambda u: _text(u.host)),
        ("getHostname", t.STRING, lambda u: _text(u.split_host_port()[0])),
        ("getPort", t.STRING, lambda u: _text(u.split_host_port()[1])),
        ("getEscapedPath", t.STRING, lambda u: _text(u.escaped_path())),
        ("getQuery", t.MAP, URL.query),
    )
    return [
        kp_function("@kp.url", URL_TYPE, [t.STRING], to_url),
        kp_function("@kp.isURL", t.BOOL, [t.STRING], is_url),
        *(kp_function(f"@kp.url.{name}", result, [URL_TYPE], accessor(read))
          for name, result, read in accessors),
    ]
