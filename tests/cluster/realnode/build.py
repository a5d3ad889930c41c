"""Build the real node's programs from Go modules into a cache outside the repository.

kubelet (the harness's Kubernetes release), containerd 2.x with its runc shim and
`ctr`, runc, and the CNI plugins bridge, host-local and loopback. The kubelet comes
from the control plane's module, tests/cluster/tools, so it builds with the same
dependency versions as kube-apiserver and reuses its compiled packages (from a module
of its own, a cold build compiled most of Kubernetes a second time); the others are
each pinned by a go.mod under tools/. Debian bookworm ships containerd 1.6 and runc
1.1, which kubelet 1.36 no longer supports, hence building them. The two image programs
(pause, hello) are built here too; images.py packs them into OCI archives.

Each module's programs have a cache directory keyed by a hash of its go.mod, go.sum
and sources (the kubelet's by tests/cluster/tools), so changing a pinned version
builds afresh and warm runs rebuild nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from tests.cluster import build as cluster_build

TOOLS_DIR = Path(__file__).resolve().parent / "tools"
# Module directories not under tools/: the kubelet is built from the control plane's.
_MODULE_ROOTS = {"kubelet": cluster_build.TOOLS_DIR}


def _module_root(module_dir: str) -> Path:
    return _MODULE_ROOTS.get(module_dir, TOOLS_DIR / module_dir)


def _required_version(module_dir: str, module: str) -> str:
    go_mod = TOOLS_DIR / module_dir / "go.mod"
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(),
                      re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{go_mod}: no require line for {module}")
    return match.group(1)


CONTAINERD_VERSION = _required_version("containerd", "github.com/containerd/containerd/v2")
RUNC_VERSION = _required_version("runc", "github.com/opencontainers/runc")
CNI_PLUGINS_VERSION = _required_version("cni", "github.com/containernetworking/plugins")


def _module_digest(module_dir: str) -> str:
    digest = hashlib.sha256()
    root = _module_root(module_dir)
    sources = [p for p in root.rglob("*") if p.suffix in {".mod", ".sum", ".go"}]
    if module_dir == "images":
        # The archive writer decides the image bytes, so it is part of their key too.
        sources.append(TOOLS_DIR.parent / "images.py")
    for path in sorted(sources):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cache_dir() -> Path:
    """Beside the control-plane binaries."""
    return cluster_build.cache_root().parent / "node"


def module_cache_dir(module_dir: str) -> Path:
    """Keyed by a hash of the module's go.mod, go.sum and sources, so changing a pinned
    version rebuilds that module's programs and nothing else."""
    return cache_dir() / f"{module_dir}-{_module_digest(module_dir)}"


@dataclass(frozen=True, slots=True)
class Program:
    name: str
    module_dir: str  # directory under tools/ holding the go.mod (or a _MODULE_ROOTS key)
    package: str
    ldflags: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    cgo: bool = False

    @property
    def path(self) -> Path:
        return module_cache_dir(self.module_dir) / self.name


_CONTAINERD_FLAGS = (
    f"-X github.com/containerd/containerd/v2/version.Version={CONTAINERD_VERSION}",
    "-X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2",
)
_CNI_FLAGS = (
    "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion="
    f"{CNI_PLUGINS_VERSION}",
)

PROGRAMS: tuple[Program, ...] = (
    # Built from tests/cluster/tools like the control plane, with the same version
    # ldflags, so the Node reports v1.36.4.
    Program("kubelet", "kubelet", "k8s.io/kubernetes/cmd/kubelet",
            cluster_build._kubernetes_version_flags()),
    Program("containerd", "containerd", "github.com/containerd/containerd/v2/cmd/containerd",
            _CONTAINERD_FLAGS),
    Program("containerd-shim-runc-v2", "containerd",
            "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", _CONTAINERD_FLAGS),
    Program("ctr", "containerd", "github.com/containerd/containerd/v2/cmd/ctr",
            _CONTAINERD_FLAGS),
    # runc's nsenter (joining namespaces before the Go runtime starts) is C, so it
    # needs cgo. The `seccomp` tag (runc's default) links libseccomp so pods asking
    # for a RuntimeDefault seccomp profile run as they would anywhere; scripts/setup.sh
    # installs libseccomp-dev for it.
    Program("runc", "runc", "github.com/opencontainers/runc",
            (f"-X main.version={RUNC_VERSION.lstrip('v')}",), ("seccomp",), cgo=True),
    Program("bridge", "cni", "github.com/containernetworking/plugins/plugins/main/bridge",
            _CNI_FLAGS),
    Program("host-local", "cni",
            "github.com/containernetworking/plugins/plugins/ipam/host-local", _CNI_FLAGS),
    Program("loopback", "cni", "github.com/containernetworking/plugins/plugins/main/loopback",
            _CNI_FLAGS),
    # A small CRI client: lists, stops and removes pod sandboxes (for `down` and the
    # e2e test). crictl itself (sigs.k8s.io/cri-tools) is not served by the module proxy.
    Program("cri-sandboxes", "cri", "./sandboxes"),
    Program("pause", "images", "./pause"),
    Program("hello", "images", "./hello"),
)


def program_path(name: str) -> Path:
    for program in PROGRAMS:
        if program.name == name:
            return program.path
    raise KeyError(name)


def cni_bin_dir() -> Path:
    """The plugins share one directory: containerd's CNI config names a directory."""
    return module_cache_dir("cni")


def missing_programs() -> list[Program]:
    return [p for p in PROGRAMS if not p.path.is_file()]


def _build_one(program: Program) -> None:
    def hint(stderr: str) -> str:
        if program.cgo and "seccomp" in stderr:
            return "\n(runc needs libseccomp-dev: `apt-get install libseccomp-dev`)"
        return ""

    cluster_build.go_build(program.name, program.package, program.path,
                           _module_root(program.module_dir), ldflags=program.ldflags,
                           tags=program.tags, cgo=program.cgo, failure_hint=hint)


def ensure_built() -> Path:
    """Build whatever is missing (and the image archives); return the cache directory."""
    from tests.cluster.realnode import images  # images need the programs built first

    todo = missing_programs()
    if not todo:
        print(f"[build] real node: all programs cached in {cache_dir()}", flush=True)
    else:
        print(f"[build] real node: kubelet {cluster_build.KUBERNETES_VERSION}, containerd "
              f"{CONTAINERD_VERSION}, runc {RUNC_VERSION}, CNI plugins {CNI_PLUGINS_VERSION}: "
              f"building {', '.join(p.name for p in todo)} into {cache_dir()}", flush=True)
    # Under the cache's build lock: a background build (scripts/test.sh) and a test that
    # needs the node never build the same program twice.
    with cluster_build.build_lock():
        for program in missing_programs():
            _build_one(program)
        images.ensure_archives()
    return cache_dir()
