"""Workloads shaped like upstream's scheduler_perf (test/integration/scheduler_perf).

Nodes are plain API objects as in its node-default template (4 CPU, 32Gi, 110
pods), labelled with a zone; pods are its templates (pause image, 100m CPU /
500Mi requests and limits, containerPort 80). Initial pods are created already
bound (spec.nodeName set, spread deterministically) so both schedulers start from
byte-identical state; measured pods carry the scheduler's name and wait for it.

The expensive-pod workload (issue 30) measures one pod at a time: a tenant's pod
with 2,500 preferred pod anti-affinity terms (about 1 MB of JSON) on nodes carrying
30 topology labels, each created alone once the scheduler is ready and idle; what
it costs is the scheduler's CPU from the pod's creation to its binding, less what
the idle process spends in that time (runner.py, PodCost).

Gang workloads (issue 18) put pods in PodGroups: upstream's v1.36 API
(scheduling.k8s.io/v1alpha2, behind the GenericWorkload and GangScheduling gates on
the control plane and on both schedulers) or scheduler-plugins' Coscheduling API
(scheduling.x-k8s.io/v1alpha1, a CRD; kpysched only, kube-scheduler has no such
plugin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks import gangs as gang_api
from benchmarks.gangs import Gangs
from tests.cluster.gates import UPSTREAM_DEFAULTS, Gates
from tests.cluster.kube import node_body

# The upstream gang workloads' gates: those of the release the run uses (gangs.py).
GANG = gang_api.UPSTREAM_GANG_GATES

ZONE_KEY = "topology.kubernetes.io/zone"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
INIT_NAMESPACE = "sched-0"
MEASURED_NAMESPACE = "sched-1"
CHURN_NAMESPACE = "sched-2"
NAMESPACES = (INIT_NAMESPACE, MEASURED_NAMESPACE, CHURN_NAMESPACE)


@dataclass(frozen=True, slots=True)
class PodShape:
    """One scheduler_perf pod template."""

    prefix: str
    cpu: str = "100m"
    memory: str = "500Mi"
    limits: bool = True
    labels: dict[str, str] = field(default_factory=dict)
    priority: int | None = None
    grace_period_zero: bool = False
    affinity: dict[str, Any] | None = None
    spread: list[dict[str, Any]] | None = None
    # Mounts the PersistentVolumeClaim named like the pod (see volume_bodies)...
    claim: bool = False
    # ...whose volume is a CSI one of CSI_DRIVER instead of an in-tree AWS EBS one.
    csi_volume: bool = False
    # CPU/memory requests (and limits); False: the container requests nothing
    # (scheduler_perf's DRA pod templates).
    requests: bool = True
    # DRA: the container uses one claim, `resource`, made from this
    # ResourceClaimTemplate by the resourceclaim controller...
    claim_template: str | None = None
    # ...or the ResourceClaim named like the pod (pre-allocated initial pods).
    resource_claim: bool = False
    # spec.schedulingGates: the pod waits behind them (as Kueue holds its pods).
    gates: tuple[str, ...] = ()

    def body(self, name: str, scheduler_name: str, node_name: str | None = None
             ) -> dict[str, Any]:
        resources: dict[str, Any] = {}
        if self.requests:
            requests = {"cpu": self.cpu, "memory": self.memory}
            resources["requests"] = requests
            if self.limits:
                resources["limits"] = dict(requests)
        if self.claim_template is not None or self.resource_claim:
            resources["claims"] = [{"name": "resource"}]
        spec: dict[str, Any] = {
            "schedulerName": scheduler_name,
            "containers": [{"name": "pause", "image": PAUSE_IMAGE,
                            "ports": [{"containerPort": 80}], "resources": resources}],
        }
        if self.grace_period_zero:
            spec["terminationGracePeriodSeconds"] = 0
        if self.priority is not None:
            spec["priority"] = self.priority
        if self.affinity is not None:
            spec["affinity"] = self.affinity
        if self.spread is not None:
            spec["topologySpreadConstraints"] = self.spread
        if node_name is not None:
            spec["nodeName"] = node_name
        if self.gates:
            spec["schedulingGates"] = [{"name": gate} for gate in self.gates]
        if self.claim:
            spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        if self.claim_template is not None:
            spec["resourceClaims"] = [{"name": "resource",
                                       "resourceClaimTemplateName": self.claim_template}]
        elif self.resource_claim:
            spec["resourceClaims"] = [{"name": "resource", "resourceClaimName": name}]
        metadata: dict[str, Any] = {"name": name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


DEFAULT_POD = PodShape("pod")
PV_POD = PodShape("pod-pv", claim=True)
CSI_PV_POD = PodShape("pod-pv", claim=True, csi_volume=True)
# SchedulingCSIPVs: every node may attach 39 volumes of this driver (its allocatable
# and its CSINode say so, as scheduler_perf's nodeAllocatableStrategy writes both).
CSI_DRIVER = "ebs.csi.aws.com"
CSI_VOLUMES_PER_NODE = 39
NODE_AFFINITY_POD = PodShape("node-affinity", affinity={"nodeAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
        "matchExpressions": [{"key": ZONE_KEY, "operator": "In",
                              "values": ["zone1", "zone2"]}]}]}}})
ANTI_AFFINITY_POD = PodShape("anti-affinity-pod", labels={"color": "green"}, affinity={
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": [MEASURED_NAMESPACE, INIT_NAMESPACE]}]}})
SPREADING_POD = PodShape("spreading-pod", labels={"color": "blue"}, spread=[{
    "maxSkew": 5, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"color": "blue"}}}])
# scheduler_perf's affinity config (test/integration/scheduler_perf/affinity): upstream's
# slowest cases.
AFFINITY_NAMESPACES = [MEASURED_NAMESPACE, INIT_NAMESPACE]
POD_AFFINITY_POD = PodShape("affinity-pod", labels={"color": "blue"}, affinity={
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"color": "blue"}}, "topologyKey": ZONE_KEY,
        "namespaces": AFFINITY_NAMESPACES}]}})


def _preferred(kind: str, colour: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 1, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"color": colour}},
            "topologyKey": "kubernetes.io/hostname", **selector}}]}}


PREFERRED_AFFINITY_POD = PodShape(
    "preferred-affinity-pod", labels={"color": "red"},
    affinity=_preferred("podAffinity", "red", {"namespaces": AFFINITY_NAMESPACES}))
PREFERRED_ANTI_AFFINITY_POD = PodShape(
    "preferred-anti-affinity-pod", labels={"color": "yellow"},
    affinity=_preferred("podAntiAffinity", "yellow", {"namespaces": AFFINITY_NAMESPACES}))
# Namespaces labelled team=devops are the ones the namespaceSelector terms select.
DEVOPS = {"team": "devops"}
ANTI_AFFINITY_NS_SELECTOR_POD = PodShape("anti-affinity-pod", labels={"color": "green"},
                                         affinity={"podAntiAffinity": {
    "requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaceSelector": {"matchLabels": DEVOPS}}]}})
# MixedSchedulingBasePod: the initial pods are of five kinds, as many of each.
MIXED_INIT_PODS = (DEFAULT_POD, POD_AFFINITY_POD, ANTI_AFFINITY_POD, PREFERRED_AFFINITY_POD,
                   PREFERRED_ANTI_AFFINITY_POD)
LOW_PRIORITY_POD = PodShape("low", cpu="900m", grace_period_zero=True)
HIGH_PRIORITY_POD = PodShape("high", cpu="3000m", priority=10)
LARGE_CPU_POD = PodShape("large", cpu="9", limits=False, priority=10)


def volume_bodies(namespace: str, name: str, csi: bool = False
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claim and volume of one pod of SchedulingInTreePVs (scheduler_perf's
    templates/pvc.yaml and pv-aws.yaml): 1Gi ReadOnlyMany, an in-tree AWS EBS volume,
    bound to each other from the start (the claim says bind-completed, the volume's
    claimRef names the claim), as upstream's CreatePodWithPersistentVolume makes them.
    With `csi`, SchedulingCSIPVs' pv-csi.yaml: a CSI volume of CSI_DRIVER whose handle
    is the volume's name. The PV's name carries the namespace: PVs are cluster-wide."""
    pv_name = f"{namespace}-pv-{name}"
    claim = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"pv.kubernetes.io/bind-completed": "true"}},
        "spec": {"accessModes": ["ReadOnlyMany"],
                 "resources": {"requests": {"storage": "1Gi"}}, "volumeName": pv_name},
    }
    source = ({"csi": {"driver": CSI_DRIVER, "volumeHandle": pv_name}} if csi
              else {"awsElasticBlockStore": {"volumeID": pv_name}})
    volume = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": {"accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"},
                 **source,
                 "persistentVolumeReclaimPolicy": "Retain",
                 "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                              "namespace": namespace, "name": name}},
    }
    return claim, volume


DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_DEVICE_CLASS = "test-class"
DRA_CLAIM_TEMPLATE = "test-claim-template"
DRA_REQUEST = "req-0"
DRA_POD = PodShape("test-dra", requests=False, claim_template=DRA_CLAIM_TEMPLATE)
DRA_INIT_POD = PodShape("test-dra", requests=False, resource_claim=True)


@dataclass(frozen=True, slots=True)
class DraSetup:
    """scheduler_perf's DRA scaffolding (test/integration/scheduler_perf/dra.go and
    dra/templates): one ResourceSlice per node from one driver with
    `devices_per_node` devices (its createResourceDriver, maxClaimsPerNode), the
    DeviceClass `test-class` selecting that driver by CEL, and the
    ResourceClaimTemplate `test-claim-template` (one device of that class) in the
    initial and the measured namespace."""

    devices_per_node: int

    def device_class(self) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": DRA_DEVICE_CLASS},
                "spec": {"selectors": [{"cel": {
                    "expression": f'device.driver == "{DRA_DRIVER}"'}}]}}

    @staticmethod
    def claim_spec() -> dict[str, Any]:
        return {"devices": {"requests": [{"name": DRA_REQUEST, "exactly": {
            "deviceClassName": DRA_DEVICE_CLASS}}]}}

    def claim_template(self, namespace: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": DRA_CLAIM_TEMPLATE, "namespace": namespace},
                "spec": {"spec": self.claim_spec()}}

    def resource_slice(self, node_name: str) -> dict[str, Any]:
        """As dra.go's resourceSlice(): pool and slice named after the node."""
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": node_name},
                "spec": {"driver": DRA_DRIVER, "nodeName": node_name,
                         "pool": {"name": node_name, "generation": 0,
                                  "resourceSliceCount": 1},
                         "devices": [{
                             "name": f"instance-{i}",
                             "attributes": {
                                 "model": {"string": "A100"},
                                 "family": {"string": "GPU"},
                                 "driverVersion": {"version": "1.2.3"},
                                 "dra.example.com/numa": {"int": i}},
                             "capacity": {"memory": {"value": "1Gi"}},
                         } for i in range(self.devices_per_node)]}}

    def allocated_claim(self, namespace: str, name: str) -> dict[str, Any]:
        """An initial pod's claim as the scheduler leaves it (its finalizer set); the
        allocation is written to status apart (allocation_status)."""
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": namespace,
                             "finalizers": ["resource.kubernetes.io/delete-protection"]},
                "spec": self.claim_spec()}

    @staticmethod
    def allocation_status(node_name: str, device: int, pod_name: str,
                          pod_uid: str) -> dict[str, Any]:
        return {"status": {
            "allocation": {
                "devices": {"results": [{"request": DRA_REQUEST, "driver": DRA_DRIVER,
                                         "pool": node_name,
                                         "device": f"instance-{device}"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
                    "key": "metadata.name", "operator": "In", "values": [node_name]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_uid}],
        }}


# Issue 30's tenant pod and nodes (the shape of the issue's repro, cycle_cost.py with
# KIND=antiaffinity and SCALE=25): every node carries label-0..label-29, all splitting the
# nodes the same 7 ways (value-{index % 7}-{k}); the pod has 2,500 preferred
# anti-affinity terms of weight 1 over those keys, each selecting pods in every
# namespace whose `app` is not one of 20 values no pod carries, so every existing pod
# matches every term.
TENANT_LABEL_KEYS = 30
TENANT_DOMAINS = 7
EXPENSIVE_TERMS = 2500
EXPENSIVE_TERM_VALUES = 20


def tenant_node_labels(index: int) -> dict[str, str]:
    return {f"label-{k}": f"value-{index % TENANT_DOMAINS}-{k}"
            for k in range(TENANT_LABEL_KEYS)}


def expensive_anti_affinity(terms: int = EXPENSIVE_TERMS) -> dict[str, Any]:
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {
            "topologyKey": f"label-{t % TENANT_LABEL_KEYS}", "namespaceSelector": {},
            "labelSelector": {"matchExpressions": [{
                "key": "app", "operator": "NotIn",
                "values": [f"v{t}-{j}" for j in range(EXPENSIVE_TERM_VALUES)]}]}}}
        for t in range(terms)]}}


