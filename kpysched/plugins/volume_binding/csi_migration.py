"""In-tree PVs as VolumeBinding checks them on a node that migrated their plugin to CSI
(upstream's tryTranslatePVToCSI with csi-translation-lib's topology translation).

Of the translation only the node affinity matters here: the CSI driver publishes its
own zone label, so a migrated GCE PD, EBS or Cinder volume requires that label where
the in-tree volume named the Kubernetes zone, and its PV zone labels become node
affinity when it had none. Which volumes can be translated, and why some cannot, is
NodeVolumeLimits' translation (the same library upstream).
"""

from __future__ import annotations

import msgspec

from kpysched.framework.interfaces import Lister
from kpysched.objects import api, storage
from kpysched.plugins._shared.storage_epoch import StorageEpoch
from kpysched.plugins.node_volume_limits import translation

# The CSINode annotation listing the in-tree plugins the node runs through CSI.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

_ZONE, _REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
_MULTI_ZONE_DELIMITER = "__"
# The zone label each CSI driver publishes; drivers not listed translate no topology.
_CSI_TOPOLOGY_KEYS = {
    translation.GCE_PD: "topology.gke.io/zone",
    translation.AWS_EBS: "topology.ebs.csi.aws.com/zone",
    translation.CINDER: "topology.cinder.csi.openstack.org/zone",
}


class TranslationError(ValueError):
    """A migrated PV that csi-translation-lib cannot translate."""


def _migrated_on_node(plugin: str, csi_node: storage.CSINode | None) -> bool:
    if csi_node is None:
        return False
    listed = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in listed.split(",") if listed else False


class MigratedPlugins:
    """The in-tree plugins some CSINode says it runs through CSI, kept until a CSINode
    changes: while none lists a PV's plugin, as_seen_on_node is that PV on every node."""

    def __init__(self, csi_nodes: Lister[storage.CSINode], epoch: StorageEpoch) -> None:
        self._csi_nodes = csi_nodes
        self._epoch = epoch
        self._kept: tuple[int, frozenset[str]] | None = None

    def may_translate(self, volume: storage.PersistentVolume) -> bool:
        """Whether as_seen_on_node could differ from the volume on some node (True when
        CSINodes cannot be followed)."""
        plugin = translation.pv_plugin(volume)
        if plugin is None or not translation.migration_on(_ANY_CSI_NODE, plugin):
            return False
        if not self._epoch.watching:
            return True
        kept = self._kept
        if kept is None or kept[0] != self._epoch.csi_nodes:
            listed: set[str] = set()
            for csi_node in self._csi_nodes.values():
                names = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
                if names:
                    listed.update(names.split(","))
            kept = self._kept = (self._epoch.csi_nodes, frozenset(listed))
        return plugin.name in kept[1]


# migration_on asks only whether the node has a CSINode at all.
_ANY_CSI_NODE = storage.CSINode()


def as_seen_on_node(volume: storage.PersistentVolume,
                    csi_node: storage.CSINode | None) -> storage.PersistentVolume:
    """The volume as the node's CSI driver sees it (the volume itself unless migrated
    there); TranslationError when it cannot be translated."""
    plugin = translation.pv_plugin(volume)
    if (plugin is None or not translation.migration_on(csi_node, plugin)
            or not _migrated_on_node(plugin.name, csi_node)):
        return volume
    _, problem = translation.pv_handle(plugin, volume)
    if problem:
        raise TranslationError(f"could not translate pv: {problem}")
    key = _CSI_TOPOLOGY_KEYS.get(plugin.name)
    if key is None:
        return volume
    affinity = _translated_topology(volume, key)
    return msgspec.structs.replace(
        volume, spec=msgspec.structs.replace(volume.spec, node_affinity=affinity))


def _terms(volume: storage.PersistentVolume) -> list[api.NodeSelectorTerm]:
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return []
    return affinity.required.node_selector_terms


def _has_key(terms: list[api.NodeSelectorTerm], key: str) -> bool:
    return any(r.key == key for term in terms for r in term.match_expressions)


def _values(terms: list[api.NodeSelectorTerm], key: str) -> list[str]:
    return sorted({value for term in terms for r in term.match_expressions if r.key == key
                   for value in r.values})


def _renamed(terms: list[api.NodeSelectorTerm], old: str,
             new: str) -> list[api.NodeSelectorTerm]:
    return [msgspec.structs.replace(term, match_expressions=[
        msgspec.structs.replace(r, key=new) if r.key == old else r
        for r in term.match_expressions]) for term in terms]


def _topology_labels(volume: storage.PersistentVolume,
                     terms: list[api.NodeSelectorTerm]) -> tuple[str, str]:
    """The zone and region keys the in-tree volume uses: GA unless only beta is found."""
    if _has_key(terms, _ZONE):
        return _ZONE, _REGION
    if _has_key(terms, _BETA_ZONE):
        return _BETA_ZONE, _BETA_REGION
    if _ZONE in volume.metadata.labels:
        return _ZONE, _REGION
    if _BETA_ZONE in volume.metadata.labels:
        return _BETA_ZONE, _BETA_REGION
    return _ZONE, _REGION


def _translated_topology(volume: storage.PersistentVolume,
                         csi_key: str) -> storage.VolumeNodeAffinity | None:
    original = terms = _terms(volume)
    zone_key, region_key = _topology_labels(volume, terms)
    if _values(terms, zone_key):
        terms = _renamed(terms, zone_key, csi_key)
    elif zone_key in volume.metadata.labels:
        zones = sorted({zone.strip() for zone in
                        volume.metadata.labels[zone_key].split(_MULTI_ZONE_DELIMITER)
                        if zone.strip()})
        if zones:
            # Every term (or a new one) also requires the driver's zone label.
            requirement = api.NodeSelectorRequirement(key=csi_key, operator="In",
                                                      values=zones)
            terms = [msgspec.structs.replace(term, match_expressions=[
                *term.match_expressions, requirement])
                for term in terms or [api.NodeSelectorTerm()]]
    # Beta region requirements become GA ones, which nodes without beta labels carry.
    if region_key == _BETA_REGION and _values(terms, region_key):
        terms = _renamed(terms, region_key, _REGION)
    if terms is original:
        return volume.spec.node_affinity
    return storage.VolumeNodeAffinity(required=api.NodeSelector(node_selector_terms=terms))
