"""Ties in kube-scheduler's scores, read from its log at --v=10.

When two nodes share the best total score, kube-scheduler picks one at random: a
scenario whose upstream outcome rests on such a pick has no one right answer and is
invalid as a differential test, whatever kpysched does. schedule_one.go logs each
feasible node's final score per attempt ("Calculated node's final score for pod"); an
attempt is the run of those lines for one pod, ending where the pod changes or a node
comes again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FINAL_SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="(?P<namespace>[^/"]+)/(?P<pod>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)')


@dataclass(frozen=True)
class ScoreTie:
    namespace: str
    pod: str
    scores: dict[str, int]  # node -> final score, the whole attempt

    def describe(self) -> str:
        best = max(self.scores.values())
        tied = sorted(n for n, s in self.scores.items() if s == best)
        return f"{self.pod}: nodes {tied} tie at {best} (all: {self.scores})"


def score_ties(log: str) -> list[ScoreTie]:
    """Every attempt of `log` whose best score two nodes share. A log with no scores
    at all is refused: the verbosity did not take, and no tie could be seen."""
    attempts: list[tuple[str, str, dict[str, int]]] = []
    for match in _FINAL_SCORE.finditer(log):
        namespace, pod, node = match["namespace"], match["pod"], match["node"]
        if not attempts or attempts[-1][:2] != (namespace, pod) or node in attempts[-1][2]:
            attempts.append((namespace, pod, {}))
        attempts[-1][2][node] = int(match["score"])
    if not attempts:
        raise AssertionError("kube-scheduler logged no final scores: is it at --v=10 "
                             "for schedule_one.go?")
    ties = []
    for namespace, pod, scores in attempts:
        best = max(scores.values())
        if sum(score == best for score in scores.values()) > 1:
            ties.append(ScoreTie(namespace, pod, scores))
    return ties