EXPENSIVE_POD = PodShape("expensive", labels={"app": "expensive"},
                         affinity=expensive_anti_affinity())

# Members of a gang that can never fit: 100 CPU each on 4-CPU nodes, all 16 needed.
NEVER_FITTING_MEMBER = PodShape("never-fits", cpu="100", limits=False)
# Issue 32 items 6 and 7: what 10,000 pods waiting in the queue cost each event.
GATED_POD = PodShape("gated", gates=("example.com/hold",))
NEVER_FITTING_POD = PodShape("never-fits", cpu="100", limits=False)
WAITING_PODS = 10_000
NEVER_FITTING_MEMBERS = 16


def _round_robin(index: int, nodes: int) -> int:
    return index % nodes


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    upstream: str  # the scheduler_perf test case it mirrors
    summary: str
    zones: tuple[str, ...]
    init_pod: PodShape
    measured_pod: PodShape
    default_init_pods: Callable[[int], int]
    default_pods: Callable[[int], int]
    # Where initial pod i is bound: node index, given (i, node count).
    place_init: Callable[[int, int], int] = _round_robin
    # Pods created during the measurement that never fit (Unschedulable).
    churn_pod: PodShape | None = None
    churn_interval_seconds: float = 0.2
    # Never-fitting pods (churn_pod's shape) created once, before the measured pods
    # and the scheduler, instead of the churn: (nodes) -> count. Not upstream's
    # shape; it makes unschedulable attempts count retries, not run length.
    blocked_pods: Callable[[int], int] | None = None
    # Largest measured pod count that can all be placed: (nodes, init) -> pods.
    capacity: Callable[[int, int], int] | None = None
    # DRA: ResourceSlices, DeviceClass and claim templates made before the run, and
    # kube-controller-manager's resourceclaim controller running beside the server.
    dra: DraSetup | None = None
    node_labels: tuple[tuple[str, str], ...] = ()
    # Labels that differ by node: (node index) -> labels.
    labels_of_node: Callable[[int], dict[str, str]] | None = None
    # Measured pods are created one at a time once the scheduler is ready and idle,
    # each after the previous one is bound, and each one's CPU cost is measured
    # (runner.py, PodCost); the run is in create mode live.
    one_at_a_time: bool = False
    # Measured pods in gangs; blocked pods (blocked_pods, churn_pod's shape) in gangs.
    gangs: Gangs | None = None
    blocked_gangs: Gangs | None = None
    # Feature gates and runtime-config of the control plane, and the gates both
    # schedulers run with.
    gates: Gates = UPSTREAM_DEFAULTS
    # scheduler-plugins' PodGroup CRD installed and kpysched's profile with
    # Coscheduling (COSCHEDULING_PLUGINS); kube-scheduler cannot run it.
    coscheduling: bool = False
    # The workload this one is compared with (same sizes, one difference).
    baseline: str | None = None
    # The test extender beside the scheduler, answering filter and prioritize after
    # this many milliseconds (benchmarks/extender.py).
    extender_delay_ms: float | None = None
    # Initial pod i takes init_pods_cycle[i % len] instead of init_pod (mixed kinds).
    init_pods_cycle: tuple[PodShape, ...] = ()
    # Labels on the initial and measured namespaces (namespaceSelector workloads).
    namespace_labels: tuple[tuple[str, str], ...] = ()
    # Each node may attach this many CSI_DRIVER volumes: its allocatable and a CSINode.
    csi_volumes_per_node: int | None = None
    # Steady state (benchmarks/steady.py): the measured pods are a fixed number kept
    # pending, each bound one deleted and replaced, for this many seconds by default
    # (--duration); the run is in create mode live.
    steady_seconds: float | None = None

    def csi_node(self, index: int) -> dict[str, Any] | None:
        if self.csi_volumes_per_node is None:
            return None
        name = f"node-{index}"
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name},
                "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name,
                                      "topologyKeys": None,
                                      "allocatable": {"count": self.csi_volumes_per_node}}]}}

    def init_pod_for(self, index: int) -> PodShape:
        if self.init_pods_cycle:
            return self.init_pods_cycle[index % len(self.init_pods_cycle)]
        return self.init_pod

    def node(self, index: int) -> dict[str, Any]:
        extra = ({f"attachable-volumes-csi-{CSI_DRIVER}": str(self.csi_volumes_per_node)}
                 if self.csi_volumes_per_node is not None else None)
        return node_body(f"node-{index}", extra_allocatable=extra,
                         labels={ZONE_KEY: self.zones[index % len(self.zones)],
                                 **dict(self.node_labels),
                                 **(self.labels_of_node(index) if self.labels_of_node
                                    else {})})


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload(
        "basic", "SchedulingBasic", "default pods on empty-ish nodes",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000)),
    Workload(
        "basic-extender", "SchedulingBasic + extender",
        "as basic, with the test extender answering filter and prioritize (node names) "
        "after a fixed 2 ms",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000), extender_delay_ms=2.0,
        baseline="basic"),
    Workload(
        "node-affinity", "SchedulingNodeAffinity",
        "required node affinity (zone In [zone1, zone2]) on every pod",
        zones=("zone1",), init_pod=NODE_AFFINITY_POD, measured_pod=NODE_AFFINITY_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: max(2 * nodes, 3000)),
    Workload(
        "pod-anti-affinity", "SchedulingPodAntiAffinity",
        "required pod anti-affinity per hostname: one pod per node",
        zones=("zone1", "zone2", "zone3"), init_pod=ANTI_AFFINITY_POD,
        measured_pod=ANTI_AFFINITY_POD,
        default_init_pods=lambda nodes: nodes // 5,
        default_pods=lambda nodes: max(1, min(nodes - nodes // 5, 2000)),
        place_init=lambda index, nodes: index,
        capacity=lambda nodes, init: nodes - init),
    Workload(
        "topology-spreading", "TopologySpreading",
        "DoNotSchedule spread over 3 zones, maxSkew 5",
        zones=("moon-1", "moon-2", "moon-3"), init_pod=DEFAULT_POD,
        measured_pod=SPREADING_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: max(nodes, 3000)),
    Workload(
        "pod-affinity", "SchedulingPodAffinity",
        "required pod affinity to the blue pods' zone (all nodes in zone1), namespaces "
        "listed; as many initial pods as nodes, twice as many measured",
        zones=("zone1",), init_pod=POD_AFFINITY_POD, measured_pod=POD_AFFINITY_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: 2 * nodes),
    Workload(
        "preferred-pod-affinity", "SchedulingPreferredPodAffinity",
        "preferred pod affinity (weight 1) to red pods per hostname",
        zones=("zone1", "zone2", "zone3"), init_pod=PREFERRED_AFFINITY_POD,
        measured_pod=PREFERRED_AFFINITY_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: 2 * nodes),
    Workload(
        "preferred-pod-anti-affinity", "SchedulingPreferredPodAntiAffinity",
        "preferred pod anti-affinity (weight 1) to yellow pods per hostname",
        zones=("zone1", "zone2", "zone3"), init_pod=PREFERRED_ANTI_AFFINITY_POD,
        measured_pod=PREFERRED_ANTI_AFFINITY_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: 2 * nodes),
    Workload(
        "mixed-affinity", "MixedSchedulingBasePod",
        "default pods among initial pods of five kinds (plain, required affinity, "
        "required anti-affinity, preferred affinity, preferred anti-affinity), all in zone1",
        zones=("zone1",), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        init_pods_cycle=MIXED_INIT_PODS,
        # Two initial pods per node, consecutive ones: the required anti-affinity pods
        # (every fifth) land on distinct nodes, as a scheduler would have put them.
        place_init=lambda index, nodes: (index // 2) % nodes,
        # Upstream: initPods of each kind (200 at 500 nodes, 2000 at 5000).
        default_init_pods=lambda nodes: 5 * (2 * nodes // 5),
        default_pods=lambda nodes: 2 * nodes),
    Workload(
        "anti-affinity-ns-selector", "SchedulingRequiredPodAntiAffinityWithNSSelector",
        "required pod anti-affinity per hostname to green pods of namespaces labelled "
        "team=devops (namespaceSelector); initial pods one per node (upstream's 5000-node "
        "proportions: 4/5 of the nodes taken, 1/5 measured; its initial pods span 100 "
        "labelled namespaces, here one)",
        zones=("zone1", "zone2", "zone3"), init_pod=ANTI_AFFINITY_NS_SELECTOR_POD,
        measured_pod=ANTI_AFFINITY_NS_SELECTOR_POD,
        default_init_pods=lambda nodes: (4 * nodes) // 5,
        default_pods=lambda nodes: max(1, nodes // 5),
        place_init=lambda index, nodes: index,
        capacity=lambda nodes, init: nodes - init,
        namespace_labels=tuple(DEVOPS.items())),
    Workload(
        "preemption", "PreemptionBasic",
        "nodes full of 4x900m low-priority pods; each 3-CPU high-priority pod preempts 3",
        zones=("zone1", "zone2", "zone3"), init_pod=LOW_PRIORITY_POD,
        measured_pod=HIGH_PRIORITY_POD,
        default_init_pods=lambda nodes: 4 * nodes, default_pods=lambda nodes: nodes,
        place_init=lambda index, nodes: (index // 4) % nodes,
        capacity=lambda nodes, init: nodes),
    Workload(
        "preemption-gated", "PreemptionBasic + 10,000 gated pods",
        "as preemption, with 10,000 pods behind a scheduling gate (as Kueue holds its "
        "pods) created before the scheduler: what each finished preemption costs",
        zones=("zone1", "zone2", "zone3"), init_pod=LOW_PRIORITY_POD,
        measured_pod=HIGH_PRIORITY_POD,
        default_init_pods=lambda nodes: 4 * nodes, default_pods=lambda nodes: nodes,
        place_init=lambda index, nodes: (index // 4) % nodes,
        capacity=lambda nodes, init: nodes,
        churn_pod=GATED_POD, blocked_pods=lambda nodes: WAITING_PODS,
        baseline="preemption"),
    Workload(
        "expensive-pod", "none (issue 30)",
        "one tenant's pod with 2,500 preferred pod anti-affinity terms (~1 MB) over 30 "
        "node labels, created alone on an idle scheduler: CPU from creation to binding",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=EXPENSIVE_POD,
        default_init_pods=lambda nodes: 6 * nodes, default_pods=lambda nodes: 3,
        labels_of_node=tenant_node_labels, one_at_a_time=True),
    Workload(
        "in-tree-pvs", "SchedulingInTreePVs",
        "every pod mounts its own bound claim of an in-tree AWS EBS volume",
        zones=("zone1", "zone2", "zone3"), init_pod=PV_POD, measured_pod=PV_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 2000)),
    Workload(
        "csi-pvs", "SchedulingCSIPVs",
        "every pod mounts its own bound claim of a CSI volume (ebs.csi.aws.com); nodes "
        "may attach 39 such volumes (allocatable and CSINode)",
        zones=("zone1", "zone2", "zone3"), init_pod=CSI_PV_POD, measured_pod=CSI_PV_POD,
        default_init_pods=lambda nodes: nodes, default_pods=lambda nodes: 2 * nodes,
        csi_volumes_per_node=CSI_VOLUMES_PER_NODE),
    Workload(
        "unschedulable", "Unschedulable",
        "default pods flow while 9-CPU high-priority pods that never fit arrive at 5/s",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: max(1, nodes // 50),
        default_pods=lambda nodes: max(2 * nodes, 3000), churn_pod=LARGE_CPU_POD),
    Workload(
        "unschedulable-fixed", "Unschedulable",
        "as unschedulable, but a fixed nodes/10 never-fitting 9-CPU pods exist before "
        "the scheduler starts (no churn): each retry shows in the unschedulable attempts",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: max(1, nodes // 50),
        default_pods=lambda nodes: max(2 * nodes, 3000), churn_pod=LARGE_CPU_POD,
        blocked_pods=lambda nodes: max(1, nodes // 10)),
    Workload(
        "dra-claim-templates", "SchedulingWithResourceClaimTemplate",
        "every pod gets its own ResourceClaim from a template: one of the 10 devices "
        "of its node's ResourceSlice (DRA, structured parameters)",
        zones=("zone1", "zone2", "zone3"), init_pod=DRA_INIT_POD, measured_pod=DRA_POD,
        # Upstream's 5000pods_500nodes: 10 devices per node, half of them taken by
        # initial pods, the measured pods fill the rest.
        default_init_pods=lambda nodes: 5 * nodes, default_pods=lambda nodes: 5 * nodes,
        capacity=lambda nodes, init: 10 * nodes - init,
        dra=DraSetup(devices_per_node=10), node_labels=(("node-with-dra", "true"),)),
    Workload(
        "dra-steady-state", "SteadyStateClusterResourceClaimTemplate",
        "as dra-claim-templates in a steady state: 10 pods kept pending, each bound one "
        "deleted (its device freed) and replaced, for 10 s; pods scheduled per second",
        zones=("zone1", "zone2", "zone3"), init_pod=DRA_INIT_POD, measured_pod=DRA_POD,
        # Upstream's empty_500nodes (v1.36 SteadyStateClusterResourceClaimTemplate, v1.37
        # SchedulingWithResourceClaimTemplate with steadyState): 10 devices per node, no
        # device taken, 10 pods kept for 10s; its half_ and full_ cases are --init-pods
        # 5 x nodes and 10 x nodes - 10. The same shape at any node count.
        default_init_pods=lambda nodes: 0, default_pods=lambda nodes: 10,
        capacity=lambda nodes, init: 10 * nodes - init,
        dra=DraSetup(devices_per_node=10), node_labels=(("node-with-dra", "true"),),
        steady_seconds=10.0),
    Workload(
        "gang", "GangScheduling",
        "gangs of 8 default pods (upstream PodGroup scheduling.k8s.io/v1alpha2, gang "
        "minCount 8; each PodGroup made before its pods), all fit; gates on",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD,
        measured_pod=PodShape("gang-pod"),
        default_init_pods=lambda nodes: min(nodes, 1000), default_pods=lambda nodes: 2400,
        gangs=gang_api.UPSTREAM_GANGS_OF_8, gates=GANG),
    Workload(
        "gang-3", "GangScheduling",
        "upstream's own gang case: gangs of 3 default pods (upstream PodGroup, gang "
        "minCount 3; each PodGroup made before its pods), no initial pods, all fit; gates "
        "on. Upstream's 5000Nodes_1000Gangs_3000Pods is --nodes 5000 (its default size)",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD,
        measured_pod=PodShape("gang-pod"),
        default_init_pods=lambda nodes: 0, default_pods=lambda nodes: 3000,
        gangs=gang_api.UPSTREAM_GANGS_OF_3, gates=GANG),
    Workload(
        "gang-blocked", "SchedulingBasic + never-fitting gang",
        "as basic, gates on, with a gang of 16 members of 100 CPU each (upstream "
        "PodGroup, minCount 16) created before the measured pods: it never fits",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000),
        churn_pod=NEVER_FITTING_MEMBER, blocked_pods=lambda nodes: NEVER_FITTING_MEMBERS,
        blocked_gangs=gang_api.UPSTREAM_NEVER_FITTING_GANG, gates=GANG,
        baseline="gang-blocked-baseline"),
    Workload(
        "gang-pending", "SchedulingBasic + 10,000 unschedulable pods, gang gates on",
        "as basic with the gang gates on, and 10,000 plain pods of 100 CPU that never "
        "fit created before the scheduler: what each pending pod's add costs while they "
        "wait (upstream moves the unschedulable pods on every add under GangScheduling)",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000),
        churn_pod=NEVER_FITTING_POD, blocked_pods=lambda nodes: WAITING_PODS, gates=GANG,
        baseline="gang-blocked-baseline"),
    Workload(
        "gang-blocked-baseline", "SchedulingBasic, gang gates on",
        "gang-blocked without the gang: basic with the gang gates on",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000), gates=GANG),
    Workload(
        "coscheduling", "GangScheduling (Coscheduling API)",
        "as gang, with scheduler-plugins' API: PodGroup scheduling.x-k8s.io/v1alpha1 "
        "minMember 8, pods labelled; kpysched with Coscheduling only",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD,
        measured_pod=PodShape("gang-pod"),
        default_init_pods=lambda nodes: min(nodes, 1000), default_pods=lambda nodes: 2400,
        gangs=gang_api.COSCHEDULING_GANGS_OF_8, coscheduling=True),
    Workload(
        "coscheduling-blocked", "SchedulingBasic + never-fitting gang (Coscheduling API)",
        "as gang-blocked, with scheduler-plugins' API (minMember 16); kpysched with "
        "Coscheduling only",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000),
        churn_pod=NEVER_FITTING_MEMBER, blocked_pods=lambda nodes: NEVER_FITTING_MEMBERS,
        blocked_gangs=gang_api.COSCHEDULING_NEVER_FITTING_GANG, coscheduling=True,
        baseline="coscheduling-blocked-baseline"),
    Workload(
        "coscheduling-blocked-baseline", "SchedulingBasic, Coscheduling profile",
        "coscheduling-blocked without the gang: basic with kpysched's Coscheduling "
        "profile; kpysched only",
        zones=("zone1", "zone2", "zone3"), init_pod=DEFAULT_POD, measured_pod=DEFAULT_POD,
        default_init_pods=lambda nodes: min(nodes, 1000),
        default_pods=lambda nodes: max(2 * nodes, 3000), coscheduling=True),
)}


@dataclass(frozen=True, slots=True)
class Sizes:
    nodes: int
    init_pods: int
    pods: int


def sizes_for(workload: Workload, nodes: int, init_pods: int | None,
              pods: int | None) -> Sizes:
    init = workload.default_init_pods(nodes) if init_pods is None else init_pods
    measured = workload.default_pods(nodes) if pods is None else pods
    if nodes < 1 or init < 0 or measured < 1:
        raise ValueError("need at least 1 node and 1 measured pod")
    if workload.name in ("pod-anti-affinity", "anti-affinity-ns-selector") and init > nodes:
        raise ValueError(f"{workload.name} puts one initial pod per node: "
                         f"--init-pods {init} > --nodes {nodes}")
    if workload.dra is not None and init > workload.dra.devices_per_node * nodes:
        raise ValueError(f"{workload.name}: {init} initial pods need more than the "
                         f"{workload.dra.devices_per_node} devices of each of {nodes} nodes")
    if workload.gangs is not None and measured % workload.gangs.size:
        raise ValueError(f"{workload.name} puts measured pods in gangs of "
                         f"{workload.gangs.size}: --pods {measured} is not a multiple")
    if workload.capacity is not None and measured > workload.capacity(nodes, init):
        raise ValueError(f"{workload.name} can place at most "
                         f"{workload.capacity(nodes, init)} measured pods on {nodes} nodes "
                         f"with {init} initial pods; asked for {measured}")
    return Sizes(nodes, init, measured)
