"""What the volume plugins share: lister lookups under the keys the storage indexes use,
the "not found" texts upstream's listers put into FailedScheduling messages, and a
claim's StorageClass name."""

from __future__ import annotations

from kpysched.framework.interfaces import Lister
from kpysched.objects import storage

# The group-qualified resource names client-go's listers report in NotFound errors;
# upstream passes those errors' texts through as the status message.
PVC_RESOURCE = "persistentvolumeclaim"
PV_RESOURCE = "persistentvolume"
STORAGE_CLASS_RESOURCE = "storageclass.storage.k8s.io"


def not_found(resource: str, name: str) -> str:
    """The text of a lister's NotFound error, e.g. `persistentvolumeclaim "data" not found`."""
    return f'{resource} "{name}" not found'


def namespaced(lister: Lister[storage.PersistentVolumeClaim], namespace: str,
               name: str) -> storage.PersistentVolumeClaim | None:
    """A claim by namespace and name (the index keys namespaced objects "ns/name")."""
    return lister.get(f"{namespace}/{name}" if namespace else name)


def claim_class(claim: storage.PersistentVolumeClaim) -> str:
    """The claim's StorageClass name; the beta annotation still wins over the field,
    as component-helpers' GetPersistentVolumeClaimClass has it."""
    annotated = claim.metadata.annotations.get(storage.ANNOTATION_BETA_STORAGE_CLASS)
    if annotated is not None:
        return annotated
    return claim.spec.storage_class_name or ""
