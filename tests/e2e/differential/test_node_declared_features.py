"""The premise of the NodeDeclaredFeatures differential scenarios (run in the batch:
tests/e2e/differential/batch/node_features.py): the API server keeps what a Node
declares in `status.declaredFeatures`, as a kubelet would publish it.
"""

from __future__ import annotations

from kubernetes_asyncio import client

from tests.cluster import kube
from tests.e2e.differential.batch.node_features import RESTART_ALL
from tests.e2e.differential.runner import ROLE_LABEL


async def test_nodes_keep_their_declared_features(api: client.ApiClient,
                                                  nodes_to_clean: list[str]) -> None:
    name = kube.unique_name("ndf")
    body = kube.node_body(name, labels={ROLE_LABEL: "n0"})
    body["status"]["declaredFeatures"] = ["Acme/turbo", RESTART_ALL]
    nodes_to_clean.append(name)
    await kube.create_node(api, body)
    node = await client.CoreV1Api(api).read_node(name)
    assert node.status.declared_features == ["Acme/turbo", RESTART_ALL]
