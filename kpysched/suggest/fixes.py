"""Candidate single changes that may give a pending pod a node, from the attempt's
rejections: each plugin that turned nodes away suggests the changes that would lift
its reason. A candidate may be a ladder (steps of one change, smallest first: a lower
request, a larger maxSkew, a higher priority); the trial keeps the first step that
places the pod.

Changes work on the pod as JSON (the API's camelCase) or on the simulated cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kpysched.objects import api
from kpysched.objects.quantity import milli_value, value
from kpysched.objects.taints import tolerates

PodDocument = dict[str, Any]
PodChange = Callable[[PodDocument], None]
WorldChange = Callable[[list[api.Node]], list[api.Node]]

# How many steps a ladder may take (each is one simulated attempt).
MAX_STEPS = 4
_SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
_CPU, _MEMORY = "cpu", "memory"
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

# Among fixes that open as many nodes, the smaller change first: the pod's own spec,
# then the cluster's, buying a node last.
PREFERENCE = ("gates", "toleration", "node-selector", "node-affinity", "host-port", "request",
              "spread", "podAffinity", "podAntiAffinity", "uncordon", "priority", "new-node")


@dataclass(slots=True)
class Step:
    text: str  # the change, in words
    pod: PodChange | None = None
    nodes: WorldChange | None = None
    # How to apply it, where the strategic merge patch of the pod the trial computes
    # (patch.py) is not all: a kubectl command for a node, what to set instead of a
    # field the API server refuses. Empty: the patch.
    how: str = ""


@dataclass(slots=True)
class Candidate:
    kind: str  # toleration, request, node-selector, node-affinity, spread, ...
    plugin: str  # the plugin whose rejection it answers
    steps: list[Step] = field(default_factory=list)


@dataclass(slots=True)
class Rejections:
    """One attempt's rejections: node -> (plugin, reasons)."""

    by_node: Mapping[str, tuple[str, Sequence[str]]]

    @classmethod
    def of(cls, decision: Mapping[str, Any]) -> Rejections:
        rejected = decision.get("rejected") or {}
        return cls({node: (r["plugin"], list(r["reasons"])) for node, r in rejected.items()})

    def nodes_of(self, plugin: str) -> list[str]:
        return [node for node, (by, _) in self.by_node.items() if by == plugin]

    def reasons_of(self, plugin: str) -> set[str]:
        return {reason for by, reasons in self.by_node.values() if by == plugin
                for reason in reasons}

    @property
    def plugins(self) -> set[str]:
        return {plugin for plugin, _ in self.by_node.values()}


@dataclass(slots=True)
class FreeSpace:
    """What each node has left of a resource (allocatable minus requested)."""

    by_node: Mapping[str, Mapping[str, int]]


def candidates(pod: PodDocument, rejections: Rejections, nodes: Sequence[api.Node],
               free: FreeSpace, priorities: Iterable[int]) -> list[Candidate]:
    """Every candidate the rejections suggest, in the Filter plugins' order."""
    by_name = {node.metadata.name: node for node in nodes}
    found: list[Candidate] = _gates(pod)
    plugins = rejections.plugins
    if "NodeUnschedulable" in plugins:
        found.append(_uncordon(rejections.nodes_of("NodeUnschedulable")))
    if "TaintToleration" in plugins:
        found += _tolerations(pod, [by_name[n] for n in rejections.nodes_of("TaintToleration")
                                    if n in by_name])
    if "NodeAffinity" in plugins:
        found += _node_selection(pod)
    if "NodePorts" in plugins:
        found += _host_ports(pod)
    if "NodeResourcesFit" in plugins:
        # Only what the nodes NodeResourcesFit turned away have left: they passed every
        # Filter before it (taints, affinity, ports), so a smaller request may fit them.
        fit_rejected = set(rejections.nodes_of("NodeResourcesFit"))
        found += _requests(pod, rejections.reasons_of("NodeResourcesFit"), FreeSpace(
            {n: left for n, left in free.by_node.items() if n in fit_rejected}))
        template = next((by_name[n] for n in rejections.nodes_of("NodeResourcesFit")
                         if n in by_name), None)
        if template is not None:
            found.append(_new_node(pod, template))
    if "PodTopologySpread" in plugins:
        found += _spread(pod)
    if "InterPodAffinity" in plugins:
        found += _pod_affinity(pod)
    ladder = _priority(pod, priorities)
    if ladder.steps:
        found.append(ladder)
    return found


def _gates(pod: PodDocument) -> list[Candidate]:
    """A gated pod is never tried: the gates' controller (Kueue, a quota system) lifts
    them. Checked like any other change, so the count says where it would go then."""
    gates = [gate["name"] for gate in pod["spec"].get("schedulingGates") or []]
    if not gates:
        return []

    def lift(doc: PodDocument) -> None:
        doc["spec"].pop("schedulingGates", None)

    return [Candidate("gates", "SchedulingGates", [Step(
        "remove its scheduling gates " + ", ".join(gates)
        + " (their controller does, once it admits the pod)", pod=lift)])]


