"""Workloads in a pods file, expanded to the pods their controllers would create.

A Deployment becomes its ReplicaSet and `replicas` pods, a ReplicaSet or StatefulSet
its `replicas` pods, a Job `min(parallelism, completions)` pods, each from the
template and named as the controller names them (`<rs>-<5 chars>`, `<sts>-<ordinal>`,
`<job>-<5 chars>`), with the controller's labels and owner reference. The
ReplicaSets and StatefulSets themselves are returned too: default topology spreading
groups pods by the owners that select them, as the live listers do. Suffixes and
uids come from the caller's RNG, so a seed makes them reproducible.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# k8s.io/apimachinery/pkg/util/rand: the alphabet of generated names (no vowels, no
# look-alikes).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH = 5


class ExpandError(ValueError):
    """A document that is not a pod or a workload simulate can expand."""


@dataclass(slots=True)
class Expanded:
    pods: list[dict[str, Any]] = field(default_factory=list)
    # Objects the controllers would create beside the pods, by informer resource
    # ("replicasets", "statefulsets", "persistentvolumeclaims").
    owners: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def random_suffix(rng: random.Random, length: int = _SUFFIX_LENGTH) -> str:
    return "".join(rng.choice(_ALPHANUMS) for _ in range(length))


def new_uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _safe_encode(text: str) -> str:
    """apimachinery's rand.SafeEncodeString: each byte mapped into the alphabet."""
    return "".join(_ALPHANUMS[ord(char) % len(_ALPHANUMS)] for char in text)


def template_hash(template: Mapping[str, Any]) -> str:
    """A stable hash of a pod template, encoded as the Deployment controller's
    pod-template-hash (FNV-32a, then SafeEncodeString of its decimal form)."""
    hashed = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        hashed = ((hashed ^ byte) * 0x01000193) & 0xFFFFFFFF
    return _safe_encode(str(hashed))


def expand(documents: Iterable[Any], rng: random.Random, namespace: str) -> Expanded:
    """Every document in order; `namespace` where a document names none."""
    out = Expanded()
    for index, document in enumerate(documents):
        if document is None:
            continue  # an empty YAML document
        if not isinstance(document, Mapping):
            raise ExpandError(f"document {index + 1}: not an object")
        kind = document.get("kind")
        if kind == "List":
            nested = expand(document.get("items") or [], rng, namespace)
            out.pods += nested.pods
            out.owners += nested.owners
            continue
        expander = _EXPANDERS.get(str(kind))
        if expander is None:
            raise ExpandError(f"document {index + 1}: kind {kind!r} is not supported "
                              f"(want one of {', '.join(sorted(_EXPANDERS))}, or List)")
        try:
            expander(copy.deepcopy(dict(document)), rng, namespace, out)
        except (KeyError, TypeError, AttributeError) as error:
            raise ExpandError(f"document {index + 1} ({kind}): malformed: {error!r}") from None
    return out


def _meta(document: Mapping[str, Any], namespace: str, kind: str) -> tuple[str, str]:
    meta = document.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        raise ExpandError(f"a {kind} needs metadata.name")
    return name, meta.get("namespace") or namespace


def _pod(document: dict[str, Any], rng: random.Random, namespace: str,
         out: Expanded) -> None:
    meta = document.setdefault("metadata", {})
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise ExpandError("a Pod needs metadata.name or metadata.generateName")
        meta["name"] = meta["generateName"] + random_suffix(rng)
    meta.setdefault("namespace", namespace)
    meta.setdefault("uid", new_uid(rng))
    document.setdefault("apiVersion", "v1")
    out.pods.append(document)


def _from_template(template: Mapping[str, Any], name: str, namespace: str,
                   labels: Mapping[str, str], owner: Mapping[str, Any],
                   rng: random.Random) -> dict[str, Any]:
    pod_meta = dict(template.get("metadata") or {})
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "uid": new_uid(rng),
            "labels": {**(pod_meta.get("labels") or {}), **labels},
            "annotations": dict(pod_meta.get("annotations") or {}),
            "ownerReferences": [dict(owner)],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
    return pod


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def _replicas(spec: Mapping[str, Any]) -> int:
    replicas = spec.get("replicas")
    return 1 if replicas is None else int(replicas)


