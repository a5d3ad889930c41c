"""Delegated authentication and authorization in front of the endpoints, as one aiohttp
middleware. Built on the loop that serves (the server runs on a thread of its own), so
its API clients belong to that loop."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import structlog
from aiohttp import web
from kubernetes_asyncio import client

from kpysched.serving.authn import AuthenticationError, Authenticator, UserInfo
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, AuthorizationError, Authorizer
from kpysched.serving.delegation import Reviewer, ReviewError, delegation_client
from kpysched.serving.errors import ServingError
from kpysched.serving.published import CLIENT_CA_KEY, PublishedSource
from kpysched.serving.request_info import ResourceAttributes, resource_attributes
from kpysched.serving.requestheader import (
    RequestHeaderAuthenticator,
    RequestHeaderOptions,
    resolve,
)

log = structlog.get_logger(__name__)

# Where kube-apiserver publishes its client CA for delegated authentication.
AUTHENTICATION_CONFIGMAP: Final = "/api/v1/namespaces/kube-system/configmaps/" \
    "extension-apiserver-authentication"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Who the request is from, for handlers whose answer depends on it (health reasons).
USER: Final = web.RequestKey("kpysched_user", UserInfo)


@dataclass(frozen=True, slots=True)
class DelegationOptions:
    """kube-scheduler's --authentication-* / --authorization-* / --client-ca-file."""

    authentication_kubeconfig: Path | None = None
    authorization_kubeconfig: Path | None = None
    token_cache_ttl: float = 10.0
    allowed_cache_ttl: float = 10.0
    denied_cache_ttl: float = 10.0
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    client_ca_file: Path | None = None
    skip_lookup: bool = False
    tolerate_lookup_failure: bool = True
    request_header: RequestHeaderOptions = field(default_factory=RequestHeaderOptions)


@dataclass(slots=True)
class AccessControl:
    authenticator: Authenticator
    authorizer: Authorizer
    # PEM of the CA whose client certificates are users (--client-ca-file or the
    # cluster's); kpysched.serving.reload replaces it when its file changes.
    client_ca: bytes | None
    _clients: list[client.ApiClient] = field(default_factory=list)
    # The aggregator's front-proxy identities (kpysched.serving.requestheader).
    request_header: RequestHeaderAuthenticator | None = None
    # The parts above that came from the cluster's configmap, which
    # kpysched.serving.reload follows; None: every part came from a flag.
    published: PublishedSource | None = None

    @classmethod
    async def open(cls, options: DelegationOptions) -> AccessControl:
        clients: list[client.ApiClient] = []
        try:
            authn_client = await delegation_client(options.authentication_kubeconfig,
                                                   "authentication")
            if authn_client is not None:
                clients.append(authn_client)
            if options.authorization_kubeconfig == options.authentication_kubeconfig:
                authz_client = authn_client
            else:
                authz_client = await delegation_client(options.authorization_kubeconfig,
                                                       "authorization")
                if authz_client is not None:
                    clients.append(authz_client)
            authn = Reviewer(authn_client) if authn_client is not None else None
            authz = Reviewer(authz_client) if authz_client is not None else None
            client_ca = await _client_ca(options, authn)
            proxy = await resolve(options.request_header, _configmap_lookup(options, authn))
        except BaseException:
            for api_client in clients:
                await api_client.close()
            raise
        if proxy is not None:
            log.info("authn.request_header", allowed_names=list(proxy.allowed_names),
                     username_headers=list(proxy.username_headers))
        return cls(Authenticator(authn, options.token_cache_ttl),
                   Authorizer(authz, options.always_allow_paths, options.allowed_cache_ttl,
                              options.denied_cache_ttl),
                   client_ca, clients,
                   None if proxy is None else RequestHeaderAuthenticator(proxy),
                   _published_source(options, authn))

    @property
    def trusted_client_cas(self) -> bytes | None:
        return trusted_client_cas(self.client_ca, self.request_header)

    async def close(self) -> None:
        for api_client in self._clients:
            await api_client.close()
        self._clients.clear()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        proxied = None
        if self.request_header is not None and peer:
            ssl_object = request.transport.get_extra_info("ssl_object") \
                if request.transport else None
            proxied = self.request_header.authenticate(
                ssl_object.getpeercert(binary_form=True) if ssl_object else None,
                request.headers)
        try:
            if proxied is not None and proxied.user is not None:
                user = proxied.user
            else:
                user = await self.authenticator.authenticate(
                    request.headers.get("Authorization"),
                    None if proxied is not None and proxied.proxy else peer)
        except AuthenticationError as error:
            log.debug("authn.refused", path=request.path, reason=str(error))
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        resource = resource_attributes(request.path, request.method,
                                       request.query.get("watch") in ("1", "true"))
        try:
            decision = await self.authorizer.authorize(user, request.path, verb, resource)
        except AuthorizationError as error:
            return _status(500, "InternalError",
                           f"Internal error occurred: authorization failed: {error}")
        if not decision.allowed:
            log.debug("authz.refused", path=request.path, user=user.name,
                      reason=decision.reason)
            message = _forbidden_message(user, verb, request.path, decision.reason) \
                if resource is None else _resource_forbidden(user, resource, decision.reason)
            return _status(403, "Forbidden", message)
        request[USER] = user
        return await handler(request)


