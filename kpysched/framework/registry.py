"""Plugin registry: in-tree plugins plus out-of-tree ones from entry points.

Out-of-tree plugins are ordinary Python packages that declare an entry point in
the `kpysched.plugins` group whose object is a PluginSpec. This is the reason to
run kpysched instead of recompiling kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from kpysched.framework import interfaces, placement

ENTRY_POINT_GROUP = "kpysched.plugins"

# Extension point name (as in KubeSchedulerConfiguration) -> protocol a plugin implements.
EXTENSION_POINTS: dict[str, type[Any]] = {
    "preEnqueue": interfaces.PreEnqueuePlugin,
    "queueSort": interfaces.QueueSortPlugin,
    "preFilter": interfaces.PreFilterPlugin,
    "filter": interfaces.FilterPlugin,
    "postFilter": interfaces.PostFilterPlugin,
    "preScore": interfaces.PreScorePlugin,
    "score": interfaces.ScorePlugin,
    "reserve": interfaces.ReservePlugin,
    "permit": interfaces.PermitPlugin,
    "preBind": interfaces.PreBindPlugin,
    "bind": interfaces.BindPlugin,
    "postBind": interfaces.PostBindPlugin,
    # A pod group's topology-aware cycle (TopologyAwareWorkloadScheduling).
    "placementGenerate": placement.PlacementGeneratePlugin,
    "placementScore": placement.PlacementScorePlugin,
}


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """How to build one plugin: its class, its typed args (if any), its factory."""

    name: str
    plugin_class: type[Any]
    factory: Callable[[Any, interfaces.Handle], Any]
    args_model: type[BaseModel] | None = None
    # The apiVersion its args may be written with, beside kube-scheduler's own
    # (an out-of-tree plugin's args group, such as scheduler-plugins' config.x-k8s.io/v1).
    args_api_version: str | None = None

    def extension_points(self) -> list[str]:
        """The extension points the plugin class implements (by subclassing protocols)."""
        # Explicit subclassing, not structural matching: protocols are not runtime-checkable.
        mro = self.plugin_class.__mro__
        return [point for point, protocol in EXTENSION_POINTS.items() if protocol in mro]

    def parse_args(self, raw: Mapping[str, Any] | None) -> BaseModel | None:
        """Validate pluginConfig args; pydantic.ValidationError names the bad field."""
        if self.args_model is None:
            return None
        return self.args_model.model_validate(dict(raw or {}))


class RegistryError(ValueError):
    pass


def load_out_of_tree() -> dict[str, PluginSpec]:
    found: dict[str, PluginSpec] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        spec = entry.load()
        if not isinstance(spec, PluginSpec):
            raise RegistryError(
                f"entry point {entry.name!r} ({entry.value}) in group {ENTRY_POINT_GROUP} "
                f"must be a kpysched.framework.registry.PluginSpec, got {type(spec).__name__}"
            )
        found[spec.name] = spec
    return found


def full_registry(in_tree: Mapping[str, PluginSpec]) -> dict[str, PluginSpec]:
    registry = dict(in_tree)
    for name, spec in load_out_of_tree().items():
        if name in registry:
            raise RegistryError(f"out-of-tree plugin {name!r} clashes with an in-tree plugin")
        registry[name] = spec
    return registry
