"""The candidates the scheduler extenders keep (upstream's Evaluator.callExtenders):
each extender that supports preemption and is interested in the preemptor narrows the
victims map the previous one left; the handle carries the calls."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from kpysched.framework.interfaces import Handle, Victims
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption.selection import Candidate

log = structlog.get_logger(__name__)


def call_extenders(handle: Handle, pod: PodInfo,
                   candidates: Sequence[Candidate]) -> Sequence[Candidate] | Status:
    extenders = handle.extenders()
    if not extenders or not candidates:
        return candidates
    victims = {candidate.name: Victims(candidate.victims, candidate.num_pdb_violations)
               for candidate in candidates}
    for extender in extenders:
        if not extender.supports_preemption or not extender.is_interested(pod.pod):
            continue
        answer = extender.process_preemption(pod, victims, handle.snapshot)
        if isinstance(answer, Status):
            if extender.ignorable:
                log.info("extender.skipped", extender=extender.name, pod=pod.key,
                         verb="preempt", error=answer.message())
                continue
            return answer
        for node, kept in list(answer.items()):
            if kept.pods:
                continue
            if extender.ignorable:
                del answer[node]
                continue
            return Status.error(f'expected at least one victim pod on node "{node}"')
        victims = answer
        if not victims:
            break
    return [Candidate(node, kept.pods, kept.num_pdb_violations)
            for node, kept in victims.items()]
