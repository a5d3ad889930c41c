"""The feature gates kpysched acts on, beyond v1.36's defaults.

kpysched implements kube-scheduler v1.36.4 with its default gates. The gang gates are
the exception: GenericWorkload (scheduling.k8s.io/v1alpha2 PodGroups, the pod's
spec.schedulingGroup, the pod-group scheduling cycle) and GangScheduling (the plugin
of that name in the default profile) may be turned on, as on kube-scheduler, on a
cluster whose API server serves that API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
# Gates kpysched honours when turned on; every other gate must keep its default.
SWITCHABLE: Final = frozenset({GENERIC_WORKLOAD, GANG_SCHEDULING})
# A gate on needs these on too (upstream's feature dependencies in kube_features.go).
DEPENDS_ON: Final[Mapping[str, tuple[str, ...]]] = {GANG_SCHEDULING: (GENERIC_WORKLOAD,)}


@dataclass(frozen=True, slots=True)
class Features:
    generic_workload: bool = False
    gang_scheduling: bool = False

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool]) -> Features:
        """From `--feature-gates` values already checked (names without "kube:")."""
        return cls(generic_workload=gates.get(GENERIC_WORKLOAD, False),
                   gang_scheduling=gates.get(GANG_SCHEDULING, False))

    def gates(self) -> dict[str, bool]:
        """The switchable gates that are on, as written on the command line."""
        return {name: True for name, on in ((GENERIC_WORKLOAD, self.generic_workload),
                                            (GANG_SCHEDULING, self.gang_scheduling)) if on}


DEFAULT: Final = Features()
