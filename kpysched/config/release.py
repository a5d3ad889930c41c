"""Which kube-scheduler release kpysched behaves as: --emulated-version when given
(in the forms kube-scheduler accepts), else the minor of the API server's /version,
else (no API server to ask) the newest release kpysched implements.

kube-scheduler's version skew policy: it may be older than the API server but not newer.
So a control plane newer than the newest release runs as the newest (with a warning),
and one older than the oldest is refused: kpysched would make decisions, and ask for
APIs, that control plane does not have. Pure functions here; app.py asks the API
server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kpysched.config.features import NEWEST_RELEASE, OLDEST_RELEASE, RELEASES

KUBE_COMPONENT: Final = "kube"
# kube-scheduler's version flags: "[kube=][v]1.MINOR[.0]" (a patch other than 0 is
# refused, as component-base's version registry refuses it).
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
# /version's minor may carry a suffix ("37+" on some distributions).
_MINOR = re.compile(r"(\d+)")
_GIT_VERSION = re.compile(r"v?(\d+)\.(\d+)")
# The minors --min-compatibility-version may name under each release: those that keep
# that release's default gates (1.37 would turn DRAFractionalCapacityRange on in v1.37).
MIN_COMPATIBILITY: Final[Mapping[int, tuple[int, ...]]] = {36: (35, 36), 37: (35, 36)}
SOURCE_FLAG: Final = "flag"
SOURCE_CLUSTER: Final = "cluster"
SOURCE_DEFAULT: Final = "default"


class ReleaseError(ValueError):
    """A version kpysched cannot behave as; the message says what it found, what is
    supported and the flag that chooses one."""


def supported() -> str:
    return ", ".join(f"1.{minor} ({patch})" for minor, patch in RELEASES.items())


def parse_minor(text: str) -> int:
    """The minor of one version flag item ("kube=1.37", "1.37", "v1.37", "1.37.0")."""
    component, _, version = text.strip().rpartition("=")
    if component not in ("", KUBE_COMPONENT):
        raise ReleaseError(f'component not registered: "{component}" (only '
                           f'"{KUBE_COMPONENT}")')
    match = _VERSION.fullmatch(version)
    if match is None:
        raise ReleaseError(f'"{text}" is not a version such as kube=1.{NEWEST_RELEASE}')
    major, minor, patch = match.groups()
    if patch not in (None, "0"):
        raise ReleaseError(f'patch version not allowed, got: "{text}"')
    if major != "1":
        raise ReleaseError(f'"{text}": only Kubernetes 1.x exists')
    return int(minor)


def parse_version_flag(items: Sequence[str]) -> int:
    """The minor a --emulated-version value (its comma-separated items) names."""
    minors = {parse_minor(item) for item in items}
    if len(minors) > 1:
        raise ReleaseError(f"duplicate version flag, {', '.join(items)}")
    (minor,) = minors
    return minor


def emulated_release(items: Sequence[str]) -> int:
    """The release --emulated-version asks for; ReleaseError unless kpysched has it."""
    minor = parse_version_flag(items)
    if minor not in RELEASES:
        raise ReleaseError(f"kpysched implements kube-scheduler {supported()}, not 1.{minor}")
    return minor


def check_min_compatibility(items: Sequence[str], release: int) -> None:
    minor = parse_version_flag(items)
    allowed = MIN_COMPATIBILITY[release]
    if minor not in allowed:
        raise ReleaseError(f"kpysched as kube-scheduler 1.{release} accepts "
                           f"{' or '.join(f'1.{m}' for m in allowed)}, not 1.{minor}")


def server_minor(info: Mapping[str, object]) -> int:
    """The minor of an API server's /version answer: gitVersion ("v1.37.2",
    "v1.37.2-eks-1234") when it parses, else major/minor ("1", "37+")."""
    git_version = info.get("gitVersion")
    if isinstance(git_version, str):
        match = _GIT_VERSION.match(git_version.strip())
        if match is not None and match.group(1) == "1":
            return int(match.group(2))
    major, minor = info.get("major"), info.get("minor")
    if isinstance(minor, str) and str(major).strip() == "1":
        match = _MINOR.match(minor.strip())
        if match is not None:
            return int(match.group(1))
    raise ReleaseError(f"the API server's /version names no Kubernetes 1.x minor "
                       f"(gitVersion={git_version!r}, major={major!r}, minor={minor!r})")


@dataclass(frozen=True, slots=True)
class Choice:
    """The release chosen, where it came from, and what the cluster said (if asked)."""

    release: int
    source: str  # SOURCE_FLAG, SOURCE_CLUSTER or SOURCE_DEFAULT
    server_version: str | None = None  # the API server's gitVersion
    warning: str | None = None  # why the release differs from the cluster's

    @property
    def version(self) -> str:
        return f"1.{self.release}"


def for_server(info: Mapping[str, object]) -> Choice:
    """The release to behave as against an API server whose /version is `info`:
    its minor; the newest when it is newer (skew policy); ReleaseError when older than
    the oldest."""
    minor = server_minor(info)
    git_version = str(info.get("gitVersion") or f"1.{minor}")
    if minor in RELEASES:
        return Choice(minor, SOURCE_CLUSTER, git_version)
    if minor > NEWEST_RELEASE:
        return Choice(NEWEST_RELEASE, SOURCE_CLUSTER, git_version,
                      warning=f"the API server is {git_version}, newer than the newest "
                      f"release kpysched implements: it runs as kube-scheduler "
                      f"{RELEASES[NEWEST_RELEASE]} (a scheduler may be older than its "
                      "API server)")
    raise ReleaseError(
        f"the API server is {git_version} (1.{minor}), older than the oldest release "
        f"kpysched implements (1.{OLDEST_RELEASE}); kpysched implements kube-scheduler "
        f"{supported()}. Pass --emulated-version=1.{OLDEST_RELEASE} to run as "
        f"{RELEASES[OLDEST_RELEASE]} anyway")


def undetected(reason: str) -> Choice:
    """No flag and no API server answered /version: the newest release."""
    return Choice(NEWEST_RELEASE, SOURCE_DEFAULT,
                  warning=f"could not read the API server's /version ({reason}): running "
                  f"as kube-scheduler {RELEASES[NEWEST_RELEASE]}; pass --emulated-version "
                  "to choose")
