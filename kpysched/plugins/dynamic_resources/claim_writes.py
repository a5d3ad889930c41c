"""DynamicResources' writes to ResourceClaims, all through the handle's client.

As upstream, a claim goes back whole: PUT (Update/UpdateStatus) of the claim as it was
read, with its resourceVersion, so that the API server answers 409 when it changed
since. The body is the claim's own encoding (resource.py keeps every field, opaque
parameters as the bytes the API server sent): a merge patch would make the API
server re-encode the spec's opaque parameters, which then differ from the stored
bytes and fail the spec's immutability check. On a 409 the claim is read again from
the API server (GET) and the write tried again, five tries 10 ms apart (client-go's
RetryOnConflict with DefaultRetry): the informer may not have the newer version yet.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec
import structlog

from kpysched.api.times import api_time
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api
from kpysched.objects import dra as resource
from kpysched.plugins.dynamic_resources import verbatim
from kpysched.plugins.dynamic_resources.binding_conditions import (
    claim_binding_timed_out,
    claim_ready_for_binding,
    has_binding_conditions,
)

if TYPE_CHECKING:
    from kpysched.api.response import ApiResponse
    from kpysched.plugins.dynamic_resources.tracker import ClaimTracker

log = structlog.get_logger(__name__)

_T = TypeVar("_T")

KIND = "ResourceClaim"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
FINALIZER = "resource.kubernetes.io/delete-protection"
CONFLICT = 409
NOT_FOUND = 404
RETRY_STEPS = 5
RETRY_PAUSE_SECONDS = 0.01
RETRY_JITTER = 0.1
BINDING_POLL_SECONDS = 5.0


class Client(Protocol):
    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = ..., accept: str = ...) -> ApiResponse: ...


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


def _with_finalizers(claim: resource.ResourceClaim,
                     finalizers: list[str]) -> resource.ResourceClaim:
    return msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, finalizers=finalizers))


def claim_body(claim: resource.ResourceClaim) -> bytes:
    """The claim as an update sends it: every field as read (opaque parameters as
    their bytes), apiVersion and kind first."""
    fields = msgspec.to_builtins(claim, builtin_types=(msgspec.Raw,))
    return msgspec.json.encode({"apiVersion": resource.API_VERSION, "kind": KIND, **fields})


class ClaimWriter:
    def __init__(self, client: Client, tracker: ClaimTracker,
                 deleted_is_done: bool = False) -> None:
        self._client = client
        self._tracker = tracker  # read while PreBind waits for binding conditions
        # v1.37: a claim already gone when delete() deletes it counts as deleted.
        self._deleted_is_done = deleted_is_done

    async def _update(self, claim: resource.ResourceClaim, subresource: str,
                      what: str) -> resource.ResourceClaim:
        """PUT the claim (or its status); a 409 raises _ConflictError."""
        response = await self._client.request("PUT", claim_path(claim, subresource),
                                              claim_body(claim))
        if response.status == CONFLICT:
            raise _ConflictError(f"{what}: {response.message()}")
        if not response.ok:
            raise ClaimWriteError(f"{what}: {response.message()}")
        return msgspec.json.decode(response.body, type=resource.ResourceClaim)

    async def _get(self, claim: resource.ResourceClaim, what: str) -> resource.ResourceClaim:
        response = await self._client.request("GET", claim_path(claim))
        if not response.ok:
            raise ClaimWriteError(f"{what}: {response.message()}")
        return msgspec.json.decode(response.body, type=resource.ResourceClaim)

    async def _verbatim(self, claim: resource.ResourceClaim) -> resource.ResourceClaim:
        """`claim` with its opaque parameters as stored (verbatim.py), when it has any;
        as it is when the protobuf read fails (the write then tells what is wrong)."""
        if not verbatim.has_parameters(claim):
            return claim
        response = await self._client.request("GET", claim_path(claim),
                                              accept=verbatim.PROTOBUF)
        if not response.ok:
            return claim
        try:
            return verbatim.with_stored_parameters(claim, response.body)
        except verbatim.ProtobufError as error:
            log.warning("claim.protobuf_unreadable", claim=_kobj(claim), error=str(error))
            return claim

    async def _retry_on_conflict(
            self, claim: resource.ResourceClaim, refresh_error: str,
            attempt: Callable[[resource.ResourceClaim], Awaitable[_T]]) -> _T:
        """client-go's RetryOnConflict: the first try with `claim`, each later one with
        the claim as the API server has it now."""
        current = claim
        last_conflict = ""
        for step in range(RETRY_STEPS):
            if step:
                await asyncio.sleep(RETRY_PAUSE_SECONDS * (1 + RETRY_JITTER * random.random()))
                current = await self._get(current, refresh_error)
            try:
                return await attempt(current)
            except _ConflictError as conflict:
                last_conflict = str(conflict)
        raise ClaimWriteError(last_conflict)

    async def bind(self, claim: resource.ResourceClaim,
                   allocation: resource.AllocationResult | None,
                   consumer: resource.ResourceClaimConsumerReference
                   ) -> resource.ResourceClaim:
        """Record the allocation Reserve chose (if any) and reserve the claim for the
        consumer (the pod, or its PodGroup); returns the claim as the API server
        stored it."""
        return await self._retry_on_conflict(
            claim, f"get updated claim {_kobj(claim)} after conflict",
            lambda current: self._bind_once(current, allocation, consumer))

    async def _bind_once(self, claim: resource.ResourceClaim,
                         allocation: resource.AllocationResult | None,
                         consumer: resource.ResourceClaimConsumerReference
                         ) -> resource.ResourceClaim:
        key = _kobj(claim)
        claim = await self._verbatim(claim)
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimWriteError(f"claim {key} got deleted in the meantime")
        target = allocation
        if allocation is not None:
            if claim.status.allocation is not None:
                raise ClaimWriteError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = claim.metadata.finalizers
            if FINALIZER not in finalizers:
                # The finalizer goes in with a normal update, before the status.
                claim = await self._update(
                    _with_finalizers(claim, [*finalizers, FINALIZER]), "",
                    f"add finalizer to claim {key}")
        else:
            target = claim.status.allocation
        if target is None:
            raise ClaimWriteError(f"claim {key} got deallocated elsewhere in the meantime")
        if target.allocation_timestamp is None:
            target = msgspec.structs.replace(target, allocation_timestamp=api_time())
        status = msgspec.structs.replace(
            claim.status, allocation=target,
            reserved_for=[*claim.status.reserved_for, consumer])
        what = (f"add allocation and reservation to claim {key}" if allocation is not None
                else f"add reservation to claim {key}")
        return await self._update(msgspec.structs.replace(claim, status=status), "status",
                                  what)

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
        first (else the claim would wait for a controller that never removes it). The
        claim is updated whole, with its resourceVersion (another controller's
        finalizer stays), and read again after a conflict, as upstream's deleteClaim."""
        key = _kobj(claim)

        async def without_finalizer(current: resource.ResourceClaim) -> None:
            finalizers = [f for f in current.metadata.finalizers if f != FINALIZER]
            await self._update(_with_finalizers(current, finalizers), "",
                               f"update resourceclaim {key}")

        await self._retry_on_conflict(claim, f"get resourceclaim {key}", without_finalizer)
        response = await self._client.request("DELETE", claim_path(claim))
        if not response.ok and not (self._deleted_is_done and response.status == NOT_FOUND):
            raise ClaimWriteError(response.message())

    async def unreserve(self, claim: resource.ResourceClaim, pod: api.Pod) -> None:
        """Take the pod out of reservedFor; a strategic merge patch removes one entry
        without needing the latest claim."""
        try:
            await self.remove_reservation(claim, pod.metadata.uid)
        except ClaimWriteError as error:
            # Retried with the next scheduling attempt, as upstream does.
            log.warning("unreserve failed", claim=_kobj(claim), error=str(error))

    async def remove_reservation(self, claim: resource.ResourceClaim, uid: str) -> None:
        """Take the consumer with this uid (a pod, or a PodGroup) out of reservedFor."""
        body = {"metadata": {"uid": claim.metadata.uid},
                "status": {"reservedFor": [{"$patch": "delete", "uid": uid}]}}
        response = await self._client.request("PATCH", claim_path(claim, "status"), body,
                                              content_type=STRATEGIC_MERGE_PATCH)
        if not response.ok:
            raise ClaimWriteError(response.message())

    async def deallocate(self, claim: resource.ResourceClaim) -> None:
        """PostFilter: free an allocated claim nobody else uses (UpdateStatus of the
        claim as read, without reservations, allocation and device status)."""
        status = msgspec.structs.replace(claim.status, reserved_for=[], allocation=None,
                                         devices=[])
        response = await self._client.request(
            "PUT", claim_path(claim, "status"),
            claim_body(msgspec.structs.replace(claim, status=status)))
        if not response.ok:
            raise ClaimWriteError(response.message())

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
