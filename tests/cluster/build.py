"""Build the pinned upstream binaries the test cluster runs.

Each Kubernetes release the harness runs (releases.py: "1.36", "1.37") has its own
kube-apiserver, kube-controller-manager and kube-scheduler, built from that release's
module (tests/cluster/tools/ for 1.36, tools_1_37/ for 1.37) into a cache directory of
its own (k8s-v1.36.4/bin, k8s-v1.37.2/bin). etcd, kubectl, kube-proxy and helm are
shared by every release and come from tests/cluster/tools/go.mod, as does the real
node's kubelet (realnode/build.py), so they share compiled packages with 1.36's
control plane. KWOK (kwok_tools/), Prometheus
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
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.cluster import releases
from tests.cluster.releases import Release
from tests.progress import Progress

# Release 1.36's module, which also pins the tools every release shares.
TOOLS_DIR = releases.RELEASES["1.36"].module_dir
KWOK_TOOLS_DIR = Path(__file__).resolve().parent / "kwok_tools"
PROMETHEUS_TOOLS_DIR = Path(__file__).resolve().parent / "prometheus_tools"
DASHBOARD_LINT_TOOLS_DIR = Path(__file__).resolve().parent / "dashboard_lint_tools"
KUEUE_TOOLS_DIR = Path(__file__).resolve().parent / "kueue_tools"
KARPENTER_TOOLS_DIR = Path(__file__).resolve().parent / "karpenter_tools"


def _required_version(module: str, module_dir: Path = TOOLS_DIR) -> str:
    return releases.module_version(module, module_dir)


# Release 1.36's, which the shared tools are too (kubectl, kube-proxy, the real node's
# kubelet).
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
    """Where the shared Kubernetes tools live (KPYSCHED_CACHE overrides
    ~/.cache/kpysched); the real node's programs go beside it."""
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
    # The release this build belongs to; None for a binary every release shares.
    release: str | None = None

    @property
    def path(self) -> Path:
        return _cache_base() / self.cache_key / "bin" / self.name


def _kubernetes_version_flags(version: str = KUBERNETES_VERSION) -> tuple[str, ...]:
    # Without these the binaries report v0.0.0 on /version, and kube-apiserver's
    # compatibility-version machinery would treat them as a development build.
    major, minor = version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": version,
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

# What each release builds for itself. Every other program is shared: etcd v3.6 (v1.37
# supports etcd from v3.5.24 on), kubectl and kube-proxy (one minor of skew is
# upstream's promise), helm, KWOK and the rest know no control-plane version.
PER_RELEASE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _control_plane(release: Release) -> tuple[Binary, ...]:
    version = release.kubernetes_version
    return tuple(Binary(name, f"k8s.io/kubernetes/cmd/{name}", _kubernetes_version_flags(version),
                        module_dir=release.module_dir, cache_key=f"k8s-{version}",
                        release=release.name)
                 for name in PER_RELEASE)