def _uncordon(cordoned: Sequence[str]) -> Candidate:
    names = set(cordoned)

    def change(nodes: list[api.Node]) -> list[api.Node]:
        out = []
        for node in nodes:
            if node.metadata.name in names:
                uncordoned = copy.deepcopy(node)
                uncordoned.spec.unschedulable = False
                # kube-controller-manager's node lifecycle lifts this taint then.
                uncordoned.spec.taints = [t for t in uncordoned.spec.taints
                                          if t.key != _UNSCHEDULABLE_TAINT]
                out.append(uncordoned)
            else:
                out.append(node)
        return out

    shown = ", ".join(sorted(names)[:3]) + (" ..." if len(names) > 3 else "")
    return Candidate("uncordon", "NodeUnschedulable", [Step(
        f"uncordon the cordoned node(s) {shown}", nodes=change,
        how="kubectl uncordon " + " ".join(sorted(names)))])


def _tolerations(pod: PodDocument, tainted: Sequence[api.Node]) -> list[Candidate]:
    present = [api.Toleration(key=t.get("key", ""), operator=t.get("operator", ""),
                              value=t.get("value", ""), effect=t.get("effect", ""))
               for t in pod["spec"].get("tolerations") or []]
    seen: dict[tuple[str, str, str], int] = {}  # (key, value, effect) -> nodes
    for node in tainted:
        for taint in node.spec.taints:
            if taint.effect not in _SCHEDULING_EFFECTS:
                continue
            if any(tolerates(t, taint) for t in present):
                continue
            taint_id = (taint.key, taint.value, taint.effect)
            seen[taint_id] = seen.get(taint_id, 0) + 1
    found = []
    for (key, val, effect), _ in sorted(seen.items(), key=lambda item: -item[1]):
        toleration: dict[str, str] = (
            {"key": key, "operator": "Equal", "value": val, "effect": effect} if val
            else {"key": key, "operator": "Exists", "effect": effect})

        def change(doc: PodDocument, toleration: dict[str, str] = toleration) -> None:
            doc["spec"].setdefault("tolerations", []).append(dict(toleration))

        shown = f"{key}={val}:{effect}" if val else f"{key}:{effect}"
        found.append(Candidate("toleration", "TaintToleration", [Step(
            f"tolerate taint {shown}", pod=change)]))
    return found


def _node_selection(pod: PodDocument) -> list[Candidate]:
    found = []
    for key, val in sorted((pod["spec"].get("nodeSelector") or {}).items()):
        def drop(doc: PodDocument, key: str = key) -> None:
            doc["spec"]["nodeSelector"].pop(key, None)

        found.append(Candidate("node-selector", "NodeAffinity", [Step(
            f"drop nodeSelector {key}={val}", pod=drop)]))
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required:
        def drop_required(doc: PodDocument) -> None:
            doc["spec"]["affinity"]["nodeAffinity"].pop(
                "requiredDuringSchedulingIgnoredDuringExecution", None)

        found.append(Candidate("node-affinity", "NodeAffinity", [Step(
            "drop the required node affinity", pod=drop_required)]))
    return found


def _host_ports(pod: PodDocument) -> list[Candidate]:
    found = []
    for index, container in enumerate(pod["spec"].get("containers") or []):
        for port in container.get("ports") or []:
            if not port.get("hostPort"):
                continue
            number = port["hostPort"]

            def drop(doc: PodDocument, index: int = index, number: int = number) -> None:
                for p in doc["spec"]["containers"][index].get("ports") or []:
                    if p.get("hostPort") == number:
                        p.pop("hostPort")

            found.append(Candidate("host-port", "NodePorts", [Step(
                f"drop hostPort {number} of container {container['name']}", pod=drop)]))
    return found


def pod_requests(pod: PodDocument) -> dict[str, int]:
    """The containers' requests summed (cpu in millicores), as the fix changes them."""
    total: dict[str, int] = {}
    for container in pod["spec"].get("containers") or []:
        for name, quantity in ((container.get("resources") or {}).get("requests")
                               or {}).items():
            amount = milli_value(quantity) if name == _CPU else value(quantity)
            total[name] = total.get(name, 0) + amount
    return total


def _requests(pod: PodDocument, reasons: set[str], free: FreeSpace) -> list[Candidate]:
    wanted = pod_requests(pod)
    found = []
    for reason in sorted(reasons):
        if not reason.startswith("Insufficient "):
            continue
        resource = reason.removeprefix("Insufficient ")
        asked = wanted.get(resource, 0)
        lefts = sorted({left.get(resource, 0) for left in free.by_node.values()
                        if 0 < left.get(resource, 0) < asked}, reverse=True)
        steps = [Step(f"lower the {resource} request to at most {_shown(resource, left)} "
                      f"(now {_shown(resource, asked)})",
                      pod=_scaled(resource, left, asked))
                 for left in lefts[:MAX_STEPS]]
        if steps:
            found.append(Candidate("request", "NodeResourcesFit", steps))
    return found


