"""DynamicResources' writes to ResourceClaims, all through the handle's client.

Upstream sends the whole claim back with Update/UpdateStatus. A merge patch that
carries metadata.resourceVersion gives the same optimistic concurrency (409 when the
claim changed since it was read) and writes only the fields the scheduler owns:
the finalizer, status.allocation and status.reservedFor. On a conflict upstream GETs
the claim and tries again (client-go's DefaultRetry: five tries, 10 ms apart);
kpysched re-reads its informer instead, which needs no `get` permission and has the
newer version by the time the short pause is over.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import structlog

from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api, resource
from kpysched.plugins.dynamic_resources.binding_conditions import (
    claim_binding_timed_out,
    claim_ready_for_binding,
    has_binding_conditions,
)
from kpysched.plugins.dynamic_resources.claims import consumer_reference

if TYPE_CHECKING:
    from kpysched.apiclient import ApiResponse
    from kpysched.plugins.dynamic_resources.tracker import ClaimTracker

log = structlog.get_logger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
FINALIZER = "resource.kubernetes.io/delete-protection"
CONFLICT = 409
RETRY_STEPS = 5
RETRY_PAUSE_SECONDS = 0.01
BINDING_POLL_SECONDS = 5.0


class Client(Protocol):
    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = ...) -> ApiResponse: ...


class ClaimWriteError(Exception):
    """A write PreBind could not make; str() is upstream's error text."""


class _ConflictError(Exception):
    """409: the claim changed since it was read."""


def claim_path(claim: resource.ResourceClaim, subresource: str = "") -> str:
    meta = claim.metadata
    path = (f"/apis/{resource.API_VERSION}/namespaces/{meta.namespace}"
            f"/resourceclaims/{meta.name}")
    return f"{path}/{subresource}" if subresource else path


