"""An AWS EBS volume ID from the in-tree form, as csi-translation-lib reads it.

In-tree EBS volumes name their disk either bare ("vol-0abc") or as a URL
("aws://us-east-1a/vol-0abc"); the CSI driver wants the bare ID. Upstream parses the
URL with Go's net/url, so a malformed one fails with that package's message, which
NodeVolumeLimits puts into a Filter error. The checks of net/url that can fail on such
a URL are reproduced for the parts that decide the outcome: control characters, the
port after the host, characters and %-escapes in the host, %-escapes in the path and
fragment. IPv6 literals and user info are not validated (nothing names an EBS disk so).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

_PREFIX = "aws://"
_VOLUME_ID = re.compile(r"vol-[^/]*")
_HEX = frozenset("0123456789abcdefABCDEF")
# Besides letters and digits, the ASCII characters net/url accepts in a host name.
_HOST_PUNCTUATION = frozenset("-_.~!$&'()*+,;=:[]<>\"")
_NAMED_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def ebs_volume_id(kubernetes_id: str) -> tuple[str, str]:
    """(volume ID, "") or ("", the error text upstream's KubernetesVolumeIDToEBSVolumeID gives)."""
    if not kubernetes_id.startswith(_PREFIX):
        return kubernetes_id, ""
    path, problem = _url_path(kubernetes_id)
    if problem:
        return "", f"Invalid disk name ({kubernetes_id}): {problem}"
    volume_id = path.strip("/")
    if not _VOLUME_ID.fullmatch(volume_id):
        return "", f"Invalid format for AWS volume ({kubernetes_id})"
    return volume_id, ""


def _url_path(raw: str) -> tuple[str, str]:
    """The unescaped path of an aws:// URL, or net/url's parse error."""
    before_fragment, _, fragment = raw.partition("#")
    if any(ord(char) < 0x20 or char == "\x7f" for char in before_fragment):
        return "", _parse_error(before_fragment, "net/url: invalid control character in URL")
    rest = before_fragment[len("aws:"):]
    rest = rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest.partition("?")[0]
    authority, slash, path = rest[2:].partition("/")
    problem = _host_problem(authority.rpartition("@")[2]) or _escape_problem(slash + path)
    if problem:
        return "", _parse_error(before_fragment, problem)
    if fragment and (problem := _escape_problem(fragment)):
        return "", _parse_error(raw, problem)
    return unquote(slash + path, errors="surrogateescape"), ""


def _host_problem(host: str) -> str:
    """net/url's complaint about the host, in the order it checks."""
    bracket = host.rfind("[")
    if bracket > 0:
        return "invalid IP-literal"
    if bracket < 0 and ":" in host:
        port = host[host.rfind(":"):]
        digits = port[1:]
        if digits and not (digits.isascii() and digits.isdigit()):
            return f"invalid port {_go_quote(port)} after host"
    for index, char in enumerate(host):
        if char == "%":
            escape = host[index:index + 3]
            if _escape_problem(escape):
                return _escape_problem(escape)
            # A host may %-escape only non-ASCII bytes (and the "%25" of a zone).
            if int(escape[1], 16) < 8 and escape != "%25":
                return f"invalid URL escape {_go_quote(escape)}"
        elif char < "\x80" and not char.isalnum() and char not in _HOST_PUNCTUATION:
            return f"invalid character {_go_quote(char)} in host name"
    return ""


def _escape_problem(text: str) -> str:
    """net/url's EscapeError for the first malformed %-escape, or ""."""
    index = text.find("%")
    while index >= 0:
        if len(text) - index < 3 or not set(text[index + 1:index + 3]) <= _HEX:
            return f"invalid URL escape {_go_quote(text[index:index + 3])}"
        index = text.find("%", index + 3)
    return ""


def _parse_error(url: str, problem: str) -> str:
    return f"parse {_go_quote(url)}: {problem}"


def _go_quote(text: str) -> str:
    """Go's strconv.Quote for the texts above."""
    quoted = []
    for char in text:
        if char in _NAMED_ESCAPES:
            quoted.append(_NAMED_ESCAPES[char])
        elif char.isprintable():
            quoted.append(char)
        elif ord(char) < 0x100:
            quoted.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            quoted.append(f"\\u{ord(char):04x}")
        else:
            quoted.append(f"\\U{ord(char):08x}")
    return '"' + "".join(quoted) + '"'
