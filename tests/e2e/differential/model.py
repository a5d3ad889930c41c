"""Scenario model for differential tests: nodes, existing pods, one incoming pod.

Node and pod names are roles ("n0", "victim"); each run gives them unique real
names, so the same scenario can run once per scheduler and the outcomes compare
by role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeSpec:
    role: str
    cpu: str = "4"
    memory: str = "32Gi"
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    unschedulable: bool = False
    images: tuple[tuple[str, int], ...] = ()
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodSpec:
    role: str
    node: str | None = None  # existing pods: the role of the node they run on
    cpu: str | None = "100m"
    memory: str | None = "100Mi"
    labels: dict[str, str] = field(default_factory=dict)
    priority_class: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # merged into pod.spec
    container: dict[str, Any] = field(default_factory=dict)  # merged into the container


@dataclass(frozen=True)
class PdbSpec:
    role: str
    selector: dict[str, str]
    max_unavailable: int = 0


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: tuple[NodeSpec, ...]
    incoming: PodSpec
    existing: tuple[PodSpec, ...] = ()
    pdbs: tuple[PdbSpec, ...] = ()
    # "bound": lands on a node; "pending": FailedScheduling; "preempted": victims go.
    expect: str = "bound"


@dataclass(frozen=True)
class Outcome:
    node: str | None  # role of the node the incoming pod ended on
    message: str | None  # FailedScheduling note (first one), node names replaced by roles
    victims: frozenset[str] = frozenset()  # roles of existing pods that were deleted

    def describe(self) -> str:
        return f"node={self.node} victims={sorted(self.victims)} message={self.message!r}"
