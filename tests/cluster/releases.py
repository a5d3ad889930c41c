"""The Kubernetes releases the test harness builds and runs, named "1.36" and "1.37".

Each release has a Go module of its own that pins its control plane: kube-apiserver,
kube-controller-manager and kube-scheduler (the yardstick kpysched is compared with).
`tools/` pins release 1.36 and, with it, the tools every release shares (etcd, kubectl,
helm, kube-proxy and the real node's kubelet: each within the version skew upstream
supports against the newer control plane); `tools_1_37/` pins release 1.37's three
control-plane programs and nothing else.

Which release a cluster runs: `cluster.up(..., release="1.37")` or
`python -m tests.cluster up --release 1.37`; when none is given, the environment's
`KPYSCHED_TEST_RELEASE`, else `DEFAULT`. The whole suite runs on `DEFAULT` unless the
variable says otherwise; a test module can ask for another with
`pytestmark = pytest.mark.release("1.37")` (tests/conftest.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_HARNESS_DIR = Path(__file__).resolve().parent
ENV_VAR = "KPYSCHED_TEST_RELEASE"


def module_version(module: str, module_dir: Path) -> str:
    """The version `module_dir/go.mod` requires of `module` (its only pin)."""
    go_mod = module_dir / "go.mod"
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(),
                      re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{go_mod}: no require line for {module}")
    return match.group(1)


@dataclass(frozen=True, slots=True)
class Release:
    name: str
    # The Go module whose go.mod pins this release's control plane.
    module_dir: Path

    @property
    def kubernetes_version(self) -> str:
        return module_version("k8s.io/kubernetes", self.module_dir)

    @property
    def minor(self) -> int:
        return int(self.name.split(".")[1])


RELEASES: dict[str, Release] = {
    release.name: release for release in (
        Release("1.36", _HARNESS_DIR / "tools"),
        Release("1.37", _HARNESS_DIR / "tools_1_37"),
    )
}
# The suite's control plane unless told otherwise: the whole suite runs on it, and a
# compatibility set (modules marked release("1.36"), docs/testing.md) on 1.36 too.
DEFAULT = "1.37"


def get(name: str) -> Release:
    """The release called `name` ("1.37"; a leading "v" and a patch are accepted)."""
    key = ".".join(name.strip().lstrip("v").split(".")[:2])
    release = RELEASES.get(key)
    if release is None:
        raise ValueError(f"unknown Kubernetes release {name!r}: the harness builds "
                         f"{', '.join(RELEASES)}")
    return release


def selected(name: str | None = None) -> Release:
    """`name` if given, else KPYSCHED_TEST_RELEASE, else the default release."""
    if name:
        return get(name)
    from_env = os.environ.get(ENV_VAR, "").strip()
    if from_env:
        try:
            return get(from_env)
        except ValueError as error:
            raise ValueError(f"{ENV_VAR}: {error}") from None
    return RELEASES[DEFAULT]
