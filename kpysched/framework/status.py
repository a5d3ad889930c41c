"""Status: the outcome of running a plugin, with upstream's codes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    # Moving the pod elsewhere or preempting cannot help on this node.
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """The spelling upstream uses in metrics labels (status="Success")."""
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
    Code.SKIP: "Skip", Code.PENDING: "Pending",
}


@dataclass(slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, list(reasons), plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons), plugin)

    @classmethod
    def error(cls, reason: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, [reason], plugin)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_rejected(self) -> bool:
        """Unschedulable, unresolvable or pending: the pod cannot go here now."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        # SUCCESS is a shared instance: never stamp it.
        if not self.plugin and self.code != Code.SUCCESS:
            self.plugin = plugin
        return self


# Returned by plugins on the hot path to avoid one allocation per node; never mutated.
SUCCESS = Status()
