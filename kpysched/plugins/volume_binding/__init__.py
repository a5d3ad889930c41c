"""VolumeBinding: place pods whose PersistentVolumeClaims are, or can be, bound on the node.

PreFilter rejects pods whose claims are missing, lost, being deleted, not their own
(generic ephemeral volumes) or still waiting for the PV controller (Immediate
binding). Filter keeps a node when every bound claim's PV admits it (node
affinity) and every WaitForFirstConsumer claim finds a static PV there (smallest
fit) or can be provisioned there (class provisioner, allowedTopologies, and
CSIStorageCapacity for drivers that track capacity). Reserve assumes the choices
in the plugin's PV and claim caches; PreBind writes them (PV claimRef, claim
selected-node annotation) and waits, up to bindTimeoutSeconds, until the PV
controller reports the claims bound, or until the Handle's pod lister no longer has
the pod (deleted meanwhile). Scoring needs the StorageCapacityScoring gate (off in
v1.36, on in v1.37, read from handle.features): with it, nodes score by how full the
pod's volumes would leave them (static PVs, else the CSIStorageCapacity of classes to
provision), along `shape`. Failures of the predicate (Filter),
assume (Reserve) and bind (PreBind) stages are counted in the Handle's metrics
(scheduler_volume_scheduling_stage_error_total), as upstream's binder counts them.

Bound in-tree PVs (GCE PD, EBS, Cinder, ...) on nodes whose CSINode says their
plugin migrated to CSI are checked as translated (csi_migration.py). Queueing hints
let only the events that may help a rejected pod requeue it (hints.py).

plugin.py holds the plugin; args.py, binder.py, prebind.py, pv_matching.py,
assume_cache.py, scorer.py, csi_migration.py and hints.py its parts. May import objects/,
cache/, framework/, plugins/_shared/ and node_affinity (term checks).
"""

from kpysched.plugins._shared.args import UtilizationShapePoint
from kpysched.plugins.volume_binding.args import (
    DEFAULT_BIND_TIMEOUT_SECONDS,
    STORAGE_CAPACITY_SCORING,
    VolumeBindingArgs,
)
from kpysched.plugins.volume_binding.binder import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
)
from kpysched.plugins.volume_binding.plugin import (
    NAME,
    REASON_UNBOUND_IMMEDIATE,
    SPEC,
    STATE_KEY,
    VolumeBinding,
    new,
)

__all__ = [
    "DEFAULT_BIND_TIMEOUT_SECONDS", "NAME", "REASON_BIND_CONFLICT", "REASON_NODE_CONFLICT",
    "REASON_NOT_ENOUGH_SPACE", "REASON_PV_NOT_EXIST", "REASON_UNBOUND_IMMEDIATE", "SPEC",
    "STATE_KEY", "STORAGE_CAPACITY_SCORING", "UtilizationShapePoint", "VolumeBinding",
    "VolumeBindingArgs", "new",
]
