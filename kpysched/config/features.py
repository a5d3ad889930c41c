"""The feature gates kpysched acts on, beyond v1.36's defaults.

kpysched implements kube-scheduler v1.36.4 with its default gates. The gang gates are
the exception: GenericWorkload (scheduling.k8s.io/v1alpha2 PodGroups, the pod's
spec.schedulingGroup, the pod-group scheduling cycle) and GangScheduling (the plugin
of that name in the default profile) may be turned on, as on kube-scheduler, on a
cluster whose API server serves that API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

# The kube-scheduler releases kpysched can behave as, by minor version (1.MINOR), and
# the patch release each one matches decision for decision.
RELEASES: Final[Mapping[int, str]] = {36: "v1.36.4", 37: "v1.37.2"}
OLDEST_RELEASE: Final = min(RELEASES)
NEWEST_RELEASE: Final = max(RELEASES)

GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
# Gates kpysched honours when turned on; every other gate must keep its default.
SWITCHABLE: Final = frozenset({GENERIC_WORKLOAD, GANG_SCHEDULING})
# A gate on needs these on too (upstream's feature dependencies in kube_features.go).
DEPENDS_ON: Final[Mapping[str, tuple[str, ...]]] = {GANG_SCHEDULING: (GENERIC_WORKLOAD,)}


@dataclass(frozen=True, slots=True)
class Features:
    """The release kpysched behaves as and the gates it runs with.

    Plugins read it from `handle.features`: `release` (the minor, 36 or 37) for a
    behaviour that changed between releases without a gate, `enabled(gate)` for one
    behind a gate (that release's default unless the command line changed it).
    """

    generic_workload: bool = False
    gang_scheduling: bool = False
    release: int = OLDEST_RELEASE
    # Gates set away from `release`'s default (name -> value); see enabled().
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, gate: str) -> bool:
        """Whether `gate` is on: the command line's value, else this release's default
        (False for a gate the release does not know)."""
        if gate == GENERIC_WORKLOAD:
            return self.generic_workload
        if gate == GANG_SCHEDULING:
            return self.gang_scheduling
        if gate in self.overrides:
            return self.overrides[gate]
        return release_gate_defaults(self.release).get(gate, False)

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool]) -> Features:
        """From `--feature-gates` values already checked (names without "kube:")."""
        return cls(generic_workload=gates.get(GENERIC_WORKLOAD, False),
                   gang_scheduling=gates.get(GANG_SCHEDULING, False))

    def gates(self) -> dict[str, bool]:
        """The switchable gates that are on, as written on the command line."""
        return {name: True for name, on in ((GENERIC_WORKLOAD, self.generic_workload),
                                            (GANG_SCHEDULING, self.gang_scheduling)) if on}


def release_gate_defaults(release: int) -> Mapping[str, bool]:
    """The default of every gate kube-scheduler of `release` knows that changes what a
    scheduler decides (the rest of its gates are in config/flags/feature_gates.py)."""
    return _SCHEDULER_GATE_DEFAULTS.get(release, {})


# Gates that change scheduling decisions, with their default in each release (from
# `kube-scheduler --help` and pkg/features/kube_features.go of that release).
_SCHEDULER_GATE_DEFAULTS: Final[Mapping[int, Mapping[str, bool]]] = {
    36: {"StorageCapacityScoring": False, "VolumeLimitScaling": False,
         "InPlacePodVerticalScalingSchedulerPreemption": False,
         "InterPodAffinityHostnameFastPath": False, "CompositePodGroup": False,
         "PodGroupPreemptionPolicy": False, "DRAWorkloadResourceClaims": False,
         "NodeDeclaredFeatures": True, "DRAExtendedResource": True,
         "DRADeviceTaints": True, "DRAResourceClaimDeviceStatus": True},
    37: {"StorageCapacityScoring": True, "VolumeLimitScaling": True,
         "InPlacePodVerticalScalingSchedulerPreemption": False,
         "InterPodAffinityHostnameFastPath": False, "CompositePodGroup": False,
         "PodGroupPreemptionPolicy": False, "DRAWorkloadResourceClaims": False,
         "NodeDeclaredFeatures": True, "DRAExtendedResource": True,
         "DRADeviceTaints": True, "DRAResourceClaimDeviceStatus": True},
}

DEFAULT: Final = Features()
