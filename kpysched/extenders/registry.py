"""Extenders: the configured extenders in the order upstream calls them, what they
share (a loop thread for callers that cannot pause, node bodies, the informers' raw
JSON), and how a synchronous scheduling cycle waits for their answers.

Upstream's buildExtenders puts the ignorable extenders after the others, so an
ignorable one never filters the nodes a required one sees first; so does this.
"""

from __future__ import annotations

import ssl
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from kpysched.config.errors import ConfigError, problem
from kpysched.config.extenders import Extender as ExtenderConfig
from kpysched.extenders import wire
from kpysched.extenders.extender import HTTPExtender, RequestObserver, observe_nothing
from kpysched.extenders.raw import RawObjects
from kpysched.framework.runtime.cooperative import await_in_cycle, can_await_in_cycle
from kpysched.framework.runtime.loop_thread import LoopThread
from kpysched.objects import api

Result = TypeVar("Result")


class Extenders:
    """Every configured extender, sharing one loop thread (for callers that wait
    synchronously) and one cache of node bodies."""

    def __init__(self, configs: Sequence[ExtenderConfig],
                 observe: RequestObserver = observe_nothing) -> None:
        self._loop = LoopThread("kpysched-extenders")
        # The pods' and nodes' JSON as the informers received it (the application
        # connects them: informers' keep_raw); empty where nothing feeds them.
        self.raw_pods = RawObjects(drop_managed_fields=True)
        self.raw_nodes = RawObjects(drop_managed_fields=False)
        self._bodies = wire.NodeBodies(self.raw_nodes)
        built = [self._build(index, config, observe) for index, config in enumerate(configs)]
        self.all: tuple[HTTPExtender, ...] = tuple(
            [e for e in built if not e.ignorable] + [e for e in built if e.ignorable])
        self.has_filters = any(extender.is_filter for extender in self.all)
        self.has_prioritizers = any(extender.is_prioritizer for extender in self.all)
        self._pod: tuple[api.Pod, bytes] | None = None

    def _build(self, index: int, config: ExtenderConfig,
               observe: RequestObserver) -> HTTPExtender:
        """One extender; ConfigError naming its tlsConfig when its certificates cannot
        be loaded (kube-scheduler does not start then either)."""
        try:
            return HTTPExtender(config, self._bodies, observe, self.raw_pods)
        except (OSError, ssl.SSLError, ValueError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise ConfigError([problem(f"extenders[{index}].tlsConfig",
                                       f"cannot load its certificates: {reason}")]) from None

    def __iter__(self) -> Iterator[HTTPExtender]:
        return iter(self.all)

    def __len__(self) -> int:
        return len(self.all)

    def __bool__(self) -> bool:
        return bool(self.all)

    def pod_body(self, pod: api.Pod) -> bytes:
        """The pod's JSON, encoded once for all the calls of a cycle about it."""
        kept = self._pod
        if kept is not None and kept[0] is pod:
            return kept[1]
        body = wire.encode_pod(pod, self.raw_pods)
        self._pod = (pod, body)
        return body

    def wait(self, calls: Coroutine[Any, Any, Result]) -> Result:
        """Run extender calls for a synchronous caller. In a cycle that may pause, the
        cycle pauses and the loop runs on until the answers come; otherwise (a
        simulation, a pod group's trial that holds the loop) the caller waits."""
        if can_await_in_cycle():
            return await_in_cycle(calls)
        return self._loop.run_blocking(calls)

    async def close(self) -> None:
        for extender in self.all:
            extender.close()
        await self._loop.close()
