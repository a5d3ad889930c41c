"""--write-config-to: the effective KubeSchedulerConfiguration as YAML, as upstream
writes it (every field, durations as Go strings such as "15s"), loadable again with
--config to the same profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kpysched.config.features import NEWEST_RELEASE
from kpysched.config.profiles import POINTS_SINCE
from kpysched.config.scheduler_config import SchedulerConfiguration
from kpysched.objects.durations import go_duration

_DURATIONS = ("leaseDuration", "renewDeadline", "retryPeriod")


def effective_document(config: SchedulerConfiguration, kubeconfig: Path | None,
                       release: int = NEWEST_RELEASE) -> dict[str, Any]:
    """`config` as a v1 document of kube-scheduler 1.`release` (without the extension
    points that release does not have); `kubeconfig` is the one in use (a flag or
    KPYSCHED_KUBECONFIG may differ from the file's)."""
    document: dict[str, Any] = config.model_dump(mode="json", by_alias=True,
                                                 exclude_none=True)
    for profile in document["profiles"]:
        for point, since in POINTS_SINCE.items():
            if release < since:
                profile["plugins"].pop(point, None)
    election = document["leaderElection"]
    for name in _DURATIONS:
        election[name] = go_duration(getattr(config.leader_election,
                                                    _snake(name)))
    if kubeconfig is not None:
        document["clientConnection"]["kubeconfig"] = str(kubeconfig)
    document["extenders"] = [
        _extender_document(written, extender.http_timeout)
        for written, extender in zip(document["extenders"], config.extenders, strict=True)]
    return document


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
                 release: int = NEWEST_RELEASE) -> None:
    text = yaml.safe_dump(effective_document(config, kubeconfig, release), sort_keys=True)
    path.write_text(text, encoding="utf-8")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
