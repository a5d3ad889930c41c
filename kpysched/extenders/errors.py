"""The one failure an extender call reports."""

from __future__ import annotations


class ExtenderError(Exception):
    """An extender call that produced no usable answer; the text is upstream's (it
    reaches the pod's FailedScheduling event when the extender is not ignorable)."""
