"""Nominator: which pending pods are expected to run on which node.

A pod is nominated when preemption freed room for it (status.nominatedNodeName),
and other pods' Filter runs count nominated pods of equal or higher priority as
if they were already there, so the freed room is not handed to someone else.
"""

from __future__ import annotations

from kpysched.objects.pod import PodInfo


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}  # pod uid -> node

    def add(self, pod: PodInfo, node_name: str) -> None:
        """Nominate `pod` to `node_name`; an empty node name clears the nomination."""
        self.delete(pod.uid)
        if not node_name:
            return
        self._by_node.setdefault(node_name, {})[pod.uid] = pod
        self._node_of[pod.uid] = node_name

    def add_from_status(self, pod: PodInfo, previously: str = "") -> None:
        """Follow status.nominatedNodeName as the API reports it (e.g. after a restart);
        `previously` is what the pod's previous version said. As upstream's
        UpdateNominatedPod: a nomination the status drops goes; one only in memory is
        kept until the status write lands."""
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            self.add(pod, nominated)
        elif previously:
            self.delete(pod.uid)
        elif pod.uid in self._node_of:
            self._by_node[self._node_of[pod.uid]][pod.uid] = pod

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[node]

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        pods = self._by_node.get(node_name)
        return list(pods.values()) if pods else []

    def has_any(self) -> bool:
        return bool(self._node_of)

    def nodes(self) -> set[str]:
        return set(self._by_node)
