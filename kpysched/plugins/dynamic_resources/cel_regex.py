"""Kubernetes' regex CEL library (apiserver/pkg/cel/library/regex.go) for DRA selectors:
`s.find(re)` (the leftmost match, "" if none) and `s.findAll(re)` / `s.findAll(re, n)`
(Go's FindAllString: successive non-overlapping matches, an empty match right after a
match skipped, at most n when n >= 0).

Patterns are RE2 syntax (Go's regexp) and run on RE2 itself (google-re2), as Go's
engine does, in time linear in the text whatever the pattern: the pattern is a tenant's
input, and a backtracking engine (Python's `re`) can be made to run for ever by one
(`(a+)+$` against 64 characters), holding the GIL, so the scheduling loop and the Lease
thread with it. Go's parser words its errors unlike RE2's, so a pattern is first read
by a translation to Python's `re` syntax, only to refuse what Go refuses with Go's
texts: lookarounds and backreferences, bad repeat counts and the like. What that
translation does not carry over (Unicode classes `\\pL`, the ungreedy flag (?U),
`\\C`, negated classes inside brackets, flags after the start) RE2 alone judges.
Constant patterns that do not parse are compile errors upstream (the API server
refuses them); a pattern computed at runtime fails with Go's
`Illegal regex: error parsing regexp: ...` for the common mistakes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]

from kpysched.plugins.dynamic_resources.cel_ast import CALL, CONST, Checked, const_value

_TRAVERSAL, _REGEX_LENGTH = 0.1, 0.25  # common.StringTraversalCostFactor, RegexStringLength
_WORD = "0-9A-Za-z_"
_CLASSES = {"d": "0-9", "s": "\\t\\n\\f\\r ", "w": _WORD}
_POSIX = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
          "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
          "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ",
          "upper": "A-Z", "word": _WORD, "xdigit": "0-9A-Fa-f"}
_BOUNDARY = f"(?:(?<![{_WORD}])(?=[{_WORD}])|(?<=[{_WORD}])(?![{_WORD}]))"
_NOT_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"


class RegexError(ValueError):
    """A pattern RE2 would not parse; str() is Go's text after "error parsing regexp: "."""


class UnsupportedRegexError(RegexError):
    """RE2 syntax this translation does not carry over (upstream accepts it)."""


