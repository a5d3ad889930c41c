"""Hypothesis strategies for Pods and Nodes in their wire shape: the JSON-like dicts a watch
event carries, before kpysched decodes them.

Most values are ones the API server accepts, so that pods get far enough to meet every
plugin; around them are the odd ones a real cluster never sends but a decoder and the
plugins must still survive: odd quantities, operators and effects nobody defined, In
with no values, Gt with a word, unicode, very long strings, huge integers, missing
fields, nulls and a string where a list belongs.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

Json = Any

WRONG_TYPES = (None, "not-a-list", 7, [], {}, True, 1.5)


def _mostly(usual: st.SearchStrategy[Json], rare: st.SearchStrategy[Json],
            one_in: int = 8) -> st.SearchStrategy[Json]:
    """`usual`, and `rare` about once in `one_in` draws (shrinking towards `usual`).
    Not one_of(usual, usual, ..., rare): one_of folds repeated branches into one."""
    return st.sampled_from([False] * (one_in - 1) + [True]).flatmap(
        lambda odd: rare if odd else usual)


def _sometimes_odd(value: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    """`value`, and now and then a null or a value of the wrong type."""
    return _mostly(value, st.sampled_from(WRONG_TYPES), one_in=20)


def _merged(*parts: st.SearchStrategy[dict[str, Json]]) -> st.SearchStrategy[dict[str, Json]]:
    """One dict of the parts' keys (later parts win)."""
    return st.tuples(*parts).map(lambda dicts: {k: v for d in dicts for k, v in d.items()})


def _rarely(fields: dict[str, st.SearchStrategy[Json]],
            one_in: int = 10) -> st.SearchStrategy[dict[str, Json]]:
    """All of `fields` about once in `one_in` draws; otherwise none."""
    return _mostly(st.just({}), st.fixed_dictionaries(fields), one_in)


def _maybe(fields: dict[str, st.SearchStrategy[Json]]) -> st.SearchStrategy[dict[str, Json]]:
    """A dict with any subset of `fields`: a missing field is as likely as a present one."""
    return st.fixed_dictionaries({}, optional=fields)


# --- scalars -------------------------------------------------------------------------------

ODD_QUANTITIES = ("1e3", "0.5Gi", "-1", "1Ei", "abc", "1.5m", "", "9223372036854775807",
                  "9223372036854775808", "1e2147483648", "0.000000001", "1E", "12E", "9Ei",
                  "+1", ".5", "1.", "1e-9", "1Ki", "0", "-0", "1e", "1i", "1Mi ", " 1",
                  "\uff11", "1k1", "9" * 80, "1" + "0" * 5000)
SANE_QUANTITIES = ("100m", "1", "2", "4", "500Mi", "1Gi", "8Gi", "110", "3", "250m")
ODD_INTS = (0, -1, 1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**63, 2**64, 10**30,
            -(10**30))

# A small alphabet of keys and values, so that selectors, taints and spread constraints
# meet labels that match them; the odd ones are mixed in.
PLAIN_KEYS = ("app", "zone", "tier", "kubernetes.io/hostname", "topology.kubernetes.io/zone",
              "topology.kubernetes.io/region", "example.com/gpu", "node-role.kubernetes.io/x")
PLAIN_VALUES = ("a", "b", "c", "web", "db", "1", "2", "10", "-3", "zone-a", "")
ODD_STRINGS = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="aé日本\U0001f600/.-_ \x00\n", max_size=8),
    st.sampled_from(("x" * 300, "a/b/c", "/", "-", "..", "a" * 64, "k" * 253 + "/n",
                     "\u202e", "null", "0x10", "1e3", "1.5")),
)

label_keys = _mostly(st.sampled_from(PLAIN_KEYS), ODD_STRINGS, one_in=4)
label_values = _mostly(st.sampled_from(PLAIN_VALUES), ODD_STRINGS, one_in=4)
odd_quantities: st.SearchStrategy[Json] = st.one_of(
    st.sampled_from(ODD_QUANTITIES),
    st.from_regex(r"\A[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,3}|[numkMGTPE]|"
                  r"[KMGTPE]i)?\Z"),
    st.sampled_from(ODD_INTS),
    st.floats(allow_nan=False, allow_infinity=False),
)
quantities = _mostly(st.sampled_from(SANE_QUANTITIES), odd_quantities, one_in=5)
# Nodes with an unparseable quantity are skipped whole: keep most of them usable.
node_quantities = _mostly(st.sampled_from(SANE_QUANTITIES), odd_quantities, one_in=20)
resource_names = _mostly(
    st.sampled_from(("cpu", "memory", "pods", "ephemeral-storage", "example.com/gpu",
                     "hugepages-2Mi", "nvidia.com/gpu", "attachable-volumes-csi-x")),
    ODD_STRINGS, one_in=5)
