"""TopologyAwareWorkloadScheduling (v1.37, alpha, off) may be turned on with
GenericWorkload, as on kube-scheduler v1.37.2 (it depends on GenericWorkload there
too); v1.36 keeps refusing it (kpysched implements v1.36's default only). With it on,
kube-scheduler v1.37.2's --write-config-to document loads with no plugin dropped, and
kpysched writes the same default plugins."""

from __future__ import annotations

from pathlib import Path

import yaml

from kpysched.config import load_config
from kpysched.config.features import TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, Features
from kpysched.config.written import write_config
from kpysched.framework.registry import full_registry
from kpysched.plugins import IN_TREE
from kpysched.scheduling.pod_group_cycle_placements import (
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING as CORE,
)

GATE = "TopologyAwareWorkloadScheduling"
ON = Features.from_gates({"GenericWorkload": True, GATE: True}, release=37)

# kube-scheduler v1.37.2 --feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true
# --write-config-to: the profile's default plugins (each point but multiPoint is {}).
UPSTREAM_MULTI_POINT = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeName", 0), ("NodeUnschedulable", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0),
    ("VolumeZone", 0), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
    ("DynamicResources", 2), ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1), ("DefaultBinder", 0), ("NodeDeclaredFeatures", 0),
    ("GangScheduling", 0), ("TopologyPlacementGenerator", 0), ("PodGroupPodsCount", 1)]
POINTS = ("bind", "filter", "permit", "placementGenerate", "placementScore",
          "podGroupPostFilter", "postBind", "postFilter", "preBind", "preEnqueue",
          "preFilter", "preScore", "queueSort", "reserve", "score")


def _upstream_document() -> dict[str, object]:
    plugins: dict[str, object] = {point: {} for point in POINTS}
    plugins["multiPoint"] = {"enabled": [{"name": name, "weight": weight}
                                         for name, weight in UPSTREAM_MULTI_POINT]}
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}


def test_the_config_and_the_scheduling_core_name_the_same_gate() -> None:
    assert TOPOLOGY_AWARE_WORKLOAD_SCHEDULING == CORE == GATE


def test_upstreams_written_config_loads_with_no_plugin_dropped(tmp_path: Path) -> None:
    source = tmp_path / "upstream.yaml"
    source.write_text(yaml.safe_dump(_upstream_document()))
    _, [profile] = load_config(source, full_registry(IN_TREE), None, ON)
    assert profile.unavailable_defaults == ()
    assert profile.plugins["placementGenerate"] == ("TopologyPlacementGenerator",)
    assert profile.plugins["placementScore"] == ("NodeResourcesFit", "PodGroupPodsCount")
    assert profile.placement_score_weights == {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}
    assert profile.plugins["permit"] == ("GangScheduling",)


def test_kpysched_writes_upstreams_default_plugins(tmp_path: Path) -> None:
    registry = full_registry(IN_TREE)
    config, profiles = load_config(None, registry, None, ON)
    written = tmp_path / "written.yaml"
    write_config(written, config, None, 37, profiles=profiles, features=ON)
    [profile] = yaml.safe_load(written.read_text())["profiles"]
    assert [(entry["name"], entry.get("weight", 0))
            for entry in profile["plugins"]["multiPoint"]["enabled"]] == UPSTREAM_MULTI_POINT
