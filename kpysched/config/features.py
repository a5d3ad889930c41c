"""The kube-scheduler release kpysched behaves as, and the feature gates it acts on.

kpysched implements kube-scheduler v1.36.4 and v1.37.2 (RELEASES), each with its
default gates. The workload gates are the exception: they may be turned on, as on
kube-scheduler, on a cluster whose API server serves that API. In v1.36 they are
GenericWorkload (scheduling.k8s.io/v1alpha2 PodGroups, the pod's spec.schedulingGroup,
the pod-group scheduling cycle) and GangScheduling (the plugin of that name in the
default profile); v1.37 folds GangScheduling into GenericWorkload (beta, still off),
which then brings the GangScheduling plugin by itself. v1.37's
InPlacePodVerticalScalingSchedulerPreemption (alpha, off) may be turned on too: a bound
pod whose in-place resize the kubelet deferred is then scheduled again on its node. So
may v1.37's PodGroupPreemptionPolicy (alpha, off, needs GenericWorkload): a pod group
then preempts by its PodGroup's spec.preemptionPolicy. And v1.37's
TopologyAwareWorkloadScheduling (alpha, off, needs GenericWorkload): a pod group is then
tried one placement (topology domain) at a time. And v1.37's DRAWorkloadResourceClaims
(beta, off, needs GenericWorkload): a PodGroup's members then share the ResourceClaims
it lists, reserved for the PodGroup. (v1.36 has that gate as alpha; kpysched refuses it
there.) And v1.37's CompositePodGroup (alpha, off, needs GenericWorkload and
TopologyAwareWorkloadScheduling): PodGroups may then sit under CompositePodGroups, and a
workload's whole tree is scheduled as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from kpysched.config.gate_tables import v1_36, v1_37

# The kube-scheduler releases kpysched can behave as, by minor version (1.MINOR), and
# the patch release each one matches decision for decision.
RELEASES: Final[Mapping[int, str]] = {36: "v1.36.4", 37: "v1.37.2"}
OLDEST_RELEASE: Final = min(RELEASES)
NEWEST_RELEASE: Final = max(RELEASES)

GENERIC_WORKLOAD: Final = "GenericWorkload"
GANG_SCHEDULING: Final = "GangScheduling"
IN_PLACE_RESIZE_PREEMPTION: Final = "InPlacePodVerticalScalingSchedulerPreemption"
# v1.37 alpha: a pod group preempts by its PodGroup's spec.preemptionPolicy.
POD_GROUP_PREEMPTION_POLICY: Final = "PodGroupPreemptionPolicy"
# v1.37 alpha: a pod group is tried topology domain by domain (placements).
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: Final = "TopologyAwareWorkloadScheduling"
# v1.37 beta (off): ResourceClaims reserved for, and shared by, a PodGroup.
DRA_WORKLOAD_RESOURCE_CLAIMS: Final = "DRAWorkloadResourceClaims"
# v1.37 alpha: PodGroups under CompositePodGroups, a workload's tree scheduled as one.
COMPOSITE_POD_GROUP: Final = "CompositePodGroup"
# Gates kpysched honours when turned on, per release; every other gate must keep its
# default.
RELEASE_SWITCHABLE: Final[Mapping[int, frozenset[str]]] = {
    36: frozenset({GENERIC_WORKLOAD, GANG_SCHEDULING}),
    37: frozenset({GENERIC_WORKLOAD, IN_PLACE_RESIZE_PREEMPTION, POD_GROUP_PREEMPTION_POLICY,
                   TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, DRA_WORKLOAD_RESOURCE_CLAIMS,
                   COMPOSITE_POD_GROUP}),
}
# Every name some release lets the command line switch (Settings' first check).
SWITCHABLE: Final = frozenset().union(*RELEASE_SWITCHABLE.values())
# A gate on needs these on too (upstream's feature dependencies in kube_features.go of
# each release, for the switchable gates).
RELEASE_DEPENDS_ON: Final[Mapping[int, Mapping[str, tuple[str, ...]]]] = {
    36: {GANG_SCHEDULING: (GENERIC_WORKLOAD,)},
    37: {POD_GROUP_PREEMPTION_POLICY: (GENERIC_WORKLOAD,),
         TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: (GENERIC_WORKLOAD,),
         # Upstream's also names DynamicResourceAllocation, locked on in v1.37.
         DRA_WORKLOAD_RESOURCE_CLAIMS: (GENERIC_WORKLOAD,),
         COMPOSITE_POD_GROUP: (GENERIC_WORKLOAD, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)},
}

# Each release's gates: those `kube-scheduler --help` lists (name -> default) and the
# GA or deprecated ones it accepts unlisted (name -> (default, locked to it)).
LISTED_GATES: Final[Mapping[int, Mapping[str, bool]]] = {36: v1_36.LISTED, 37: v1_37.LISTED}
HIDDEN_GATES: Final[Mapping[int, Mapping[str, tuple[bool, bool]]]] = {
    36: v1_36.HIDDEN, 37: v1_37.HIDDEN}
# Every gate of each release with its stage: ALPHA, BETA, DEPRECATED, "" for GA.
GATE_STAGES: Final[Mapping[int, Mapping[str, str]]] = {36: v1_36.STAGES, 37: v1_37.STAGES}


@dataclass(frozen=True, slots=True)
class Features:
    """The release kpysched behaves as and the gates it runs with.

    Plugins read it from `handle.features`: `release` (the minor, 36 or 37) for a
    behaviour that changed between releases without a gate, `enabled(gate)` for one
    behind a gate (that release's default unless the command line changed it).

    `gang_scheduling` says whether the GangScheduling plugin and its gang rules are on:
    its own gate in v1.36, GenericWorkload's value in v1.37 (from_gates sets it so).
    """

    generic_workload: bool = False
    gang_scheduling: bool = False
    release: int = NEWEST_RELEASE
    # Gates set away from `release`'s default (name -> value); see enabled().
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise ValueError(f"release 1.{self.release} is not one kpysched implements "
                             f"({', '.join(f'1.{r}' for r in RELEASES)})")

    def enabled(self, gate: str) -> bool:
        """Whether `gate` is on: the command line's value, else this release's default
        (False for a gate the release does not know). In v1.37 "GangScheduling" answers
        whether GenericWorkload brought the GangScheduling plugin."""
        if gate == GENERIC_WORKLOAD:
            return self.generic_workload
        if gate == GANG_SCHEDULING:
            return self.gang_scheduling
        if gate in self.overrides:
            return self.overrides[gate]
        return gate_default(self.release, gate)

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool], release: int = NEWEST_RELEASE) -> Features:
        """From `--feature-gates` values already checked for `release` (names without
        "kube:")."""
        generic_workload = gates.get(GENERIC_WORKLOAD, False)
        gang = generic_workload if release >= 37 else gates.get(GANG_SCHEDULING, False)
        others = {name: on for name, on in gates.items()
                  if name not in (GENERIC_WORKLOAD, GANG_SCHEDULING)}
        return cls(generic_workload=generic_workload, gang_scheduling=gang, release=release,
                   overrides=others)

    def gates(self) -> dict[str, bool]:
        """The switchable gates that are on, as written on the command line."""
        written = [(GENERIC_WORKLOAD, self.generic_workload)]
        if GANG_SCHEDULING in RELEASE_SWITCHABLE[self.release]:
            written.append((GANG_SCHEDULING, self.gang_scheduling))
        written += [(name, on) for name, on in self.overrides.items()
                    if name in RELEASE_SWITCHABLE[self.release]]
        return {name: True for name, on in written if on}

    def all_gates(self) -> dict[str, tuple[str, bool]]:
        """Every gate of the release: name -> (stage, on), as kube-scheduler exports them
        (kubernetes_feature_enabled)."""
        return {gate: (stage, self.enabled(gate))
                for gate, stage in GATE_STAGES[self.release].items()}

    @property
    def version(self) -> str:
        """The release as --emulated-version writes it ("1.37")."""
        return f"1.{self.release}"


def gate_default(release: int, gate: str) -> bool:
    """`gate`'s default in kube-scheduler of `release` (False when it does not know it)."""
    listed = LISTED_GATES[release]
    if gate in listed:
        return listed[gate]
    hidden = HIDDEN_GATES[release].get(gate)
    return hidden[0] if hidden is not None else False


def release_gate_defaults(release: int) -> Mapping[str, bool]:
    """The default of every gate kube-scheduler of `release` knows that changes what a
    scheduler decides (every gate's default: gate_default)."""
    return {gate: gate_default(release, gate) for gate in SCHEDULER_GATES[release]}


# Gates that change scheduling decisions in each release (kube_features.go of that
# release; their defaults come from the gate tables, so they cannot drift).
_SCHEDULER_GATES_36: Final = (
    "StorageCapacityScoring", "VolumeLimitScaling", "DRAWorkloadResourceClaims",
    "NodeDeclaredFeatures", "DRAExtendedResource", "DRADeviceTaints",
    "DRAResourceClaimDeviceStatus", "DRAConsumableCapacity", "DRAPartitionableDevices",
    "DRADeviceBindingConditions", "DRASchedulerFilterTimeout",
    "OpportunisticBatching", "SchedulerAsyncAPICalls", "SchedulerAsyncPreemption",
    "SchedulerPopFromBackoffQ", "NominatedNodeNameForExpectation",
    "ClearingNominatedNodeNameAfterBinding", "TopologyAwareWorkloadScheduling",
    "WorkloadAwarePreemption", "TaintTolerationComparisonOperators",
    "MatchLabelKeysInPodTopologySpread", "PodLevelResources",
    "DynamicResourceAllocation")
SCHEDULER_GATES: Final[Mapping[int, tuple[str, ...]]] = {
    36: _SCHEDULER_GATES_36,
    # v1.37 dropped WorkloadAwarePreemption and brought these.
    37: (*(gate for gate in _SCHEDULER_GATES_36 if gate != "WorkloadAwarePreemption"),
         "InPlacePodVerticalScalingSchedulerPreemption", "InterPodAffinityHostnameFastPath",
         "CompositePodGroup", "PodGroupPreemptionPolicy", "SchedulerPreQueueingHints",
         "DRAFractionalCapacityRange", "DRADerivedAttributes",
         "DRADeviceCompatibilityGroups", "DRAPartitionableDevicesType"),
}

DEFAULT: Final = Features()
