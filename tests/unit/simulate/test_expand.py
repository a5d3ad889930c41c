"""Workloads expanded to the pods their controllers would create."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kpysched.simulate.expand import ExpandError, expand, template_hash

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
}
NAME_CHARS = set("bcdfghjklmnpqrstvwxz2456789")


def _expand(*documents: Any, seed: int = 1) -> Any:
    return expand(list(documents), random.Random(seed), "default")


def test_deployment_becomes_replica_set_and_replicas() -> None:
    out = _expand({"kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                            "template": TEMPLATE}})
    pod_hash = template_hash(TEMPLATE)
    assert [resource for resource, _ in out.owners] == ["replicasets"]
    rs = out.owners[0][1]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert len(out.pods) == 3
    for pod in out.pods:
        meta = pod["metadata"]
        prefix, suffix = meta["name"].rsplit("-", 1)
        assert prefix == f"web-{pod_hash}" and len(suffix) == 5 and set(suffix) <= NAME_CHARS
        assert meta["namespace"] == "shop"
        assert meta["labels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert meta["ownerReferences"][0]["kind"] == "ReplicaSet"
        assert meta["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    assert len({p["metadata"]["uid"] for p in out.pods}) == 3


def test_stateful_set_ordinals_and_claims() -> None:
    out = _expand({"kind": "StatefulSet", "metadata": {"name": "db"},
                   "spec": {"replicas": 2, "template": TEMPLATE, "volumeClaimTemplates": [
                       {"metadata": {"name": "data"},
                        "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}})
    assert [p["metadata"]["name"] for p in out.pods] == ["db-0", "db-1"]
    assert out.pods[1]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "1"
    assert out.pods[1]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}}]
    assert [(r, o["metadata"]["name"]) for r, o in out.owners] == [
        ("statefulsets", "db"), ("persistentvolumeclaims", "data-db-0"),
        ("persistentvolumeclaims", "data-db-1")]


@pytest.mark.parametrize(("spec", "count"), [
    ({}, 1), ({"parallelism": 4}, 4), ({"parallelism": 4, "completions": 2}, 2),
    ({"parallelism": 0}, 0),
], ids=["default", "parallelism", "completions-cap", "suspended-like"])
def test_job_parallelism(spec: dict[str, Any], count: int) -> None:
    out = _expand({"kind": "Job", "metadata": {"name": "batch"},
                   "spec": {**spec, "template": TEMPLATE}})
    assert len(out.pods) == count
    for pod in out.pods:
        assert pod["metadata"]["name"].startswith("batch-")
        assert pod["metadata"]["labels"]["job-name"] == "batch"


def test_pods_lists_and_generate_name_in_order() -> None:
    out = _expand({"kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "a"}},
        {"kind": "Pod", "metadata": {"generateName": "b-"}}]},
        {"kind": "Pod", "metadata": {"name": "c", "namespace": "other"}})
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in out.pods]
    assert names[0] == ("default", "a") and names[2] == ("other", "c")
    assert names[1][1].startswith("b-") and len(names[1][1]) == 7


def test_same_seed_same_names() -> None:
    document = {"kind": "ReplicaSet", "metadata": {"name": "rs"},
                "spec": {"replicas": 2, "template": TEMPLATE}}
    first = [p["metadata"]["name"] for p in _expand(document, seed=5).pods]
    assert first == [p["metadata"]["name"] for p in _expand(document, seed=5).pods]
    assert first != [p["metadata"]["name"] for p in _expand(document, seed=6).pods]


@pytest.mark.parametrize("document", [
    {"kind": "DaemonSet", "metadata": {"name": "d"}},
    {"kind": "Pod", "metadata": {}},
    "text",
], ids=["unsupported-kind", "pod-without-name", "not-an-object"])
def test_rejected_documents(document: Any) -> None:
    with pytest.raises(ExpandError):
        _expand(document)
