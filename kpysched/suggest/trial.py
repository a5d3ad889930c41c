"""Checking candidate fixes: the pod as it is, then each step of each candidate, is
placed by a fresh simulation of the snapshot (the live scheduler's code, with every
node evaluated so the count of nodes that would take the pod is complete).

A fresh simulation per step keeps steps independent: one that places the pod, evicts
victims or adds a node leaves nothing behind for the next. The number of steps is
bounded (MAX_TRIALS), so a pod with many rejections costs a bounded time.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kpysched.config import EffectiveProfile, SchedulerConfiguration, load_config
from kpysched.config.features import DEFAULT as DEFAULT_FEATURES
from kpysched.config.features import Features
from kpysched.framework.registry import PluginSpec
from kpysched.objects import api
from kpysched.simulate.runner import PLACED, Placement, Simulation
from kpysched.simulate.world import World
from kpysched.suggest.fixes import (
    PREFERENCE,
    Candidate,
    FreeSpace,
    PodDocument,
    Rejections,
    Step,
    candidates,
)
from kpysched.suggest.patch import compact, pod_patch

# Simulated attempts at most, the pod as it is included.
MAX_TRIALS = 24


@dataclass(slots=True)
class Fix:
    """A checked change: the first step of its candidate that places the pod."""

    kind: str
    plugin: str
    change: str
    nodes: int  # how many nodes would take the pod with it
    node: str  # where kpysched would place it
    victims: list[str] = field(default_factory=list)
    how: str = ""
    # Machine-applicable: a strategic merge patch of the pod with only the fields the
    # change sets (patch.py; applied to the pod as the user wrote it, which is then
    # recreated, most spec fields being immutable), and the nodes it changes or adds,
    # as JSON.
    pod_patch: dict[str, Any] = field(default_factory=dict)
    node_objects: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": self.kind, "plugin": self.plugin,
                                "change": self.change, "nodes": self.nodes,
                                "node": self.node}
        optional = {"victims": self.victims, "how": self.how, "podPatch": self.pod_patch,
                    "nodeObjects": self.node_objects}
        body.update({key: value for key, value in optional.items() if value})
        return body


@dataclass(slots=True)
class Suggestions:
    pod: str
    placed_as_is: str = ""  # a node, when the pod fits as it is (nothing to suggest)
    fixes: list[Fix] = field(default_factory=list)
    tried: int = 0  # simulated attempts
    untried: int = 0  # steps left out by MAX_TRIALS

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"pod": self.pod, "tried": self.tried,
                                "fixes": [fix.to_json() for fix in self.fixes]}
        if self.placed_as_is:
            body["placedAsIs"] = self.placed_as_is
        if self.untried:
            body["untried"] = self.untried
        return body


class Trial:
    """The snapshot and the scheduler's configuration the fixes are checked against."""

    def __init__(self, config: SchedulerConfiguration, profiles: Sequence[EffectiveProfile],
                 registry: Mapping[str, PluginSpec], world: World,
                 features: Features = DEFAULT_FEATURES) -> None:
        self._features = features  # the release the profiles were built for
        self._config = config
        self._profiles = profiles
        self._registry = registry
        self._world = world
        self._trials = 0

    async def suggest(self, pod: api.Pod) -> Suggestions:
        """The checked fixes for `pod` (a pending pod of the snapshot), most nodes first."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        document: PodDocument = msgspec.json.decode(msgspec.json.encode(pod))
        result = Suggestions(key)
        placement, simulation = await self._attempt(document, None, keep=True)
        try:
            result.tried = 1
            if placement.outcome == PLACED:
                result.placed_as_is = placement.node or ""
                return result
            decision = placement.decisions[-1] if placement.decisions else {}
            free = _free_space(simulation)
        finally:
            await simulation.close()
        placed_priorities = [p.spec.priority or 0 for p in self._world.of("pods")
                             if p.spec.node_name]
        found = candidates(document, Rejections.of(decision), self._world.of("nodes"),
                           free, placed_priorities)
        for candidate in found:
            fix, skipped = await self._check(document, candidate)
            result.untried += skipped
            if fix is not None:
                result.fixes.append(fix)
        result.tried = self._trials
        result.fixes.sort(key=lambda fix: (-fix.nodes, _preference(fix.kind)))
        return result

    async def _check(self, document: PodDocument, candidate: Candidate
                     ) -> tuple[Fix | None, int]:
        for index, step in enumerate(candidate.steps):
            if self._trials >= MAX_TRIALS:
                return None, len(candidate.steps) - index
            placement, _ = await self._attempt(document, step)
            if placement.outcome != PLACED:
                continue
            decision = placement.decisions[-1] if placement.decisions else {}
            nodes = max(len(decision.get("feasible") or []), 1)
            patch = self._pod_patch(document, step)
            return Fix(candidate.kind, candidate.plugin, step.text, nodes,
                       placement.node or "", list(placement.victims),
                       step.how or (compact(patch) if patch else ""),
                       patch, self._node_changes(step)), 0
        return None, 0

    @staticmethod
    def _pod_patch(document: PodDocument, step: Step) -> dict[str, Any]:
        if step.pod is None:
            return {}
        changed = copy.deepcopy(document)
        step.pod(changed)
        return pod_patch(document, changed)

    def _node_changes(self, step: Step) -> list[dict[str, Any]]:
        if step.nodes is None:
            return []
        before = {node.metadata.name: msgspec.json.encode(node)
                  for node in self._world.of("nodes")}
        return [msgspec.json.decode(encoded)
                for node in step.nodes(list(self._world.of("nodes")))
                if before.get(node.metadata.name) != (encoded := msgspec.json.encode(node))]

    async def _attempt(self, document: PodDocument, step: Step | None, *, keep: bool = False
                       ) -> tuple[Placement, Simulation]:
        """The pod (changed by `step`) placed in a fresh simulation of the snapshot
        (changed by `step`); the simulation is closed unless `keep`."""
        self._trials += 1
        changed = copy.deepcopy(document)
        world = self._world
        if step is not None:
            if step.pod is not None:
                step.pod(changed)
            if step.nodes is not None:
                world = World({**world.objects, "nodes": step.nodes(list(world.of("nodes")))})
        pod = msgspec.json.decode(msgspec.json.encode(changed), type=api.Pod)
        simulation = Simulation(self._config, self._profiles, self._registry,
                                features=self._features)
        simulation.load(_without(world, pod))
        try:
            placement = (await simulation.place(pod))[0]
        finally:
            if not keep:
                await simulation.close()
        return placement, simulation


def _preference(kind: str) -> int:
    return PREFERENCE.index(kind) if kind in PREFERENCE else len(PREFERENCE)


def _without(world: World, pod: api.Pod) -> World:
    """The world without the pod itself (it is placed as a new pod)."""
    uid = pod.metadata.uid
    return World({**world.objects,
                  "pods": [p for p in world.of("pods") if p.metadata.uid != uid]})


def _free_space(simulation: Simulation) -> FreeSpace:
    snapshot = simulation.scheduler.context.snapshot
    free: dict[str, dict[str, int]] = {}
    for name in simulation.scheduler.cache.node_names():
        info = snapshot.get(name)
        if info is None:
            continue
        resources = {"cpu", "memory", "ephemeral-storage", *info.allocatable.scalar}
        free[name] = {r: info.allocatable.get(r) - info.requested.get(r) for r in resources}
    return FreeSpace(free)


def trial_config(path: str | None, registry: Mapping[str, PluginSpec],
                 features: Features = DEFAULT_FEATURES,
                 ) -> tuple[SchedulerConfiguration, list[EffectiveProfile]]:
    """The scheduler's configuration (upstream's defaults without a file) with every node
    evaluated, so a fix's count of nodes is complete, not percentageOfNodesToScore's."""
    return load_config(path, registry, {"percentageOfNodesToScore": 100}, features)
