"""What the test extender answers, decided by labels, as pure functions of the
request bodies (k8s.io/kube-scheduler/extender/v1 shapes, field names as upstream's
Go structs spell them: Pod, Nodes, NodeNames, FailedNodes, ...).

- filter: a node labelled ALLOW=false fails (FailedNodes), ALLOW=never fails for
  good (FailedAndUnresolvableNodes); every other node passes.
- prioritize: a node scores the integer value of the route's score label, clamped
  to the extender range 0..10 (0 without the label).
- preempt: a node labelled PROTECTED=true is no candidate; a victim labelled
  SPARE=true is taken off the list; a node left without victims is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ALLOW = "ext.kpysched.test/allow"
SCORE = "ext.kpysched.test/score"
PROTECTED = "ext.kpysched.test/protected"
SPARE = "ext.kpysched.test/spare"
REFUSED = "the test extender refused the node"
REFUSED_FOR_GOOD = "the test extender refused the node for good"
MIN_SCORE, MAX_SCORE = 0, 10

Labels = Mapping[str, str]
# Node name -> its labels, for requests that carry names only (nodeCacheCapable).
NodeLabels = Callable[[str], Labels]
# Pod UID -> its labels, for preemption requests that carry UIDs only.
PodLabels = Callable[[str], Labels]


def _labels(obj: Mapping[str, Any]) -> Labels:
    labels: Labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def node_names(args: Mapping[str, Any]) -> list[str]:
    """The nodes an ExtenderArgs names, as names or as full Nodes."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [item["metadata"]["name"] for item in (args.get("Nodes") or {}).get("items") or ()]


def _node_labels_of(args: Mapping[str, Any], lookup: NodeLabels) -> dict[str, Labels]:
    if args.get("NodeNames") is not None:
        return {name: lookup(name) for name in args["NodeNames"]}
    return {item["metadata"]["name"]: _labels(item)
            for item in (args.get("Nodes") or {}).get("items") or ()}


def filter_nodes(args: Mapping[str, Any], lookup: NodeLabels) -> dict[str, Any]:
    """An ExtenderFilterResult in the form the request came in (names or Nodes)."""
    labels = _node_labels_of(args, lookup)
    failed = {name: REFUSED for name, node in labels.items() if node.get(ALLOW) == "false"}
    unresolvable = {name: REFUSED_FOR_GOOD for name, node in labels.items()
                    if node.get(ALLOW) == "never"}
    passed = [name for name in labels if name not in failed and name not in unresolvable]
    result: dict[str, Any] = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable,
                              "Error": ""}
    if args.get("NodeNames") is not None:
        result["NodeNames"] = passed
    else:
        kept = set(passed)
        result["Nodes"] = {"metadata": {}, "items": [
            item for item in (args.get("Nodes") or {}).get("items") or ()
            if item["metadata"]["name"] in kept]}
    return result


def _score(value: str | None) -> int:
    try:
        score = int(value) if value is not None else MIN_SCORE
    except ValueError:
        score = MIN_SCORE
    return max(MIN_SCORE, min(MAX_SCORE, score))


def prioritize(args: Mapping[str, Any], lookup: NodeLabels,
               score_label: str = SCORE) -> list[dict[str, Any]]:
    """A HostPriorityList."""
    return [{"Host": name, "Score": _score(labels.get(score_label))}
            for name, labels in _node_labels_of(args, lookup).items()]


def preempt(args: Mapping[str, Any], node_lookup: NodeLabels,
            pod_lookup: PodLabels) -> dict[str, Any]:
    """An ExtenderPreemptionResult (always UIDs: upstream reads NodeNameToMetaVictims
    from the answer, whichever form the request had)."""
    answer: dict[str, Any] = {}
    full = args.get("NodeNameToVictims")
    if full is not None:
        candidates = {node: ([(p["metadata"]["uid"], _labels(p)) for p in victims.get("Pods")
                              or ()], victims.get("NumPDBViolations", 0))
                      for node, victims in full.items()}
    else:
        candidates = {node: ([(p["UID"], pod_lookup(p["UID"])) for p in victims.get("Pods")
                              or ()], victims.get("NumPDBViolations", 0))
                      for node, victims in (args.get("NodeNameToMetaVictims") or {}).items()}
    for node, (pods, violations) in candidates.items():
        if node_lookup(node).get(PROTECTED) == "true":
            continue
        kept = [{"UID": uid} for uid, labels in pods if labels.get(SPARE) != "true"]
        if kept:
            answer[node] = {"Pods": kept, "NumPDBViolations": violations}
    return {"NodeNameToMetaVictims": answer}
