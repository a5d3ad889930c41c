"""A batch's scenarios laid out on one cluster: two copies of each scenario, one per
scheduler, each with nodes and a namespace of its own.

A copy's cluster-scoped names carry its suffix (`n0-b12u` is node n0 of scenario 12's
upstream copy, `n0-b12k` of its kpysched copy), so an outcome read back by role
("n0") compares across copies and node names never reach a comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.cluster import kube
from tests.e2e.differential.batch.pinning import (
    image_of_scenario,
    pin_to_nodes,
    rename_images,
    scaled_image_size,
)
from tests.e2e.differential.model import PodSpec, Scenario
from tests.e2e.differential.runner import ROLE_LABEL, _Names, _pod_body

UPSTREAM = "default-scheduler"
KPYSCHED = "kpysched"
SCHEDULERS = (UPSTREAM, KPYSCHED)
# On every incoming pod, so one list finds them all; no scenario selects on it.
INCOMING_LABEL = "kpysched.test/batch-incoming"


def _keys(value: Any) -> set[str]:
    """Every mapping key anywhere in `value`."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list | tuple):
        return {k for v in value for k in _keys(v)}
    return set()


def _unsupported(scenario: Scenario) -> list[str]:
    """What a stateless batch cannot lay out (storage, DRA, gates, later pods)."""
    fields = ("storage_classes", "pvs", "pvcs", "csi_nodes", "csi_drivers", "capacities",
              "device_classes", "slices", "resource_claims", "then", "namespace_labels")
    found = [name for name in fields if getattr(scenario, name)]
    for pod in (scenario.incoming, *scenario.existing):
        # Terms reaching other namespaces would see other scenarios' pods.
        reach = _keys(pod.spec) & {"namespaces", "namespaceSelector"}
        found += [f"{pod.role} uses {key}" for key in sorted(reach)]
    if scenario.expect in ("gated", "retried"):
        found.append(f"expect={scenario.expect}")
    return found


def check_batchable(scenarios: list[Scenario]) -> None:
    names = [s.name for s in scenarios]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    problems = [f"{s.name}: {', '.join(_unsupported(s))}" for s in scenarios
                if _unsupported(s)]
    if duplicates or problems:
        raise ValueError(f"not batchable: duplicate names {duplicates}; {problems}")


@dataclass(frozen=True)
class ScenarioCopy:
    """One scenario as one scheduler sees it."""

    index: int
    scenario: Scenario
    scheduler: str
    names: _Names
    batch_nodes: int  # every node of the batch, both copies of every scenario
    # Node role -> the features its status declares (as a kubelet would publish them).
    declared: Mapping[str, tuple[str, ...]]

    @property
    def namespace(self) -> str:
        return self.names.namespace

    def node_names(self) -> list[str]:
        return [self.names.of(n.role) for n in self.scenario.nodes]

    def _images(self) -> dict[str, str]:
        return {image: image_of_scenario(image, self.index)
                for node in self.scenario.nodes for image, _ in node.images}

    def node_bodies(self) -> list[dict[str, Any]]:
        images = self._images()
        bodies = []
        for node in self.scenario.nodes:
            body = kube.node_body(
                self.names.of(node.role), cpu=node.cpu, memory=node.memory, pods=node.pods,
                labels={ROLE_LABEL: node.role, **node.labels}, taints=node.taints,
                unschedulable=node.unschedulable, extra_allocatable=node.extra,
                images=[(images[image], scaled_image_size(size, len(self.scenario.nodes),
                                                          self.batch_nodes))
                        for image, size in node.images])
            if self.declared.get(node.role):
                # Sorted and unique, or the API server refuses the Node.
                body["status"]["declaredFeatures"] = sorted(set(self.declared[node.role]))
            bodies.append(body)
        return bodies

    def _body(self, spec: PodSpec) -> dict[str, Any]:
        body = _pod_body(spec, self.scheduler, self.names)
        images = self._images()
        for kind in ("containers", "initContainers"):
            for container in body["spec"].get(kind, ()):
                rename_images(container, images)
        return body

    def existing_bodies(self) -> list[dict[str, Any]]:
        return [self._body(spec) for spec in self.scenario.existing]

    def incoming_body(self) -> dict[str, Any]:
        body = self._body(self.scenario.incoming)
        body["metadata"]["labels"][INCOMING_LABEL] = "true"
        pin_to_nodes(body["spec"], self.node_names())
        return body

    def pdb_bodies(self) -> list[dict[str, Any]]:
        return [{"metadata": {"name": pdb.role},
                 "spec": {"maxUnavailable": pdb.max_unavailable,
                          "selector": {"matchLabels": pdb.selector}}}
                for pdb in self.scenario.pdbs]


def suffix(index: int, scheduler: str) -> str:
    return f"b{index}{'u' if scheduler == UPSTREAM else 'k'}"


def copies(scenarios: list[Scenario], namespaces: dict[str, str],
           declared: Mapping[str, Mapping[str, tuple[str, ...]]]) -> list[ScenarioCopy]:
    """Both copies of each scenario; `namespaces` maps each copy's suffix to its
    namespace, `declared` a scenario's name to its nodes' declared features."""
    batch_nodes = 2 * sum(len(s.nodes) for s in scenarios)
    return [ScenarioCopy(index, scenario, scheduler,
                         _Names(suffix(index, scheduler), namespaces[suffix(index, scheduler)]),
                         batch_nodes, declared.get(scenario.name, {}))
            for index, scenario in enumerate(scenarios) for scheduler in SCHEDULERS]
