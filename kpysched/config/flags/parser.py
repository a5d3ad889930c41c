"""Command-line flags in Go's pflag syntax, as kube-scheduler reads them.

`--name=value` and `--name value`; a bool flag given bare means true and takes a value
only after "=" (`--leader-elect=false`); shorthands `-v=4`, `-v 4`, `-v4`; "--" ends
the flags. A repeated scalar flag keeps its last value; a list flag ("strings")
splits on commas and accumulates; a map flag ("k=v,k2=v2") merges. Unknown flags,
stray arguments and values of the wrong type raise FlagError naming the flag.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from kpysched.objects.durations import parse_go_duration

_INT32: Final = (-(2**31), 2**31 - 1)


class Kind(enum.Enum):
    BOOL = "bool"
    STRING = "string"
    INT = "int"
    FLOAT = "float"
    DURATION = "duration"
    STRINGS = "strings"
    MAP = "mapStringString"
    # A string flag that may be given bare, as --version (then "true").
    OPTIONAL_STRING = "string[=true]"


class FlagError(Exception):
    """A bad command line; the message names the flag."""


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    kind: Kind
    help: str
    section: str
    shorthand: str | None = None
    default: str = ""  # as --help shows it


Value = bool | str | int | float | tuple[str, ...] | dict[str, str]


@dataclass(frozen=True, slots=True)
class Parsed:
    """The flags given (by name) with their typed values, in command-line order."""

    values: dict[str, Value]

    def given(self, name: str) -> bool:
        return name in self.values


def parse(argv: Sequence[str], flags: Iterable[Flag]) -> Parsed:
    by_name = {flag.name: flag for flag in flags}
    by_short = {flag.shorthand: flag for flag in by_name.values() if flag.shorthand}
    values: dict[str, Value] = {}
    args = list(argv)
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            if index < len(args):
                raise FlagError(f'unexpected argument "{args[index]}": kpysched run takes '
                                "only flags")
            break
        if arg.startswith("--"):
            name, has_value, text = arg[2:].partition("=")
            flag = by_name.get(name)
            if flag is None or not name:
                raise FlagError(f"unknown flag: --{name}")
        elif arg.startswith("-") and len(arg) > 1:
            short, rest = arg[1], arg[2:]
            found = by_short.get(short)
            if found is None:
                raise FlagError(f"unknown shorthand flag: '{short}' in {arg}")
            flag = found
            has_value = "=" if rest else ""
            text = rest.removeprefix("=")
        else:
            raise FlagError(f'unexpected argument "{arg}": kpysched run takes only flags')
        if not has_value:
            if flag.kind is Kind.BOOL or flag.kind is Kind.OPTIONAL_STRING:
                text = "true"
            elif index < len(args):
                text = args[index]
                index += 1
            else:
                raise FlagError(f"flag needs an argument: --{flag.name}")
        values[flag.name] = _convert(flag, text, values.get(flag.name))
    return Parsed(values)


def _convert(flag: Flag, text: str, previous: Value | None) -> Value:
    def bad(expected: str) -> FlagError:
        return FlagError(f'invalid argument "{text}" for "--{flag.name}" flag: {expected}')

    match flag.kind:
        case Kind.BOOL:
            value = parse_bool(text)
            if value is None:
                raise bad("must be true or false")
            return value
        case Kind.INT:
            try:
                number = int(text, 0)
            except ValueError:
                raise bad("must be an integer") from None
            if not _INT32[0] <= number <= _INT32[1]:
                raise bad("out of range")
            return number
        case Kind.FLOAT:
            try:
                return float(text)
            except ValueError:
                raise bad("must be a number") from None
        case Kind.DURATION:
            try:
                return parse_go_duration(text)
            except ValueError:
                raise bad('must be a duration such as "10s" or "1m30s"') from None
        case Kind.STRINGS:
            items = tuple(item for item in (part.strip() for part in text.split(",")) if item)
            return (*previous, *items) if isinstance(previous, tuple) else items
        case Kind.MAP:
            merged = dict(previous) if isinstance(previous, dict) else {}
            for pair in filter(None, (part.strip() for part in text.split(","))):
                key, equals, item = pair.partition("=")
                if not equals or not key.strip():
                    raise bad(f'"{pair}" is not key=value')
                merged[key.strip()] = item.strip()
            return merged
        case Kind.STRING | Kind.OPTIONAL_STRING:
            return text


def parse_bool(text: str) -> bool | None:
    """Go's strconv.ParseBool; None when `text` is none of its spellings."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None
