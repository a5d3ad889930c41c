"""In-tree volumes seen as the CSI volumes they migrate to (the part of
k8s.io/csi-translation-lib NodeVolumeLimits uses).

Seven in-tree plugins have a CSI successor. Each is recognised by the volume source it
reads (e.g. `awsElasticBlockStore`) in a pod's inline volume or a PV. The scheduler
counts a migrated volume against its CSI driver's limit under the volume handle the
translation produces, and only for the five plugins whose migration its
isCSIMigrationOn accepts (and only on nodes with a CSINode). Azure File and vSphere are
recognised (a pod using them still needs the Filter) but never translated, so their
translations are not carried over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kpysched.objects import api, storage
from kpysched.plugins.node_volume_limits.ebs_volume_id import ebs_volume_id

AWS_EBS = "kubernetes.io/aws-ebs"
GCE_PD = "kubernetes.io/gce-pd"
CINDER = "kubernetes.io/cinder"
AZURE_DISK = "kubernetes.io/azure-disk"
AZURE_FILE = "kubernetes.io/azure-file"
VSPHERE = "kubernetes.io/vsphere-volume"
PORTWORX = "kubernetes.io/portworx-volume"

_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
_ZONE = "topology.kubernetes.io/zone"
_UNSPECIFIED = "UNSPECIFIED"

# (volume handle, "") or ("", why the volume cannot be translated).
Translated = tuple[str, str]
InlineTranslation = Callable[[dict[str, Any]], Translated]
PVTranslation = Callable[[dict[str, Any], storage.PersistentVolume], Translated]


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    name: str
    csi_driver: str
    # The attribute holding this plugin's source on api.Volume and PersistentVolumeSpec.
    source: str

    def inline_source(self, volume: api.Volume) -> dict[str, Any] | None:
        found: dict[str, Any] | None = getattr(volume, self.source)
        return found

    def pv_source(self, pv: storage.PersistentVolume) -> dict[str, Any] | None:
        found: dict[str, Any] | None = getattr(pv.spec, self.source)
        return found


PLUGINS = (
    InTreePlugin(GCE_PD, "pd.csi.storage.gke.io", "gce_persistent_disk"),
    InTreePlugin(AWS_EBS, "ebs.csi.aws.com", "aws_elastic_block_store"),
    InTreePlugin(CINDER, "cinder.csi.openstack.org", "cinder"),
    InTreePlugin(AZURE_DISK, "disk.csi.azure.com", "azure_disk"),
    InTreePlugin(AZURE_FILE, "file.csi.azure.com", "azure_file"),
    InTreePlugin(VSPHERE, "csi.vsphere.vmware.com", "vsphere_volume"),
    InTreePlugin(PORTWORX, "pxd.portworx.com", "portworx_volume"),
)
_BY_NAME = {plugin.name: plugin for plugin in PLUGINS}


def inline_plugin(volume: api.Volume) -> InTreePlugin | None:
    """The migratable in-tree plugin of a pod's inline volume (IsInlineMigratable)."""
    return next((p for p in PLUGINS if p.inline_source(volume) is not None), None)


def pv_plugin(pv: storage.PersistentVolume) -> InTreePlugin | None:
    """The migratable in-tree plugin of a PV (IsPVMigratable)."""
    return next((p for p in PLUGINS if p.pv_source(pv) is not None), None)


def plugin_named(name: str) -> InTreePlugin | None:
    """By in-tree name, e.g. a StorageClass provisioner "kubernetes.io/gce-pd"."""
    return _BY_NAME.get(name)


def migration_on(csi_node: storage.CSINode | None, plugin: InTreePlugin) -> bool:
    """Upstream's isCSIMigrationOn: a node with a CSINode, and one of these plugins."""
    return csi_node is not None and plugin.name in _TRANSLATIONS


def inline_handle(plugin: InTreePlugin, volume: api.Volume) -> Translated:
    """The CSI volume handle of a migrated inline volume; call only when migration_on."""
    source = plugin.inline_source(volume) or {}
    return _TRANSLATIONS[plugin.name][0](source)


def inline_translation_problem(plugin: InTreePlugin, volume: api.Volume) -> str:
    """Why csi-translation-lib cannot translate this inline volume to CSI ("" when it
    can), for any of the seven plugins, whether or not the scheduler migrates it: of
    Azure File and vSphere, whose translations are not carried over, neither fails."""
    translate = _TRANSLATIONS.get(plugin.name)
    if translate is None:
        return ""
    return translate[0](plugin.inline_source(volume) or {})[1]


def pv_handle(plugin: InTreePlugin, pv: storage.PersistentVolume) -> Translated:
    """The CSI volume handle of a migrated PV; call only when migration_on."""
    source = plugin.pv_source(pv) or {}
    return _TRANSLATIONS[plugin.name][1](source, pv)


def _ebs(source: dict[str, Any]) -> Translated:
    volume_id, problem = ebs_volume_id(source.get("volumeID", ""))
    if problem:
        return "", f"failed to translate Kubernetes ID to EBS Volume ID {problem}"
    return volume_id, ""


def _azure_disk(source: dict[str, Any]) -> Translated:
    # Only managed disks migrate; the API server defaults the kind to "Shared".
    kind = source.get("kind")
    if kind is not None and str(kind).lower() != "managed":
        return "", f"kind({kind}) is not supported in csi migration"
    return source.get("diskURI", ""), ""


def _gce_inline(source: dict[str, Any]) -> Translated:
    return _gce_handle("zones", _UNSPECIFIED, source), ""


def _gce_pv(source: dict[str, Any], pv: storage.PersistentVolume) -> Translated:
    """Zonal, regional or unspecified by the PV's zone label, as the driver names disks."""
    labels = pv.metadata.labels
    zones = (labels.get(_ZONE_BETA) or labels.get(_ZONE, "")).split("__")
    if len(zones) == 1 and zones[0]:
        return _gce_handle("zones", zones[0], source), ""
    if len(zones) > 1:
        regions = set()
        for zone in zones:
            parts = zone.split("-")
            if len(parts) != 3:
                return "", f"zone {zone} is not {{locale}}-{{region}}-{{zone}}"
            regions.add("-".join(parts[:2]))
        if len(regions) != 1:
            return "", "multiple or no regions gotten from zones"
        return _gce_handle("regions", regions.pop(), source), ""
    return _gce_handle("zones", _UNSPECIFIED, source), ""


def _gce_handle(scope: str, location: str, source: dict[str, Any]) -> str:
    return f"projects/{_UNSPECIFIED}/{scope}/{location}/disks/{source.get('pdName', '')}"


def _volume_id(source: dict[str, Any]) -> Translated:
    return source.get("volumeID", ""), ""


def _ignoring_pv(inline: InlineTranslation) -> PVTranslation:
    """For the plugins whose PV handle depends on the source alone."""
    return lambda source, pv: inline(source)


# In-tree name -> (inline translation, PV translation), for the plugins whose CSI
# migration the scheduler turns on.
_TRANSLATIONS: dict[str, tuple[InlineTranslation, PVTranslation]] = {
    AWS_EBS: (_ebs, _ignoring_pv(_ebs)),
    GCE_PD: (_gce_inline, _gce_pv),
    AZURE_DISK: (_azure_disk, _ignoring_pv(_azure_disk)),
    CINDER: (_volume_id, _ignoring_pv(_volume_id)),
    PORTWORX: (_volume_id, _ignoring_pv(_volume_id)),
}
