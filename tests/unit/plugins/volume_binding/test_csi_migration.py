"""In-tree PVs on nodes that migrated their plugin to CSI: csi-translation-lib's
TestTranslateTopologyFromInTreeToCSI (both cases) and the addTopology path, plus when
the scheduler translates at all (upstream's tryTranslatePVToCSI)."""

from __future__ import annotations

from typing import Any

import pytest

from kpysched.objects import api, storage
from kpysched.plugins.volume_binding.csi_migration import (
    MIGRATED_PLUGINS_ANNOTATION,
    TranslationError,
    as_seen_on_node,
)

GCE_KEY = "topology.gke.io/zone"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE, BETA_REGION = ("failure-domain.beta.kubernetes.io/zone",
                          "failure-domain.beta.kubernetes.io/region")
HOSTNAME = "kubernetes.io/hostname"
GA_LABELS = {ZONE: "us-east1-a", REGION: "us-east1"}


def req(key: str, *values: str) -> api.NodeSelectorRequirement:
    return api.NodeSelectorRequirement(key=key, operator="In", values=list(values))


def terms(*requirements: api.NodeSelectorRequirement) -> list[api.NodeSelectorTerm]:
    return [api.NodeSelectorTerm(match_expressions=list(requirements))]


def pv(labels: dict[str, str], selector: list[api.NodeSelectorTerm] | None = None,
       **source: Any) -> storage.PersistentVolume:
    affinity = (storage.VolumeNodeAffinity(required=api.NodeSelector(
        node_selector_terms=selector)) if selector is not None else None)
    spec = storage.PersistentVolumeSpec(node_affinity=affinity, **source)
    return storage.PersistentVolume(metadata=api.ObjectMeta(name="gcepd", labels=labels),
                                    spec=spec)


def csi_node(migrated: str | None) -> storage.CSINode | None:
    if migrated is None:
        return None
    return storage.CSINode(metadata=api.ObjectMeta(
        name="node1", annotations={MIGRATED_PLUGINS_ANNOTATION: migrated}))


GCE = {"gce_persistent_disk": {"pdName": "disk"}}
MIGRATED = "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"

TOPOLOGY = {
    "Replace GA Kubernetes Zone Topology to GCE CSI Topology": (
        pv(GA_LABELS, terms(req(ZONE, "us-east1-a"), req(REGION, "us-east1")), **GCE),
        terms(req(GCE_KEY, "us-east1-a"), req(REGION, "us-east1"))),
    "Replace Beta Kubernetes Topology to GCE CSI Topology and upgrade region label": (
        pv(GA_LABELS, terms(req(BETA_ZONE, "us-west2-b"), req(BETA_REGION, "us-west2")),
           **GCE),
        terms(req(GCE_KEY, "us-west2-b"), req(REGION, "us-west2"))),
    "zone labels become node affinity when there is none": (
        pv({BETA_ZONE: "us-east1-b__us-east1-a", BETA_REGION: "us-east1"}, **GCE),
        terms(req(GCE_KEY, "us-east1-a", "us-east1-b"))),
    "the zone is added to every existing term": (
        pv({ZONE: "us-east1-a"}, terms(req(HOSTNAME, "n1")), **GCE),
        terms(req(HOSTNAME, "n1"), req(GCE_KEY, "us-east1-a"))),
}


@pytest.mark.parametrize(("volume", "expected"), TOPOLOGY.values(), ids=TOPOLOGY.keys())
def test_topology_translation(volume: storage.PersistentVolume,
                              expected: list[api.NodeSelectorTerm]) -> None:
    translated = as_seen_on_node(volume, csi_node(MIGRATED))
    assert translated.spec.node_affinity is not None
    assert translated.spec.node_affinity.required is not None
    assert translated.spec.node_affinity.required.node_selector_terms == expected


UNTRANSLATED = {
    "no CSINode": (pv({ZONE: "a"}, **GCE), None),
    "plugin not migrated on the node": (pv({ZONE: "a"}, **GCE), "kubernetes.io/aws-ebs"),
    "annotation entries are not trimmed": (pv({ZONE: "a"}, **GCE),
                                           "kubernetes.io/aws-ebs, kubernetes.io/gce-pd"),
    "not an in-tree volume": (pv({ZONE: "a"}, host_path={"path": "/x"}), MIGRATED),
    "RBD is never migrated": (pv({ZONE: "a"}, rbd={"image": "x"}), "kubernetes.io/rbd"),
    "Azure Disk has no topology to translate": (
        pv({ZONE: "a"}, azure_disk={"diskURI": "u", "kind": "Managed"}),
        "kubernetes.io/azure-disk"),
}


@pytest.mark.parametrize(("volume", "migrated"), UNTRANSLATED.values(), ids=UNTRANSLATED.keys())
def test_volumes_left_as_they_are(volume: storage.PersistentVolume,
                                  migrated: str | None) -> None:
    assert as_seen_on_node(volume, csi_node(migrated)) is volume


def test_untranslatable_volume() -> None:
    volume = pv({}, azure_disk={"diskURI": "u", "kind": "Shared"})
    with pytest.raises(TranslationError) as raised:
        as_seen_on_node(volume, csi_node("kubernetes.io/azure-disk"))
    assert str(raised.value) == ("could not translate pv: kind(Shared) is not supported in "
                                 "csi migration")
