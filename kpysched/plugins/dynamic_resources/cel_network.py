"""Kubernetes' IP and CIDR CEL libraries (apiserver/pkg/cel/library/ip.go, cidr.go) for
DRA selectors: `ip("10.0.0.1")`, `isIP`, `ip.isCanonical`, `family`, `isUnspecified`,
`isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`,
`cidr("10.0.0.0/8")`, `isCIDR`, `containsIP`, `containsCIDR`, `ip()` of a CIDR,
`prefixLength`, `masked`, and `string()` of both.

Addresses are parsed as Go's net/netip does (ParseAddr, ParsePrefix), with its error
texts, because a selector's runtime error is the pod's FailedScheduling text; then
refused as the library refuses them (zones, IPv4-mapped IPv6). Values travel as the
messages net.IP and net.CIDR (upstream's type names) holding Go's canonical text (Addr.String(),
Prefix.String()), so message equality is upstream's `==` (netip values compare by
address and, for prefixes, bits).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel

from kpysched.plugins.dynamic_resources.cel_library import (
    CIDR_TYPE,
    IP_TYPE,
    kp_overloads,
    message_class,
    parses,
)

_TRAVERSAL = 0.1  # common.StringTraversalCostFactor


@dataclass(slots=True, frozen=True)
class Addr:
    """A netip.Addr without zone: 4 or 16 bytes."""

    octets: bytes

    @property
    def is4(self) -> bool:
        return len(self.octets) == 4

    def is4in6(self) -> bool:
        return not self.is4 and self.octets[:12] == b"\0" * 10 + b"\xff\xff"

    def unmapped(self) -> Addr:
        return Addr(self.octets[12:]) if self.is4in6() else self

    def __str__(self) -> str:
        if self.is4:
            return ".".join(str(b) for b in self.octets)
        if self.is4in6():
            return "::ffff:" + str(Addr(self.octets[12:]))
        groups = [self.octets[i] << 8 | self.octets[i + 1] for i in range(0, 16, 2)]
        start, end = 255, 255
        i = 0
        while i < 8:  # the first longest run of two or more zero groups
            j = i
            while j < 8 and groups[j] == 0:
                j += 1
            if j - i >= 2 and j - i > end - start:
                start, end = i, j
            i += 1
        out = ""
        i = 0
        while i < 8:
            if i == start:
                out += "::"
                i = end
                if i >= 8:
                    break
            elif i > 0:
                out += ":"
            out += f"{groups[i]:x}"
            i += 1
        return out

    @property
    def bits(self) -> int:
        return 32 if self.is4 else 128

    def as_int(self) -> int:
        return int.from_bytes(self.octets, "big")


def _quote(text: str) -> str:
    """Go's strconv.Quote for the texts an address can hold (printable ASCII mostly)."""
    return json.dumps(text, ensure_ascii=False)


class _ParseError(ValueError):
    def __init__(self, given: str, message: str, at: str = "") -> None:
        text = f"ParseAddr({_quote(given)}): {message}"
        if at:
            text += f" (at {_quote(at)})"
        super().__init__(text)