def _replica_set_pods(rs_name: str, namespace: str, rs_uid: str, spec: Mapping[str, Any],
                      extra_labels: Mapping[str, str], rng: random.Random,
                      out: Expanded) -> None:
    owner = _owner("apps/v1", "ReplicaSet", rs_name, rs_uid)
    for _ in range(_replicas(spec)):
        out.pods.append(_from_template(spec["template"], f"{rs_name}-{random_suffix(rng)}",
                                       namespace, extra_labels, owner, rng))


def _deployment(document: dict[str, Any], rng: random.Random, namespace: str,
                out: Expanded) -> None:
    name, namespace = _meta(document, namespace, "Deployment")
    spec = document.get("spec") or {}
    pod_hash = template_hash(spec["template"])
    rs_name = f"{name}-{pod_hash}"
    rs_uid = new_uid(rng)
    hash_label = {"pod-template-hash": pod_hash}
    selector = copy.deepcopy(spec.get("selector") or {})
    selector.setdefault("matchLabels", {}).update(hash_label)
    template_labels = (spec["template"].get("metadata") or {}).get("labels") or {}
    out.owners.append(("replicasets", {
        "metadata": {"name": rs_name, "namespace": namespace, "uid": rs_uid,
                     "labels": {**template_labels, **hash_label}},
        "spec": {"replicas": _replicas(spec), "selector": selector}}))
    _replica_set_pods(rs_name, namespace, rs_uid, spec, hash_label, rng, out)


def _replica_set(document: dict[str, Any], rng: random.Random, namespace: str,
                 out: Expanded) -> None:
    name, namespace = _meta(document, namespace, "ReplicaSet")
    document["metadata"].update(namespace=namespace)
    uid = document["metadata"].setdefault("uid", new_uid(rng))
    spec = document.get("spec") or {}
    out.owners.append(("replicasets", document))
    _replica_set_pods(name, namespace, uid, spec, {}, rng, out)


def _stateful_set(document: dict[str, Any], rng: random.Random, namespace: str,
                  out: Expanded) -> None:
    name, namespace = _meta(document, namespace, "StatefulSet")
    document["metadata"].update(namespace=namespace)
    uid = document["metadata"].setdefault("uid", new_uid(rng))
    spec = document.get("spec") or {}
    out.owners.append(("statefulsets", document))
    revision = f"{name}-{template_hash(spec['template'])}"
    owner = _owner("apps/v1", "StatefulSet", name, uid)
    claim_templates = spec.get("volumeClaimTemplates") or []
    for ordinal in range(_replicas(spec)):
        pod_name = f"{name}-{ordinal}"
        pod = _from_template(spec["template"], pod_name, namespace, {
            "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal)}, owner, rng)
        volumes = pod["spec"].setdefault("volumes", [])
        for template in claim_templates:
            # The controller creates each replica's claim before its pod.
            claim_name = f"{template['metadata']['name']}-{pod_name}"
            out.owners.append(("persistentvolumeclaims", {
                "metadata": {"name": claim_name, "namespace": namespace,
                             "uid": new_uid(rng)},
                "spec": copy.deepcopy(template.get("spec") or {})}))
            volumes.append({"name": template["metadata"]["name"],
                            "persistentVolumeClaim": {"claimName": claim_name}})
        out.pods.append(pod)


def _job(document: dict[str, Any], rng: random.Random, namespace: str,
         out: Expanded) -> None:
    name, namespace = _meta(document, namespace, "Job")
    uid = (document.get("metadata") or {}).get("uid") or new_uid(rng)
    spec = document.get("spec") or {}
    parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
    completions = spec.get("completions")
    count = parallelism if completions is None else min(parallelism, int(completions))
    indexed = spec.get("completionMode") == "Indexed"
    owner = _owner("batch/v1", "Job", name, uid)
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
              "controller-uid": uid, "job-name": name}
    for index in range(count):
        pod_labels = dict(labels)
        prefix = name
        if indexed:
            pod_labels["batch.kubernetes.io/job-completion-index"] = str(index)
            prefix = f"{name}-{index}"
        out.pods.append(_from_template(spec["template"], f"{prefix}-{random_suffix(rng)}",
                                       namespace, pod_labels, owner, rng))


_EXPANDERS = {
    "Pod": _pod,
    "Deployment": _deployment,
    "ReplicaSet": _replica_set,
    "StatefulSet": _stateful_set,
    "Job": _job,
}
