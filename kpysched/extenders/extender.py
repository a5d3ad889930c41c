"""One configured extender, called as upstream's HTTPExtender calls it.

Every verb is a coroutine; a scheduling cycle waits for them through
Extenders.wait (kpysched/extenders/registry.py), the binding task awaits bind.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kpysched.cache.node_info import NodeInfo
from kpysched.cache.node_rows import NodeRows
from kpysched.config.extenders import Extender as ExtenderConfig
from kpysched.extenders import wire
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.raw import RawObjects
from kpysched.extenders.transport import Transport
from kpysched.objects import api

FILTER = "filter"
PRIORITIZE = "prioritize"
PREEMPT = "preempt"
BIND = "bind"

# (extender name, verb, seconds): kpysched_extender_request_duration_seconds.
RequestObserver = Callable[[str, str, float], None]


# How many returned nodes' NodeInfos are kept (all dropped when full: a bound on the
# memory of extenders that return ever-changing bytes).
_RETURNED_KEPT = 8192


def observe_nothing(extender: str, verb: str, seconds: float) -> None:
    return None


class _LastRowNames:
    """The last rows' names: a cycle reads them up to three times (its filter call, its
    prioritize call, the totals) when every node passed. A NodeRows is not changed once
    made (a list may be, so lists are read afresh)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # One pair, replaced whole: a reader on another thread never sees one rows'
        # object with another's names.
        self._last: tuple[NodeRows, list[str]] | None = None

    def of(self, rows: NodeRows) -> list[str]:
        last = self._last
        if last is not None and last[0] is rows:
            return last[1]
        names = rows.names().as_list()
        self._last = (rows, names)
        return names


_last_row_names = _LastRowNames()


def node_names(nodes: Sequence[NodeInfo]) -> list[str]:
    """The nodes' names (from the snapshot's names for its rows: no NodeInfo read).
    Callers only read the list."""
    if isinstance(nodes, NodeRows):
        return _last_row_names.of(nodes)
    return [node.name for node in nodes]


@dataclass(slots=True)
class Filtered:
    """What one extender's filter left: the nodes that pass (in its order; the very
    sequence it was given when every node passed in that order) and why the others do
    not."""

    nodes: Sequence[NodeInfo]
    failed: dict[str, str]
    failed_and_unresolvable: dict[str, str]


