"""Build the pinned upstream binaries the test cluster runs.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, kubectl
and helm come from tests/cluster/tools/go.mod, as does the real node's kubelet
(realnode/build.py), so they share compiled packages. KWOK (kwok_tools/), Prometheus
with promtool (prometheus_tools/), Grafana's dashboard linter (dashboard_lint_tools/),
Kueue (kueue_tools/) and Karpenter's KWOK provider (karpenter_tools/) each have a
go.mod of their own, so their dependencies never move the Kubernetes ones
(the linter cannot share Prometheus's: its Loki v3.3 imports packages Prometheus 3.16
no longer has). Those files are the only places versions are pinned. Binaries land
in a cache outside the repository, keyed by the pinned version, and are rebuilt only
when missing, so CI pays the cold build once.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent / "tools"
KWOK_TOOLS_DIR = Path(__file__).resolve().parent / "kwok_tools"
PROMETHEUS_TOOLS_DIR = Path(__file__).resolve().parent / "prometheus_tools"
DASHBOARD_LINT_TOOLS_DIR = Path(__file__).resolve().parent / "dashboard_lint_tools"
KUEUE_TOOLS_DIR = Path(__file__).resolve().parent / "kueue_tools"
KARPENTER_TOOLS_DIR = Path(__file__).resolve().parent / "karpenter_tools"


def _required_version(module: str, module_dir: Path = TOOLS_DIR) -> str:
    go_mod = module_dir / "go.mod"
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(),
                      re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{go_mod}: no require line for {module}")
    return match.group(1)


KUBERNETES_VERSION = _required_version("k8s.io/kubernetes")
ETCD_VERSION = _required_version("go.etcd.io/etcd/server/v3")
HELM_VERSION = _required_version("helm.sh/helm/v3")
KWOK_VERSION = _required_version("sigs.k8s.io/kwok", KWOK_TOOLS_DIR)
# Prometheus 3.x.y is published to the module proxy as v0.3xx.y (v0.316.0 = 3.16.0).
PROMETHEUS_MODULE_VERSION = _required_version("github.com/prometheus/prometheus",
                                              PROMETHEUS_TOOLS_DIR)
_minor, _patch = PROMETHEUS_MODULE_VERSION.lstrip("v").split(".")[1:3]
PROMETHEUS_VERSION = f"{int(_minor) // 100}.{int(_minor) % 100}.{_patch}"
DASHBOARD_LINTER_VERSION = _required_version("github.com/grafana/dashboard-linter",
                                             DASHBOARD_LINT_TOOLS_DIR)
KUEUE_VERSION = _required_version("sigs.k8s.io/kueue", KUEUE_TOOLS_DIR)
KARPENTER_VERSION = _required_version("sigs.k8s.io/karpenter", KARPENTER_TOOLS_DIR)


def _cache_base() -> Path:
    override = os.environ.get("KPYSCHED_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "kpysched"


def cache_root() -> Path:
    """Where built binaries live; KPYSCHED_CACHE overrides ~/.cache/kpysched."""
    return _cache_base() / f"k8s-{KUBERNETES_VERSION}" / "bin"


@dataclass(frozen=True, slots=True)
class Binary:
    name: str
    package: str
    ldflags: tuple[str, ...]
    module_dir: Path = TOOLS_DIR
    # The cache directory's name: a new pin of the module builds into a new directory.
    cache_key: str = f"k8s-{KUBERNETES_VERSION}"
    tags: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return _cache_base() / self.cache_key / "bin" / self.name


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


_PROMETHEUS_FLAGS = tuple(
    f"-X github.com/prometheus/common/version.{key}={value}"
    for key, value in (("Version", PROMETHEUS_VERSION), ("Branch", "HEAD"),
                       ("Revision", PROMETHEUS_MODULE_VERSION), ("BuildUser", "kpysched"),
                       ("BuildDate", "19700101-00:00:00")))
# Only Kubernetes service discovery: the other SD plugins pull in modules the proxy
# does not serve (hashicorp/nomad/api's pinned pseudo-version answers 403), and the
# harness scrapes nothing else. Prometheus's own build tags for a trimmed binary.
_PROMETHEUS_TAGS = ("remove_all_sd", "enable_kubernetes_sd")

BINARIES: tuple[Binary, ...] = (
    Binary("etcd", "go.etcd.io/etcd/server/v3", ()),
    Binary("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", _kubernetes_version_flags()),
    Binary("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager",
           _kubernetes_version_flags()),
    Binary("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", _kubernetes_version_flags()),
    # Only for in-cluster runs on the real node: it makes Service IPs (the
    # `kubernetes` Service above all) reach their endpoints from pods.
    Binary("kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", _kubernetes_version_flags()),
    Binary("kubectl", "k8s.io/kubernetes/cmd/kubectl", _kubernetes_version_flags()),
    Binary(
        "helm",
        "helm.sh/helm/v3/cmd/helm",
        (f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",),
    ),
    # KWOK's version is a constant in its source; no flags needed.
    Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok", (), module_dir=KWOK_TOOLS_DIR,
           cache_key=f"kwok-{KWOK_VERSION}"),
    *(Binary(name, f"github.com/prometheus/prometheus/cmd/{name}", _PROMETHEUS_FLAGS,
             module_dir=PROMETHEUS_TOOLS_DIR, cache_key=f"prometheus-v{PROMETHEUS_VERSION}",
             tags=_PROMETHEUS_TAGS)
      for name in ("prometheus", "promtool")),
    # Grafana's dashboard linter: untagged upstream, so keyed by its pseudo-version.
    Binary("dashboard-linter", "github.com/grafana/dashboard-linter", (),
           module_dir=DASHBOARD_LINT_TOOLS_DIR,
           cache_key=f"dashboard-linter-{DASHBOARD_LINTER_VERSION.rsplit('-', 1)[-1]}"),
    # Kueue's controller manager (tests/cluster/kueue.py); its version says itself.
    Binary("kueue", "sigs.k8s.io/kueue/cmd/kueue",
           (f"-X sigs.k8s.io/kueue/pkg/version.GitVersion={KUEUE_VERSION}",),
           module_dir=KUEUE_TOOLS_DIR, cache_key=f"kueue-{KUEUE_VERSION}"),
    # Karpenter with its KWOK cloud provider (tests/cluster/karpenter.py). v1.14.1: the
    # newest release whose go.mod accepts this toolchain (v1.14.3 wants go 1.26.10).
    Binary("karpenter-kwok", "sigs.k8s.io/karpenter/kwok",
           (f"-X sigs.k8s.io/karpenter/pkg/operator.Version={KARPENTER_VERSION}",),
           module_dir=KARPENTER_TOOLS_DIR, cache_key=f"karpenter-{KARPENTER_VERSION}"),
)


# What a cluster needs to start, and the tools most tests use. The rest (Prometheus,
# the dashboard linter, kube-proxy for the real node) may build in the background
# while tests run: scripts/test.sh does that, and binary_path waits for them.
CORE = frozenset({"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                  "kubectl", "helm", "kwok"})


@contextmanager
def build_lock() -> Iterator[None]:
    """One builder at a time per cache (test workers, a background build): a waiter
    finds the binary built when it gets the lock."""
    base = _cache_base()
    base.mkdir(parents=True, exist_ok=True)
    with (base / ".build.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _binary(name: str) -> Binary:
    for binary in BINARIES:
        if binary.name == name:
            return binary
    raise KeyError(name)


def binary_path(name: str) -> Path:
    """The binary, built first if it is missing (or waited for while another process
    builds it)."""
    binary = _binary(name)
    if not binary.path.is_file():
        _ensure(binary)
    return binary.path


def missing_binaries(names: Iterable[str] | None = None) -> list[Binary]:
    wanted = None if names is None else set(names)
    return [b for b in BINARIES
            if (wanted is None or b.name in wanted) and not b.path.is_file()]


def _ensure(binary: Binary) -> None:
    with build_lock():
        if not binary.path.is_file():
            _build_one(binary)


def go_build(name: str, package: str, output: Path, module_dir: Path, *,
             ldflags: tuple[str, ...] = (), tags: tuple[str, ...] = (), cgo: bool = False,
             failure_hint: Callable[[str], str] = lambda stderr: "") -> None:
    """`go build` one program into `output` (stripped, -trimpath, the module's own go.sum);
    written to a .partial file first and moved, so a half-written binary is never
    "present". Shared by the harness binaries and the real node's programs."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("`go` is not on PATH; the test cluster is built from Go modules")
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_suffix(".partial")
    command = [go, "build", "-trimpath", "-ldflags", " ".join(("-s", "-w", *ldflags)),
               "-o", str(partial)]
    if tags:
        command += ["-tags", ",".join(tags)]
    command.append(package)
    # -buildvcs=false: programs in this repository's own modules (the real node's
    # cri-sandboxes, pause, hello) would otherwise carry the checkout's commit and
    # dirty flag, and fail to build where git refuses the checkout (another owner).
    env = dict(os.environ, CGO_ENABLED="1" if cgo else "0",
               GOFLAGS="-mod=readonly -buildvcs=false")
    started = time.monotonic()
    print(f"[build] {name}: go build {package} ...", flush=True)
    result = subprocess.run(command, cwd=module_dir, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building {name} failed (exit {result.returncode}):\n"
                           f"{result.stderr[-4000:]}{failure_hint(result.stderr)}")
    partial.replace(output)
    print(f"[build] {name}: done in {time.monotonic() - started:.0f}s", flush=True)


def _build_one(binary: Binary) -> None:
    go_build(binary.name, binary.package, binary.path, binary.module_dir,
             ldflags=binary.ldflags, tags=binary.tags)


def ensure_built(names: Iterable[str] | None = None) -> Path:
    """Build whatever is missing (of `names`, or of all) and return the directory of the
    Kubernetes binaries."""
    todo = missing_binaries(names)
    if not todo:
        print(f"[build] all binaries cached in {_cache_base()}", flush=True)
        return cache_root()
    print(
        f"[build] Kubernetes {KUBERNETES_VERSION}, etcd {ETCD_VERSION}, helm {HELM_VERSION}, "
        f"KWOK {KWOK_VERSION}, Prometheus {PROMETHEUS_VERSION}: building "
        f"{', '.join(b.name for b in todo)} into {_cache_base()} "
        "(the first build takes many minutes on 2 cores)",
        flush=True,
    )
    for binary in todo:
        _ensure(binary)
    return cache_root()


if __name__ == "__main__":  # pragma: no cover - convenience
    ensure_built()
    sys.exit(0)
