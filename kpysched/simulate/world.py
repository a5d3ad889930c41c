"""The simulated cluster: the informers' objects by resource, from a snapshot, and
the pods to place, read from a file and admitted as the API server would admit them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kpysched.api.times import api_time
from kpysched.objects import api
from kpysched.simulate import snapshot
from kpysched.simulate.expand import Expanded

# The DefaultTolerationSeconds admission plugin's tolerations, added to every pod.
_DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)
_DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"


class InputError(ValueError):
    """A pods file or snapshot file that cannot be used; the message names it."""


@dataclass(slots=True)
class World:
    """Objects by informer resource ("nodes", "pods", "namespaces", ...)."""

    objects: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, document: Mapping[str, Any]) -> World:
        try:
            return cls(snapshot.decode(document))
        except snapshot.SnapshotError as error:
            raise InputError(str(error)) from None

    def of(self, resource: str) -> list[Any]:
        return self.objects.setdefault(resource, [])

    def add_owners(self, expanded: Expanded) -> None:
        """The ReplicaSets, StatefulSets and claims the expanded workloads' controllers
        would create, decoded as the informers decode them."""
        kinds = {spec.resource: spec.kind for spec in snapshot.resource_specs()}
        for resource, document in expanded.owners:
            try:
                self.of(resource).append(
                    msgspec.json.decode(msgspec.json.encode(document), type=kinds[resource]))
            except msgspec.ValidationError as error:
                raise InputError(f"{resource} {document['metadata']['name']}: {error}") from None

    def priority_of(self, class_name: str) -> tuple[int, str, str]:
        """(priority, class name, preemption policy) as the Priority admission plugin
        resolves them: the named class, else the global default, else 0."""
        classes: list[snapshot.PriorityClass] = self.of("priorityclasses")
        if class_name:
            found = next((c for c in classes if c.metadata.name == class_name), None)
            if found is None:
                raise InputError(f"no PriorityClass with name {class_name} was found")
        else:
            found = next((c for c in classes if c.global_default), None)
            if found is None:
                return 0, "", _DEFAULT_PREEMPTION_POLICY
        return (found.value, found.metadata.name,
                found.preemption_policy or _DEFAULT_PREEMPTION_POLICY)


def read_documents(path: str) -> list[Any]:
    """A YAML (multi-document) or JSON file's documents; "-" reads stdin."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"{path}: {error.strerror}") from None
    try:
        if text.lstrip().startswith(("{", "[")):
            loaded = json.loads(text)
            return loaded if isinstance(loaded, list) else [loaded]
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except (ValueError, yaml.YAMLError) as error:
        raise InputError(f"{path}: not YAML or JSON: {error}") from None


def admit(documents: Iterable[dict[str, Any]], world: World, scheduler_names: Iterable[str],
          ) -> list[api.Pod]:
    """Pods as the API server stores them on create: a missing schedulerName becomes
    the first profile's (simulate asks where *this* configuration would put them),
    priority and preemption policy come from the PriorityClass, the
    DefaultTolerationSeconds tolerations are added, all created now."""
    names = list(scheduler_names)
    created = api_time()
    pods = []
    for document in documents:
        key = f"{document['metadata']['namespace']}/{document['metadata']['name']}"
        spec = document.setdefault("spec", {})
        spec.setdefault("schedulerName", names[0])
        if spec.get("nodeName"):
            raise InputError(f"pod {key}: spec.nodeName is set, so no scheduler places it")
        try:
            priority, class_name, policy = world.priority_of(spec.get("priorityClassName", ""))
        except InputError as error:
            raise InputError(f"pod {key}: {error}") from None
        spec["priority"] = priority
        if class_name:
            spec["priorityClassName"] = class_name
        spec.setdefault("preemptionPolicy", policy)
        tolerations = spec.setdefault("tolerations", [])
        for default in _DEFAULT_TOLERATIONS:
            if not any(t.get("key") == default["key"] and t.get("effect") in ("", None, "NoExecute")
                       for t in tolerations):
                tolerations.append(dict(default))
        document["metadata"].setdefault("creationTimestamp", created)
        document.setdefault("status", {}).setdefault("phase", "Pending")
        try:
            pods.append(msgspec.json.decode(msgspec.json.encode(document), type=api.Pod))
        except msgspec.ValidationError as error:
            raise InputError(f"pod {key}: {error}") from None
    return pods