ints = _mostly(st.integers(-5, 5), st.sampled_from(ODD_INTS), one_in=4)


# --- selectors and terms -------------------------------------------------------------------

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "in", "Equals", "", "≠")
requirement_values = st.lists(st.one_of(label_values, st.sampled_from(("1", "abc", "-7"))),
                              max_size=3)
node_selector_requirements = st.fixed_dictionaries(
    {"key": st.one_of(label_keys, st.just("metadata.name")),
     "operator": st.sampled_from(OPERATORS)},
    optional={"values": _sometimes_odd(requirement_values)},
)
node_selector_terms = _maybe({
    "matchExpressions": _sometimes_odd(st.lists(node_selector_requirements, max_size=3)),
    "matchFields": st.lists(node_selector_requirements, max_size=2),
})
label_selectors = _maybe({
    "matchLabels": _sometimes_odd(st.dictionaries(label_keys, label_values, max_size=3)),
    "matchExpressions": st.lists(
        st.fixed_dictionaries({"key": label_keys, "operator": st.sampled_from(OPERATORS)},
                              optional={"values": requirement_values}),
        max_size=3),
})
node_affinities = _maybe({
    "requiredDuringSchedulingIgnoredDuringExecution": _sometimes_odd(_maybe({
        "nodeSelectorTerms": st.lists(node_selector_terms, max_size=3)})),
    "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
        st.fixed_dictionaries({"weight": ints, "preference": node_selector_terms}),
        max_size=3),
})
pod_affinity_terms = _maybe({
    "topologyKey": st.one_of(st.sampled_from(PLAIN_KEYS), ODD_STRINGS),
    "labelSelector": _sometimes_odd(label_selectors),
    "namespaces": st.lists(st.one_of(st.just("default"), ODD_STRINGS), max_size=2),
    "namespaceSelector": label_selectors,
    "matchLabelKeys": st.lists(label_keys, max_size=2),
    "mismatchLabelKeys": st.lists(label_keys, max_size=2),
})
pod_affinities = _maybe({
    "requiredDuringSchedulingIgnoredDuringExecution": st.lists(pod_affinity_terms, max_size=2),
    "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
        st.fixed_dictionaries({"weight": ints, "podAffinityTerm": pod_affinity_terms}),
        max_size=2),
})
affinities = _maybe({
    "nodeAffinity": node_affinities,
    "podAffinity": pod_affinities,
    "podAntiAffinity": pod_affinities,
})

# --- taints and tolerations ----------------------------------------------------------------

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute", "", "Sometimes", "noschedule")
taints = st.fixed_dictionaries(
    {"key": label_keys, "effect": st.sampled_from(EFFECTS)},
    optional={"value": label_values},
)
tolerations = _maybe({
    "key": label_keys,
    "operator": st.sampled_from(("Equal", "Exists", "", "Lt", "Gt", "equal", "Whatever")),
    "value": label_values,
    "effect": st.sampled_from(EFFECTS),
    "tolerationSeconds": ints,
})

# --- containers and the pod spec -----------------------------------------------------------