# In build order. `build --core` (scripts/setup.sh) builds the CORE ones among them
# first; CI then builds the rest in the background while the suite runs
# (scripts/test.sh), in this order, and the suite hands out files in collection order
# (tests/e2e/differential/ first, then tests/e2e/test_*.py by name), so the rest comes
# in the order of first use, cheap ones first where two tie.
BINARIES: tuple[Binary, ...] = (
    Binary("etcd", "go.etcd.io/etcd/server/v3", ()),
    *_control_plane(releases.RELEASES[releases.DEFAULT]),
    # KWOK's version is a constant in its source; no flags needed.
    Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok", (), module_dir=KWOK_TOOLS_DIR,
           cache_key=f"kwok-{KWOK_VERSION}"),
    # The other releases' control planes first of the rest: the compatibility set's
    # files (tests/e2e/differential/batch/test_batch_1_36.py...) are among the first
    # handed out. Built after Prometheus, Kueue and Karpenter, they kept a worker
    # waiting ~10 minutes on a cold cache.
    *(binary for release in releases.RELEASES.values() if release.name != releases.DEFAULT
      for binary in _control_plane(release)),
    # kubectl and helm next: a dozen files use them (test_cluster_kwok, test_deploy,
    # test_explain*, test_kueue, test_rbac, test_readme...), and after v1.36.4's control
    # plane much of what they compile (client-go, apimachinery: tools/go.mod pins one
    # version of each for all three) is in Go's build cache already.
    Binary("kubectl", "k8s.io/kubernetes/cmd/kubectl", _kubernetes_version_flags()),
    Binary(
        "helm",
        "helm.sh/helm/v3/cmd/helm",
        (f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",),
    ),
    # promtool first: test_alert_rules is the first file after the differential suite;
    # Prometheus itself only serves test_in_cluster.
    *(Binary(name, f"github.com/prometheus/prometheus/cmd/{name}", _PROMETHEUS_FLAGS,
             module_dir=PROMETHEUS_TOOLS_DIR, cache_key=f"prometheus-v{PROMETHEUS_VERSION}",
             tags=_PROMETHEUS_TAGS)
      for name in ("promtool", "prometheus")),
    # Grafana's dashboard linter: untagged upstream, so keyed by its pseudo-version.
    Binary("dashboard-linter", "github.com/grafana/dashboard-linter", (),
           module_dir=DASHBOARD_LINT_TOOLS_DIR,
           cache_key=f"dashboard-linter-{DASHBOARD_LINTER_VERSION.rsplit('-', 1)[-1]}"),
    # Only for in-cluster runs on the real node: it makes Service IPs (the
    # `kubernetes` Service above all) reach their endpoints from pods.
    Binary("kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", _kubernetes_version_flags()),
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


# What a cluster needs to start (the control-plane names stand for one release's:
# `build --core` builds the selected release's), and kube-scheduler, which the
# differential suite, the first files handed out, runs beside kpysched. The rest
# (the other releases' control planes, kubectl, helm, Prometheus, the dashboard
# linter, kube-proxy for the real node, Kueue, Karpenter) may build in the background
# while tests run: scripts/test.sh does that, and binary_path waits for them. kubectl
# and helm were core until a cold CI run showed them 3 minutes of the core build
# (137 s and 38 s) that only a dozen later files need.
CORE = frozenset({"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                  "kwok"})


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


def _binary(name: str, release: str | None = None) -> Binary:
    """`name`'s build for `release` (the selected one when None, releases.selected)
    if each release has its own, else the shared one."""
    wanted = releases.selected(release).name if name in PER_RELEASE else None
    for binary in BINARIES:
        if binary.name == name and binary.release == wanted:
            return binary
    raise KeyError(name)


def binary_path(name: str, release: str | None = None) -> Path:
    """The binary (of `release`, for kube-apiserver, kube-controller-manager and
    kube-scheduler), built first if it is missing (or waited for while another process
    builds it)."""
    binary = _binary(name, release)
    if not binary.path.is_file():
        _ensure(binary)
    return binary.path


def missing_binaries(names: Iterable[str] | None = None,
                     release_names: Iterable[str] | None = None) -> list[Binary]:
    """What is not built yet, of `names` (default: all) for `release_names` (default:
    every release)."""
    wanted = None if names is None else set(names)
    chosen = None if release_names is None else {releases.get(r).name for r in release_names}
    return [b for b in BINARIES
            if (wanted is None or b.name in wanted)
            and (chosen is None or b.release is None or b.release in chosen)
            and not b.path.is_file()]


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
    go_build(_label(binary), binary.package, binary.path, binary.module_dir,
             ldflags=binary.ldflags, tags=binary.tags)


def ensure_built(names: Iterable[str] | None = None,
                 release_names: Iterable[str] | None = None) -> Path:
    """Build whatever is missing (of `names`, or of all; for `release_names`, or for
    every release) and return the cache directory."""
    todo = missing_binaries(names, release_names)
    if not todo:
        print(f"[build] all binaries cached in {_cache_base()}", flush=True)
        return _cache_base()
    kubernetes = ", ".join(r.kubernetes_version for r in releases.RELEASES.values()
                           if release_names is None or r.name in
                           {releases.get(n).name for n in release_names})
    print(
        f"[build] Kubernetes {kubernetes}, etcd {ETCD_VERSION}, helm {HELM_VERSION}, "
        f"KWOK {KWOK_VERSION}, Prometheus {PROMETHEUS_VERSION}: building "
        f"{', '.join(_label(b) for b in todo)} into {_cache_base()} "
        "(the first build takes many minutes on 2 cores)",
        flush=True,
    )
    # A bar on a terminal (binaries done, elapsed, the one being built); elsewhere the
    # per-binary "[build] X: done in Ns" lines say as much.
    with Progress("[build]", len(todo), "binaries", plain_every=float("inf")) as shown:
        for done, binary in enumerate(todo):
            shown.update_to(done, building=_label(binary))
            _ensure(binary)
        shown.update_to(len(todo))
    return _cache_base()


def _label(binary: Binary) -> str:
    return binary.name if binary.release is None else f"{binary.name} ({binary.release})"


if __name__ == "__main__":  # pragma: no cover - convenience
    ensure_built()
    sys.exit(0)
