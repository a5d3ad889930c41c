"""The kube-scheduler release a simulation behaves as, chosen as `kpysched run` chooses
it: --emulated-version, else the cluster's minor (its /version, which `kpysched
snapshot` records in the snapshot's metadata.serverVersion), else the newest release
kpysched implements (an older snapshot without the version), said on stderr."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import msgspec

from kpysched.config.features import Features
from kpysched.config.release import (
    SOURCE_FLAG,
    Choice,
    emulated_release,
    for_server,
    undetected,
)
from kpysched.simulate.snapshot import Reader

VERSION_KEY = "serverVersion"


async def server_version(reader: Reader) -> dict[str, Any] | None:
    """The API server's /version answer (major, minor, gitVersion), None if it gives
    none."""
    response = await reader.request("GET", "/version")
    if not response.ok:
        return None
    try:
        info = msgspec.json.decode(response.body)
    except msgspec.DecodeError:
        return None
    if not isinstance(info, dict):
        return None
    return {key: info[key] for key in ("major", "minor", "gitVersion") if key in info}


def choose(emulated_version: str | None, snapshot: Mapping[str, Any] | None) -> Choice:
    """ReleaseError for a version kpysched cannot behave as (its message says which
    flag chooses one)."""
    if emulated_version is not None:
        return Choice(emulated_release(emulated_version.split(",")), SOURCE_FLAG)
    metadata = (snapshot or {}).get("metadata")
    info = metadata.get(VERSION_KEY) if isinstance(metadata, Mapping) else None
    if isinstance(info, Mapping):
        return for_server(info)
    return undetected("the snapshot does not record it; `kpysched snapshot` does since "
                      "kpysched knew two releases")


def features_of(choice: Choice, *, quiet: bool, command: str = "simulate") -> Features:
    """The Features of `choice`, its warning (if any) on stderr unless `quiet`."""
    if choice.warning is not None and not quiet:
        print(f"{command}: {choice.warning}", file=sys.stderr)
    return Features(release=choice.release)
