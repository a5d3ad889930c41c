"""Where a scheduling cycle asks the extenders, as upstream's schedule_one.go does:
findNodesThatPassExtenders after the Filter plugins, and the extenders' part of
prioritizeNodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import structlog

from kpysched.cache.node_info import NodeInfo
from kpysched.decisions.record import ExtenderAnswer
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.extender import HTTPExtender, node_names
from kpysched.extenders.registry import Extenders
from kpysched.framework.diagnosis import Diagnosis
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

log = structlog.get_logger(__name__)

# Upstream's fake plugin name for "an extender rejected nodes": a pod it rejects
# waits for any cluster event (no extender says which events could help).
EXTENDER_PLUGIN: Final = "Extender"
MAX_NODE_SCORE: Final = 100
MAX_EXTENDER_PRIORITY: Final = 10


def filter_nodes(extenders: Extenders, pod: PodInfo, feasible: Sequence[NodeInfo],
                 diagnosis: Diagnosis,
                 said: list[ExtenderAnswer] | None = None) -> Sequence[NodeInfo] | Status:
    """The feasible nodes every interested extender keeps, one extender after another
    on what the previous left; the others' reasons go into the diagnosis. An Error
    status when a non-ignorable extender fails. `feasible` itself when every extender
    kept every node in the order given (the caller keeps the snapshot's rows then)."""
    # The first extender is sent the feasible nodes as given (their names read from the
    # snapshot's rows); each later one what the previous left.
    nodes: Sequence[NodeInfo] = feasible
    body: bytes | None = None
    for extender in extenders:
        if not nodes:
            break
        if not extender.is_interested(pod.pod):
            continue
        if body is None:
            body = extenders.pod_body(pod.pod)
        try:
            answer = extenders.wait(extender.filter(body, nodes))
        except ExtenderError as error:
            if said is not None and extender.is_filter:
                said.append(ExtenderAnswer(extender.name, "filter", error=str(error),
                                         skipped=extender.ignorable))
            if extender.ignorable:
                log.info("extender.skipped", extender=extender.name, pod=pod.key,
                         error=str(error))
                continue
            return Status.error(str(error))
        statuses = diagnosis.node_to_status
        for name, reason in answer.failed_and_unresolvable.items():
            statuses[name] = Status.unresolvable(reason)
        for name, reason in answer.failed.items():
            if name not in answer.failed_and_unresolvable:
                statuses[name] = Status.unschedulable(reason)
        if said is not None and extender.is_filter:
            said.append(ExtenderAnswer(extender.name, "filter",
                                     {**answer.failed, **answer.failed_and_unresolvable}))
        nodes = answer.nodes
    if len(nodes) != len(feasible):
        diagnosis.unschedulable_plugins.add(EXTENDER_PLUGIN)
    return nodes


def prioritize(extenders: Extenders, pod: PodInfo, nodes: Sequence[NodeInfo],
               said: list[ExtenderAnswer] | None = None) -> npt.NDArray[np.int64]:
    """Each node's total of the interested extenders' scores (score x weight x
    MaxNodeScore/MaxExtenderPriority), in the order of `nodes`. The extenders are asked
    at once; one that fails gives no scores (upstream ignores prioritize errors)."""
    totals = np.zeros(len(nodes), dtype=np.int64)
    interested = [extender for extender in extenders if extender.is_interested(pod.pod)]
    if not interested:
        return totals
    body = extenders.pod_body(pod.pod)

    async def ask_all() -> list[list[tuple[str, int]] | BaseException]:
        return await asyncio.gather(*(extender.prioritize(body, nodes)
                                      for extender in interested), return_exceptions=True)

    names = node_names(nodes)
    position: dict[str, int] | None = None
    for extender, answer in zip(interested, extenders.wait(ask_all()), strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, ExtenderError):
                raise answer
            log.debug("extender.prioritize_failed", extender=extender.name, pod=pod.key,
                      error=str(answer))
            if said is not None:
                said.append(ExtenderAnswer(extender.name, "prioritize", error=str(answer),
                                         skipped=True))
            continue
        if _in_order(answer, names):
            # Every node once, in the order asked (how extenders answer): no host is
            # listed twice, so the scores add up position by position.
            factor = _factor(extender)
            scaled = [score * factor for _, score in answer]
            totals += np.array(scaled, dtype=np.int64)
            scores = dict(zip(names, scaled, strict=True)) if said is not None else {}
        else:
            if position is None:
                position = {name: index for index, name in enumerate(names)}
            scores = _scaled(extender, answer)
            for name, score in scores.items():
                index = position.get(name)
                if index is not None:
                    totals[index] += score
        if said is not None and extender.is_prioritizer:
            said.append(ExtenderAnswer(extender.name, "prioritize", scores=scores))
    return totals


async def bind(extenders: Extenders, pod: PodInfo, node: str) -> Status | None:
    """Upstream's extendersBinding: the first binder extender interested in the pod
    binds it (an ignorable one that fails passes the turn on); None when none did, and
    the bind plugins do it."""
    for extender in extenders:
        if not extender.is_binder or not extender.is_interested(pod.pod):
            continue
        try:
            await extender.bind(pod.pod, node)
        except ExtenderError as error:
            if extender.ignorable:
                log.info("extender.skipped", extender=extender.name, pod=pod.key, verb="bind",
                         error=str(error))
                continue
            return Status.error(str(error))
        return SUCCESS
    return None


def _in_order(answer: list[tuple[str, int]], names: list[str]) -> bool:
    return len(answer) == len(names) and [host for host, _ in answer] == names


def _factor(extender: HTTPExtender) -> int:
    return extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)


def _scaled(extender: HTTPExtender, answer: list[tuple[str, int]]) -> dict[str, int]:
    """Upstream adds every entry, even a host listed twice."""
    factor = _factor(extender)
    scores: dict[str, int] = {}
    for name, score in answer:
        scores[name] = scores.get(name, 0) + score * factor
    return scores
