"""PreBind's half of volume binding (upstream's BindPodVolumes): write the bindings
Reserve assumed, then wait until the PV controller reports every claim bound.

Upstream sends each assumed object back with Update. kpysched decodes only the
fields it reads, so a PUT would erase the rest; a merge patch carrying
metadata.resourceVersion gives the same optimistic concurrency (409 Conflict when
the object changed since it was read) and changes only what binding changes: a
PV's claimRef (and bound-by-controller annotation), a claim's selected-node
annotation. The wait polls the informer indexes once a second, never the API, and
ends with an error once the pod informer no longer has the pod (deleted meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from kpysched.objects import api, storage
from kpysched.plugins.volume_binding.assume_cache import NotFoundError
from kpysched.plugins.volume_binding.binder import (
    BinderError,
    BindingInfo,
    PodVolumes,
    VolumeBinder,
    is_claim_fully_bound,
)
from kpysched.plugins.volume_binding.csi_migration import TranslationError, as_seen_on_node
from kpysched.plugins.volume_binding.pv_matching import claim_key, node_affinity_error

if TYPE_CHECKING:
    from kpysched.api.response import ApiResponse

MERGE_PATCH = "application/merge-patch+json"
POLL_INTERVAL_SECONDS = 1.0
# Poll errors and timeouts read as upstream's wrapped PollUntilContextTimeout error.
DEADLINE_EXCEEDED = "binding volumes: context deadline exceeded"

NodeLookup = Callable[[str], api.Node | None]
# Why the pod being bound no longer exists, or None while it does.
PodGone = Callable[[], str | None]


class Client(Protocol):
    """What PreBind needs of RawApi."""

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = ...) -> ApiResponse: ...


def _claim_ref_patch(ref: storage.ObjectReference | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    # Every field is named (null when empty) so the result is exactly this reference,
    # as an Update would leave it, whatever reference the volume carried before.
    return {"kind": ref.kind or None, "apiVersion": ref.api_version or None,
            "namespace": ref.namespace or None, "name": ref.name or None,
            "uid": ref.uid or None, "resourceVersion": ref.resource_version or None,
            "fieldPath": None}


def _volume_patch(volume: storage.PersistentVolume) -> dict[str, Any]:
    meta = volume.metadata
    metadata: dict[str, Any] = {"resourceVersion": meta.resource_version}
    bound_by = meta.annotations.get(storage.ANNOTATION_BOUND_BY_CONTROLLER)
    if bound_by is not None:
        metadata["annotations"] = {storage.ANNOTATION_BOUND_BY_CONTROLLER: bound_by}
    return {"metadata": metadata, "spec": {"claimRef": _claim_ref_patch(volume.spec.claim_ref)}}


def _claim_patch(claim: storage.PersistentVolumeClaim) -> dict[str, Any]:
    meta = claim.metadata
    return {"metadata": {
        "resourceVersion": meta.resource_version,
        "annotations": {storage.ANNOTATION_SELECTED_NODE:
                        meta.annotations.get(storage.ANNOTATION_SELECTED_NODE)}}}


def _resource_version(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _older_in_informer(written: storage.PersistentVolume | storage.PersistentVolumeClaim,
                       informed: storage.PersistentVolume | storage.PersistentVolumeClaim
                       ) -> bool:
    """The informer has not yet seen the version PreBind wrote."""
    return (_resource_version(written.metadata.resource_version)
            > _resource_version(informed.metadata.resource_version))


class VolumeWriter:
    """Writes and waits for one pod's volume bindings."""

    def __init__(self, binder: VolumeBinder, client: Client, nodes: NodeLookup,
                 timeout_seconds: float, pod_gone: PodGone | None = None) -> None:
        self._binder = binder
        self._client = client
        self._nodes = nodes
        self._timeout = timeout_seconds
        self._pod_gone = pod_gone

    async def bind_pod_volumes(self, node_name: str, found: PodVolumes) -> None:
        """BinderError with upstream's text when binding fails, times out or is undone
        by the PV controller (the pod is then scheduled afresh)."""
        claims = [provision.pvc for provision in found.dynamic_provisions]
        await self.write_bindings(found.static_bindings, claims)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= POLL_INTERVAL_SECONDS:
                await asyncio.sleep(max(remaining, 0.0))
                raise BinderError(DEADLINE_EXCEEDED)
            await asyncio.sleep(POLL_INTERVAL_SECONDS)
            try:
                if self.check_bindings(node_name, found.static_bindings, claims):
                    return
            except BinderError as error:
                raise BinderError(f"binding volumes: {error}") from None

    async def write_bindings(self, bindings: Sequence[BindingInfo],
                     claims: list[storage.PersistentVolumeClaim]) -> None:
        """Upstream's bindAPIUpdate. What was not written stays assumed no longer; the
        writes that succeeded are not undone (the PV controller completes them)."""
        for index, binding in enumerate(bindings):
            volume = binding.pv
            response = await self._client.request(
                "PATCH", f"/api/v1/persistentvolumes/{volume.metadata.name}",
                _volume_patch(volume), content_type=MERGE_PATCH)
            if not response.ok:
                self._binder.revert_assumed(bindings[index:], claims)
                raise BinderError(response.message())
            # Kept to recognise when the informer has caught up with this write.
            binding.pv = msgspec.json.decode(response.body, type=storage.PersistentVolume)
        for index, claim in enumerate(claims):
            meta = claim.metadata
            response = await self._client.request(
                "PATCH", f"/api/v1/namespaces/{meta.namespace}/persistentvolumeclaims/{meta.name}",
                _claim_patch(claim), content_type=MERGE_PATCH)
            if not response.ok:
                self._binder.revert_assumed([], claims[index:])
                raise BinderError(response.message())
            claims[index] = msgspec.json.decode(response.body,
                                                type=storage.PersistentVolumeClaim)

    def check_bindings(self, node_name: str, bindings: Sequence[BindingInfo],
                       claims: Sequence[storage.PersistentVolumeClaim]) -> bool:
        """True once every claim is fully bound; False to keep waiting; BinderError
        when binding went wrong and scheduling must be retried. Reads the informers,
        not the assume caches, which later cycles may have assumed over again."""
        node = self._nodes(node_name)
        if node is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = node.metadata.labels
        csi_node = self._binder.listers.csi_nodes.get(node_name)
        # A deleted pod needs its volumes no more: stop waiting, as upstream's binder.
        gone = self._pod_gone() if self._pod_gone is not None else None
        if gone is not None:
            raise BinderError(gone)
        pv_cache, pvc_cache = self._binder.pv_cache, self._binder.pvc_cache
        for binding in bindings:
            try:
                volume = pv_cache.get_api_obj(binding.pv.metadata.name)
                claim = pvc_cache.get_api_obj(claim_key(binding.pvc))
            except NotFoundError as error:
                raise BinderError(f"failed to check binding: {error}") from None
            if _older_in_informer(binding.pv, volume):
                return False
            try:
                volume = as_seen_on_node(volume, csi_node)
            except TranslationError as error:
                raise BinderError(f"failed to translate pv to csi: {error}") from None
            _check_affinity(volume, node_name, labels)
            # The PV controller drops the claimRef when it undoes a binding.
            if volume.spec.claim_ref is None or not volume.spec.claim_ref.uid:
                raise BinderError(f'ClaimRef got reset for pv "{volume.metadata.name}"')
            if not is_claim_fully_bound(claim):
                return False
        for written in claims:
            try:
                claim = pvc_cache.get_api_obj(claim_key(written))
            except NotFoundError as error:
                raise BinderError(f"failed to check provisioning pvc: {error}") from None
            if _older_in_informer(written, claim):
                return False
            name = claim.metadata.name
            if not claim.metadata.annotations:
                raise BinderError(f'selectedNode annotation reset for PVC "{name}"')
            # A provisioner that fails removes the annotation to have the pod rescheduled.
            if claim.metadata.annotations.get(storage.ANNOTATION_SELECTED_NODE) != node_name:
                raise BinderError(f'provisioning failed for PVC "{name}"')
            if claim.spec.volume_name:
                try:
                    volume = pv_cache.get_api_obj(claim.spec.volume_name)
                except NotFoundError:
                    return False  # not seen yet; a deleted PV unbinds the claim later
                try:
                    volume = as_seen_on_node(volume, csi_node)
                except TranslationError as error:
                    raise BinderError(str(error)) from None
                _check_affinity(volume, node_name, labels)
            if not is_claim_fully_bound(claim):
                return False
        return True


def _check_affinity(volume: storage.PersistentVolume, node_name: str,
                    labels: Mapping[str, str]) -> None:
    problem = node_affinity_error(volume, labels)
    if problem is not None:
        raise BinderError(f'pv "{volume.metadata.name}" node affinity doesn\'t match node '
                          f'"{node_name}": {problem}')
