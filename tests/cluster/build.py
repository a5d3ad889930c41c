"""Build the pinned upstream binaries (etcd, kube-apiserver, kube-scheduler, helm).

Versions come from tests/cluster/tools/go.mod, the single place they are pinned.
Binaries land in a cache outside the repository, keyed by the Kubernetes
version, and are rebuilt only when missing, so CI pays the cold build once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent / "tools"
GO_MOD = TOOLS_DIR / "go.mod"


def _required_version(module: str) -> str:
    text = GO_MOD.read_text()
    match = re.search(rf"^\s*{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{GO_MOD}: no require line for {module}")
    return match.group(1)


KUBERNETES_VERSION = _required_version("k8s.io/kubernetes")
ETCD_VERSION = _required_version("go.etcd.io/etcd/server/v3")
HELM_VERSION = _required_version("helm.sh/helm/v3")


def cache_root() -> Path:
    """Where built binaries live; KPYSCHED_CACHE overrides ~/.cache/kpysched."""
    override = os.environ.get("KPYSCHED_CACHE")
    base = Path(override) if override else Path.home() / ".cache" / "kpysched"
    return base / f"k8s-{KUBERNETES_VERSION}" / "bin"


@dataclass(frozen=True, slots=True)
class Binary:
    name: str
    package: str
    ldflags: tuple[str, ...]

    @property
    def path(self) -> Path:
        return cache_root() / self.name


def _kubernetes_version_flags() -> tuple[str, ...]:
    # Without these the binaries report v0.0.0 on /version, and kube-apiserver's
    # compatibility-version machinery would treat them as a development build.
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags: list[str] = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags.extend(f"-X {package}.{key}={value}" for key, value in values.items())
    return tuple(flags)


BINARIES: tuple[Binary, ...] = (
    Binary("etcd", "go.etcd.io/etcd/server/v3", ()),
    Binary("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", _kubernetes_version_flags()),
    Binary("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", _kubernetes_version_flags()),
    Binary(
        "helm",
        "helm.sh/helm/v3/cmd/helm",
        (f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",),
    ),
)


def binary_path(name: str) -> Path:
    for binary in BINARIES:
        if binary.name == name:
            return binary.path
    raise KeyError(name)


def missing_binaries() -> list[Binary]:
    return [b for b in BINARIES if not b.path.is_file()]


def _build_one(binary: Binary) -> None:
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("`go` is not on PATH; the test cluster is built from Go modules")
    binary.path.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.path.with_suffix(".partial")
    ldflags = " ".join(("-s", "-w", *binary.ldflags))
    command = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(partial), binary.package]
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    started = time.monotonic()
    print(f"[build] {binary.name}: go build {binary.package} ...", flush=True)
    result = subprocess.run(command, cwd=TOOLS_DIR, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"building {binary.name} failed (exit {result.returncode}):\n{result.stderr[-4000:]}"
        )
    partial.replace(binary.path)  # atomic: a half-written binary is never "present"
    print(f"[build] {binary.name}: done in {time.monotonic() - started:.0f}s", flush=True)


def ensure_built() -> Path:
    """Build whatever is missing and return the directory holding all binaries."""
    todo = missing_binaries()
    if not todo:
        print(f"[build] all binaries cached in {cache_root()}", flush=True)
        return cache_root()
    print(
        f"[build] Kubernetes {KUBERNETES_VERSION}, etcd {ETCD_VERSION}, helm {HELM_VERSION}: "
        f"building {', '.join(b.name for b in todo)} into {cache_root()} "
        "(the first build takes many minutes on 2 cores)",
        flush=True,
    )
    for binary in todo:
        _build_one(binary)
    return cache_root()


if __name__ == "__main__":  # pragma: no cover - convenience
    ensure_built()
    sys.exit(0)
