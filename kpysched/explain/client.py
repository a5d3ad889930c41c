"""Reach the leader's /debug/decisions with the user's kubeconfig.

In order: --scheduler-url as given; else the Lease's holder. When the holder names its
pod (in a cluster, where the pod network is rarely reachable from a laptop) the request
goes through `kubectl port-forward` to that pod (kubectl is there whenever explain runs
as a kubectl plugin), or, without kubectl, through the API server's pod proxy; a
scheduler run outside the cluster (scripts/run-local.sh, the test harness) is asked
directly at its advertised address.

Direct and port-forwarded requests carry the kubeconfig's token or client certificate,
and kpysched authorizes them as /metrics (delegated TokenReview/SubjectAccessReview).
Through the pod proxy the API server authorizes the user (get pods/proxy on the
scheduler's pod) but does not pass the user's credentials on, so kpysched sees an
anonymous request, which the chart's RBAC refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, urlsplit

import aiohttp
import msgspec
from kubernetes_asyncio import client
from kubernetes_asyncio import config as kube_config

from kpysched.apiclient import RawApi
from kpysched.decisions.endpoint import ADDRESS_ANNOTATION, POD_ANNOTATION, path

# kpysched's own defaults (--leader-elect-resource-name/-namespace).
DEFAULT_LEASE_NAME: Final = "kpysched"
DEFAULT_LEASE_NAMESPACE: Final = "kube-system"


class UnreachableError(Exception):
    """The leader could not be found or asked; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Target:
    kubeconfig: Path | None = None
    context: str | None = None
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = DEFAULT_LEASE_NAMESPACE
    scheduler_url: str | None = None
    scheduler_ca: Path | None = None  # verifies an https scheduler; else not verified
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
        contexts, current = kube_config.list_kube_config_contexts(
            str(kubeconfig) if kubeconfig else None)
    except (kube_config.ConfigException, OSError):
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), None) if context \
        else current
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


async def fetch(target: Target, namespace: str, name: str) -> Answer:
    configuration = client.Configuration()
    try:
        await kube_config.load_kube_config(
            config_file=str(target.kubeconfig) if target.kubeconfig else None,
            context=target.context, client_configuration=configuration)
    except (kube_config.ConfigException, OSError) as error:
        raise UnreachableError(f"kubeconfig: {error}") from None
    async with client.ApiClient(configuration) as api_client:
        if target.scheduler_url:
            return await _direct(target, configuration, target.scheduler_url, namespace, name)
        raw = RawApi(api_client, qps=0)
        address, pod = await _leader(raw, target)
        if pod is not None:
            kubectl = os.environ.get("KPYSCHED_KUBECTL") or shutil.which("kubectl")
            if kubectl is not None:
                return await _port_forwarded(kubectl, target, configuration, address, pod,
                                             namespace, name)
            return await _proxied(raw, target, address, pod, namespace, name)
        return await _direct(target, configuration, address, namespace, name)


async def _leader(raw: RawApi, target: Target) -> tuple[str, str | None]:
    """The holder's advertised address and, in a cluster, its pod (namespace/name)."""
    lease = f"{target.lease_namespace}/{target.lease_name}"
    response = await _api(raw, "GET", f"/apis/coordination.k8s.io/v1/namespaces/"
                          f"{target.lease_namespace}/leases/{target.lease_name}", target)
    if response.status == 404:
        raise UnreachableError(
            f"no Lease {lease}: is kpysched running with leader election? Pass "
            "--lease-namespace/--lease-name (the chart's Lease is named after the release, "
            "in its namespace), or --scheduler-url")
    if not response.ok:
        raise UnreachableError(f"reading Lease {lease}: HTTP {response.status}: "
                               f"{response.message()}")
    body = msgspec.json.decode(response.body)
    holder = (body.get("spec") or {}).get("holderIdentity") or ""
    if not holder:
        raise UnreachableError(f"Lease {lease} has no holder: no kpysched replica leads now")
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    address = annotations.get(ADDRESS_ANNOTATION)
    if not address:
        raise UnreachableError(
            f"the leader {holder} (Lease {lease}) does not serve its decisions: start it "
            "with --enable-decision-endpoint (chart: decisions.endpoint=true), or pass "
            "--scheduler-url")
    return str(address), annotations.get(POD_ANNOTATION)


