"""A fix's change to the pod as a strategic merge patch of only what it changes.

The suggestions work on the pod as kpysched decoded it, which keeps only what
scheduling reads (a container's mounts without their paths, no image, no command): a
whole field copied from it (all containers, say) would make an invalid or different
pod. A strategic merge patch names only the changed fields, and identifies each list
element by its merge key, so the rest of the user's pod stays as the user wrote it:

    kubectl get pod P -o json | kubectl patch --local -f - --type strategic -p PATCH -o json

gives the pod to recreate (most spec fields are immutable), and the same patch under
`spec.template` changes a Deployment's or a Job's pods.

The merge keys are the Pod API's (patchMergeKey in k8s.io/api core/v1); a list without
one (tolerations, affinity terms) is replaced whole, as the API server's strategic
merge replaces it, and is then complete in the decoded pod.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

# Field path below spec (list indices left out) -> the merge key of that list.
_CONTAINER_LISTS = {"ports": "containerPort", "env": "name", "volumeMounts": "mountPath",
                    "volumeDevices": "devicePath"}
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("volumes",): "name",
    ("topologySpreadConstraints",): "topologyKey",
    ("schedulingGates",): "name",
    ("resourceClaims",): "name",
    ("imagePullSecrets",): "name",
    ("hostAliases",): "ip",
    **{(kind,): "name" for kind in ("containers", "initContainers", "ephemeralContainers")},
    **{(kind, field): key
       for kind in ("containers", "initContainers", "ephemeralContainers")
       for field, key in _CONTAINER_LISTS.items()},
}
DELETE = {"$patch": "delete"}


def pod_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The strategic merge patch that turns pod `before` into `after` ({} if equal);
    only their specs are compared."""
    changes = _map_diff(before.get("spec") or {}, after.get("spec") or {}, ())
    return {"spec": changes} if changes else {}


def compact(patch: Mapping[str, Any]) -> str:
    """The patch as one line of JSON, for a command line."""
    return json.dumps(patch, separators=(",", ":"))


def _map_diff(before: Mapping[str, Any], after: Mapping[str, Any],
              path: tuple[str, ...]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if key not in after:
            changes[key] = None  # removed
        elif isinstance(old, Mapping) and isinstance(new, Mapping):
            changes[key] = _map_diff(old, new, (*path, key))
        elif isinstance(old, list) and isinstance(new, list) \
                and (merge_key := MERGE_KEYS.get((*path, key))) is not None \
                and _keyed(old, merge_key) and _keyed(new, merge_key):
            changes[key] = _list_diff(old, new, merge_key, (*path, key))
        else:
            changes[key] = new
    return changes


def _keyed(items: Sequence[Any], merge_key: str) -> bool:
    return all(isinstance(item, Mapping) and merge_key in item for item in items)


def _list_diff(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]],
               merge_key: str, path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The elements added or changed (with their merge key) and those removed."""
    old_by_key = {item[merge_key]: item for item in before}
    new_keys = {item[merge_key] for item in after}
    changes: list[dict[str, Any]] = []
    for item in after:
        old = old_by_key.get(item[merge_key])
        if old is None:
            changes.append(dict(item))
        elif old != item:
            changes.append({merge_key: item[merge_key], **_map_diff(old, item, path)})
    changes += [{merge_key: item[merge_key], **DELETE}
                for item in before if item[merge_key] not in new_keys]
    return changes