resource_lists = st.dictionaries(resource_names, quantities, max_size=5)
container_ports = _maybe({
    "containerPort": ints,
    "hostPort": st.one_of(st.sampled_from((80, 8080, 0, -1, 65536, 2**40)), ints),
    "protocol": st.sampled_from(("TCP", "UDP", "SCTP", "", "tcp", "ICMP")),
    "hostIP": st.sampled_from(("", "0.0.0.0", "127.0.0.1", "::", "not-an-ip", "10.0.0.1")),
})
containers = st.fixed_dictionaries(
    {"name": st.sampled_from(("c", "sidecar", "日本", ""))},
    optional={
        "image": st.one_of(st.sampled_from(("nginx", "nginx:1.25", "busybox", "")),
                           ODD_STRINGS),
        "resources": _sometimes_odd(_maybe({"requests": _sometimes_odd(resource_lists),
                                            "limits": resource_lists})),
        "ports": _sometimes_odd(st.lists(container_ports, max_size=3)),
        "restartPolicy": st.sampled_from(("Always", "Never", "OnFailure", "")),
        "restartPolicyRules": st.lists(_maybe({"action": st.sampled_from(
            ("Restart", "", "Explode"))}), max_size=2),
    },
)
spread_constraints = st.fixed_dictionaries(
    {"maxSkew": ints,
     "topologyKey": st.one_of(st.sampled_from(PLAIN_KEYS), ODD_STRINGS),
     "whenUnsatisfiable": st.sampled_from(("DoNotSchedule", "ScheduleAnyway", "", "Maybe"))},
    optional={
        "labelSelector": label_selectors,
        "minDomains": ints,
        "nodeAffinityPolicy": st.sampled_from(("Honor", "Ignore", "", "Sometimes")),
        "nodeTaintsPolicy": st.sampled_from(("Honor", "Ignore", "", "Sometimes")),
        "matchLabelKeys": st.lists(label_keys, max_size=2),
    },
)
resource_claims = _maybe({
    "name": st.sampled_from(("gpu", "claim", "", "日本")),
    "resourceClaimName": st.sampled_from(("my-claim", "", "missing")),
    "resourceClaimTemplateName": st.sampled_from(("template", "")),
})
volumes = st.fixed_dictionaries(
    {"name": st.sampled_from(("data", "cache", ""))},
    optional={
        "persistentVolumeClaim": _maybe({"claimName": st.sampled_from(("pvc", "", "missing")),
                                         "readOnly": st.booleans()}),
        "ephemeral": _maybe({"volumeClaimTemplate": st.just({"spec": {}})}),
        "csi": _maybe({"driver": st.sampled_from(("csi.example.com", "")),
                       "volumeAttributes": st.dictionaries(label_keys, label_values,
                                                           max_size=2)}),
        "gcePersistentDisk": st.fixed_dictionaries({}, optional={
            "pdName": st.sampled_from(("disk", "")), "readOnly": st.booleans()}),
        "awsElasticBlockStore": st.fixed_dictionaries({}, optional={
            "volumeID": st.sampled_from(("vol-1", ""))}),
        "rbd": st.fixed_dictionaries({}, optional={
            "monitors": st.lists(st.sampled_from(("m1", "m2")), max_size=2),
            "pool": st.just("p"), "image": st.just("i")}),
        "iscsi": st.fixed_dictionaries({}, optional={
            "targetPortal": st.just("t"), "iqn": st.just("q"), "lun": ints}),
    },
)
label_sets = _mostly(
    st.dictionaries(label_keys, label_values, max_size=6),
    # Huge label sets: up to a few thousand labels on one object (built, not drawn one by
    # one, which would spend the time budget on generating them).
    st.tuples(st.integers(100, 3000), st.dictionaries(label_keys, label_values, max_size=3)
              ).map(lambda drawn: {**{f"k{i}": f"v{i % 7}" for i in range(drawn[0])},
                                   **drawn[1]}),
    one_in=10)


def _metadata(namespaced: bool) -> st.SearchStrategy[dict[str, Json]]:
    """Metadata without name and uid: `named` adds them."""
    fixed: dict[str, st.SearchStrategy[Json]] = {"resourceVersion": st.just("1")}
    if namespaced:
        fixed["namespace"] = _mostly(st.just("default"), ODD_STRINGS, one_in=6)
    return _merged(st.fixed_dictionaries(fixed, optional={
        "labels": _sometimes_odd(label_sets),
        "annotations": st.dictionaries(label_keys, st.text(max_size=30), max_size=3),
        "ownerReferences": st.lists(_maybe({
            "apiVersion": st.just("apps/v1"),
            "kind": st.sampled_from(("ReplicaSet", "StatefulSet", "Job", "")),
            "name": st.sampled_from(("rs", "")), "uid": st.just("owner"),
            "controller": st.booleans()}), max_size=2),
    }), _rarely({"deletionTimestamp": st.just("2024-01-01T00:00:00Z")}))


def named(obj: dict[str, Json], name: str) -> dict[str, Json]:
    """`obj` with its name and a uid derived from it (both unique within an example)."""
    return {**obj, "metadata": {**obj["metadata"], "name": name, "uid": f"uid-{name}"}}


def _pod_spec(node_names: tuple[str, ...], assigned: bool,
              priority: st.SearchStrategy[Json]) -> st.SearchStrategy[dict[str, Json]]:
    optional: dict[str, st.SearchStrategy[Json]] = {
        "priority": priority,
        "priorityClassName": st.sampled_from(("", "high", "system-node-critical")),
        "preemptionPolicy": st.sampled_from(("Never", "PreemptLowerPriority", "", "Sometimes")),
        "nodeSelector": _sometimes_odd(st.dictionaries(label_keys, label_values, max_size=3)),
        "affinity": affinities,
        "tolerations": _sometimes_odd(st.lists(tolerations, max_size=4)),
        "initContainers": st.lists(containers, max_size=2),
        "overhead": resource_lists,
        "resources": _maybe({"requests": resource_lists, "limits": resource_lists}),
        "resourceClaims": st.lists(resource_claims, max_size=2),
        "topologySpreadConstraints": st.lists(spread_constraints, max_size=3),
        "terminationGracePeriodSeconds": ints,
        "volumes": st.lists(volumes, max_size=3),
        "hostNetwork": st.booleans(),
        "hostUsers": st.booleans(),
    }
    fixed: dict[str, st.SearchStrategy[Json]] = {
        "schedulerName": _mostly(st.just("kpysched"),
                                 st.sampled_from(("default-scheduler", "", "KPYSCHED"))),
        "containers": _sometimes_odd(st.lists(containers, min_size=1, max_size=3)),
    }
    if assigned:
        # A node the scheduler has not heard of yet, now and then.
        fixed["nodeName"] = st.sampled_from([*node_names, *node_names, "no-such-node"])
    return _merged(st.fixed_dictionaries(fixed, optional=optional),
                   _rarely({"schedulingGates": st.just([{"name": "example.com/gate"}])}))


