"""The errors a device selector raises, apart from the CEL runtime (cel.py) so that the
modules catching them do not load that runtime at start-up (cel_lazy.py)."""

from __future__ import annotations


class SelectorError(Exception):
    """A selector that does not compile or fails at runtime; str() is upstream's text."""


class SelectorTimeoutError(SelectorError, TimeoutError):
    """The deadline passed while the selector ran (upstream: the context's deadline
    interrupts the evaluation)."""
