"""Diagnosis: why a pod fits nowhere, rendered as upstream's FitError message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kpysched.framework.status import Status


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits nowhere; `message()` is upstream's FitError text."""

    num_all_nodes: int
    node_to_status: dict[str, Status] = field(default_factory=dict)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def message(self) -> str:
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            text += f" {self.pre_filter_msg}."
        else:
            histogram = Counter(reason for status in self.node_to_status.values()
                                for reason in status.reasons)
            # Sorted as strings ("17 …" before "3 …"), exactly as upstream sorts them.
            parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if parts:
                text += f" {', '.join(parts)}."
        if self.post_filter_msg:
            text += f" {self.post_filter_msg}."
        return text