def _kobj(claim: resource.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ClaimWriter:
    def __init__(self, client: Client, tracker: ClaimTracker) -> None:
        self._client = client
        self._tracker = tracker

    async def _patch(self, claim: resource.ResourceClaim, body: dict[str, Any],
                     subresource: str, what: str) -> resource.ResourceClaim:
        response = await self._client.request("PATCH", claim_path(claim, subresource), body,
                                              content_type=MERGE_PATCH)
        if response.status == CONFLICT:
            raise _ConflictError(f"{what}: {response.message()}")
        if not response.ok:
            raise ClaimWriteError(f"{what}: {response.message()}")
        return msgspec.json.decode(response.body, type=resource.ResourceClaim)

    async def bind(self, claim: resource.ResourceClaim,
                   allocation: resource.AllocationResult | None,
                   pod: api.Pod) -> resource.ResourceClaim:
        """Record the allocation Reserve chose (if any) and reserve the claim for the
        pod; returns the claim as the API server stored it."""
        key = _kobj(claim)
        current = claim
        last_conflict = ""
        for attempt in range(RETRY_STEPS):
            if attempt:
                await asyncio.sleep(RETRY_PAUSE_SECONDS)
                latest = self._tracker.get(key)
                if latest is None:
                    raise ClaimWriteError(
                        f"get updated claim {key} after conflict: "
                        f'resourceclaims.resource.k8s.io "{claim.metadata.name}" not found')
                current = latest
            try:
                updated = await self._bind_once(current, allocation, pod)
            except _ConflictError as conflict:
                last_conflict = str(conflict)
                continue
            self._tracker.assume(updated)
            return updated
        raise ClaimWriteError(last_conflict)

    async def _bind_once(self, claim: resource.ResourceClaim,
                         allocation: resource.AllocationResult | None,
                         pod: api.Pod) -> resource.ResourceClaim:
        key = _kobj(claim)
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimWriteError(f"claim {key} got deleted in the meantime")
        target = allocation
        if allocation is not None:
            if claim.status.allocation is not None:
                raise ClaimWriteError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = claim.metadata.finalizers
            if FINALIZER not in finalizers:
                # The finalizer goes in with a normal update, before the status.
                claim = await self._patch(
                    claim, {"metadata": {"resourceVersion": claim.metadata.resource_version,
                                         "finalizers": [*finalizers, FINALIZER]}},
                    "", f"add finalizer to claim {key}")
        else:
            target = claim.status.allocation
        if target is None:
            raise ClaimWriteError(f"claim {key} got deallocated elsewhere in the meantime")
        if target.allocation_timestamp is None:
            target = msgspec.structs.replace(target, allocation_timestamp=_now())
        reserved = [*claim.status.reserved_for, consumer_reference(pod)]
        what = (f"add allocation and reservation to claim {key}" if allocation is not None
                else f"add reservation to claim {key}")
        return await self._patch(
            claim,
            {"metadata": {"resourceVersion": claim.metadata.resource_version},
             "status": {"allocation": msgspec.to_builtins(target),
                        "reservedFor": msgspec.to_builtins(reserved)}},
            "status", what)

    async def create(self, body: dict[str, Any]) -> resource.ResourceClaim:
        """POST the claim for a pod's DRA-backed extended resources."""
        namespace = body["metadata"]["namespace"]
        response = await self._client.request(
            "POST", f"/apis/{resource.API_VERSION}/namespaces/{namespace}/resourceclaims", body)
        if not response.ok:
            name = body["metadata"].get("generateName", "")
            raise ClaimWriteError(f"create claim for extended resources {namespace}/{name}: "
                                  f"{response.message()}")
        return msgspec.json.decode(response.body, type=resource.ResourceClaim)

    async def record_extended_claim(self, pod: api.Pod, claim: resource.ResourceClaim,
                                    mappings: list[api.ContainerExtendedResourceRequest],
                                    ) -> None:
        """The pod's status.extendedResourceClaimStatus: which claim and which of its
        requests serve each container's extended resources."""
        meta = pod.metadata
        status = api.PodExtendedResourceClaimStatus(
            request_mappings=mappings, resource_claim_name=claim.metadata.name)
        body = {"status": {"extendedResourceClaimStatus": msgspec.to_builtins(status)}}
        response = await self._client.request(
            "PATCH", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status", body,
            content_type=STRATEGIC_MERGE_PATCH)
        if not response.ok:
            raise ClaimWriteError(f"update pod {meta.namespace}/{meta.name} "
                                  f"ExtendedResourceClaimStatus: {response.message()}")

    async def delete(self, claim: resource.ResourceClaim) -> None:
        """Delete a claim the scheduler made for extended resources, its finalizer
        first (else the claim would wait for a controller that never removes it)."""
        finalizers = [f for f in claim.metadata.finalizers if f != FINALIZER]
        if finalizers != claim.metadata.finalizers:
            response = await self._client.request(
                "PATCH", claim_path(claim), {"metadata": {"finalizers": finalizers or None}},
                content_type=MERGE_PATCH)
            if not response.ok and response.status != 404:
                log.warning("removing the finalizer failed", claim=_kobj(claim),
                            error=response.message())
                return
        response = await self._client.request("DELETE", claim_path(claim))
        if not response.ok and response.status != 404:
            log.warning("deleting the extended resource claim failed", claim=_kobj(claim),
                        error=response.message())

    async def unreserve(self, claim: resource.ResourceClaim, pod: api.Pod) -> None:
        """Take the pod out of reservedFor; a strategic merge patch removes one entry
        without needing the latest claim."""
        body = {"metadata": {"uid": claim.metadata.uid},
                "status": {"reservedFor": [{"$patch": "delete", "uid": pod.metadata.uid}]}}
        response = await self._client.request("PATCH", claim_path(claim, "status"), body,
                                              content_type=STRATEGIC_MERGE_PATCH)
        if not response.ok:
            # Retried with the next scheduling attempt, as upstream does.
            log.warning("unreserve failed", claim=_kobj(claim), error=response.message())

    async def deallocate(self, claim: resource.ResourceClaim) -> None:
        """PostFilter: free an allocated claim nobody else uses."""
        body = {"metadata": {"resourceVersion": claim.metadata.resource_version},
                "status": {"reservedFor": None, "allocation": None, "devices": None}}
        response = await self._client.request("PATCH", claim_path(claim, "status"), body,
                                              content_type=MERGE_PATCH)
        if not response.ok:
            log.warning("deallocation failed", claim=_kobj(claim), error=response.message())

    async def wait_for_binding_conditions(self, claims: list[resource.ResourceClaim],
                                          timeout_seconds: float) -> Status:
        """PreBind's wait for devices that must be prepared before the pod binds."""
        if not any(has_binding_conditions(claim) for claim in claims):
            return SUCCESS
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_seconds
        while True:
            ready_all = True
            for claim in claims:
                latest = self._tracker.get(_kobj(claim)) or claim
                ready, failure = claim_ready_for_binding(latest)
                if failure is not None:
                    return Status.error(failure)
                if not ready:
                    if claim_binding_timed_out(latest, timeout_seconds):
                        return Status.error(
                            f"device binding timeout: claim={latest.metadata.name}")
                    ready_all = False
            if ready_all:
                return SUCCESS
            if loop.time() >= deadline:
                return Status.error("device binding timeout: context deadline exceeded")
            await asyncio.sleep(BINDING_POLL_SECONDS)
