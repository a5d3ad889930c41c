"""An extender as DefaultPreemption sees it (framework.interfaces.Extender): the
candidates' victims go out as whole pods or as UIDs (nodeCacheCapable), and the UIDs
that come back are found again among the pods on each node, as upstream's
HTTPExtender.ProcessPreemption does."""

from __future__ import annotations

from collections.abc import Mapping

from kpysched.cache.snapshot import Snapshot
from kpysched.extenders.errors import ExtenderError
from kpysched.extenders.extender import HTTPExtender
from kpysched.extenders.registry import Extenders
from kpysched.extenders.wire import MetaVictims
from kpysched.framework.interfaces import Victims
from kpysched.framework.status import Status
from kpysched.objects import api
from kpysched.objects.pod import PodInfo


class PreemptionExtender:
    def __init__(self, extender: HTTPExtender, extenders: Extenders) -> None:
        self._extender = extender
        self._extenders = extenders

    @property
    def name(self) -> str:
        return self._extender.name

    @property
    def ignorable(self) -> bool:
        return self._extender.ignorable

    @property
    def supports_preemption(self) -> bool:
        return self._extender.supports_preemption

    def is_interested(self, pod: api.Pod) -> bool:
        return self._extender.is_interested(pod)

    def process_preemption(self, pod: PodInfo, victims: Mapping[str, Victims],
                           snapshot: Snapshot) -> dict[str, Victims] | Status:
        extenders = self._extenders
        sent = {node: ([victim.pod for victim in kept.pods], kept.num_pdb_violations)
                for node, kept in victims.items()}
        try:
            answer = extenders.wait(self._extender.process_preemption(
                extenders.pod_body(pod.pod), sent))
            return {node: self._victims_on(node, meta, snapshot)
                    for node, meta in answer.items()}
        except ExtenderError as error:
            return Status.error(str(error))

    def _victims_on(self, node: str, meta: MetaVictims | None, snapshot: Snapshot) -> Victims:
        info = snapshot.get(node)
        if info is None:
            raise ExtenderError(f'nodeinfo not found for node name "{node}"')
        if meta is None:  # the extender named the node with no victims at all
            return Victims(())
        pods = []
        for uid in meta.pod_uids:
            found = info.pods.get(uid)
            if found is None:
                raise ExtenderError(
                    f"extender: {self.name} claims to preempt pod (UID: &{{{uid}}}) on node: "
                    f"{node}, but the pod is not found on that node")
            pods.append(found)
        return Victims(tuple(pods), meta.num_pdb_violations)