def _unsupported(fragment: str) -> UnsupportedRegexError:
    return UnsupportedRegexError(f"RE2 syntax kpysched does not support: `{fragment}`")


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.i = 0
        self.out: list[str] = []
        self.multiline = False

    def run(self) -> str:
        p = self.pattern
        while self.i < len(p):
            char = p[self.i]
            if char == "\\":
                self.out.append(self._escape(in_class=False))
            elif char == "[":
                self.out.append(self._class())
            elif char == "(":
                self.out.append(self._group())
            elif char == "$":
                self.out.append("$" if self.multiline else "\\Z")
                self.i += 1
            elif char == "{":
                self.out.append(self._repeat())
            else:
                self.out.append(char)
                self.i += 1
        return "".join(self.out)

    def _escape(self, in_class: bool) -> str:
        p, start = self.pattern, self.i
        if self.i + 1 >= len(p):
            raise RegexError("trailing backslash at end of expression: ``")
        char = p[self.i + 1]
        self.i += 2
        if char in _CLASSES:
            return _CLASSES[char] if in_class else f"[{_CLASSES[char]}]"
        if char.lower() in _CLASSES and char.isupper():
            if in_class:
                raise _unsupported(p[start:self.i])
            return f"[^{_CLASSES[char.lower()]}]"
        if char in "bB" and not in_class:
            return _BOUNDARY if char == "b" else _NOT_BOUNDARY
        if char == "z" and not in_class:
            return "\\Z"
        if char == "A" and not in_class:
            return "\\A"
        if char == "Q" and not in_class:
            end = p.find("\\E", self.i)
            literal = p[self.i:] if end < 0 else p[self.i:end]
            self.i = len(p) if end < 0 else end + 2
            return re.escape(literal)
        if char == "x" and self.i < len(p) and p[self.i] == "{":
            end = p.find("}", self.i)
            digits = p[self.i + 1:end] if end > 0 else ""
            if end < 0 or not digits or any(c not in "0123456789abcdefABCDEF" for c in digits):
                shown = p[start:end + 1] if end > 0 else p[start:]
                raise RegexError(f"invalid escape sequence: `{shown}`")
            self.i = end + 1
            return re.escape(chr(int(digits, 16)))
        if char == "x":
            digits = p[self.i:self.i + 2]
            if len(digits) < 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                return self._bad(start)
            self.i += 2
            return re.escape(chr(int(digits, 16)))
        if char in "fnrtv" or char == "a":
            return "\\" + char
        if char.isascii() and not char.isalnum():
            return "\\" + char  # an escaped punctuation mark is itself
        if char in "01234567":
            # Octal: \0 with up to two more digits, or two or three digits; a single
            # non-zero digit would be a backreference, which RE2 has not.
            octal = re.compile("[0-7]{0,2}").match(p, self.i)
            assert octal is not None
            if char != "0" and not octal[0]:
                return self._bad(start)
            self.i = octal.end()
            return re.escape(chr(int(char + octal[0], 8)))
        if char in "pPC":
            raise _unsupported(p[start:self.i])
        return self._bad(start)

    def _bad(self, start: int) -> str:
        raise RegexError(f"invalid escape sequence: `{self.pattern[start:self.i]}`")

    def _class(self) -> str:
        p, start = self.pattern, self.i
        self.i += 1
        parts = ["["]
        if self.i < len(p) and p[self.i] == "^":
            parts.append("^")
            self.i += 1
        first = True
        while True:
            if self.i >= len(p):
                raise RegexError(f"missing closing ]: `{p[start:]}`")
            char = p[self.i]
            if char == "]" and not first:
                self.i += 1
                break
            if p.startswith("[:", self.i):
                end = p.find(":]", self.i + 2)
                name = p[self.i + 2:end] if end > 0 else ""
                negated = name.startswith("^")
                if end > 0 and name.lstrip("^") in _POSIX:
                    if negated:
                        raise _unsupported(p[self.i:end + 2])
                    parts.append(_POSIX[name])
                    self.i = end + 2
                    first = False
                    continue
            if char == "\\":
                parts.append(self._escape(in_class=True))
            elif char in "[&~|":
                parts.append("\\" + char)  # literal in RE2, set syntax to Python
                self.i += 1
            else:
                parts.append(char)
                self.i += 1
            first = False
        return "".join(parts) + "]"

    def _group(self) -> str:
        p, start = self.pattern, self.i
        if not p.startswith("(?", self.i):
            self.i += 1
            return "("
        if p.startswith(("(?=", "(?!"), self.i):
            raise RegexError(f"invalid or unsupported Perl syntax: `{p[start:start + 3]}`")
        if p.startswith("(?<", self.i) and p[self.i + 3:self.i + 4] in ("=", "!"):
            raise RegexError(f"invalid or unsupported Perl syntax: `{p[start:start + 4]}`")
        if p.startswith(("(?P<", "(?<"), self.i):
            self.i += 4 if p[self.i + 2] == "P" else 3
            return "(?P<"
        # Flags: (?flags) or (?flags:...), flags from i m s U, with - to clear.
        end = self.i + 2
        while end < len(p) and p[end] in "imsU-":
            end += 1
        if end >= len(p) or p[end] not in "):":
            raise RegexError(f"invalid or unsupported Perl syntax: `{p[start:end + 1]}`")
        flags = p[self.i + 2:end]
        if "U" in flags:
            raise _unsupported(p[start:end + 1])
        if p[end] == ")" and "m" in flags.split("-")[0]:
            self.multiline = True
        self.i = end + 1
        return f"(?{flags}{p[end]}" if flags else "(?:" if p[end] == ":" else ""

    def _repeat(self) -> str:
        p = self.pattern
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(p, self.i)
        if match is None:
            self.i += 1
            return "\\{"  # a literal brace in RE2
        low = int(match[1])
        high = low if match[2] is None else int(match[3]) if match[3] else None
        if low > 1000 or (high is not None and (high > 1000 or high < low)):
            raise RegexError(f"invalid repeat count: `{match[0]}`")
        self.i = match.end()
        return match[0]


# Python's complaint -> Go's, and where Go's quoted fragment starts and ends relative to
# Python's position (None: the rest of the pattern).
_PYTHON_ERRORS: tuple[tuple[str, str, int, int | None], ...] = (
    ("nothing to repeat", "missing argument to repetition operator", 0, 1),
    ("multiple repeat", "invalid nested repetition operator", -1, 1),
    ("missing ), unterminated subpattern", "missing closing )", 0, None),
)


