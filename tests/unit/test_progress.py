"""tests/progress.py: a bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io

from tests.progress import Progress


def test_plain_lines_say_done_of_total_the_rate_and_notes() -> None:
    stream = io.StringIO()
    shown = Progress("[run] bound", 200, "pods", stream=stream, plain_every=0.0)
    shown.update_to(50, faults="1/3")
    shown.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # one per due update, one at the end
    assert lines[0].startswith("[run] bound: 50/200 pods in ")
    assert lines[0].endswith("pods/s, faults=1/3)")
    assert "\r" not in stream.getvalue()  # no bar redrawn in a log


def test_plain_lines_are_spaced_out() -> None:
    stream = io.StringIO()
    shown = Progress("[soak]", 60, "s", stream=stream, plain_every=3600.0)
    for second in range(60):
        shown.update_to(second)
    shown.close()
    assert stream.getvalue().splitlines() == [stream.getvalue().splitlines()[-1]]
    assert stream.getvalue().startswith("[soak]: 59/60 s in ")


def test_a_terminal_gets_a_bar() -> None:
    stream = io.StringIO()
    with Progress("[build]", 3, "binaries", stream=stream, terminal=True) as shown:
        shown.update_to(2, binary="kube-apiserver")
    drawn = stream.getvalue()
    assert "\r" in drawn and "2/3" in drawn and "binary=kube-apiserver" in drawn
