"""Scriptable test plugins and a Framework builder for framework and algorithm tests.

`fake(name, "filter", "score", ...)` makes a PluginSpec whose class implements exactly
the named extension points (the framework reads them from the MRO); its behaviour comes
from a `Script` passed as the plugin's args, and every call is appended to `Script.log`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kpysched.cache.node_info import NodeInfo
from kpysched.framework import interfaces as fw
from kpysched.framework.cluster_events import Registration
from kpysched.framework.cycle_state import CycleState
from kpysched.framework.registry import PluginSpec
from kpysched.framework.runtime import Framework, ProfileSpec
from kpysched.framework.status import Status
from kpysched.metrics import NoMetrics
from kpysched.objects.pod import PodInfo
from kpysched.plugins import IN_TREE
from tests.unit.builders import FakeHandle


@dataclass
class SharedHandle(FakeHandle):
    """FakeHandle plus the scheduler-wide parts a Framework reaches for."""

    nominated: dict[str, list[PodInfo]] = field(default_factory=dict)

    def pdbs(self) -> Sequence[Any]:
        return []

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodInfo]:
        return self.nominated.get(node_name, [])

    def preempt(self, preemptor: PodInfo, node_name: str, victims: Sequence[PodInfo],
                plugin: str) -> None:
        return None


@dataclass
class Script:
    """What a fake plugin returns at each point (Success unless told otherwise)."""

    log: list[str] = field(default_factory=list)
    pre_filter: Status = field(default_factory=Status)
    pre_filter_nodes: set[str] | None = None
    reject: Mapping[str, Status] = field(default_factory=dict)  # Filter, by node name
    pre_score: Status = field(default_factory=Status)
    scores: Mapping[str, int] = field(default_factory=dict)  # Score, by node name (default 0)
    score_status: Status = field(default_factory=Status)
    normalize: Callable[[list[fw.NodeScore]], Status] | None = None
    reserve: Status = field(default_factory=Status)
    permit: Status = field(default_factory=Status)
    permit_timeout: float = 0.0
    pre_bind: Status = field(default_factory=Status)
    pre_bind_pre_flight: Status = field(default_factory=Status.skip)
    bind: Status = field(default_factory=Status)
    # Extension points (as logged: "filter", "postBind", ...) where the plugin raises.
    raise_at: set[str] = field(default_factory=set)
    # Called with the node's name on every Filter call (e.g. to take time there).
    on_filter: Callable[[str], None] | None = None
    events: Sequence[Registration] = ()  # what events_to_register returns


class _Behaviour:
    NAME: ClassVar[str] = "Fake"

    def __init__(self, script: Script | None) -> None:
        self.script = script if script is not None else Script()

    def _log(self, entry: str) -> None:
        self.script.log.append(f"{self.NAME}.{entry}")
        point = entry.split(":", 1)[0]
        if point in self.script.raise_at:
            raise RuntimeError(f"{self.NAME} exploded at {point}")

    def events_to_register(self) -> Sequence[Registration]:
        return self.script.events

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                   ) -> tuple[fw.PreFilterResult | None, Status]:
        self._log("preFilter")
        if self.script.pre_filter_nodes is None:
            return None, self.script.pre_filter
        return fw.PreFilterResult(set(self.script.pre_filter_nodes)), self.script.pre_filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        self._log(f"filter:{node.name}")
        if self.script.on_filter is not None:
            self.script.on_filter(node.name)
        status = self.script.reject.get(node.name)
        return Status(status.code, list(status.reasons)) if status is not None else Status()

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        self._log("preScore")
        return self.script.pre_score

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status]:
        self._log(f"score:{node.name}")
        return self.script.scores.get(node.name, 0), self.script.score_status

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: list[fw.NodeScore]) -> Status:
        self._log("normalize")
        assert self.script.normalize is not None
        return self.script.normalize(scores)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._log("reserve")
        return self.script.reserve

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._log("unreserve")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        self._log("permit")
        return self.script.permit, self.script.permit_timeout

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._log("preBindPreFlight")
        return self.script.pre_bind_pre_flight

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._log("preBind")
        await asyncio.sleep(0)
        return self.script.pre_bind

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        self._log("bind")
        await asyncio.sleep(0)
        return self.script.bind

    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._log("postBind")


_PROTOCOLS: dict[str, type[Any]] = {
    "preFilter": fw.PreFilterPlugin,
    "filter": fw.FilterPlugin,
    "preScore": fw.PreScorePlugin,
    "score": fw.ScorePlugin,
    "normalize": fw.ScoreExtensions,
    "reserve": fw.ReservePlugin,
    "permit": fw.PermitPlugin,
    "preBind": fw.PreBindPlugin,
    "preBindPreFlight": fw.PreBindPreFlightPlugin,
    "bind": fw.BindPlugin,
    "postBind": fw.PostBindPlugin,
}


def fake(name: str, *points: str) -> PluginSpec:
    """A PluginSpec for a plugin `name` implementing exactly `points`."""
    protocols = [_PROTOCOLS[point] for point in points]
    # A protocol another one extends (PreBind under PreBindPreFlight) goes: Python
    # needs the subclass alone to order the bases.
    protocols = [p for p in protocols
                 if not any(p is not other and p in other.__mro__ for other in protocols)]
    bases: tuple[type, ...] = (_Behaviour, *protocols)
    plugin_class = type(name, bases, {"NAME": name})

    def new(args: Script | None, handle: fw.Handle) -> Any:
        return plugin_class(args)

    return PluginSpec(name, plugin_class, new, None)


def build(plugins: Mapping[str, Sequence[str]], *specs: PluginSpec,
          scripts: Mapping[str, Script] | None = None, weights: Mapping[str, int] | None = None,
          percentage: int | None = None, handle: SharedHandle | None = None,
          defaults: bool = True) -> Framework:
    """A Framework over the in-tree registry plus `specs`; PrioritySort and DefaultBinder
    are added unless `defaults` is False."""
    points: dict[str, list[str]] = {point: list(names) for point, names in plugins.items()}
    if defaults:
        points.setdefault("queueSort", ["PrioritySort"])
        points.setdefault("bind", ["DefaultBinder"])
    registry = {**IN_TREE, **{spec.name: spec for spec in specs}}
    profile = ProfileSpec("test-scheduler", points, dict(weights or {}), dict(scripts or {}),
                          percentage)
    return Framework(profile, registry, handle if handle is not None else SharedHandle(),
                     NoMetrics())