class HTTPExtender:
    def __init__(self, config: ExtenderConfig, bodies: wire.NodeBodies,
                 observe: RequestObserver = observe_nothing,
                 raw_pods: RawObjects | None = None) -> None:
        # Upstream names an extender by its urlPrefix as written.
        self.name = config.url_prefix
        self.config = config
        self.ignorable = config.ignorable
        self.weight = config.weight
        self.node_cache_capable = config.node_cache_capable
        self.is_filter = bool(config.filter_verb)
        self.is_prioritizer = bool(config.prioritize_verb)
        self.is_binder = bool(config.bind_verb)
        self.supports_preemption = bool(config.preempt_verb)
        self._managed = frozenset(resource.name for resource in config.managed_resources)
        self._transport = Transport(config)
        self._bodies = bodies
        self._observe = observe
        self._raw_pods = raw_pods
        # A returned node's JSON -> its NodeInfo (never given pods, so it can be reused).
        self._returned: dict[bytes, NodeInfo] = {}

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name!r})"

    def is_interested(self, pod: api.Pod) -> bool:
        """No managed resources: every pod. Otherwise a pod whose containers or init
        containers request or limit one of them."""
        if not self._managed:
            return True
        managed = self._managed
        for container in (*pod.spec.containers, *pod.spec.init_containers):
            resources = container.resources
            if not managed.isdisjoint(resources.requests) \
                    or not managed.isdisjoint(resources.limits):
                return True
        return False

    # --- the cycle's verbs -------------------------------------------------------------

    async def filter(self, pod: bytes, nodes: Sequence[NodeInfo]) -> Filtered:
        if not self.is_filter:
            return Filtered(nodes, {}, {})
        names = self._names(nodes)
        answer = wire.decode_filter_result(
            await self._call(FILTER, self.config.filter_verb, self._args(pod, nodes, names)))
        if answer.error:
            raise ExtenderError(answer.error)
        passing: Sequence[NodeInfo]
        if names is not None and answer.node_names == names:
            # Every node passed, in the order sent (node names are unique).
            passing = nodes
        elif self.node_cache_capable and answer.node_names is not None:
            by_name = {node.name: node for node in nodes}
            found = []
            for name in answer.node_names:
                node = by_name.get(name)
                if node is None:
                    raise ExtenderError(f'extender "{self.name}" claims a filtered node '
                                        f'"{name}" which is not found in the input node list')
                found.append(node)
            passing = found
        else:
            # Upstream builds NodeInfos afresh from the returned objects, without their
            # pods, and scores those (an answer with neither field keeps no node).
            passing = [self._node_info_of(body) for body in answer.nodes or ()]
        return Filtered(passing, answer.failed, answer.failed_and_unresolvable)

    async def prioritize(self, pod: bytes, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
        """(node, score) as the extender answered, scores 0-10 before weighting."""
        if not self.is_prioritizer:
            return [(node.name, 0) for node in nodes]
        args = self._args(pod, nodes, self._names(nodes))
        return wire.decode_host_priorities(
            await self._call(PRIORITIZE, self.config.prioritize_verb, args))

    async def process_preemption(
        self, pod: bytes, victims: Mapping[str, tuple[Sequence[api.Pod], int]],
    ) -> dict[str, wire.MetaVictims | None]:
        """The victims the extender keeps, by node, as UIDs (the caller maps them back
        to pods on each node)."""
        if not self.supports_preemption:
            raise ExtenderError(f"preempt verb is not defined for extender {self.name} but "
                                "run into ProcessPreemption")
        body = wire.preemption_args(pod, victims, self.node_cache_capable, self._raw_pods)
        return wire.decode_preemption_result(
            await self._call(PREEMPT, self.config.preempt_verb, body))

    # --- the binding's verb --------------------------------------------------------------

    async def bind(self, pod: api.Pod, node: str) -> None:
        """Bind through the extender; ExtenderError with its error when it fails."""
        meta = pod.metadata
        body = wire.binding_args(meta.name, meta.namespace, meta.uid, node)
        answer = await self._call(BIND, self.config.bind_verb, body)
        error = wire.decode_binding_error(answer)
        if error:
            raise ExtenderError(error)

    def close(self) -> None:
        self._transport.close()

    def _node_info_of(self, body: bytes) -> NodeInfo:
        """A NodeInfo of a returned node, without pods. An extender returns the same
        bytes for an unchanged node cycle after cycle: those are decoded once."""
        info = self._returned.get(body)
        if info is None:
            if len(self._returned) >= _RETURNED_KEPT:
                self._returned.clear()
            node = wire.decode_node(body)
            info = NodeInfo(node.metadata.name)
            info.set_node(node)
            self._returned[body] = info
        assert info.node is not None
        self._bodies.remember(info.node, body)
        return info

    # --- how a call is made ----------------------------------------------------------------

    def _names(self, nodes: Sequence[NodeInfo]) -> list[str] | None:
        """The node names sent (nodeCacheCapable), else None: whole nodes are sent."""
        return node_names(nodes) if self.node_cache_capable else None

    def _args(self, pod: bytes, nodes: Sequence[NodeInfo], names: list[str] | None) -> bytes:
        if names is not None:
            return wire.extender_args(pod, None, names, self._bodies)
        return wire.extender_args(pod, [node.node for node in nodes if node.node is not None],
                                  None, self._bodies)

    async def _call(self, verb_label: str, verb: str, body: bytes) -> bytes:
        started = time.perf_counter()
        try:
            return await self._transport.post(verb, body)
        finally:
            self._observe(self.name, verb_label, time.perf_counter() - started)
