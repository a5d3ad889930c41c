"""The candidates the scheduler extenders keep (upstream's Evaluator.callExtenders):
each extender that supports preemption and is interested in the preemptor narrows the
victims map the previous one left; the handle carries the calls."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from kpysched.decisions.record import ExtenderAnswer
from kpysched.framework.interfaces import Handle, Victims
from kpysched.framework.status import Status
from kpysched.objects.pod import PodInfo
from kpysched.plugins.default_preemption.selection import Candidate

log = structlog.get_logger(__name__)


# What a decision record says of a candidate node an extender did not keep.
NOT_KEPT = "not kept as a preemption candidate by the extender"


def call_extenders(handle: Handle, pod: PodInfo, candidates: Sequence[Candidate],
                   said: list[ExtenderAnswer] | None = None,
                   ) -> Sequence[Candidate] | Status:
    """The candidates every interested extender keeps; an Error status when a
    non-ignorable one fails. `said` (a decision record's) gets what each answered."""
    extenders = handle.extenders()
    if not extenders or not candidates:
        return candidates
    victims = {candidate.name: Victims(candidate.victims, candidate.num_pdb_violations)
               for candidate in candidates}
    for extender in extenders:
        if not extender.supports_preemption or not extender.is_interested(pod.pod):
            continue
        answer = extender.process_preemption(pod, victims, handle.snapshot)
        if said is not None:
            said.append(ExtenderAnswer(
                extender.name, "preempt",
                error=answer.message() if isinstance(answer, Status) else "",
                skipped=isinstance(answer, Status) and extender.ignorable,
                failed={} if isinstance(answer, Status) else
                {node: NOT_KEPT for node in victims if node not in answer}))
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