@lru_cache(maxsize=256)
def compiled(pattern: str) -> Any:
    """The pattern compiled by RE2; RegexError with Go's words if Go would refuse it."""
    try:
        _check_syntax(pattern)
    except UnsupportedRegexError as unsupported:
        return _re2(pattern, unsupported)
    return _re2(pattern, None)


def _re2(pattern: str, unsupported: UnsupportedRegexError | None) -> Any:
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as err:
        if unsupported is not None:
            raise unsupported from None
        reason = err.args[0].decode(errors="replace") if err.args and isinstance(
            err.args[0], bytes) else str(err)
        raise RegexError(reason) from None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the caller's error, not a log line


def _check_syntax(pattern: str) -> None:
    """RegexError with Go's words if Go's parser would refuse `pattern`, read through
    its translation to Python's syntax (compiled, never run)."""
    translator = _Translator(pattern)
    translated = translator.run()
    try:
        re.compile(translated)
    except re.error as err:
        if err.msg == "unbalanced parenthesis":
            raise RegexError(f"unexpected ): `{pattern}`") from None
        if err.msg.startswith("bad character range "):
            fragment = err.msg.removeprefix("bad character range ")
            raise RegexError(f"invalid character class range: `{fragment}`") from None
        for python, go, start, end in _PYTHON_ERRORS:
            if err.msg.startswith(python) and err.pos is not None and translated == pattern:
                at = err.pos + start
                fragment = pattern[at:] if end is None else pattern[at:err.pos + end]
                raise RegexError(f"{go}: `{fragment}`") from None
        raise RegexError(err.msg) from None


def find_all(text: str, pattern: Any, limit: int) -> list[str]:
    """regexp.FindAllString: an empty match abutting the previous match is skipped."""
    found: list[str] = []
    position, previous_end = 0, -1
    while (limit < 0 or len(found) < limit) and position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        accept = True
        if match.end() == match.start():
            if match.start() == previous_end:
                accept = False
            position = match.end() + 1
        else:
            position = match.end()
        previous_end = match.end()
        if accept:
            found.append(match[0])
    return found


def constant_pattern_error(checked: Checked) -> str | None:
    """Upstream compiles a constant pattern of find/findAll when it builds the program
    (RegexOptimization): one RE2 refuses makes the selector fail to compile, with this
    text."""
    stack = [checked.root]
    while stack:
        node = stack.pop()
        stack += node.children()
        if (node.kind == CALL and node.name in ("find", "findAll") and node.target is not None
                and node.args and node.args[0].kind == CONST
                and set(checked.overloads(node.id)) <= _REGEX_OVERLOADS):
            pattern = const_value(node.args[0])
            if not isinstance(pattern, str):
                continue
            try:
                compiled(pattern)
            except UnsupportedRegexError:
                continue
            except RegexError as err:
                return f"program instantiation failed: error parsing regexp: {err}"
    return None


_REGEX_OVERLOADS = frozenset(("string_find_string", "string_find_all_string",
                              "string_find_all_string_int"))


def regex_cost(text: str, pattern: str) -> int:
    """library.CostEstimator for find/findAll: the string's runes plus one, times 0.1,
    rounded up, times the pattern's runes times 0.25, rounded up."""
    return (math.ceil((1 + len(text)) * _TRAVERSAL)
            * math.ceil(len(pattern) * _REGEX_LENGTH))


def regex_functions(charge: Callable[[int], None]
                    ) -> tuple[Callable[[str, str], str], Callable[[str, str, int], list[str]]]:
    """The implementations of find and findAll(text, pattern, limit) (cel_meter declares
    them), charging `charge` what they cost."""
    def pattern_of(text: str, pattern: str) -> Any:
        charge(regex_cost(text, pattern))
        try:
            return compiled(pattern)
        except UnsupportedRegexError as err:
            raise ValueError(f"Illegal regex: {err}") from None
        except RegexError as err:
            raise ValueError(f"Illegal regex: error parsing regexp: {err}") from None

    def find(text: str, pattern: str) -> str:
        match = pattern_of(text, pattern).search(text)
        return match[0] if match else ""

    def find_all_limited(text: str, pattern: str, limit: int) -> list[str]:
        return find_all(text, pattern_of(text, pattern), limit)

    return find, find_all_limited