async def _api(raw: RawApi, method: str, api_path: str, target: Target) -> Any:
    try:
        return await raw.request(method, api_path, timeout=target.timeout, throttle=False)
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise UnreachableError(f"the API server: {error or type(error).__name__}") from None


async def _proxied(raw: RawApi, target: Target, address: str, pod: str, namespace: str,
                   name: str) -> Answer:
    parts = urlsplit(address)
    pod_namespace, _, pod_name = pod.partition("/")
    proxy = (f"/api/v1/namespaces/{pod_namespace}/pods/{parts.scheme}:{pod_name}:"
             f"{parts.port}/proxy{_quoted_path(namespace, name)}")
    source = f"pod {pod} through the API server's pod proxy"
    response = await _api(raw, "GET", proxy, target)
    return _answer(response.status, response.body, source)


_FORWARDING = re.compile(rb"Forwarding from 127\.0\.0\.1:(\d+)")


async def _port_forwarded(kubectl: str, target: Target, configuration: client.Configuration,
                          address: str, pod: str, namespace: str, name: str) -> Answer:
    """Ask the leader pod through `kubectl port-forward` on a free local port."""
    parts = urlsplit(address)
    pod_namespace, _, pod_name = pod.partition("/")
    command = [kubectl, "port-forward", "--address", "127.0.0.1", "-n", pod_namespace,
               f"pod/{pod_name}", f":{parts.port}"]
    if target.kubeconfig is not None:
        command += ["--kubeconfig", str(target.kubeconfig)]
    if target.context is not None:
        command += ["--context", target.context]
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        try:
            line = await asyncio.wait_for(process.stdout.readline(), target.timeout)
        except TimeoutError:
            line = b""
        found = _FORWARDING.search(line)
        if found is None:
            process.terminate()
            error = (await process.stderr.read()).decode(errors="replace").strip()
            raise UnreachableError(f"kubectl port-forward to pod {pod}: "
                                   f"{error or 'no local port within the timeout'}")
        local = f"{parts.scheme}://127.0.0.1:{found.group(1).decode()}"
        answer = await _direct(target, configuration, local, namespace, name)
        return Answer(answer.status, answer.body, f"pod {pod} through kubectl port-forward")
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def _direct(target: Target, configuration: client.Configuration, url: str,
                  namespace: str, name: str) -> Answer:
    headers = {"Accept": "application/json"}
    auth = await configuration.auth_settings()
    token = (auth.get("BearerToken") or {}).get("value")
    if token:
        headers["Authorization"] = token
    context: ssl.SSLContext | None = None
    if url.startswith("https:"):
        context = ssl.create_default_context(
            cafile=str(target.scheduler_ca) if target.scheduler_ca else None)
        if target.scheduler_ca is None:
            # kpysched serves a self-signed certificate unless given one.
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if configuration.cert_file and configuration.key_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
    source = url.rstrip("/")
    try:
        async with aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=target.timeout)) as session, \
                session.get(source + _quoted_path(namespace, name), headers=headers,
                            ssl=context if context is not None else False) as response:
            return _answer(response.status, await response.read(), source)
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise UnreachableError(f"the scheduler at {source}: "
                               f"{error or type(error).__name__}") from None


def _quoted_path(namespace: str, name: str) -> str:
    return path(quote(namespace, safe=""), quote(name, safe=""))


def _answer(status: int, body: bytes, source: str) -> Answer:
    decoded: Any = None
    with contextlib.suppress(msgspec.DecodeError):
        decoded = msgspec.json.decode(body)
    if status in (200, 404) and isinstance(decoded, dict) and "decisions" in decoded:
        return Answer(status, decoded, source)
    message = decoded.get("message") if isinstance(decoded, dict) else None
    text = message if isinstance(message, str) else body.decode(errors="replace")[:300]
    hint = ""
    if status in (401, 403):
        hint = (" (kpysched authorizes /debug/decisions as /metrics: the caller needs "
                "nonResourceURLs [\"/debug/decisions/*\"] verbs [\"get\"]")
        hint += ("; the pod proxy does not pass your credentials on, so kpysched saw an "
                 "anonymous request: use `kubectl port-forward` and --scheduler-url)"
                 if "pod proxy" in source else ")")
    elif status == 404:
        hint = (" (the scheduler serves no /debug/decisions: is --enable-decision-endpoint "
                "set?)")
    raise UnreachableError(f"{source}: HTTP {status}: {text.strip()}{hint}")
