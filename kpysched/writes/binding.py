"""Posting the Binding subresource: the one write that places a pod."""

from __future__ import annotations

from kpysched.api.client import RawApi
from kpysched.framework.status import SUCCESS, Status
from kpysched.objects import api


class Binder:
    def __init__(self, raw: RawApi) -> None:
        self._raw = raw

    async def bind(self, pod: api.Pod, node_name: str) -> Status:
        meta = pod.metadata
        body = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        response = await self._raw.request(
            "POST", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/binding", body)
        if response.ok:
            return SUCCESS
        # The API server's own message, as upstream's DefaultBinder returns the error
        # (e.g. 'pods "p" not found', 'Operation cannot be fulfilled on pods/binding ...').
        return Status.error(response.message())
