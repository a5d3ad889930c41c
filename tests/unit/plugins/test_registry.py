"""The in-tree registry: every plugin module has the shape the framework relies on."""

from __future__ import annotations

import importlib

import pytest

from kpysched.framework.cluster_events import with_hints
from kpysched.framework.registry import PluginSpec, full_registry
from kpysched.plugins import DEFAULT_WEIGHTS, IN_TREE
from tests.unit.builders import FakeHandle

MODULES = {
    "PrioritySort": "priority_sort",
    "SchedulingGates": "scheduling_gates",
    "NodeUnschedulable": "node_unschedulable",
    "NodeName": "node_name",
    "TaintToleration": "taint_toleration",
    "NodeAffinity": "node_affinity",
    "NodePorts": "node_ports",
    "NodeResourcesFit": "node_resources.fit",
    "NodeResourcesBalancedAllocation": "node_resources.balanced_allocation",
    "PodTopologySpread": "pod_topology_spread",
    "DeferredPodScheduling": "deferred_pod_scheduling",
    "InterPodAffinity": "inter_pod_affinity",
    "ImageLocality": "image_locality",
    "DefaultBinder": "default_binder",
    "DefaultPreemption": "default_preemption",
    "DynamicResources": "dynamic_resources",
    "VolumeRestrictions": "volume_restrictions",
    "NodeVolumeLimits": "node_volume_limits",
    "VolumeBinding": "volume_binding",
    "VolumeZone": "volume_zone",
    "NodeDeclaredFeatures": "node_declared_features",
    "GangScheduling": "gang_scheduling",
    "TopologyPlacementGenerator": "topology_aware",
    "PodGroupPodsCount": "pod_group_pods_count",
    "Coscheduling": "coscheduling",
}


def test_in_tree_lists_every_module() -> None:
    assert set(IN_TREE) == set(MODULES)


@pytest.mark.parametrize(("name", "module"), MODULES.items())
def test_module_shape(name: str, module: str) -> None:
    plugin_module = importlib.import_module(f"kpysched.plugins.{module}")
    spec = plugin_module.SPEC
    assert isinstance(spec, PluginSpec)
    assert spec is IN_TREE[name]
    assert plugin_module.NAME == spec.name == name
    assert name == spec.plugin_class.NAME
    assert spec.extension_points(), "a plugin implements at least one extension point"
    args = spec.parse_args(None)
    instance = spec.factory(args, FakeHandle())
    assert isinstance(instance, spec.plugin_class)
    assert all(r.event.resource for r in with_hints(instance.events_to_register()))


@pytest.mark.parametrize(("name", "module"), MODULES.items())
def test_plugin_class_lives_in_one_shape(name: str, module: str) -> None:
    """A package plugin keeps its class in <name>/plugin.py, a single-file one in
    <name>.py (DESIGN.md); node_resources holds two, as upstream's noderesources."""
    plugin_module = importlib.import_module(f"kpysched.plugins.{module}")
    where = IN_TREE[name].plugin_class.__module__
    if hasattr(plugin_module, "__path__"):
        assert where == f"kpysched.plugins.{module}.plugin"
    else:
        assert where == f"kpysched.plugins.{module}"


def test_default_weights() -> None:
    assert DEFAULT_WEIGHTS == {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2,
                               "NodeResourcesFit": 1,
                               "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
                               "InterPodAffinity": 2}
    for name in DEFAULT_WEIGHTS:
        assert "score" in IN_TREE[name].extension_points()


def test_full_registry_keeps_in_tree() -> None:
    assert set(IN_TREE) <= set(full_registry(IN_TREE))
