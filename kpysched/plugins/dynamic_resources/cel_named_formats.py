"""Kubernetes' named-format CEL library (apiserver/pkg/cel/library/format.go) for DRA
selectors: `format.named(name)` (an optional format), `format.dns1123Label()` and the
other constant formats, and `<format>.validate(s)` (none when `s` is valid, else the
list of apimachinery's error texts).

A format travels as the message kubernetes.NamedFormat holding upstream's Format.Name
(`DNS1123Label`, `uuid`, ...), which Format.Equal compares. cel-expr-python cannot pass
an optional to or from Python, so the Python functions answer a list of at most one
value and cel_adapt takes the optional from it (`@kp.format.named(n)[?0]`). The
validators are apimachinery's and kube-openapi strfmt's rules carried over, with their
texts: Go measures lengths in bytes and its regexps read bytes, so the name checks work
on the UTF-8 bytes.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kpysched.plugins.dynamic_resources.cel_library import FORMAT_TYPE, kp_function, message_class
from kpysched.plugins.dynamic_resources.cel_urls import parse_request_uri

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE = "(" + _KEY + ")?"
_LABEL_RE, _SUBDOMAIN_RE, _DNS1035_RE, _KEY_RE, _VALUE_RE = (
    re.compile(pattern.encode()) for pattern in (_LABEL, _SUBDOMAIN, _DNS1035, _KEY, _VALUE))

_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
              "characters or '-', and must start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                "'-', start with an alphabetic character, and end with an alphanumeric "
                "character")
_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
              "characters, '-', '_' or '.', and must start and end with an alphanumeric "
              "character")


def _regex_error(msg: str, pattern: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in
                    enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{pattern}')"


def _too_long(limit: int, unit: str) -> str:
    # k8s.io/apimachinery/pkg/util/validation says characters, api/validate/content bytes.
    return f"must be no more than {limit} {unit}"


def _dns1123_label(value: bytes) -> list[str]:
    errs = [_too_long(63, "characters")] if len(value) > 63 else []
    if not _LABEL_RE.fullmatch(value):
        errs.append("must not contain dots" if _SUBDOMAIN_RE.fullmatch(value) else
                    _regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errs


def _dns1123_subdomain(value: bytes, unit: str = "characters") -> list[str]:
    errs = [_too_long(253, unit)] if len(value) > 253 else []
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errs


def _dns1035_label(value: bytes) -> list[str]:
    errs = [_too_long(63, "characters")] if len(value) > 63 else []
    if not _DNS1035_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_MSG, _DNS1035, "my-name", "abc-123"))
    return errs


def _qualified_name(value: bytes) -> list[str]:
    """content.IsLabelKey."""
    errs: list[str] = []
    parts = value.split(b"/")
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(_KEY_MSG, _KEY, "MyName", "my.name",
                                                    "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + msg for msg in _dns1123_subdomain(parts[0], "bytes")]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _too_long(63, "bytes"))
    if not _KEY_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_KEY_MSG, _KEY, "MyName", "my.name",
                                                "123-abc"))
    return errs


def _label_value(value: bytes) -> list[str]:
    errs = [_too_long(63, "bytes")] if len(value) > 63 else []
    if not _VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE, "MyValue", "my_value", "12345"))
    return errs


def _prefix(check: Callable[[bytes], list[str]]) -> Callable[[bytes], list[str]]:
    """maskTrailingDash: a generated name's trailing dash (and the byte before it) read
    as `a`."""
    def masked(value: bytes) -> list[str]:
        if len(value) > 1 and value.endswith(b"-"):
            value = value[:-2] + b"a"
        return check(value)
    return masked


def _uri(value: bytes) -> list[str]:
    try:
        parse_request_uri(value.decode())
    except ValueError as err:
        return [str(err)]
    return []


_UUID_RE = re.compile(rb"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}",
                      re.IGNORECASE)
_BASE64_RE = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|"
                        rb"[A-Za-z0-9+/]{4})")
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def is_date(text: str) -> bool:
    """time.Parse("2006-01-02", text) succeeds."""
    found = _DATE_RE.fullmatch(text)
    if found is None:
        return False
    year, month, day = (int(part) for part in found.groups())
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year or 2000, month)[1]


def is_datetime(text: str) -> bool:
    """strfmt.IsDateTime: a date, a `t` and the time pattern, on the text lowered (one
    rune for one, as Go's strings.ToLower); text after a second `t` is not read."""
    if len(text.encode()) < 4:
        return False
    parts = "".join(char.lower()[0] for char in text).split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    found = _TIME_RE.fullmatch(parts[1])
    return found is not None and found[1] <= "23" and found[2] <= "59" and found[3] <= "59"


def _checked(test: Callable[[str], bool], message: str) -> Callable[[bytes], list[str]]:
    return lambda value: [] if test(value.decode()) else [message]


@dataclass(slots=True, frozen=True)
class NamedFormat:
    name: str  # upstream's Format.Name
    validate: Callable[[bytes], list[str]]
    max_regex_size: int  # Format.MaxRegexSize, which library.CostEstimator prices


FORMATS: dict[str, NamedFormat] = {
    "dns1123Label": NamedFormat("DNS1123Label", _dns1123_label, 30),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", _dns1123_subdomain, 60),
    "dns1035Label": NamedFormat("DNS1035Label", _dns1035_label, 30),
    "qualifiedName": NamedFormat("QualifiedName", _qualified_name, 60),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", _prefix(_dns1123_label), 30),
    "dns1123SubdomainPrefix": NamedFormat("DNS1123SubdomainPrefix",
                                          _prefix(_dns1123_subdomain), 60),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", _prefix(_dns1035_label), 30),
    "labelValue": NamedFormat("LabelValue", _label_value, 40),
    "uri": NamedFormat("URI", _uri, 1103),
    "uuid": NamedFormat("uuid", _checked(lambda s: _UUID_RE.fullmatch(s.encode()) is not None,
                                         "does not match the UUID format"), 70),
    "byte": NamedFormat("byte", _checked(
        lambda s: _BASE64_RE.fullmatch(s.encode()) is not None, "invalid base64"), 84),
    "date": NamedFormat("date", _checked(is_date, "invalid date"), 71),
    "datetime": NamedFormat("datetime", _checked(is_datetime, "invalid datetime"), 71),
}
_BY_NAME = {named.name: named for named in FORMATS.values()}
# The largest MaxRegexSize, for cel_bound.
MAX_REGEX_SIZE = max(named.max_regex_size for named in FORMATS.values())


def validate_cost(named_size: int, text: str) -> int:
    """library.CostEstimator for validate: (1 + runes) * 0.1 times MaxRegexSize * 0.25,
    each rounded up."""
    return math.ceil((1 + len(text)) * 0.1) * math.ceil(named_size * 0.25)


def validate(key: str, text: str) -> list[str]:
    """The error texts of the format upstream names `key` (FORMATS) for `text`."""
    return FORMATS[key].validate(text.encode())


# --- the runtime functions -----------------------------------------------------------------

def named_format_functions(charge: Callable[[int], None]) -> list[cel.FunctionDecl]:
    """The `@kp.` functions cel_adapt renames the library's calls to: `@kp.format.named`
    and `@kp.format.validate` answer a list of at most one value (cel_adapt makes the
    optional); `@kp.format.constant` takes a constant's key. validate charges what
    library.CostEstimator prices it at; the others cost the call's 1, which the metered
    copy charges."""
    format_class = message_class("kubernetes.NamedFormat")
    t = cel.Type

    def named(key: str) -> list[Any]:
        found = FORMATS.get(key)
        return [] if found is None else [format_class(name=found.name)]

    def constant(key: str) -> Any:
        return format_class(name=FORMATS[key].name)

    def check(message: Any, text: str) -> list[list[str]]:
        found = _BY_NAME[message.name]
        charge(validate_cost(found.max_regex_size, text))
        errs = found.validate(text.encode())
        return [errs] if errs else []

    return [
        kp_function("@kp.format.named", t.LIST, [t.STRING], named),
        kp_function("@kp.format.constant", FORMAT_TYPE, [t.STRING], constant),
        kp_function("@kp.format.validate", t.LIST, [FORMAT_TYPE, t.STRING], check),
    ]