def _ipv4_fields(given: str, start: int, end: int) -> bytes:
    text = given[start:end]
    fields: list[int] = []
    value = digits = 0
    for i, char in enumerate(text):
        if "0" <= char <= "9":
            if digits == 1 and value == 0:
                raise _ParseError(given, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(char) - ord("0")
            digits += 1
            if value > 255:
                raise _ParseError(given, "IPv4 field has value >255")
        elif char == ".":
            if i == 0 or i == len(text) - 1 or text[i - 1] == ".":
                raise _ParseError(given, "IPv4 field must have at least one digit", text[i:])
            if len(fields) == 3:
                raise _ParseError(given, "IPv4 address too long")
            fields.append(value)
            value = digits = 0
        else:
            raise _ParseError(given, "unexpected character", text[i:])
    if len(fields) < 3:
        raise _ParseError(given, "IPv4 address too short")
    return bytes([*fields, value])


def _ipv6(given: str) -> tuple[Addr, str]:
    text, zone = given, ""
    if "%" in text:
        text, zone = text.split("%", 1)
        if not zone:
            raise _ParseError(given, "zone must be a non-empty string")
    octets = bytearray(16)
    ellipsis = -1
    if text.startswith("::"):
        ellipsis, text = 0, text[2:]
        if not text:
            return Addr(bytes(octets)), zone
    i = 0
    while i < 16:
        off = acc = 0
        while off < len(text):
            char = text[off].lower()
            if not ("0" <= char <= "9" or "a" <= char <= "f"):
                break
            acc = (acc << 4) + int(char, 16)
            if off > 3:
                raise _ParseError(given, "each group must have 4 or less digits", text)
            if acc > 0xFFFF:
                raise _ParseError(given, "IPv6 field has value >=2^16", text)
            off += 1
        if off == 0:
            raise _ParseError(given, "each colon-separated field must have at least one digit",
                              text)
        if off < len(text) and text[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _ParseError(given, "embedded IPv4 address must replace the final 2 "
                                  "fields of the address", text)
            if i + 4 > 16:
                raise _ParseError(given, "too many hex fields to fit an embedded IPv4 at the "
                                  "end of the address", text)
            end = len(given) - (len(zone) + 1 if zone else 0)
            octets[i:i + 4] = _ipv4_fields(given, end - len(text), end)
            text = ""
            i += 4
            break
        octets[i], octets[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        text = text[off:]
        if not text:
            break
        if text[0] != ":":
            raise _ParseError(given, "unexpected character, want colon", text)
        if len(text) == 1:
            raise _ParseError(given, "colon must be followed by more characters", text)
        text = text[1:]
        if text[0] == ":":
            if ellipsis >= 0:
                raise _ParseError(given, "multiple :: in address", text)
            ellipsis, text = i, text[1:]
            if not text:
                break
    if text:
        raise _ParseError(given, "trailing garbage after address", text)
    if i < 16:
        if ellipsis < 0:
            raise _ParseError(given, "address string too short")
        shift = 16 - i
        octets[ellipsis + shift:16] = octets[ellipsis:i]
        octets[ellipsis:ellipsis + shift] = bytes(shift)
    elif ellipsis >= 0:
        raise _ParseError(given, "the :: must expand to at least one field of zeros")
    return Addr(bytes(octets)), zone


def parse_addr(given: str) -> tuple[Addr, str]:
    """netip.ParseAddr: the address and its zone."""
    for char in given:
        if char == ".":
            return Addr(_ipv4_fields(given, 0, len(given))), ""
        if char == ":":
            return _ipv6(given)
        if char == "%":
            raise _ParseError(given, "missing IPv6 address")
    raise _ParseError(given, "unable to parse IP")


@lru_cache(maxsize=1024)
def library_ip(given: str) -> Addr:
    """The library's parseIPAddr."""
    try:
        addr, zone = parse_addr(given)
    except _ParseError as err:
        raise ValueError(f"IP Address {_quote(given)} parse error during conversion from "
                         f"string: {err}") from None
    if zone:
        raise ValueError(f"IP address {_quote(given)} with zone value is not allowed")
    if addr.is4in6():
        raise ValueError(f"IPv4-mapped IPv6 address {_quote(given)} is not allowed")
    return addr


@dataclass(slots=True, frozen=True)
class Prefix:
    addr: Addr
    bits: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def masked(self) -> Prefix:
        shift = self.addr.bits - self.bits
        value = self.addr.as_int() >> shift << shift if shift < self.addr.bits else 0
        return Prefix(Addr(value.to_bytes(len(self.addr.octets), "big")), self.bits)

    def contains(self, addr: Addr) -> bool:
        if addr.bits != self.addr.bits:
            return False
        shift = self.addr.bits - self.bits
        return (addr.as_int() ^ self.addr.as_int()) >> shift == 0

    def overlaps(self, other: Prefix) -> bool:
        if self == other:
            return True
        if self.addr.is4 != other.addr.is4:
            return False
        bits = min(self.bits, other.bits)
        if bits == 0:
            return True
        return Prefix(self.addr, bits).masked() == Prefix(other.addr, bits).masked()


def _parse_prefix(given: str) -> Prefix:
    """netip.ParsePrefix."""
    def failure(message: str) -> ValueError:
        return ValueError(f"netip.ParsePrefix({_quote(given)}): {message}")

    slash = given.rfind("/")
    if slash < 0:
        raise failure("no '/'")
    try:
        addr, zone = parse_addr(given[:slash])
    except _ParseError as err:
        raise failure(str(err)) from None
    if zone and not addr.is4:
        raise failure("IPv6 zones cannot be present in a prefix")
    bits_text = given[slash + 1:]
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise failure(f"bad bits after slash: {_quote(bits_text)}")
    if not _is_go_int(bits_text):
        raise failure(f"bad bits after slash: {_quote(bits_text)}")
    bits = int(bits_text)
    if not 0 <= bits <= addr.bits:
        raise failure("prefix length out of range")
    return Prefix(addr, bits)


def _is_go_int(text: str) -> bool:
    """strconv.Atoi accepts an optional sign and decimal digits (within int64)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    return digits.isascii() and digits.isdigit() and abs(int(text)) < 1 << 63


@lru_cache(maxsize=1024)
def library_cidr(given: str) -> Prefix:
    """The library's parseCIDR, with stringToCIDR's wording."""
    lead = "network address parse error during conversion from string: "
    try:
        prefix = _parse_prefix(given)
    except ValueError as err:
        raise ValueError(f"{lead}{lead}{err}") from None
    if prefix.addr.is4in6():
        raise ValueError(f"{lead}IPv4-mapped IPv6 address {_quote(given)} is not allowed")
    return prefix


def is_unspecified(addr: Addr) -> bool:
    return not any(addr.octets)


def is_loopback(addr: Addr) -> bool:
    addr = addr.unmapped()
    return addr.octets[0] == 127 if addr.is4 else addr.as_int() == 1


def _is_multicast(addr: Addr) -> bool:
    addr = addr.unmapped()
    return addr.octets[0] & 0xF0 == 0xE0 if addr.is4 else addr.octets[0] == 0xFF


def is_link_local_multicast(addr: Addr) -> bool:
    addr = addr.unmapped()
    if addr.is4:
        return addr.octets[:3] == bytes([224, 0, 0])
    return (addr.octets[0] << 8 | addr.octets[1]) & 0xFF0F == 0xFF02


def is_link_local_unicast(addr: Addr) -> bool:
    addr = addr.unmapped()
    if addr.is4:
        return addr.octets[:2] == bytes([169, 254])
    return (addr.octets[0] << 8 | addr.octets[1]) & 0xFFC0 == 0xFE80


def is_global_unicast(addr: Addr) -> bool:
    addr = addr.unmapped()
    if addr.is4 and addr.octets in (bytes(4), b"\xff" * 4):
        return False
    return not (is_unspecified(addr) or is_loopback(addr) or _is_multicast(addr)
                or is_link_local_unicast(addr))


def contains_cidr(prefix: Prefix, other: Prefix) -> bool:
    return prefix.overlaps(other) and prefix.bits <= other.bits


def _tenths(size: float) -> int:
    return math.ceil(size * _TRAVERSAL)


def byte_size(bits: int) -> int:
    """IP.Size / CIDR.Size: the bits in bytes, rounded up."""
    return math.ceil(bits / 8)


def parse_cost(text: str, factor: int = 1) -> int:
    """library.CostEstimator for ip(), cidr(), isIP, isCIDR, ip.isCanonical (factor 2):
    the string's runes times 0.1, rounded up."""
    return math.ceil(len(text) * factor * _TRAVERSAL)


def contains_cost(prefix: Prefix, from_string: str | None, of_cidr: bool) -> int:
    """containsIP / containsCIDR: comparing up to the prefix's bytes (twice), for a CIDR
    once more plus one, and parsing a string argument."""
    size = byte_size(prefix.bits)
    cost = _tenths(size + size)
    if of_cidr:
        cost += _tenths(size) + 1
    if from_string is not None:
        cost += _tenths(len(from_string))
    return cost


# --- the runtime functions -----------------------------------------------------------------

def _ip_value(message: Any) -> Addr:
    return library_ip(message.addr)


def _cidr_value(message: Any) -> Prefix:
    return library_cidr(message.prefix)


def network_functions(charge: Callable[[int], None]) -> list[cel.FunctionDecl]:
    """The `@kp.` functions cel_adapt renames the libraries' calls to; each charges what
    library.CostEstimator prices it at (none of these has a call cost besides)."""
    ip_class, cidr_class = message_class("net.IP"), message_class("net.CIDR")
    t = cel.Type

    def ip_message(addr: Addr) -> Any:
        return ip_class(addr=str(addr))

    def cidr_message(prefix: Prefix) -> Any:
        return cidr_class(prefix=str(prefix))

    def parse_ip(text: str) -> Any:
        charge(parse_cost(text))
        return ip_message(library_ip(text))

    def priced_parse(accepts: Callable[[str], bool]) -> Callable[[str], bool]:
        def is_kind(text: str) -> bool:
            charge(parse_cost(text))
            return accepts(text)
        return is_kind

    def is_canonical(text: str) -> bool:
        charge(parse_cost(text, 2))
        return str(library_ip(text)) == text

    def parse_cidr(text: str) -> Any:
        charge(parse_cost(text))
        return cidr_message(library_cidr(text))

    def unit(impl: Callable[..., Any]) -> Callable[..., Any]:
        def priced(*args: Any) -> Any:
            charge(1)
            return impl(*args)
        return priced

    def contains_ip_string(prefix: Any, text: str) -> bool:
        value = _cidr_value(prefix)
        charge(contains_cost(value, text, of_cidr=False))
        try:
            addr = library_ip(text)
        except ValueError:
            # cidrContainsIP is handed the parse error and answers for the CIDR.
            raise ValueError("no such overload") from None
        return value.contains(addr)

    def contains_cidr_string(prefix: Any, text: str) -> bool:
        value = _cidr_value(prefix)
        charge(contains_cost(value, text, of_cidr=True))
        return contains_cidr(value, library_cidr(text))

    ip, cidr = IP_TYPE, CIDR_TYPE
    return [
        kp_overloads("@kp.ip", (ip, [t.STRING], parse_ip)),
        kp_overloads("@kp.isIP", (t.BOOL, [t.STRING], priced_parse(parses(library_ip)))),
        kp_overloads("@kp.ip.isCanonical", (t.BOOL, [t.STRING], is_canonical)),
        kp_overloads("@kp.ip.family", (t.INT, [ip], unit(lambda m: 4 if _ip_value(m).is4 else 6))),
        *(kp_overloads(f"@kp.ip.{name}", (t.BOOL, [ip], unit(lambda m, test=test: test(
            _ip_value(m)))))
          for name, test in (("isUnspecified", is_unspecified), ("isLoopback", is_loopback),
                             ("isLinkLocalMulticast", is_link_local_multicast),
                             ("isLinkLocalUnicast", is_link_local_unicast),
                             ("isGlobalUnicast", is_global_unicast))),
        kp_overloads("@kp.ip.string", (t.STRING, [ip], lambda m: m.addr)),
        kp_overloads("@kp.cidr", (cidr, [t.STRING], parse_cidr)),
        kp_overloads("@kp.isCIDR", (t.BOOL, [t.STRING], priced_parse(parses(library_cidr)))),
        kp_overloads("@kp.cidr.ip", (ip, [cidr], unit(lambda m: ip_message(_cidr_value(m).addr)))),
        kp_overloads("@kp.cidr.prefixLength", (t.INT, [cidr], unit(lambda m: _cidr_value(m).bits))),
        kp_overloads("@kp.cidr.masked",
                  (cidr, [cidr], unit(lambda m: cidr_message(_cidr_value(m).masked())))),
        kp_overloads("@kp.cidr.string", (t.STRING, [cidr], lambda m: m.prefix)),
        kp_overloads("@kp.cidr.containsIP",
                  (t.BOOL, [cidr, t.STRING], contains_ip_string),
                  (t.BOOL, [cidr, ip], lambda p, a: _priced_contains(charge, p, a))),
        kp_overloads("@kp.cidr.containsCIDR",
                  (t.BOOL, [cidr, t.STRING], contains_cidr_string),
                  (t.BOOL, [cidr, cidr], lambda p, o: _priced_contains_cidr(charge, p, o))),
    ]


def _priced_contains(charge: Callable[[int], None], prefix: Any, addr: Any) -> bool:
    value = _cidr_value(prefix)
    charge(contains_cost(value, None, of_cidr=False))
    return value.contains(_ip_value(addr))


def _priced_contains_cidr(charge: Callable[[int], None], prefix: Any, other: Any) -> bool:
    value = _cidr_value(prefix)
    charge(contains_cost(value, None, of_cidr=True))
    return contains_cidr(value, _cidr_value(other))
