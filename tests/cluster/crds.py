"""Install CustomResourceDefinitions on the test cluster and wait until they are served.

`apply` creates every CRD of a manifest file (or replaces its spec when one of that
name is already there) and returns once each is Established and a list of its
resource answers: a scheduler whose informers start after that never meets a 404
for the resource. The cluster's admin token is exempt from API priority and
fairness, so no request here waits behind others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.rest import ApiException

ESTABLISHED_TIMEOUT_SECONDS = 60.0
POLL_SECONDS = 0.2


def load(path: Path) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of a (multi-document) manifest file."""
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    found = [d for d in documents if d.get("kind") == "CustomResourceDefinition"]
    if not found:
        raise ValueError(f"{path} holds no CustomResourceDefinition")
    return found


async def apply(api: client.ApiClient, path: Path,
                timeout: float = ESTABLISHED_TIMEOUT_SECONDS) -> list[str]:
    """Create (or update) the CRDs in `path`; wait until each is Established and served.
    Returns their names."""
    definitions = load(path)
    # Any: the client's annotations want its models; the API takes the manifest's JSON.
    extensions: Any = client.ApiextensionsV1Api(api)
    for body in definitions:
        try:
            await extensions.create_custom_resource_definition(body)
        except ApiException as error:
            if error.status != 409:
                raise
            current = await extensions.read_custom_resource_definition(
                body["metadata"]["name"])
            await extensions.replace_custom_resource_definition(
                body["metadata"]["name"],
                {**body, "metadata": {**body["metadata"],
                                      "resourceVersion": current.metadata.resource_version}})
    await wait_served(api, definitions, timeout)
    return [body["metadata"]["name"] for body in definitions]


def _established(crd: Any) -> bool:
    conditions = (crd.status.conditions if crd.status is not None else None) or ()
    return any(c.type == "Established" and c.status == "True" for c in conditions)


async def _lists(api: client.ApiClient, body: Mapping[str, Any]) -> bool:
    """A list of the resource (its first served version) answers."""
    spec = body["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served", True))
    custom = client.CustomObjectsApi(api)
    try:
        # Across all namespaces for a namespaced resource: either scope lists this way.
        await custom.list_cluster_custom_object(spec["group"], version,
                                                spec["names"]["plural"], limit=1)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


async def wait_served(api: client.ApiClient, definitions: Sequence[Mapping[str, Any]],
                      timeout: float = ESTABLISHED_TIMEOUT_SECONDS) -> None:
    extensions = client.ApiextensionsV1Api(api)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiting = [body["metadata"]["name"] for body in definitions]
    while True:
        still: list[str] = []
        for body in definitions:
            name = body["metadata"]["name"]
            crd = await extensions.read_custom_resource_definition(name)
            if not (_established(crd) and await _lists(api, body)):
                conditions = [(c.type, c.status, c.reason)
                              for c in (crd.status.conditions or ())] if crd.status else []
                still.append(f"{name} {conditions}")
        waiting = still
        if not waiting:
            return
        if loop.time() > deadline:
            raise AssertionError(
                f"CustomResourceDefinition(s) not Established and served within "
                f"{timeout:.0f}s: {waiting}")
        await asyncio.sleep(POLL_SECONDS)
