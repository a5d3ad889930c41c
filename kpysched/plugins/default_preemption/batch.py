"""DefaultPreemption's per-node victim selection for many nodes at once.

The rules are those of `DefaultPreemption.select_victims_on_node`: take every pod of
lower priority off the node; if the preemptor then fits, give them back one by one,
PDB-violating ones first and most important first, keeping each one the preemptor
still fits beside. Here every node of a chunk takes the same step together, and the
framework's NodeBatch answers "does the preemptor fit" for all of them in one vector
call, instead of one Filter chain per node and per victim.

A node goes the per-node way instead when the batch cannot give its whole verdict
(nominated pods outrank the preemptor there, or a node-only Filter rejects it), or
when the preemptor does not fit even with every candidate victim gone: the per-node
way then states the exact failure status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kpysched.cache.node_info import NodeInfo
from kpysched.framework.interfaces import NodeBatch
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects.pod import PodInfo

# What select_victims_on_node returns for one node.
NodeVictims = tuple[list[PodInfo], int, Status]


@dataclass(slots=True)
class _Reprieve:
    """One node's victims in the order they are offered back."""

    position: int
    offered: list[PodInfo]
    violating: int  # the first `violating` of `offered` violate a PDB
    victims: list[PodInfo]
    num_violations: int = 0


def select_victims_on_nodes(
    nodes: Sequence[NodeInfo], batch: NodeBatch,
    potential_of: Callable[[NodeInfo], list[PodInfo]],
    reprieve_order: Callable[[list[PodInfo]], tuple[list[PodInfo], list[PodInfo]]],
    by_importance: Callable[[list[PodInfo]], list[PodInfo]],
    one_node: Callable[[NodeInfo], NodeVictims],
) -> list[NodeVictims] | None:
    """select_victims_on_node's answer for each of `nodes`, in order; None when the
    batch could not answer (the caller then goes node by node).

    `potential_of` lists a node's pods the preemptor may evict; `reprieve_order` splits
    them, sorted, into (violating, non-violating); `by_importance` sorts victims;
    `one_node` is the per-node way."""
    results: list[NodeVictims | None] = [None] * len(nodes)
    pending: list[_Reprieve] = []
    taken_positions: list[int] = []
    taken: list[PodInfo] = []
    for position, node in enumerate(nodes):
        potential = potential_of(node)
        if not potential or not batch.covers(position):
            results[position] = one_node(node)
            continue
        violating, non_violating = reprieve_order(potential)
        pending.append(_Reprieve(position, violating + non_violating, len(violating), []))
        taken_positions.extend([position] * len(potential))
        taken.extend(potential)
    batch.remove(np.array(taken_positions, dtype=np.int64), taken)

    # With every candidate victim gone, does the preemptor fit at all?
    fits_when_empty = batch.fits(np.array([r.position for r in pending], dtype=np.int64))
    if fits_when_empty is None:
        return None
    reprieving: list[_Reprieve] = []
    for reprieve, fits in zip(pending, fits_when_empty.tolist(), strict=True):
        if fits:
            reprieving.append(reprieve)
        else:
            results[reprieve.position] = one_node(nodes[reprieve.position])

    depth = 0
    while True:
        step = [r for r in reprieving if depth < len(r.offered)]
        if not step:
            break
        positions = np.array([r.position for r in step], dtype=np.int64)
        offered = [r.offered[depth] for r in step]
        batch.add(positions, offered)
        still_fits = batch.fits(positions)
        if still_fits is None:
            return None
        refused = np.flatnonzero(~still_fits).tolist()
        if refused:
            batch.remove(positions[refused], [offered[i] for i in refused])
            for i in refused:
                reprieve = step[i]
                reprieve.victims.append(offered[i])
                if depth < reprieve.violating:
                    reprieve.num_violations += 1
        depth += 1

    for reprieve in reprieving:
        victims = reprieve.victims
        if 0 < reprieve.violating < len(reprieve.offered):
            victims = by_importance(victims)
        results[reprieve.position] = (victims, reprieve.num_violations, SUCCESS)
    missing = [nodes[i].name for i, result in enumerate(results) if result is None]
    if missing:
        raise RuntimeError(f"no dry-run result for nodes {missing}")
    return [result for result in results if result is not None]