def _scaled(resource: str, target: int, asked: int) -> PodChange:
    """Each container's request of `resource` scaled so their sum is at most `target`."""

    def change(doc: PodDocument) -> None:
        for container in doc["spec"].get("containers") or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            if resource not in requests:
                continue
            mine = milli_value(requests[resource]) if resource == _CPU \
                else value(requests[resource])
            lowered = mine * target // asked
            requests[resource] = f"{lowered}m" if resource == _CPU else str(lowered)
            limits = (container.get("resources") or {}).get("limits") or {}
            if resource in limits:
                limits[resource] = requests[resource]

    return change


def _new_node(pod: PodDocument, template: api.Node) -> Candidate:
    """A node like `template` (its labels and taints), empty and as large as the pod
    needs: what a cluster autoscaler's node group of that shape would add."""
    wanted = pod_requests(pod)
    name = f"new-node-like-{template.metadata.name}"[:63]

    def change(nodes: list[api.Node]) -> list[api.Node]:
        node = copy.deepcopy(template)
        node.metadata.name = name
        node.metadata.uid = f"suggested-{name}"
        node.metadata.labels = {**node.metadata.labels, "kubernetes.io/hostname": name}
        for resource, asked in wanted.items():
            have = node.status.allocatable.get(resource)
            current = 0 if have is None else (
                milli_value(have) if resource == _CPU else value(have))
            if current < asked:
                shown = f"{asked}m" if resource == _CPU else str(asked)
                node.status.allocatable[resource] = shown
                node.status.capacity[resource] = shown
        return [*nodes, node]

    sizes = ", ".join(f"{r} >= {_shown(r, v)}" for r, v in sorted(wanted.items()))
    return Candidate("new-node", "NodeResourcesFit", [Step(
        f"add a node like {template.metadata.name} (same labels and taints) with "
        f"{sizes or 'its capacity'}", nodes=change)])


def _spread(pod: PodDocument) -> list[Candidate]:
    found = []
    for index, constraint in enumerate(pod["spec"].get("topologySpreadConstraints") or []):
        if constraint.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        skew = int(constraint.get("maxSkew", 1))
        key = constraint.get("topologyKey", "")

        steps = [Step(f"relax the spread constraint over {key} to maxSkew {to} (now {skew})",
                      pod=_constraint_change(index, maxSkew=to))
                 for to in (skew + 1, skew + 2, skew * 2 + 2, skew * 4 + 4)[:MAX_STEPS - 1]]
        steps.append(Step(f"let the spread constraint over {key} be ScheduleAnyway",
                          pod=_constraint_change(index, whenUnsatisfiable="ScheduleAnyway")))
        found.append(Candidate("spread", "PodTopologySpread", steps))
    return found


def _constraint_change(index: int, **fields: object) -> PodChange:
    def change(doc: PodDocument) -> None:
        doc["spec"]["topologySpreadConstraints"][index].update(fields)

    return change


def _pod_affinity(pod: PodDocument) -> list[Candidate]:
    found = []
    affinity = pod["spec"].get("affinity") or {}
    for kind, words in (("podAffinity", "pod affinity"), ("podAntiAffinity", "pod anti-affinity")):
        terms = (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        for index, term in enumerate(terms or []):
            def drop(doc: PodDocument, kind: str = kind, index: int = index) -> None:
                doc["spec"]["affinity"][kind][
                    "requiredDuringSchedulingIgnoredDuringExecution"].pop(index)

            selector = term.get("labelSelector") or {}
            shown = ",".join(f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items())
            found.append(Candidate(kind, "InterPodAffinity", [Step(
                f"drop the required {words} term over {term.get('topologyKey', '')}"
                + (f" ({shown})" if shown else ""), pod=drop)]))
    return found


def _priority(pod: PodDocument, priorities: Iterable[int]) -> Candidate:
    """A higher priority, so that DefaultPreemption may make room: one step above each
    priority the placed pods have that is at least the pod's own, lowest first."""
    own = int(pod["spec"].get("priority") or 0)
    above = sorted({p + 1 for p in priorities if p >= own})[:MAX_STEPS]
    steps = []
    for level in above:
        def change(doc: PodDocument, level: int = level) -> None:
            doc["spec"]["priority"] = level
            doc["spec"]["preemptionPolicy"] = "PreemptLowerPriority"

        # The patch sets spec.priority, which the API server's Priority admission
        # refuses on a pod: the class is what a person sets.
        steps.append(Step(f"run it at priority {level} (a PriorityClass of value >= {level}, "
                          f"now {own})", pod=change,
                          how=f"set priorityClassName to a PriorityClass of value >= {level} "
                              "(the API server sets priority from it)"))
    return Candidate("priority", "DefaultPreemption", steps)


def _shown(resource: str, amount: int) -> str:
    if resource == _CPU:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    if resource == _MEMORY:
        for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= size and amount % size == 0:
                return f"{amount // size}{unit}"
    return str(amount)
