"""The feature gates kube-scheduler v1.36.4 accepts on --feature-gates, with their
defaults (from `kube-scheduler --help` of that release).

kpysched implements the v1.36 default behaviour. A gate set to its default is
accepted, and so are the gang gates turned on (kpysched.config.features); any other gate
changed from its default, or one this release does not know, stops start-up: kpysched
would otherwise claim a behaviour it does not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kpysched.config.features import DEPENDS_ON, SWITCHABLE
from kpysched.config.flags.parser import parse_bool

KUBE_COMPONENT: Final = "kube"

DEFAULTS: Final[Mapping[str, bool]] = {
    "APIResponseCompression": True,
    "APIServerIdentity": True,
    "APIServingWithRoutine": False,
    "AllAlpha": False,
    "AllBeta": False,
    "AllowParsingUserUIDFromCertAuth": True,
    "AllowUnsafeMalformedObjectDeletion": False,
    "AtomicFIFO": True,
    "AuthorizePodWebsocketUpgradeCreatePermission": True,
    "CBORServingAndStorage": False,
    "CPUManagerPolicyAlphaOptions": False,
    "CPUManagerPolicyBetaOptions": True,
    "CRDObservedGenerationTracking": True,
    "CRIListStreaming": False,
    "CSIVolumeHealth": False,
    "ClearingNominatedNodeNameAfterBinding": True,
    "ClientsAllowCARotation": True,
    "ClientsAllowCBOR": False,
    "ClientsAllowTLSCacheGC": True,
    "ClientsPreferCBOR": False,
    "CloudControllerManagerWatchBasedRoutesReconciliation": False,
    "CloudControllerManagerWebhook": False,
    "ClusterTrustBundle": False,
    "ClusterTrustBundleProjection": False,
    "ComponentFlagz": True,
    "ComponentStatusz": True,
    "ConcurrentWatchObjectDecode": False,
    "ConstrainedImpersonation": True,
    "ContainerCheckpoint": True,
    "ContainerRestartRules": True,
    "ContainerStopSignals": False,
    "ContextualLogging": True,
    "CoordinatedLeaderElection": False,
    "CrossNamespaceVolumeDataSource": False,
    "DRAConsumableCapacity": True,
    "DRADeviceBindingConditions": True,
    "DRADeviceTaintRules": False,
    "DRADeviceTaints": True,
    "DRAExtendedResource": True,
    "DRAListTypeAttributes": False,
    "DRANodeAllocatableResources": False,
    "DRAPartitionableDevices": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRAResourceClaimGranularStatusAuthorization": True,
    "DRAResourcePoolStatus": False,
    "DRASchedulerFilterTimeout": True,
    "DRAWorkloadResourceClaims": False,
    "DeclarativeValidationBeta": True,
    "DeploymentReplicaSetTerminatingReplicas": True,
    "DetectCacheInconsistency": True,
    "EnvFiles": True,
    "EventedPLEG": False,
    "ExtendWebSocketsToKubelet": True,
    "GangScheduling": False,
    "GenericWorkload": False,
    "GracefulNodeShutdown": True,
    "GracefulNodeShutdownBasedOnPodPriority": True,
    "HPAConfigurableTolerance": True,
    "HPAScaleToZero": False,
    "HostnameOverride": True,
    "ImageVolumeWithDigest": False,
    "InOrderInformersBatchProcess": True,
    "InPlacePodLevelResourcesVerticalScaling": True,
    "InPlacePodVerticalScalingExclusiveCPUs": False,
    "InPlacePodVerticalScalingExclusiveMemory": False,
    "InPlacePodVerticalScalingInitContainers": True,
    "KubeletCrashLoopBackOffMax": True,
    "KubeletEnsureSecretPulledImages": True,
    "KubeletInUserNamespace": False,
    "KubeletSeparateDiskGC": True,
    "KubeletServiceAccountTokenForCredentialProviders": True,
    "ListFromCacheSnapshot": True,
    "LocalStorageCapacityIsolationFSQuotaMonitoring": False,
    "LoggingAlphaOptions": False,
    "LoggingBetaOptions": True,
    "ManifestBasedAdmissionControlConfig": False,
    "MatchLabelKeysInPodTopologySpread": True,
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": True,
    "MaxUnavailableStatefulSet": False,
    "MemoryQoS": False,
    "MutablePVNodeAffinity": False,
    "MutablePodResourcesForSuspendedJobs": True,
    "MutableSchedulingDirectivesForSuspendedJobs": True,
    "NativeHistograms": False,
    "NodeDeclaredFeatures": True,
    "NominatedNodeNameForExpectation": True,
    "OpenAPIEnums": True,
    "OpportunisticBatching": True,
    "PLEGOnDemandRelist": True,
    "PersistentVolumeClaimUnusedSinceTime": False,
    "PodAndContainerStatsFromCRI": False,
    "PodCertificateRequest": False,
    "PodDeletionCost": True,
    "PodLevelResourceManagers": False,
    "PodLevelResources": True,
    "PodLogsQuerySplitStreams": False,
    "PodReadyToStartContainersCondition": True,
    "PodTopologyLabelsAdmission": True,
    "PodsAPI": False,
    "PortForwardWebsockets": True,
    "PreventStaticPodAPIReferences": True,
    "QOSReserved": False,
    "ReduceDefaultCrashLoopBackOffDecay": False,
    "RelaxedServiceNameValidation": True,
    "ReloadKubeletClientCAFile": True,
    "ReloadKubeletServerCertificateFile": True,
    "RemoteRequestHeaderUID": True,
    "ResourceHealthStatus": True,
    "ResourceHealthStatusMessage": True,
    "RestartAllContainersOnContainerExits": True,
    "RotateKubeletServerCertificate": True,
    "RuntimeClassInImageCriApi": False,
    "SELinuxMount": False,
    "SchedulerAsyncAPICalls": False,
    "SchedulerAsyncPreemption": True,
    "SchedulerPopFromBackoffQ": True,
    "ServiceAccountNodeAudienceRestriction": True,
    "ShardedListAndWatch": False,
    "SizeBasedListCostEstimate": True,
    "StaleControllerConsistencyDaemonSet": True,
    "StaleControllerConsistencyJob": True,
    "StaleControllerConsistencyReplicaSet": True,
    "StaleControllerConsistencyStatefulSet": True,
    "StatefulSetSemanticRevisionComparison": True,
    "StorageCapacityScoring": False,
    "StorageVersionAPI": False,
    "StorageVersionHash": True,
    "StorageVersionMigrator": False,
    "StrictIPCIDRValidation": True,
    "StructuredAuthenticationConfigurationEgressSelector": True,
    "StructuredAuthenticationConfigurationJWKSMetrics": True,
    "TaintTolerationComparisonOperators": False,
    "TokenRequestServiceAccountUIDValidation": True,
    "TopologyAwareWorkloadScheduling": False,
    "TopologyManagerPolicyAlphaOptions": False,
    "TopologyManagerPolicyBetaOptions": True,
    "TranslateStreamCloseWebsocketRequests": True,
    "UnauthenticatedHTTP2DOSMitigation": True,
    "UnknownVersionInteroperabilityProxy": True,
    "UnlockWhileProcessingFIFO": True,
    "UserNamespacesHostNetworkSupport": False,
    "VolumeLimitScaling": False,
    "WatchCacheInitializationPostStartHook": True,
    "WatchList": True,
    "WatchListClient": True,
    "WindowsCPUAndMemoryAffinity": False,
    "WindowsGracefulNodeShutdown": True,
    "WorkloadAwarePreemption": False,
    "WorkloadWithJob": False,
}


def check_gates(gates: Mapping[str, str]) -> list[str]:
    """Problems with `--feature-gates` entries ("[kube:]Name" -> "true"/"false"), one
    sentence each; empty when kpysched can honour them all."""
    problems = []
    for written, text in gates.items():
        component, _, name = written.rpartition(":")
        if component not in ("", KUBE_COMPONENT):
            problems.append(f'unknown component "{component}" in "{written}" (only '
                            f'"{KUBE_COMPONENT}" exists)')
            continue
        value = parse_bool(text.strip())
        if value is None:
            problems.append(f'"{written}={text}": the value must be true or false')
        elif name not in DEFAULTS:
            problems.append(f'unknown feature gate "{name}"')
        elif value != DEFAULTS[name] and name not in SWITCHABLE:
            problems.append(f"{name}={text}: kpysched implements the v1.36 default "
                            f"({name}={str(DEFAULTS[name]).lower()}) only")
    on = gate_values(gates)
    for name, needed in DEPENDS_ON.items():
        off = [need for need in needed if not on.get(need)]
        if on.get(name) and off:
            # Upstream's wording (component-base featuregate), deps as Go prints a slice.
            problems.append(f"{name} is enabled, but depends on features that are "
                            f"disabled: [{' '.join(off)}]")
    return problems


def gate_values(gates: Mapping[str, str]) -> dict[str, bool]:
    """`--feature-gates` entries as name -> bool, "kube:" dropped, the last one winning;
    entries that are not booleans are left out (check_gates reports them)."""
    values = {}
    for written, text in gates.items():
        value = parse_bool(text.strip())
        if value is not None:
            values[written.rpartition(":")[2]] = value
    return values

