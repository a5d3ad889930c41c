"""--write-config-to (and /configz): the effective KubeSchedulerConfiguration, as
upstream writes it: every field, durations as Go strings such as "15s", and each
profile defaulted as v1's setDefaults_KubeSchedulerProfile does (the release's default
plugins merged into multiPoint, and every plugin that takes args given them, defaulted,
typed with apiVersion and kind); loadable again with --config to the same profiles."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from kpysched.config.features import NEWEST_RELEASE, Features
from kpysched.config.profiles import (
    POINTS_SINCE,
    RELEASE_UPSTREAM_PLUGINS,
    EffectiveProfile,
    default_multi_point,
)
from kpysched.config.scheduler_config import API_VERSION, SchedulerConfiguration
from kpysched.objects.durations import go_duration

_DURATIONS = ("leaseDuration", "renewDeadline", "retryPeriod")


def effective_document(config: SchedulerConfiguration, kubeconfig: Path | None,
                       release: int = NEWEST_RELEASE, *,
                       profiles: Sequence[EffectiveProfile] | None = None,
                       features: Features | None = None) -> dict[str, Any]:
    """`config` as a v1 document of kube-scheduler 1.`release` (without the extension
    points that release does not have); `kubeconfig` is the one in use (a flag or
    KPYSCHED_KUBECONFIG may differ from the file's). With the `profiles` built from it
    (and the `features` they were built with), each profile is written defaulted as
    upstream writes it; without, as configured."""
    document: dict[str, Any] = config.model_dump(mode="json", by_alias=True,
                                                 exclude_none=True)
    for profile in document["profiles"]:
        for point, since in POINTS_SINCE.items():
            if release < since:
                profile["plugins"].pop(point, None)
    # omitempty in upstream's v1 types: absent when false or empty.
    for name in ("delayCacheUntilActive", "extenders"):
        if document.get(name) in (False, []):
            document.pop(name)
    if profiles is not None:
        defaults = features if features is not None else Features(release=release)
        for written, effective in zip(document["profiles"], profiles, strict=True):
            _default_profile(written, effective, defaults)
    election = document["leaderElection"]
    for name in _DURATIONS:
        election[name] = go_duration(getattr(config.leader_election,
                                                    _snake(name)))
    if kubeconfig is not None:
        document["clientConnection"]["kubeconfig"] = str(kubeconfig)
    if config.extenders:
        document["extenders"] = [
            _extender_document(written, extender.http_timeout)
            for written, extender in zip(document["extenders"], config.extenders,
                                         strict=True)]
    return document


def _default_profile(written: dict[str, Any], effective: EffectiveProfile,
                     features: Features) -> None:
    """Upstream's setDefaults_KubeSchedulerProfile on one written profile: the default
    plugins merged into multiPoint (mergePlugins), then, in name order, a pluginConfig
    entry for every enabled upstream plugin that takes args and has none yet; every
    entry's args as the plugin runs them, typed."""
    defaults = [{"name": name, "weight": weight or 0}
                for name, weight in default_multi_point(features)]
    plugins = written["plugins"]
    for point, custom in plugins.items():
        plugins[point] = _merged_set(defaults if point == "multiPoint" else [], custom)
    configured = [entry["name"] for entry in written["pluginConfig"]]
    enabled = {entry["name"] for merged in plugins.values()
               for entry in merged.get("enabled", [])}
    upstream = RELEASE_UPSTREAM_PLUGINS[features.release]
    written["pluginConfig"] = [
        *({"name": entry["name"], "args": _typed_args(entry["name"], effective)
           or entry.get("args")} for entry in written["pluginConfig"]),
        *({"name": name, "args": args} for name in sorted(enabled - set(configured))
          if name in upstream and (args := _typed_args(name, effective)) is not None),
    ]


def _merged_set(defaults: list[dict[str, Any]], custom: dict[str, Any]) -> dict[str, Any]:
    """Upstream's mergePluginSet: the defaults in order, each replaced in place by a
    custom entry of its name and dropped when disabled (all of them with "*"), then the
    custom entries that replaced none; disabled as given. Empty lists are left out, as
    Go's omitempty does."""
    disabled = custom.get("disabled", [])
    off = {entry["name"] for entry in disabled}
    enabled = custom.get("enabled", [])
    by_name = {entry["name"]: index for index, entry in enumerate(enabled)}
    replaced: set[int] = set()
    merged: list[dict[str, Any]] = []
    if "*" not in off:
        for default in defaults:
            if default["name"] in off:
                continue
            index = by_name.get(default["name"])
            if index is not None:
                replaced.add(index)
                merged.append(enabled[index])
            else:
                merged.append(default)
    merged += [entry for index, entry in enumerate(enabled) if index not in replaced]
    result: dict[str, Any] = {}
    if merged:
        result["enabled"] = merged
    if disabled:
        result["disabled"] = disabled
    return result


def _typed_args(name: str, effective: EffectiveProfile) -> dict[str, Any] | None:
    """The args `name` runs with in this profile, as upstream's typed object (None when
    the plugin takes none or is not built)."""
    args = effective.args.get(name)
    if args is None:
        return None
    fields = args.model_dump(mode="json", by_alias=True, exclude_none=True)
    if "apiVersion" in fields:  # an out-of-tree plugin's own args group: as they are
        return fields
    return {"apiVersion": API_VERSION, "kind": f"{name}Args",
            **{key: value for key, value in fields.items() if value != []}}


def _extender_document(written: dict[str, Any], http_timeout: float) -> dict[str, Any]:
    """An extender as upstream's v1 JSON writes it: every field but urlPrefix and
    httpTimeout is omitempty, and the timeout is a Go duration."""
    document = _without_empty(written)
    document["urlPrefix"] = written["urlPrefix"]
    document["httpTimeout"] = go_duration(http_timeout)
    if "tlsConfig" in document:
        document["tlsConfig"] = _without_empty(document["tlsConfig"])
    if "managedResources" in document:
        document["managedResources"] = [
            {**_without_empty(resource), "name": resource["name"]}
            for resource in document["managedResources"]]
    return document


def _without_empty(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value not in ("", 0, False, None, [])}


def write_config(path: Path, config: SchedulerConfiguration, kubeconfig: Path | None,
                 release: int = NEWEST_RELEASE, *,
                 profiles: Sequence[EffectiveProfile] | None = None,
                 features: Features | None = None) -> None:
    text = yaml.safe_dump(effective_document(config, kubeconfig, release, profiles=profiles,
                                             features=features), sort_keys=True)
    path.write_text(text, encoding="utf-8")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
