"""Ask the leader for a pod's decisions with the user's kubeconfig.

Through the API server: GET /apis/decisions.kpysched.io/v1alpha1/namespaces/<ns>/pods/
<pod>, the aggregated API the chart registers (kpysched.decisions.api). The user's
credential goes only to the API server the kubeconfig names, verified as the kubeconfig
says; the API server authenticates the user, RBAC decides (get on
pods.decisions.kpysched.io in that namespace) and the aggregator passes the identity on
to kpysched with its own front-proxy certificate.

Nothing is read from the Lease. Earlier versions found the leader through annotations
on it (its serving address and pod) and sent the user's token there with TLS
verification off: anyone able to write that Lease could collect the token of everyone
who ran explain. An address found in cluster data is never sent a credential.

--scheduler-url (a local run, or `kubectl port-forward`) is the one direct route: the
user names the address, and an https scheduler's certificate is verified, against
--scheduler-ca or else the system's trust store.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import aiohttp
import msgspec
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from kpysched.api.client import RawApi
from kpysched.api.kubeconfig_file import KubeconfigError, client_configuration, require_kubeconfig
from kpysched.decisions.api import GROUP, RESOURCE, path

# A standby replica answers 503 (it keeps no decisions); the aggregator picks a random
# endpoint for each request, so a few tries reach the leader (client-go, and so
# `kubectl get --raw`, retries on the 503's Retry-After up to 10 times).
STANDBY_RETRIES: Final = 10
STANDBY_BACKOFF_SECONDS: Final = 0.2


class UnreachableError(Exception):
    """The leader could not be found or asked; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Target:
    kubeconfig: Path | None = None
    context: str | None = None
    scheduler_url: str | None = None
    scheduler_ca: Path | None = None  # verifies an https --scheduler-url
    timeout: float = 10.0


@dataclass(frozen=True, slots=True)
class Answer:
    status: int  # 200, or 404 when no decision is kept for the pod
    body: dict[str, Any]
    source: str  # where it came from, for messages


def context_namespace(kubeconfig: Path | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current or given) context, as kubectl's -n
    default; "default" when it names none."""
    try:
        require_kubeconfig(kubeconfig)
        contexts, current = kube_config.list_kube_config_contexts(
            str(kubeconfig) if kubeconfig else None)
    except (KubeconfigError, kube_config.ConfigException, OSError):
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), None) if context \
        else current
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


async def fetch(target: Target, namespace: str, name: str) -> Answer:
    try:
        configuration = await client_configuration(target.kubeconfig, target.context)
    except KubeconfigError as error:
        raise UnreachableError(str(error)) from None
    if target.scheduler_url:
        return await _direct(target, configuration, target.scheduler_url, namespace, name)
    async with client.ApiClient(configuration) as api_client:
        return await _through_api_server(RawApi(api_client, qps=0), target, namespace, name)


async def _through_api_server(raw: RawApi, target: Target, namespace: str,
                              name: str) -> Answer:
    source = f"the API server ({GROUP})"
    for attempt in range(STANDBY_RETRIES):
        try:
            response = await raw.request("GET", _quoted_path(namespace, name),
                                         timeout=target.timeout, throttle=False)
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise UnreachableError(f"the API server: {error or type(error).__name__}"
                                   ) from None
        if response.status != 503 or attempt == STANDBY_RETRIES - 1:
            break
        await asyncio.sleep(STANDBY_BACKOFF_SECONDS)
    return _answer(response.status, response.body, source, namespace, name)


async def _direct(target: Target, configuration: client.Configuration, url: str,
                  namespace: str, name: str) -> Answer:
    headers = {"Accept": "application/json"}
    auth = await configuration.auth_settings()
    token = (auth.get("BearerToken") or {}).get("value")
    if token:
        headers["Authorization"] = token
    context: ssl.SSLContext | None = None
    if url.startswith("https:"):
        # Always verified: --scheduler-ca, else the system's trust store.
        context = ssl.create_default_context(
            cafile=str(target.scheduler_ca) if target.scheduler_ca else None)
        if configuration.cert_file and configuration.key_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
    source = url.rstrip("/")
    try:
        async with aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=target.timeout)) as session, \
                session.get(source + _quoted_path(namespace, name), headers=headers,
                            ssl=context if context is not None else False) as response:
            return _answer(response.status, await response.read(), source, namespace, name)
    except aiohttp.ClientConnectorCertificateError as error:
        raise UnreachableError(
            f"the scheduler at {source}: its certificate is not trusted ({error.certificate_error}"
            "): pass --scheduler-ca with the CA that signed it (kpysched's --cert-dir holds "
            "the self-signed one it generated)") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise UnreachableError(f"the scheduler at {source}: "
                               f"{error or type(error).__name__}") from None


def _quoted_path(namespace: str, name: str) -> str:
    return path(quote(namespace, safe=""), quote(name, safe=""))


def _answer(status: int, body: bytes, source: str, namespace: str, name: str) -> Answer:
    decoded: Any = None
    with contextlib.suppress(msgspec.DecodeError):
        decoded = msgspec.json.decode(body)
    if status == 200 and isinstance(decoded, dict) and "decisions" in decoded:
        return Answer(status, decoded, source)
    details = decoded.get("details") if isinstance(decoded, dict) else None
    if status == 404 and isinstance(details, dict) and details.get("group") == GROUP:
        # kpysched's own "not found": the API is there, the pod has no record.
        return Answer(404, {"pod": f"{namespace}/{name}", "decisions": []}, source)
    message = decoded.get("message") if isinstance(decoded, dict) else None
    text = message if isinstance(message, str) else body.decode(errors="replace")[:300]
    hint = ""
    if status in (401, 403):
        hint = (f" (reading a pod's decisions needs get on {RESOURCE}.{GROUP} in its "
                "namespace; the chart aggregates that to the view, edit and admin roles)")
    elif status == 404:
        hint = (f" (the API server serves no {GROUP}: register it with the chart's "
                "decisions.endpoint=true, which starts kpysched with "
                "--enable-decision-endpoint and adds the APIService, or pass "
                "--scheduler-url)")
    elif status == 503:
        hint = (f" (the APIService for {GROUP} is not available: is kpysched running with "
                "--enable-decision-endpoint? `kubectl get apiservice "
                f"v1alpha1.{GROUP}` says why)")
    raise UnreachableError(f"{source}: HTTP {status}: {text.strip()}{hint}")
