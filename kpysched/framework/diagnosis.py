"""Diagnosis: why a pod fits nowhere, rendered as upstream's FitError message."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
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
    # The status of every node not in node_to_status (e.g. cut by a PreFilterResult).
    absent_status: Status | None = None

    def statuses(self, node_names: Iterable[str]) -> dict[str, Status]:
        """Every node's status, absent nodes filled in (what PostFilter reads)."""
        if self.absent_status is None:
            return dict(self.node_to_status)
        return {name: self.node_to_status.get(name, self.absent_status) for name in node_names}

    def message(self) -> str:
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_msg:
            text += f" {self.pre_filter_msg}."
        else:
            histogram = Counter(reason for status in self.node_to_status.values()
                                for reason in status.reasons)
            absent = self.num_all_nodes - len(self.node_to_status)
            if absent > 0 and self.absent_status is not None:
                for reason in self.absent_status.reasons:
                    histogram[reason] += absent
            # Sorted as strings ("17 …" before "3 …"), exactly as upstream sorts them.
            parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
            if parts:
                text += f" {', '.join(parts)}."
        if self.post_filter_msg:
            # No period here: PostFilter messages (preemption's own FitError) carry theirs.
            text += f" {self.post_filter_msg}"
        return text
