"""The decisions as an aggregated API: decisions.kpysched.io/v1alpha1, a namespaced,
read-only resource `pods`, one object per pod (kind PodDecisions) holding the leader's
decision records for it.

Served on the secure port and registered with kube-apiserver by an APIService (the
chart's), so `kpysched explain` and `kubectl get --raw` reach the leader through the
API server with the user's own credentials: the API server authenticates the user and
passes the identity on in front-proxy headers (kpysched.serving.requestheader), and
RBAC on `pods` in this group decides per namespace who may read which pod's decisions
(asked again by kpysched with a SubjectAccessReview). The discovery documents are what
the aggregator fetches (/apis and /apis/<group>/<version>, the latter also its
availability probe)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from aiohttp import web

GROUP: Final = "decisions.kpysched.io"
VERSION: Final = "v1alpha1"
GROUP_VERSION: Final = f"{GROUP}/{VERSION}"
RESOURCE: Final = "pods"
KIND: Final = "PodDecisions"
GROUP_PATH: Final = f"/apis/{GROUP}"
VERSION_PATH: Final = f"{GROUP_PATH}/{VERSION}"

STANDBY_RETRY_AFTER_SECONDS: Final = 1
AGGREGATED_DISCOVERY: Final = "g=apidiscovery.k8s.io"


@dataclass(slots=True)
class PodAnswer:
    """What the leader knows of one pod: its decision records (JSON, oldest first),
    while the queue holds it, where it waits and what would move it
    (kpysched.queue.pod_state), and its pod group."""

    decisions: list[dict[str, Any]]
    queue: dict[str, Any] | None = None
    # The pod's group (kpysched.scheduling.group_state) when it belongs to one.
    group: dict[str, Any] | None = None

    def __bool__(self) -> bool:
        return bool(self.decisions) or self.queue is not None or self.group is not None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"decisions": self.decisions}
        if self.queue is not None:
            body["queue"] = self.queue
        if self.group is not None:
            body["group"] = self.group
        return body


# A pod's answer by (namespace, name); None when this replica does not lead (a standby
# keeps none).
DecisionLookup = Callable[[str, str], PodAnswer | None]


def path(namespace: str, name: str) -> str:
    return f"{VERSION_PATH}/namespaces/{namespace}/{RESOURCE}/{name}"


def _group() -> dict[str, Any]:
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"name": GROUP, "versions": [version], "preferredVersion": version}


def _resources() -> dict[str, Any]:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
            "resources": [{"name": RESOURCE, "singularName": "", "namespaced": True,
                           "kind": KIND, "verbs": ["get"]}]}


def install(app: web.Application, lookup: DecisionLookup) -> None:
    """The group's routes on `app`."""
    group_list = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}
    group = {"kind": "APIGroup", "apiVersion": "v1", **_group()}
    app.router.add_get("/apis", _group_list(_static(group_list)))
    app.router.add_get(GROUP_PATH, _static(group))
    app.router.add_get(VERSION_PATH, _static(_resources()))
    app.router.add_get(VERSION_PATH + "/namespaces/{namespace}/" + RESOURCE + "/{pod}",
                       _get(lookup))


def _group_list(legacy: Callable[[web.Request], Awaitable[web.Response]],
                ) -> Callable[[web.Request], Awaitable[web.Response]]:
    """kube-apiserver's discovery manager asks /apis for aggregated discovery
    (apidiscovery.k8s.io/v2) first and falls back to /apis/<group>/<version> only on
    406 or 404; a legacy APIGroupList with 200 fails its decoding, which marks the group
    stale, and a stale group blocks namespace deletion, garbage collection and quota
    cluster-wide. So: 406 to that request, the legacy list to everyone else."""

    async def handler(request: web.Request) -> web.Response:
        if AGGREGATED_DISCOVERY in request.headers.get("Accept", ""):
            return status(406, "NotAcceptable",
                          "only legacy discovery is served: /apis/" + GROUP_VERSION)
        return await legacy(request)

    return handler


def _static(body: dict[str, Any]) -> Callable[[web.Request], Awaitable[web.Response]]:
    encoded = msgspec.json.encode(body)

    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=encoded, content_type="application/json")

    return handler


def _get(lookup: DecisionLookup) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["pod"]
        found = lookup(namespace, name)
        if found is None:
            # Retry-After makes client-go (kubectl get --raw, any Go client) ask again,
            # up to 10 times; the aggregator picks a random endpoint each time, so the
            # leader answers soon.
            response = status(503, "ServiceUnavailable",
                              "this kpysched replica is not the leader and keeps no "
                              "decisions; ask again (the Service spreads requests over "
                              "the replicas)")
            response.headers["Retry-After"] = str(STANDBY_RETRY_AFTER_SECONDS)
            return response
        if not found:
            return status(404, "NotFound",
                          f'{RESOURCE}.{GROUP} "{name}" not found: the scheduler kept no '
                          f"decision for pod {namespace}/{name} (not tried since it "
                          "became leader, or the record was evicted: --decision-records)",
                          {"name": name, "group": GROUP, "kind": RESOURCE})
        body = {"kind": KIND, "apiVersion": GROUP_VERSION,
                "metadata": {"name": name, "namespace": namespace},
                "pod": f"{namespace}/{name}", **found.to_json()}
        return web.Response(body=msgspec.json.encode(body), content_type="application/json")

    return handler


def status(code: int, reason: str, message: str,
           details: dict[str, str] | None = None) -> web.Response:
    """A meta/v1 Status, as any API server answers a failure."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details or {}, "code": code}
    return web.Response(body=msgspec.json.encode(body), status=code,
                        content_type="application/json")