def trusted_client_cas(client_ca: bytes | None,
                       request_header: RequestHeaderAuthenticator | None) -> bytes | None:
    """The PEM the TLS layer verifies client certificates against: the client CA's and
    the request header CA's. The middleware tells them apart (a front proxy's
    certificate is no user identity of its own)."""
    if request_header is None:
        return client_ca
    return (client_ca or b"") + b"\n" + request_header.config.ca_pem


def _forbidden_message(user: UserInfo, verb: str, path: str, reason: str) -> str:
    message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
    return f"{message}: {reason}" if reason else message


def _resource_forbidden(user: UserInfo, resource: ResourceAttributes, reason: str) -> str:
    # As the API server words it, so a tenant sees the RBAC rule they lack.
    message = (f'{resource.resource}.{resource.group} "{resource.name}" is forbidden: User '
               f'"{user.name}" cannot {resource.verb} resource "{resource.resource}" in API '
               f'group "{resource.group}"')
    if resource.namespace:
        message += f' in the namespace "{resource.namespace}"'
    return f"{message}: {reason}" if reason else message


def _configmap_lookup(options: DelegationOptions, reviewer: Reviewer | None,
                      ) -> Callable[[], Awaitable[dict[str, Any] | None]] | None:
    """Reads extension-apiserver-authentication's data for the front-proxy settings
    when no --requestheader-client-ca-file is given, as the client CA is looked up."""
    if options.skip_lookup or reviewer is None:
        return None

    async def lookup() -> dict[str, Any] | None:
        try:
            configmap = await reviewer.get(AUTHENTICATION_CONFIGMAP)
        except ReviewError as error:
            if not options.tolerate_lookup_failure:
                raise ServingError(
                    "looking up the request header configuration in configmap kube-system/"
                    f"extension-apiserver-authentication: {error}") from None
            log.warning("authn.request_header_lookup_failed", reason=str(error),
                        consequence="requests through the API server's aggregator are "
                                    "not authenticated")
            return None
        data = configmap.get("data")
        return data if isinstance(data, dict) else None

    return lookup


def _published_source(options: DelegationOptions, reviewer: Reviewer | None,
                      ) -> PublishedSource | None:
    """The parts looked up in the configmap at start, to follow while serving."""
    if options.skip_lookup or reviewer is None:
        return None
    client_ca = options.client_ca_file is None
    request_header = options.request_header.client_ca_file is None
    if not client_ca and not request_header:
        return None

    async def read() -> dict[str, Any] | None:
        try:
            configmap = await reviewer.get(AUTHENTICATION_CONFIGMAP)
        except ReviewError as error:
            # Logged at start when it mattered; meanwhile what is in use stays.
            log.debug("authn.published_lookup_failed", reason=str(error))
            return None
        data = configmap.get("data")
        return data if isinstance(data, dict) else {}

    return PublishedSource(read, client_ca, request_header)


def _status(code: int, reason: str, message: str) -> web.Response:
    """A meta/v1 Status, the body kube-scheduler answers refusals with."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": {}, "code": code}
    return web.Response(text=json.dumps(body), status=code, content_type="application/json",
                        headers={"X-Content-Type-Options": "nosniff"})


async def _client_ca(options: DelegationOptions, reviewer: Reviewer | None) -> bytes | None:
    """--client-ca-file, else (unless --authentication-skip-lookup) the API server's
    published client CA; None: no client certificate authentication."""
    if options.client_ca_file is not None:
        try:
            return options.client_ca_file.read_bytes()
        except OSError as error:
            raise ServingError(f"--client-ca-file {options.client_ca_file}: "
                                  f"{error.strerror}") from None
    if options.skip_lookup:
        return None
    if reviewer is None:
        log.warning("authn.client_ca_lookup_skipped",
                    reason="no authentication-kubeconfig: client certificates are not "
                           "authenticated")
        return None
    try:
        configmap = await reviewer.get(AUTHENTICATION_CONFIGMAP)
    except ReviewError as error:
        if not options.tolerate_lookup_failure:
            raise ServingError(
                f"looking up the client CA in configmap kube-system/"
                f"extension-apiserver-authentication: {error} "
                "(--authentication-tolerate-lookup-failure=false)") from None
        log.warning("authn.client_ca_lookup_failed", reason=str(error),
                    consequence="client certificates are not authenticated",
                    hint="grant get on that configmap, or pass --authentication-skip-lookup")
        return None
    ca = (configmap.get("data") or {}).get(CLIENT_CA_KEY)
    return ca.encode() if isinstance(ca, str) and ca.strip() else None
