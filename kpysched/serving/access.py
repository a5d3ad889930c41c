"""Delegated authentication and authorization in front of the endpoints, as one aiohttp
middleware. Built on the loop that serves (the server runs on a thread of its own), so
its API clients belong to that loop."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import structlog
from aiohttp import web
from kubernetes_asyncio import client

from kpysched.serving.authn import AuthenticationError, Authenticator, UserInfo
from kpysched.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, AuthorizationError, Authorizer
from kpysched.serving.delegation import Reviewer, ReviewError, delegation_client
from kpysched.serving.errors import ServingError

log = structlog.get_logger(__name__)

# Where kube-apiserver publishes its client CA for delegated authentication.
AUTHENTICATION_CONFIGMAP: Final = "/api/v1/namespaces/kube-system/configmaps/" \
    "extension-apiserver-authentication"
CLIENT_CA_KEY: Final = "client-ca-file"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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


@dataclass(slots=True)
class AccessControl:
    authenticator: Authenticator
    authorizer: Authorizer
    client_ca: bytes | None  # PEM the TLS layer verifies client certificates against
    _clients: list[client.ApiClient] = field(default_factory=list)

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
        except BaseException:
            for api_client in clients:
                await api_client.close()
            raise
        return cls(Authenticator(authn, options.token_cache_ttl),
                   Authorizer(authz, options.always_allow_paths, options.allowed_cache_ttl,
                              options.denied_cache_ttl),
                   client_ca, clients)

    async def close(self) -> None:
        for api_client in self._clients:
            await api_client.close()
        self._clients.clear()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        try:
            user = await self.authenticator.authenticate(
                request.headers.get("Authorization"), peer)
        except AuthenticationError as error:
            log.debug("authn.refused", path=request.path, reason=str(error))
            return _status(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        try:
            decision = await self.authorizer.authorize(user, request.path, verb)
        except AuthorizationError as error:
            return _status(500, "InternalError",
                           f"Internal error occurred: authorization failed: {error}")
        if not decision.allowed:
            log.debug("authz.refused", path=request.path, user=user.name,
                      reason=decision.reason)
            return _status(403, "Forbidden", _forbidden_message(user, verb, request.path,
                                                                decision.reason))
        return await handler(request)


def _forbidden_message(user: UserInfo, verb: str, path: str, reason: str) -> str:
    message = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
    return f"{message}: {reason}" if reason else message


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
