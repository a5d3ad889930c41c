"""The regex library's patterns run on RE2, as Go's regexp runs them: linear in the
text whatever the pattern. A tenant writes the pattern; on a backtracking engine one
like `(a+)+$` never returns and holds the GIL (the scheduling loop and the Lease thread
with it), so these tests would hang rather than fail if that came back."""

from __future__ import annotations

import re2  # type: ignore[import-untyped]

from kpysched.objects.dra import Device, DeviceAttribute
from kpysched.plugins.dynamic_resources.cel import CelCache
from kpysched.plugins.dynamic_resources.cel_regex import compiled

DRIVER = "dra.example.com"
# DRA string attributes hold at most 64 characters: the longest text a pattern meets.
DEVICE = Device(name="d0", attributes={"serial": DeviceAttribute(string="a" * 63 + "b")})


def test_patterns_are_compiled_by_re2() -> None:
    assert isinstance(compiled("(a+)+$"), re2._Regexp)


def test_a_catastrophic_pattern_answers_at_once() -> None:
    selector = CelCache().compile(
        'device.attributes["dra.example.com"].serial.find("(a+)+$") == "" && '
        'device.attributes["dra.example.com"].serial.findAll("(a|aa)+c").size() == 0')
    assert selector.matches(DRIVER, DEVICE) is True


def test_syntax_only_re2_reads_is_run_as_upstream_runs_it() -> None:
    # Unicode classes and the ungreedy flag: Go's regexp accepts them; the translation
    # to Python's syntax did not, and refused the selector.
    selector = CelCache().compile(
        '"héllo 42".find("\\\\pL+") == "héllo" && "aaa".find("(?U)a+") == "a"')
    assert selector.matches(DRIVER, DEVICE) is True