def _pod_status(node_names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Json]]:
    return _maybe({
        "phase": _mostly(st.just("Pending"), st.sampled_from(("Running", "", "Weird"))),
        "nominatedNodeName": st.sampled_from([*node_names, "", "gone"]),
        "conditions": st.lists(st.fixed_dictionaries(
            {"type": st.sampled_from(("PodScheduled", "Ready")),
             "status": st.sampled_from(("True", "False", "Unknown"))}), max_size=2),
        "resourceClaimStatuses": st.lists(_maybe({
            "name": st.sampled_from(("gpu", "claim")),
            "resourceClaimName": st.sampled_from(("gpu-abc", ""))}), max_size=2),
    })


@functools.cache
def pods(node_names: tuple[str, ...], *, assigned: bool) -> st.SearchStrategy[dict[str, Json]]:
    """A Pod as the API server sends it, unnamed. Pending pods mostly outrank the running
    ones (which run on one of `node_names`), so that preemption gets its turn."""
    priority = (_mostly(st.integers(-5, 5), ints, one_in=4) if assigned
                else _mostly(st.just(1000), ints, one_in=2))
    return st.fixed_dictionaries(
        {"kind": st.just("Pod"), "apiVersion": st.just("v1"),
         "metadata": _metadata(namespaced=True),
         "spec": _sometimes_odd(_pod_spec(node_names, assigned, priority))},
        optional={"status": _pod_status(node_names)},
    )


_allocatable = _merged(
    st.dictionaries(resource_names, node_quantities, max_size=2),
    st.fixed_dictionaries(
        {"cpu": node_quantities, "memory": node_quantities, "pods": node_quantities},
        optional={name: node_quantities for name in ("ephemeral-storage", "example.com/gpu",
                                                     "hugepages-2Mi")}),
)
_node_status = st.fixed_dictionaries({"allocatable": _sometimes_odd(_allocatable)}, optional={
    "capacity": resource_lists,
    "images": st.lists(_maybe({
        "names": st.lists(st.sampled_from(("nginx", "nginx:1.25", "docker.io/library/nginx:"
                                           "latest", "busybox", "")), max_size=3),
        "sizeBytes": _mostly(st.sampled_from((10**6, 10**9)), st.one_of(
            st.sampled_from((0, -1, 2**63 - 1, 2**64, 10**40)), st.integers()))}), max_size=3),
    "conditions": st.lists(st.fixed_dictionaries(
        {"type": st.sampled_from(("Ready", "MemoryPressure", "DiskPressure", "Odd"))},
        optional={"status": st.sampled_from(("True", "False", "Unknown", ""))}),
        max_size=3),
    "declaredFeatures": st.lists(st.sampled_from(("FeatureA", "FeatureB", "")), max_size=2),
})
nodes: st.SearchStrategy[dict[str, Json]] = st.fixed_dictionaries(
    {"kind": st.just("Node"), "apiVersion": st.just("v1"),
     "metadata": _metadata(namespaced=False), "status": _node_status},
    optional={"spec": _maybe({"unschedulable": st.booleans(),
                              "taints": _sometimes_odd(st.lists(taints, max_size=3))})},
)
"""A Node as the API server sends it, unnamed."""

# Hand-written objects for the @examples: what a healthy cluster sends.
EXAMPLE_NODE: dict[str, Json] = {
    "kind": "Node", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def example_node(**allocatable: str) -> dict[str, Json]:
    return {**EXAMPLE_NODE, "status": {"allocatable": {
        **EXAMPLE_NODE["status"]["allocatable"], **allocatable}}}


def example_pod(*, cpu: str = "100m", node: str = "", priority: int = 0,
                labels: dict[str, str] | None = None, **spec: Json) -> dict[str, Json]:
    """A pod of ours requesting `cpu`, with any other spec fields as given."""
    spec = {"schedulerName": "kpysched", "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"namespace": "default", "resourceVersion": "1",
                         "labels": labels or {}}, "spec": spec}


def required_node_affinity(*expressions: dict[str, Json]) -> dict[str, Json]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}
